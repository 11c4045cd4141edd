import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { authenticateAppCached, type RequestContext } from '../domain/access.js';
import { appContextAnswer, type AppContextAnswer } from '../domain/app-context.js';
import { clientAddress, type ProxyTrust } from '../net/proxy.js';
import type { Services } from '../domain/services.js';
import { run } from '../domain/steps.js';
import { apiKeyOf, apiSecretOf, legacyIdentity, userCredentials } from './client-plugin.js';
import { trackRawResponse } from './connections.js';
import { kHandOver, type Marked } from './hand-over.js';

/**
 * GET /app_context answered before Fastify sees it, when nothing about the
 * request needs more than the answer (docs/performance.md, "The fast path").
 *
 * It is the request desktop clients make most, and on it Fastify's request,
 * reply and hook runner cost as much as Tollgate's whole access check. The
 * fast path runs the same code as the route (authenticateAppCached, then
 * appContextAnswer: one implementation of the checks and the answer) and
 * writes the same bytes the route would: the three security headers, the
 * content type and length, in the same order.
 *
 * It answers only the common case and hands everything else to Fastify:
 *
 * - anything but exactly `GET /app_context` (a query string, HEAD, another path);
 * - while the server closes, a Host-less HTTP/1.1 request, a Tollgate-Nonce
 *   (a signed answer);
 * - legacy credential headers while rate limits are on (step 2 counts them
 *   before the user is looked up, asynchronously);
 * - an app that is not cached, unknown, or requires signatures; an address
 *   that cannot be known.
 *
 * With CORS on (CORS_ORIGINS) there is no fast path at all: @fastify/cors adds
 * `Vary: Origin` and the exposed headers to every answer, Origin or not, and a
 * copy of that here would drift from the plugin.
 *
 * Nothing of that has been done when it hands over, and Fastify does it all
 * from the start. Once the user check has run, it is not run again: a refusal
 * (which logs and counts) or a wait for a load (a cache miss) is handed to the
 * route with the request context it ran under, and the route answers that
 * outcome through the error handler and hooks as always.
 */
export interface FastPathOptions {
  services: Services;
  requestIds: ReturnType<typeof requestIds>;
  trusted: ProxyTrust | null;
  closing(): boolean;
  /** The access log's line writer when the log is on, else null (read per request: set after the server is built). */
  accessLog(): AccessLine | null;
  /** The metrics' request observer when /metrics is on, else null. */
  metrics(): Observe | null;
}

export type AccessLine = (fields: AccessFields) => void;
export type Observe = (method: string, route: string, status: number, seconds: number) => void;

export interface AccessFields {
  reqId: string;
  method: string;
  route: string;
  /** Only when no route matched (access-log.ts): the path, without the query. */
  path?: string | undefined;
  status: number;
  ms: number;
  ip: string | null;
  appId: string | undefined;
  code: string | undefined;
}

/**
 * Request ids for both paths of one server, in Fastify's own format (`req-`
 * and a base-36 counter kept a small integer). Fastify's genReqId is `of`: a
 * request the fast path handed over keeps the id its events were logged with.
 */
export function requestIds(): { next(): string; of(raw: IncomingMessage): string } {
  let last = 0;
  const next = () => {
    last = (last + 1) & 0x7fffffff;
    return `req-${last.toString(36)}`;
  };
  return { next, of: (raw) => (raw as Marked)[kHandOver]?.ctx.reqId ?? next() };
}

const JSON_UTF8 = 'application/json; charset=utf-8';
const ROUTE = '/app_context';

