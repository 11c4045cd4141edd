import { createServer } from 'node:http';
import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest, type onRequestHookHandler, type onResponseHookHandler } from 'fastify';
import { Downloads, type DownloadPace } from './downloads.js';
import { Ajv } from 'ajv';
import formatsPlugin from 'ajv-formats';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { LoggerOptions } from 'pino';
import type { Services } from '../domain/services.js';
import { clientAddress, forwardedAddress, proxyTrust } from '../net/proxy.js';
import { clientErrorHandler, guardConnections, timeoutOptions, trackResponse, type Timeouts } from './connections.js';
import { finishedRequest, registerAccessLog } from './access-log.js';
import { fastAppContext, firstFast, requestIds } from './fast-path.js';
import { Finished, SECURITY_HEADER_OBJECT, gateRefusal, stepHook } from './request-steps.js';
import { clientCors } from './cors.js';
import { RETRY_AFTER_UNAVAILABLE_S, errorBody, handleError } from './errors.js';
import { adminRoutes } from './routes/admin/index.js';
import { dashboardRoutes } from './dashboard.js';
import { clientRoutes } from './routes/client/index.js';
import { metaRoutes } from './routes/meta.js';
import { integrationRoutes as storeWebhookRoutes } from './routes/integrations.js';
import { registerMetrics } from './metrics.js';
import { ADMIN_SCHEMAS } from './admin-schemas.js';
import { swaggerOptions } from './openapi.js';
import { registerSchemas } from './schemas.js';
import { sharedSerializers, sharedValidators } from './compile-cache.js';

export const CLIENT_API_VERSION = '1.9.11';

export interface ServerOptions {
  services: Services;
  adminToken: string | null;
  trustProxy: string[] | null;
  maxUploadBytes: number;
  logger: LoggerOptions | false;
  /** Where logs go (default stdout); tests capture them to prove what is redacted. */
  logStream?: NodeJS.WritableStream;
  metricsToken?: string | null;
  corsOrigins?: string[] | null;
  timeouts: Timeouts;
  /** DOWNLOAD_MIN_BYTES_PER_SECOND and DOWNLOAD_GRACE_MS (default: 4096 bytes a second over 30 s). */
  downloadPace: DownloadPace;
  /** One info line per request (src/http/access-log.ts); ACCESS_LOG. */
  accessLog?: boolean;
  /** ADMIN_SESSION_IDLE_SECONDS (default 1800) and DASHBOARD_DIR (default the package's dashboard/dist). */
  dashboard?: { sessionIdleSeconds: number; dir: string | null };
  /** GET /app_context's fast path (fast-path.ts), on unless false: tests compare the two paths' answers. */
  fastPath?: boolean;
  /** Tests only: compiled schemas shared by the servers of one process (src/http/compile-cache.ts). Never set in production. */
  reuseCompiledSchemas?: boolean;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The client's IP address (X-Forwarded-For only from TRUST_PROXY), or null when a forwarded hop is not an address. */
    clientAddress(request: FastifyRequest): string | null;
    /** The downloads in flight on this server (src/http/downloads.ts). */
    downloads: Downloads;
  }
}

/** Never logged, whatever the level: every credential a request can carry. */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-secret"]',
  'req.headers["x-api-password"]',
  'req.headers["x-api-license-code"]',
  'req.headers["x-api-username"]',
  'req.headers.cookie',
];

const addFormats = formatsPlugin as unknown as (ajv: Ajv) => Ajv;

/**
 * Bodies are validated without type coercion (a number is not a username);
 * path and query strings are coerced (`?limit=50`). Extra body properties are
 * kept and ignored on client routes; admin schemas forbid them explicitly.
 */
function validators() {
  const options = { useDefaults: true, removeAdditional: false, allErrors: true, strict: false } as const;
  const body = addFormats(new Ajv({ ...options, coerceTypes: false }));
  const other = addFormats(new Ajv({ ...options, coerceTypes: true }));
  return ({ schema, httpPart }: { schema: object; httpPart?: string }) => (httpPart === 'body' ? body : other).compile(schema);
}

