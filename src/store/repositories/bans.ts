import type { Dialect, Queryable, Row } from '../db.js';
import { nullableNumber } from '../rows.js';
import { AFTER_CURSOR, cursorParams, toPage, type Cursor } from '../pagination.js';
import type { BanRecord, BanType, Page } from '../records.js';

const COLUMNS = 'id, app_id, type, value, reason, expires_at, created_at';

function toBan(r: Row): BanRecord {
  return {
    id: r.id as string,
    appId: r.app_id as string,
    type: r.type as BanType,
    value: r.value as string,
    reason: (r.reason as string | null) ?? null,
    expiresAt: nullableNumber(r.expires_at),
    createdAt: Number(r.created_at),
  };
}

export interface BanFilter {
  type?: BanType;
  /** The stored value exactly (a user id, an address or range in canonical form). */
  value?: string;
}

function matching(appId: string, filter: BanFilter): { where: string; params: string[] } {
  let where = 'app_id = ?';
  const params = [appId];
  if (filter.type) where += ' AND type = ?', params.push(filter.type);
  if (filter.value !== undefined) where += ' AND value = ?', params.push(filter.value);
  return { where, params };
}

export function bansRepository(q: Queryable, dialect: Dialect) {
  return {
    /**
     * Holds, until the transaction ends, a lock on one (app, type, value) (a hash: a collision only makes two creations wait for each other), so two requests creating
     * the same ban cannot both find none in force and both insert. SQLite's write transaction
     * (BEGIN IMMEDIATE) already admits one writer at a time; PostgreSQL's READ COMMITTED does not.
     */
    async lockValue(appId: string, type: BanType, value: string): Promise<void> {
      if (dialect === 'postgres') await q.one('SELECT pg_advisory_xact_lock(hashtextextended(?, 0))', [JSON.stringify(['ban', appId, type, value])]);
    },

    /** The oldest ban of exactly this type and stored value still in force at `now`, if any. */
    async findActive(appId: string, type: BanType, value: string, now: number): Promise<BanRecord | undefined> {
      const r = await q.one(
        `SELECT ${COLUMNS} FROM bans WHERE app_id = ? AND type = ? AND value = ? AND (expires_at IS NULL OR expires_at > ?) ORDER BY created_at, id LIMIT 1`,
        [appId, type, value, now],
      );
      return r && toBan(r);
    },

    async insert(b: BanRecord): Promise<void> {
      await q.run(`INSERT INTO bans (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)`, [
        b.id, b.appId, b.type, b.value, b.reason, b.expiresAt, b.createdAt,
      ]);
    },

    /** Every ban of the app still in force at `now` (what the access checks need). */
    async active(appId: string, now: number): Promise<BanRecord[]> {
      const rows = await q.all(`SELECT ${COLUMNS} FROM bans WHERE app_id = ? AND (expires_at IS NULL OR expires_at > ?)`, [appId, now]);
      return rows.map(toBan);
    },

    async list(appId: string, cursor: Cursor | null, limit: number, filter: BanFilter = {}): Promise<Page<BanRecord>> {
      const match = matching(appId, filter);
      const rows = await q.all(
        `SELECT ${COLUMNS} FROM bans WHERE ${match.where} AND ${AFTER_CURSOR} ORDER BY created_at, id LIMIT ?`,
        [...match.params, ...cursorParams(cursor), limit + 1],
      );
      return toPage(rows, limit, toBan, (r) => ({ at: Number(r.created_at), id: r.id as string }));
    },

    async count(appId: string, filter: BanFilter = {}): Promise<number> {
      const match = matching(appId, filter);
      const r = await q.one<{ n: number | string }>(`SELECT COUNT(*) AS n FROM bans WHERE ${match.where}`, match.params);
      return Number(r?.n ?? 0);
    },

    async findById(appId: string, id: string): Promise<BanRecord | undefined> {
      const r = await q.one(`SELECT ${COLUMNS} FROM bans WHERE id = ? AND app_id = ?`, [id, appId]);
      return r && toBan(r);
    },

    async delete(appId: string, id: string): Promise<boolean> {
      return (await q.run('DELETE FROM bans WHERE id = ? AND app_id = ?', [id, appId])) === 1;
    },
  };
}

export type BansRepository = ReturnType<typeof bansRepository>;
