import { parseBoolean } from '../domain/admin/content.js';
import { parseTimestamp } from '../domain/validation.js';
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

/** An ISO 8601 parameter (query or body) as epoch milliseconds; a 422 naming it otherwise. */
export function queryTime(field: string, raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const ms = parseTimestamp(raw);
  if (ms === null) throw validationError(field, 'must be an ISO 8601 timestamp such as 2027-03-05T12:00:00Z');
  return ms;
}
