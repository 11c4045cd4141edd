import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AdminServices } from '../domain/admin/audit.js';
import { authenticateAdmin } from '../domain/admin/tokens.js';
import { DomainError } from '../domain/errors.js';
import type { Services } from '../domain/services.js';
import { digest } from '../domain/tokens.js';
import { decodeCursor, type Cursor } from '../store/pagination.js';
import { header } from './client-plugin.js';
import { allowSlowBody } from './connections.js';

declare module 'fastify' {
  interface FastifyRequest {
    actor: string;
  }
}

export interface AdminAuth {
  /** The token from TOLLGATE_ADMIN_TOKEN, if set. */
  envToken: string | null;
}

/**
 * Every admin route: `Authorization: Bearer <admin token>`, before the body is
 * read. Once verified, the body may take longer than REQUEST_TIMEOUT_MS while
 * it keeps arriving (uploads of up to MAX_UPLOAD_BYTES on slow links).
 */
export function requireAdmin(app: FastifyInstance, s: Services, auth: AdminAuth): void {
  const envDigest = auth.envToken ? digest(auth.envToken) : null;
  app.decorateRequest('actor', '');
  app.addHook('onRequest', async (request) => {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header(request, 'authorization') ?? '');
    request.actor = await authenticateAdmin(s, match?.[1], envDigest);
    allowSlowBody(request);
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
  return { ...s, actor: request.actor };
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

export const adminSecurity = [{ adminToken: [] }];
