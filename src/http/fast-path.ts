import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { authenticateAppCached, type RequestContext } from '../domain/access.js';
import { appContextAnswer, type AppContextAnswer } from '../domain/app-context.js';
import { clientAddress, type ProxyTrust } from '../net/proxy.js';
import type { Services } from '../domain/services.js';
import { NONCE, sha256Hex } from '../domain/signing/format.js';
import { peekSigningKey, type SigningKey } from '../domain/signing/keys.js';
import { run } from '../domain/steps.js';
import { apiKeyOf, apiSecretOf, legacyIdentity, userCredentials } from './client-plugin.js';
import { trackRawResponse } from './connections.js';
import { kHandOver, type Marked } from './hand-over.js';
import { SECURITY_HEADER_LIST, gateRefusal, type Finished } from './request-steps.js';
import { credentialsSha256, NO_BODY_SHA256, signatureOf } from './signed-answer.js';

/**
 * GET /app_context answered before Fastify sees it, when nothing about the
 * request needs more than the answer (docs/performance.md, "The fast path").
 *
 * It is the request desktop clients make most, and on it Fastify's request,
 * reply and hook runner cost as much as Tollgate's whole access check. The
 * fast path runs the same code as the route (authenticateAppCached, then
 * appContextAnswer: one implementation of the checks and the answer) and
 * writes the same bytes the route would.
 *
 * It takes the per-request steps of every answer from one list
 * (request-steps.ts, REQUEST_STEPS): the gate and its headers, the
 * application check, the signature, the access line and the metrics, each by
 * the same code as the route's hooks. It answers only the common case and
 * hands everything else to Fastify:
 *
 * - anything but exactly `GET /app_context` (a query string, HEAD, another path);
 * - what the gate refuses (while the server closes, a Host-less HTTP/1.1 request);
 * - a malformed Tollgate-Nonce, or none where the app requires one;
 * - with a nonce, an app whose signing keys are not cached or have none that
 *   signs now (the route loads them, or warns and answers unsigned);
 * - legacy credential headers while rate limits are on (step `limit` counts
 *   them before the user is looked up, asynchronously);
 * - an app that is not cached, or unknown; an address that cannot be known.
 *
 * A signed answer (a valid Tollgate-Nonce, docs/signing.md) gets the
 * Tollgate-Signature and Tollgate-Key-Cert the route's onSend hook would give
 * it (signed-answer.ts, the same code), signed at the request's clock reading.
 *
 * With CORS on (CORS_ORIGINS) there is no fast path at all: @fastify/cors adds
 * `Vary: Origin` and the exposed headers to every answer, Origin or not, and a
 * copy of that here would drift from the plugin.
 *
 * Nothing of that has been done when it hands over, and Fastify does it all
 * from the start. Once the user check has run, it is not run again: a refusal
 * (which logs and counts) or a wait for a load (a cache miss) is handed to the
 * route with the request context it ran under, and the route answers that
 * outcome (signed, when the request has a nonce) through the error handler and
 * hooks as always.
 */
export interface FastPathOptions {
  services: Services;
  requestIds: ReturnType<typeof requestIds>;
  trusted: ProxyTrust | null;
  closing(): boolean;
  /** Step `finished`: the access log's and the metrics' observers (added while the server is built: asked per request). */
  finished: Finished;
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
  const finished = o.finished;
  return (req, res) => {
    if (req.url !== ROUTE || req.method !== 'GET') return false;
    if (gateRefusal(req, o.closing()) !== null) return false;
    const h = req.headers; // built by Node for every request already (it reads Host and Expect)
    const nonce = h['tollgate-nonce'];
    // Node joins repeated unknown headers with ", ": two nonces fail the pattern, and the route refuses them.
    if (nonce !== undefined && (typeof nonce !== 'string' || !NONCE.test(nonce))) return false;
    if (s.limits.enabled && legacyIdentity(req) !== null) return false;
    let creds;
    try {
      creds = userCredentials(req, req.socket);
    } catch {
      return false; // a header that is not UTF-8: the route refuses it (422) in its own order
    }
    const ip = clientAddress(req.socket.remoteAddress, h['x-forwarded-for'], o.trusted);
    if (ip === null) return false;
    const observed = finished.any();
    const start = observed ? performance.now() : 0;
    const now = s.clock();
    let app;
    try {
      app = authenticateAppCached(s, apiKeyOf(req), apiSecretOf(req), now);
    } catch {
      return false; // refused: nothing was counted or logged, Fastify's hook refuses it again in its own order
    }
    if (app === undefined) return false;
    let key: SigningKey | null = null;
    if (nonce === undefined) {
      if (app.signaturesRequired) return false; // nonce_required, answered by the route
    } else {
      const found = peekSigningKey(s, app.id, now);
      if (found == null) return false; // not loaded, or none usable (the route warns and answers unsigned)
      key = found;
    }

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
    if (observed) whenSent(res, start, finished, ctx, app.id);
    // The route's order: the gate's headers, the handler's content type, the signing hook's two, Fastify's length.
    if (key === null) {
      res.writeHead(200, [...SECURITY_HEADER_LIST, 'content-type', JSON_UTF8, 'content-length', String(answer.bytes)]);
    } else {
      const signature = signatureOf(key, now, {
        nonce: nonce!, appId: app.id, status: 200, method: 'GET', target: ROUTE, requestBodySha256: NO_BODY_SHA256,
        credentialsSha256: credentialsSha256(h), responseLine: sha256Hex(answer.json),
      });
      res.writeHead(200, [
        ...SECURITY_HEADER_LIST, 'content-type', JSON_UTF8, 'tollgate-signature', signature, 'tollgate-key-cert', key.certificate,
        'content-length', String(answer.bytes),
      ]);
    }
    // All ASCII (as long in bytes as in characters): latin1 writes the same bytes without UTF-8 encoding.
    res.end(answer.json, answer.bytes === answer.json.length ? 'latin1' : 'utf8');
    return true;
  };
}

/** Step `finished` of a fast-path answer, on 'finish' (or 'error') as Fastify's onResponse. */
function whenSent(res: ServerResponse, start: number, finished: Finished, ctx: RequestContext, appId: string): void {
  const sent = () => {
    res.removeListener('finish', sent);
    res.removeListener('error', sent);
    const ms = performance.now() - start;
    finished.tell({ reqId: ctx.reqId!, method: 'GET', route: ROUTE, status: 200, ms: Math.round(ms * 10) / 10, ip: ctx.ip, appId, code: undefined }, ms / 1000);
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
