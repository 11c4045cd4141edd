import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AdminServices } from '../domain/admin/audit.js';
import { authenticateSession, authenticateToken, checkCsrf, type Principal } from '../domain/admin/operator-sessions.js';
import { requirePermission, type Permission } from '../domain/admin/roles.js';
import { DomainError } from '../domain/errors.js';
import type { Services } from '../domain/services.js';
import { digest } from '../domain/tokens.js';
import { decodeCursor, type Cursor } from '../domain/pagination.js';
import { header } from './client-plugin.js';
import { allowSlowBody } from './connections.js';
import { checkJsonText } from './text-input.js';
import { permissionOf } from './roles.js';

declare module 'fastify' {
  interface FastifyRequest {
    actor: string;
    /** Who calls, with which role; null only on the sign-in route. */
    principal: Principal | null;
  }
}

export interface AdminAuth {
  /** The token from TOLLGATE_ADMIN_TOKEN, if set. */
  envToken: string | null;
  /** ADMIN_SESSION_IDLE_SECONDS: a dashboard session unused this long has ended. */
  sessionIdleSeconds: number;
}

export const SESSION_COOKIE = 'tollgate_session';
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Every admin route, before the body is read: who calls (an admin token in
 * `Authorization: Bearer`, or else the dashboard's session cookie, whatever
 * other Authorization scheme a proxy adds), then the
 * CSRF token of a cookie request that changes something, then the role
 * against the route's entry in the role table (a route not in it is refused
 * for everyone). Once through, the body may take longer than
 * REQUEST_TIMEOUT_MS while it keeps arriving (uploads on slow links).
 */
export function requireAdmin(app: FastifyInstance, s: Services, auth: AdminAuth): void {
  const envDigest = auth.envToken ? digest(auth.envToken) : null;
  const idleMs = auth.sessionIdleSeconds * 1000;
  app.decorateRequest('actor', '');
  app.decorateRequest('principal', null);
  app.addHook('onRequest', async (request) => {
    const needed = permissionOf(request.method, request.routeOptions.url);
    if (needed === 'public') return;
    const principal = await authenticate(request, needed);
    request.principal = principal;
    request.actor = principal.actor;
    if (!SAFE_METHODS.has(request.method)) checkCsrf(principal, header(request, 'x-csrf-token'));
    if (needed === undefined) throw new DomainError('forbidden', `${request.method} ${request.routeOptions.url ?? request.url} is not in the role table, so no role may call it`);
    requirePermission(principal.role, needed);
    allowSlowBody(request);
  });

  async function authenticate(request: FastifyRequest, needed: Permission | undefined): Promise<Principal> {
    const authorization = header(request, 'authorization');
    const cookie = cookieValue(header(request, 'cookie'), SESSION_COOKIE);
    // A Bearer is ours and decides alone (never mixed with a cookie). Another scheme beside a session cookie is a
    // proxy's own HTTP authentication in front of the dashboard (Basic in nginx), which the browser sends on every
    // request: the session decides then. Without a cookie, any Authorization is judged as a token, as always.
    const bearer = authorization !== undefined && /^bearer(\s|$)/i.test(authorization);
    if (bearer || (authorization !== undefined && cookie === undefined)) {
      return authenticateToken(s, /^Bearer\s+(\S+)\s*$/i.exec(authorization!)?.[1], envDigest, { reqId: request.id, ip: () => app.clientAddress(request) ?? undefined });
    }
    if (cookie !== undefined) return authenticateSession(s, cookie, idleMs);
    // Nothing presented: the dashboard's own calls say "sign in"; the API's say what they always did.
    throw new DomainError(needed === 'self' ? 'not_authenticated' : 'invalid_admin_token');
  }
}

/**
 * One cookie's value from a Cookie header, strictly: `name=value` pairs
 * split on `;`, no decoding (our values are base64url). The name twice
 * yields '' (no session): we set one cookie at Path=/, so a second was
 * planted by another site of the domain, and browsers send the longer path
 * first, which would sign the victim in as the planter. Garbage yields a
 * value that fails the session's shape check, never an exception.
 */
