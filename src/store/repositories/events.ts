import type { Queryable, Row } from '../db.js';
import type { Page } from '../records.js';
import { encodeCursor, type Cursor } from '../pagination.js';

/** One outbox row: what changed, when, in which app, and the object after the change. */
export interface EventRecord {
  id: string;
  type: string;
  occurredAt: number;
  appId: string | null;
  data: Record<string, unknown>;
}

export interface EventFilter {
  appId?: string;
  /** Exact types; any of them. */
  types?: string[];
  from?: number;
  to?: number;
}

export const toEvent = (r: Row): EventRecord => ({
  id: r.id as string, type: r.type as string, occurredAt: Number(r.occurred_at), appId: (r.app_id as string | null) ?? null,
  data: JSON.parse(r.data as string) as Record<string, unknown>,
});

export function eventsRepository(q: Queryable) {
  return {
    async insert(e: EventRecord): Promise<void> {
      await q.run('INSERT INTO events (id, type, occurred_at, app_id, data) VALUES (?, ?, ?, ?, ?)', [e.id, e.type, e.occurredAt, e.appId, JSON.stringify(e.data)]);
    },

    /** Newest first, keyset-paginated on (occurred_at, id) descending, like the audit log. */
    async list(filter: EventFilter, cursor: Cursor | null, limit: number): Promise<Page<EventRecord>> {
      const where: string[] = [];
      const params: (string | number)[] = [];
      if (filter.appId) where.push('app_id = ?'), params.push(filter.appId);
      if (filter.types?.length) where.push(`type IN (${filter.types.map(() => '?').join(', ')})`), params.push(...filter.types);
      if (filter.from !== undefined) where.push('occurred_at >= ?'), params.push(filter.from);
      if (filter.to !== undefined) where.push('occurred_at < ?'), params.push(filter.to);
      if (cursor) where.push('(occurred_at < ? OR (occurred_at = ? AND id < ?))'), params.push(cursor.at, cursor.at, cursor.id);
      const rows = await q.all(
        `SELECT id, type, occurred_at, app_id, data FROM events ${where.length ? 'WHERE ' + where.join(' AND ') : ''} ORDER BY occurred_at DESC, id DESC LIMIT ?`,
        [...params, limit + 1],
      );
      const more = rows.length > limit;
      const kept = (more ? rows.slice(0, limit) : rows).map(toEvent);
      const last = kept.at(-1);
      return { items: kept, nextCursor: more && last ? encodeCursor({ at: last.occurredAt, id: last.id }) : null };
    },

    /** Retention: events older than `before` go, with their deliveries and attempts (cascade). */
    async deleteOlderThan(before: number, batch: number): Promise<number> {
      return q.run(`DELETE FROM events WHERE id IN (SELECT id FROM events WHERE occurred_at < ? ORDER BY occurred_at LIMIT ${Math.trunc(batch)})`, [before]);
    },

    /** Memberships that ended in [from, to): candidates of the expiry sweep. */
    async expiredBetween(from: number, to: number, limit: number): Promise<{ id: string; appId: string; activeUntil: number }[]> {
      const rows = await q.all<{ id: string; app_id: string; active_until: number | string }>(
        `SELECT id, app_id, active_until FROM users u WHERE active_until >= ? AND active_until < ? AND is_lifetime = 0
           AND NOT EXISTS (SELECT 1 FROM membership_expiries m WHERE m.user_id = u.id AND m.expired_at = u.active_until)
         ORDER BY active_until, id LIMIT ?`,
        [from, to, limit],
      );
      return rows.map((r) => ({ id: r.id, appId: r.app_id, activeUntil: Number(r.active_until) }));
    },

    /** The database's claim on one expiry: true for exactly one caller, on every node. */
    async claimExpiry(userId: string, expiredAt: number): Promise<boolean> {
      return (await q.run('INSERT INTO membership_expiries (user_id, expired_at) VALUES (?, ?) ON CONFLICT DO NOTHING', [userId, expiredAt])) === 1;
    },

    async forgetExpiriesBefore(before: number): Promise<number> {
      return q.run('DELETE FROM membership_expiries WHERE expired_at < ?', [before]);
    },
  };
}

export type EventsRepository = ReturnType<typeof eventsRepository>;
