import type { FastifyInstance, FastifyReply, FastifyRequest, onSendHookHandler } from 'fastify';
import { stepHook, type FinishedObserver, type FinishedRequest } from './request-steps.js';

/**
 * The access log: one info line per answered request, what an operator needs
 * to see what clients are doing (many 401s, device mismatches, a 503 storm)
 * and nothing a reader of the log could use against a user:
 *
 * - the route pattern (`/admin/v1/apps/:app_id`), never the raw URL, whose
 *   query may carry anything a client put there; a request no route matched
 *   (404) has no pattern, so its path is logged instead, without the query
 *   and cut to PATH_MAX characters (a scanner's probes, a client's wrong base
 *   URL: the one thing that tells them apart);
 * - no header, query value or body: credentials travel in all three;
 * - the app by its id (from the authenticated request, or an admin path),
 *   never by its API key;
 * - for an error answer, its stable `code` (the `{detail, code}` body).
 *
 * Cost on the hot path, measured (docs/performance.md): two callback hooks (`errorCode` here,
 * `finished` in server.ts),
 * no child logger and no promise per request; the error code is read only
 * from error answers. Lines from Node's own connection errors (408, 431),
 * answered before Fastify sees a request, are not here (connections.ts).
 */
export function registerAccessLog(app: FastifyInstance, on: boolean): FinishedObserver | null {
  if (!on || !(app.log as { isLevelEnabled?(level: string): boolean }).isLevelEnabled?.('info')) return null;
  app.addHook('onSend', stepHook<onSendHookHandler>('errorCode', (_request, reply, payload, done) => {
    if (reply.statusCode >= 400 && typeof payload === 'string') {
      const code = CODE.exec(payload);
      if (code) errorCodes.set(reply, code[1]!);
    }
    done(null, payload);
  }));
  /** One line, of either path's answers (step `finished`, request-steps.ts). */
  return (fields) => app.log.info(fields, 'request');
}

/** What a Fastify answer tells the observers of step `finished` (the fast path builds the same fields itself). */
export function finishedRequest(app: FastifyInstance, request: FastifyRequest, reply: FastifyReply): FinishedRequest {
  const status = reply.statusCode;
  const route = request.routeOptions.url;
  return {
    reqId: request.id,
    method: request.method,
    route: route ?? 'unmatched',
    path: route === undefined ? pathOf(request.url) : undefined,
    status,
    ms: Math.round(reply.elapsedTime * 10) / 10,
    ip: request.ctx?.ip ?? app.clientAddress(request),
    appId: appIdOf(request),
    code: status >= 400 ? errorCodes.get(reply) : undefined,
  };
}

/** Longer paths are cut (with a trailing …): a line stays a line, whatever a scanner sends. */
const PATH_MAX = 200;

/** The path of a raw URL: no query, no fragment (a client may put a credential in either). */
export function pathOf(url: string): string {
  const end = url.search(/[?#]/);
  const path = end === -1 ? url : url.slice(0, end);
  return path.length > PATH_MAX ? `${path.slice(0, PATH_MAX)}…` : path;
}

/**
 * The code of a `{detail, code}` body. Inside a JSON string every quote is
 * escaped, so `"code":"` unescaped is a key; no other object of an error body
 * has one.
 */
const CODE = /"code":"([a-z0-9_]{1,64})"/;

/** Codes of error answers, from onSend to onResponse (only error answers are looked at). */
const errorCodes = new WeakMap<FastifyReply, string>();

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The app a request names: the client API's authenticated app, or an admin path's `:app_id` when it is an id. */
function appIdOf(request: FastifyRequest): string | undefined {
  const client = request.ctx?.app.id;
  if (client !== undefined) return client;
  const named = (request.params as { app_id?: unknown } | undefined)?.app_id;
  return typeof named === 'string' && UUID.test(named) ? named.toLowerCase() : undefined;
}
