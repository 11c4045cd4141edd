import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyRequest, onRequestHookHandler, preValidationHookHandler } from 'fastify';
import { authenticateApp, authenticateAppCached, type RequestContext } from '../domain/access.js';
import type { Identity, LimitedAction } from '../domain/limits.js';
import type { RouteErrorConfig } from './errors.js';
import { DomainError } from '../domain/errors.js';
import type { Services } from '../domain/services.js';
import type { ConnectionMemo } from '../domain/connection-memo.js';
import type { UserCredentials } from '../domain/user-auth.js';
import { handedOver } from './hand-over.js';
import { noteRequestBody, readNonce } from './signing.js';
import { checkJsonText, utf8Header } from './text-input.js';
import { stepHook } from './request-steps.js';

declare module 'fastify' {
  interface FastifyRequest {
    ctx: RequestContext;
  }
}

/** SPEC 4 caps client bodies at 64 KiB: nothing a client sends legitimately comes near it. */
export const CLIENT_BODY_LIMIT = 64 * 1024;

/**
 * Step 1 of every client endpoint, before the body is even read: the
 * application headers. Also fixes the request's clock reading and client IP.
 */
export function requireApp(app: FastifyInstance, s: Services): void {
  app.decorateRequest('ctx', null as unknown as RequestContext);
  // Callback style with a synchronous fast path: the app is nearly always cached, and an async hook costs a promise per request.
  // Step `application` (request-steps.ts), which the fast path takes too.
  app.addHook('onRequest', stepHook<onRequestHookHandler>('application', (request, _reply, done) => {
    if (request.method === 'OPTIONS') return done(); // a CORS preflight carries no credentials; the CORS plugin answers it
    // The fast path (fast-path.ts) already did step 1 and handed over what came after it; the nonce it let through is read here.
    const handed = handedOver(request.raw);
    if (handed) {
      request.ctx = handed.ctx;
      return done(readNonce(request, handed.ctx.app) ?? undefined);
    }
    // Before anything is looked up or counted: a request whose address cannot be known is not served under a made-up one.
    const ip = request.server.clientAddress(request);
    if (ip === null) return done(new DomainError('invalid_client_address'));
    const now = s.clock();
    const key = apiKeyOf(request);
    const secret = apiSecretOf(request);
    let cached;
    try {
      cached = authenticateAppCached(s, key, secret, now);
    } catch (err) {
      return done(err as Error);
    }
    // The end of step 1: the nonce (docs/signing.md), refused or required before anything else of the request is done.
    if (cached) {
      request.ctx = { app: cached, ip, now, reqId: request.id };
      return done(readNonce(request, cached) ?? undefined);
    }
    authenticateApp(s, key, secret).then((found) => {
      request.ctx = { app: found, ip, now, reqId: request.id };
      done(readNonce(request, found) ?? undefined);
    }, done);
   }));
  // Step 2, before the shape is validated: a key already at its limit is refused here (a read, and for sign-ups
  // a count). The failure itself is counted by the place each credential check takes (Limiter.attempt).
  // Attached per route (only the counted ones, each knowing its action): no lookup of the route's config per request.
  app.addHook('onRoute', (route) => {
    const action = (route.config as RouteErrorConfig | undefined)?.limited;
    if (!action || !s.limits.enabled) return;
    const existing = route.preValidation === undefined ? [] : Array.isArray(route.preValidation) ? route.preValidation : [route.preValidation];
    const limit = stepHook<preValidationHookHandler>('limit', (request, _reply, done) => {
      const who = identityOf(action, request);
      if (!who) return done(); // a Bearer token: not a guessable credential, not counted
      s.limits.check(request.ctx, action, who).then(() => done(), done);
    });
    route.preValidation = [limit, ...existing];
  });
  // Clients send JSON whatever Content-Type they declare (or none): parse it as JSON, or fail with a 422.
  // Read as bytes: a signed answer covers the SHA-256 of the body exactly as received, and decoding first
  // would turn invalid UTF-8 into U+FFFD (another hash than the client's). Decoded below as before.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: CLIENT_BODY_LIMIT }, (req, body, done) => {
    const bytes = body as Buffer;
    noteRequestBody(req, bytes);
    let value: unknown;
    try {
      value = bytes.length === 0 ? undefined : JSON.parse(bytes.toString('utf8'), rejectPrototypeKeys);
    } catch {
      // Syntax errors, forbidden keys, and nesting deep enough to exhaust the stack alike: the body is not acceptable JSON.
      done(new SyntaxError('the body is not valid JSON'), undefined);
      return;
    }
    try {
      checkJsonText(value, bytes);
    } catch (err) {
      done(err as Error, undefined);
      return;
    }
    done(null, value);
  });
}