export function cookieValue(cookieHeader: string | undefined, name: string): string | undefined {
  if (cookieHeader === undefined || cookieHeader.length > 8192) return undefined;
  let found: string | undefined;
  for (const part of cookieHeader.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) {
      if (found !== undefined) return '';
      found = part.slice(eq + 1).trim();
    }
  }
  return found;
}

/** The principal of an authenticated admin request (the hook has run). */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new DomainError('not_authenticated');
  return request.principal;
}

/**
 * The admin API's JSON bodies, parsed by Fastify's own parser (prototype keys refused) but read as bytes first,
 * so text that is not UTF-8 is refused (a 422 naming the field) instead of stored with U+FFFD in its place.
 */
export function strictJsonText(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const bytes = body as Buffer;
    parse(request, bytes.toString('utf8'), (err: Error | null, value?: unknown) => {
      if (err) return done(err, undefined);
      try {
        checkJsonText(value, bytes);
      } catch (refused) {
        return done(refused as Error, undefined);
      }
      done(null, value);
    });
  });
}

/**
 * NUL is refused in every admin string (body and query): PostgreSQL text
 * cannot hold it, SQLite would truncate it in places, and no name, value,
 * note or search term needs it.
 */
export function refuseNul(app: FastifyInstance): void {
  app.addHook('preValidation', async (request) => {
    const found = findNul(request.params, 'params') ?? findNul(request.query, 'querystring') ?? (isPlainJson(request.body) ? findNul(request.body, 'body') : null);
    if (found) throw new DomainError('validation_error', `Invalid request: ${found} must not contain NUL characters`, [{ field: found, message: 'must not contain NUL characters' }]);
  });
}

function isPlainJson(body: unknown): boolean {
  return body !== null && typeof body === 'object' && typeof (body as { pipe?: unknown }).pipe !== 'function';
}

function findNul(value: unknown, path: string, depth = 0): string | null {
  if (typeof value === 'string') return value.includes('\0') ? path : null;
  if (value === null || typeof value !== 'object' || depth > 32) return null;
  for (const [key, inner] of Object.entries(value)) {
    if (key.includes('\0')) return path;
    const hit = findNul(inner, `${path}.${key}`, depth + 1);
    if (hit) return hit;
  }
  return null;
}

/** The services for one admin request, carrying who acts (for the audit log). */
export function acting(s: Services, request: FastifyRequest): AdminServices {
  return { ...s, actor: request.actor, reqId: request.id };
}

/** Lists: `?limit=` (1–500, default 50) and `?cursor=`. */
export const pageQuery = {
  limit: { type: 'integer', minimum: 1, maximum: 500, default: 50 },
  cursor: { type: 'string', maxLength: 200 },
} as const;

export function cursorOf(raw: string | undefined): Cursor | null {
  if (raw === undefined || raw === '') return null;
  const cursor = decodeCursor(raw);
  if (!cursor) throw new DomainError('validation_error', 'Invalid request: querystring.cursor is not a cursor from this API', [{ field: 'querystring.cursor', message: 'is not a valid cursor' }]);
  return cursor;
}

export function pageSchema(item: object) {
  return {
    type: 'object',
    required: ['items', 'next_cursor'],
    properties: { items: { type: 'array', items: item }, next_cursor: { type: ['string', 'null'] } },
  } as const;
}

export function page<T>(p: { items: T[]; nextCursor: string | null }): { items: T[]; next_cursor: string | null } {
  return { items: p.items, next_cursor: p.nextCursor };
}

/** An admin token, or the dashboard's session cookie (with X-CSRF-Token on writes). */
export const adminSecurity: { [scheme: string]: string[] }[] = [{ adminToken: [] }, { adminSession: [] }];
