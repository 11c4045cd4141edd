import { parseBoolean } from '../domain/admin/content.js';
import { parseTimestamp, TIMESTAMP_HINT } from '../domain/validation.js';
import { validationError } from '../domain/errors.js';

/**
 * `?with_total=true` on the paged admin lists: the page adds `total`, every row matching the same
 * filters (one COUNT on the list's own WHERE). Off by default, so a list costs one query unless a
 * caller (the dashboard's pager, the CLI) asks.
 */
export const withTotalQuery = {
  with_total: { type: 'string', enum: ['true', 'false'], description: 'true: the page adds `total`, the count of every item matching the filters' },
} as const;

export function wantsTotal(query: { with_total?: string }): boolean {
  return parseBoolean('querystring.with_total', query.with_total) === true;
}

/** A page as the API answers it; `total` only when it was counted. */
export function listPage<T>(p: { items: T[]; nextCursor: string | null; total?: number }): { items: T[]; next_cursor: string | null; total?: number } {
  return { items: p.items, next_cursor: p.nextCursor, ...(p.total !== undefined && { total: p.total }) };
}

/**
 * An ISO 8601 parameter (query or body) as epoch milliseconds, by the one parser every admin time goes through;
 * a 422 naming it otherwise. In a query string an offset's `+` typed unencoded (`from=…T10:00+02:00`) arrives
 * as a space, which no timestamp holds otherwise: it is read back as the `+` it was.
 */
export function queryTime(field: string, raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const ms = parseTimestamp(field.startsWith('querystring.') ? raw.replace(/ (\d{2}:?\d{2})$/, '+$1') : raw);
  if (ms === null) throw validationError(field, TIMESTAMP_HINT);
  return ms;
}