/** Returns the request handler's first step: true when it answered, false to pass the request to Fastify. */
export function fastAppContext(o: FastPathOptions): (req: IncomingMessage, res: ServerResponse) => boolean {
  const s = o.services;
  return (req, res) => {
    if (req.url !== ROUTE || req.method !== 'GET' || o.closing()) return false;
    const h = req.headers; // built by Node for every request already (it reads Host and Expect)
    if (h['tollgate-nonce'] !== undefined || (h.host === undefined && req.httpVersion === '1.1')) return false;
    if (s.limits.enabled && legacyIdentity(req) !== null) return false;
    let creds;
    try {
      creds = userCredentials(req, req.socket);
    } catch {
      return false; // a header that is not UTF-8: the route refuses it (422) in its own order
    }
    const ip = clientAddress(req.socket.remoteAddress, h['x-forwarded-for'], o.trusted);
    if (ip === null) return false;
    const log = o.accessLog();
    const metrics = o.metrics();
    const start = log === null && metrics === null ? 0 : performance.now();
    const now = s.clock();
    let app;
    try {
      app = authenticateAppCached(s, apiKeyOf(req), apiSecretOf(req), now);
    } catch {
      return false; // refused: nothing was counted or logged, Fastify's hook refuses it again in its own order
    }
    if (app === undefined || app.signaturesRequired) return false;

    const ctx: RequestContext = { app, ip, now, reqId: o.requestIds.next() };
    let answer: AppContextAnswer | Promise<AppContextAnswer>;
    try {
      answer = run(appContextAnswer(s, ctx, creds));
    } catch (error) {
      (req as Marked)[kHandOver] = { ctx, error };
      return false;
    }
    if (answer instanceof Promise) {
      answer.catch(noop); // the route takes it over within this tick; until then a rejection is not unhandled
      (req as Marked)[kHandOver] = { ctx, pending: answer };
      return false;
    }

    trackRawResponse(req.socket, res);
    // As Fastify's onResponse: once the last byte is handed to the socket (a slow reader's answer takes its time).
    if (log !== null || metrics !== null) whenSent(res, start, log, metrics, ctx, app.id);
    res.writeHead(200, [
      'x-content-type-options', 'nosniff',
      'x-frame-options', 'DENY',
      'referrer-policy', 'no-referrer',
      'content-type', JSON_UTF8,
      'content-length', String(answer.bytes),
    ]);
    // All ASCII (as long in bytes as in characters): latin1 writes the same bytes without UTF-8 encoding.
    res.end(answer.json, answer.bytes === answer.json.length ? 'latin1' : 'utf8');
    return true;
  };
}

/** The access line and the metrics sample of a fast-path answer, on 'finish' (or 'error') as Fastify writes its own. */
function whenSent(res: ServerResponse, start: number, log: AccessLine | null, metrics: Observe | null, ctx: RequestContext, appId: string): void {
  const sent = () => {
    res.removeListener('finish', sent);
    res.removeListener('error', sent);
    const ms = performance.now() - start;
    try {
      log?.({ reqId: ctx.reqId!, method: 'GET', route: ROUTE, status: 200, ms: Math.round(ms * 10) / 10, ip: ctx.ip, appId, code: undefined });
      metrics?.('GET', ROUTE, 200, ms / 1000);
    } catch {
      // Bookkeeping never fails an answer that was sent (a throw in an event listener would end the process).
    }
  };
  res.on('finish', sent);
  res.on('error', sent);
}

/**
 * The server's request listener: the fast path, then Fastify. A throw from the
 * fast path (a bug: none is expected) must not escape a 'request' listener,
 * which would end the process: before an answer began, Fastify answers the
 * request from the start; after a whole answer the connection goes on; in
 * between it is ended. Logged each time.
 */
export function firstFast(
  fast: (req: IncomingMessage, res: ServerResponse) => boolean,
  fastify: (req: IncomingMessage, res: ServerResponse) => void,
  log: () => { error(obj: object, msg: string): void },
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    let answered: boolean;
    try {
      answered = fast(req, res);
    } catch (err) {
      log().error({ cause: err instanceof Error ? err.message : String(err) }, 'GET /app_context fast path failed');
      if (res.writableEnded) return; // answered whole: the connection goes on
      if (res.headersSent) {
        res.destroy(); // an answer begun and not finished cannot be completed
        return;
      }
      (req as Marked)[kHandOver] = undefined;
      answered = false;
    }
    if (!answered) fastify(req, res);
  };
}

function noop(): void {}