export async function buildServer(opts: ServerOptions): Promise<FastifyInstance> {
  const trusted = opts.trustProxy ? proxyTrust(opts.trustProxy) : null;
  let closing = false;
  const timeouts = timeoutOptions(opts.timeouts);
  // Step `finished` (request-steps.ts): the access log and the metrics, told of every answer of either path.
  const finished = new Finished();
  const ids = requestIds();
  // None with CORS on: the plugin's headers go on every client answer (fast-path.ts).
  const fast = opts.fastPath === false || opts.corsOrigins ? null : fastAppContext({
    services: opts.services, requestIds: ids, trusted, closing: () => closing, finished,
  });
  const app: FastifyInstance = Fastify({
    // Fastify's own server, with GET /app_context's common case answered first (fast-path.ts).
    serverFactory: (handler) => {
      const server = createServer(timeouts.http, fast === null ? handler : firstFast(fast, handler, () => app.log));
      // What Fastify does to the server it makes itself (lib/server.js), which it skips for a factory's.
      server.keepAliveTimeout = timeouts.keepAliveTimeout;
      server.requestTimeout = timeouts.requestTimeout;
      server.setTimeout(0); // Fastify's default connectionTimeout: none
      return server;
    },
    genReqId: ids.of,
    logger: opts.logger === false ? false : { ...opts.logger, redact: { paths: REDACTED_PATHS, censor: '[redacted]' }, ...(opts.logStream && { stream: opts.logStream }) },
    // The same trust as the client address below, so Fastify's request.ip, .host and .protocol agree with it.
    trustProxy: trusted ? (address: string) => trusted(forwardedAddress(address) ?? '') : false,
    ...timeouts,
    clientErrorHandler: clientErrorHandler(() => app.log, opts.timeouts.requestMs),
    bodyLimit: 1024 * 1024,
    // Fastify's two lines per request (with a child logger each) cost throughput; access-log.ts writes one.
    logController: new LogController({ disableRequestLogging: true }),
    // Measured: a pino child logger per request (to bind reqId) cost ~10% of /app_context throughput.
    // Requests share the server's logger; the few per-request lines carry reqId themselves.
    childLoggerFactory: (logger) => logger,
    // Fastify's 503 while closing is {error, message, statusCode}; the onRequest hook below answers in our shape.
    return503OnClosing: false,
    routerOptions: { maxParamLength: 200 },
    ...(opts.reuseCompiledSchemas ? { schemaController: { compilersFactory: { buildSerializer: sharedSerializers } } } : {}),
    // Errors the router raises before any route runs (an over-long or malformed path parameter): our shape, never Fastify's.
    frameworkErrors: (_error, _request, reply: FastifyReply) => {
      void reply.code(422).send(errorBody('validation_error', 'Invalid request: a path parameter is malformed or too long', [{ field: 'params', message: 'is malformed or too long' }]));
    },
  });
  guardConnections(app.server);
  app.decorate('clientAddress', (request: FastifyRequest) => {
    return clientAddress(request.raw.socket?.remoteAddress, request.headers['x-forwarded-for'], trusted);
  });
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  app.setValidatorCompiler(opts.reuseCompiledSchemas ? sharedValidators(validators) : validators());
  app.setErrorHandler(handleError);
  app.setNotFoundHandler((_request, reply) => {
    void reply.code(404).send(errorBody('not_found'));
  });
  // Callback-style hooks: on the hot paths an async hook costs a promise per request.
  // Step `gate` (request-steps.ts), which the fast path takes too.
  app.addHook('onRequest', stepHook<onRequestHookHandler>('gate', (request, reply, done) => {
    trackResponse(request, reply);
    reply.headers(SECURITY_HEADER_OBJECT);
    const refused = gateRefusal(request.raw, closing);
    if (refused === 'closing') {
      // Shutting down: requests still arriving on open connections are sent elsewhere, and the connection ends.
      void reply.code(503).header('retry-after', String(RETRY_AFTER_UNAVAILABLE_S)).header('connection', 'close').send(errorBody('service_unavailable'));
      return;
    }
    if (refused === 'no_host') {
      void reply.code(400).header('connection', 'close').send(errorBody('bad_request', 'An HTTP/1.1 request must carry a Host header'));
      return;
    }
    done();
  }));
  finished.add(registerAccessLog(app, opts.accessLog ?? false));
  // Step `finished`: one hook for every observer (the metrics' is added below), none when there is none.
  if (finished.any() || opts.metricsToken) {
    app.addHook('onResponse', stepHook<onResponseHookHandler>('finished', (request, reply, done) => {
      finished.tell(finishedRequest(app, request, reply), reply.elapsedTime / 1000);
      done();
    }));
  }

  await app.register(swagger, swaggerOptions(CLIENT_API_VERSION));
  // Named schemas before any route refers to them: responses serialize through them, the document names them.
  registerSchemas(app, ADMIN_SCHEMAS);
  await app.register(swaggerUi, { routePrefix: '/docs' });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  const downloads = new Downloads(opts.downloadPace);
  app.decorate('downloads', downloads);
  metaRoutes(app, opts.services);
  if (opts.metricsToken) finished.add(registerMetrics(app, opts.services, opts.metricsToken));
  await app.register(async (scope) => {
    // CORS is off unless origins are configured, and only ever on the client API: admin tokens do not belong in browsers.
    if (opts.corsOrigins) await clientCors(scope, opts.corsOrigins);
    await clientRoutes(scope, opts.services, downloads);
  });
  // Stores' webhooks: a scope of their own, whose body parser keeps the raw bytes the store signed.
  await app.register(async (scope) => storeWebhookRoutes(scope, opts.services));
  await app.register(adminRoutes, {
    prefix: '/admin/v1',
    services: opts.services,
    envToken: opts.adminToken,
    maxUploadBytes: opts.maxUploadBytes,
    sessionIdleSeconds: opts.dashboard?.sessionIdleSeconds ?? 1800,
  });
  dashboardRoutes(app, opts.dashboard?.dir ?? null);
  return app;
}