/** Defence against prototype pollution through `__proto__`/`constructor` keys in client JSON. */
function rejectPrototypeKeys(key: string, value: unknown): unknown {
  if (key === '__proto__') throw new SyntaxError('forbidden key');
  return value;
}

/** The identity a counted request names, read defensively (step 2 runs before the shape is checked). */
function identityOf(action: LimitedAction, request: FastifyRequest): Identity | null {
  const body = (request.body && typeof request.body === 'object' ? request.body : {}) as Record<string, unknown>;
  switch (action) {
    case 'signup':
      return {};
    case 'license_signup':
      return { code: body.code };
    case 'activation':
      return { username: body.username, code: body.code };
    case 'login': {
      const credentials = (body.credentials && typeof body.credentials === 'object' ? body.credentials : {}) as Record<string, unknown>;
      return { username: credentials.username, code: credentials.code };
    }
    case 'legacy_auth':
      return legacyIdentity(request);
  }
}

/** Who a request with legacy credential headers names (step 2 counts it); null for a Bearer token or none. */
export function legacyIdentity(request: WithHeaders): Identity | null {
  const h = request.headers;
  if (h.authorization !== undefined) return null;
  const username = utf8Of(first(h['x-api-username']));
  const code = utf8Of(first(h['x-api-license-code']));
  return username === undefined && code === undefined ? null : { username, code };
}

/** Fastify's request or Node's (the fast path reads the same headers the same way). */
type WithHeaders = Pick<IncomingMessage, 'headers'>;

/** A header's value (the first of repeated ones). */
export function header(request: WithHeaders, name: string): string | undefined {
  return first(request.headers[name]);
}

/*
 * The readers of GET /app_context's headers below name each header literally (`h['x-api-key']`) instead of
 * calling `header(request, name)`: one lookup site shared by every name is megamorphic to V8, and a lookup
 * of an absent header there takes its slow path. Measured with bench/instructions.mjs: 0.8k fewer
 * instructions per Bearer request by literal names.
 */

/** SPEC 5.1: the application's key and secret. */
export function apiKeyOf(request: WithHeaders): string | undefined {
  return first(request.headers['x-api-key']);
}

export function apiSecretOf(request: WithHeaders): string | undefined {
  return first(request.headers['x-api-secret']);
}

/**
 * SPEC 5.2: the user-authentication headers, as UTF-8 (a 422 naming the header that is not). A non-Bearer Authorization is a credential that fails. With
 * `socket`, the credentials carry that connection's memo (connectionMemo): the routes clients repeat.
 */
export function userCredentials(request: WithHeaders, socket?: Socket | null): UserCredentials {
  const h = request.headers;
  const authorization = first(h.authorization);
  return {
    bearer: authorization === undefined ? undefined : bearerOf(authorization),
    licenseCode: utf8Header(first(h['x-api-license-code']), 'x-api-license-code'),
    username: utf8Header(first(h['x-api-username']), 'x-api-username'),
    password: utf8Header(first(h['x-api-password']), 'x-api-password'),
    hardwareId: utf8Header(first(h['x-hardware-id']), 'x-hardware-id'),
    memo: socket === undefined ? undefined : connectionMemo(socket),
  };
}

const kMemo = Symbol('tollgate.connectionMemo');

/** The socket's memo of what its requests presented (src/domain/connection-memo.ts), made on first use. */
export function connectionMemo(socket: Socket | null | undefined): ConnectionMemo | undefined {
  if (socket == null) return undefined;
  const holder = socket as Socket & { [kMemo]?: ConnectionMemo };
  return (holder[kMemo] ??= { token: undefined, tokenDigest: undefined, password: undefined });
}

function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** The token of `Bearer <token>`; any other Authorization value is the empty token (a credential that fails). */
function bearerOf(authorization: string): string {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  return match ? match[1]! : '';
}

/**
 * Node decodes header bytes as latin1; clients send credentials as UTF-8, so read them back as such. Leniently:
 * only the limiter's count key, which userCredentials refuses (a 422) before any credential is checked.
 */
function utf8Of(value: string | undefined): string | undefined {
  return value === undefined || /^[\x00-\x7f]*$/.test(value) ? value : Buffer.from(value, 'latin1').toString('utf8');
}
