import type { Queryable, Row } from '../db.js';
import { nullableNumber } from '../rows.js';
import { AFTER_CURSOR, cursorParams, SEEK_CURSOR, seekParam, toPage, type Cursor } from '../pagination.js';
import type { Page, TrialRecord } from '../records.js';

const COLUMNS = 'id, app_id, hwid_hash, email_key, user_id, started_at, ends_at, converted_at';

function toTrial(r: Row): TrialRecord {
  return {
    id: r.id as string,
    appId: r.app_id as string,
    hwidHash: r.hwid_hash as string,
    emailKey: (r.email_key as string | null) ?? null,
    userId: (r.user_id as string | null) ?? null,
    startedAt: Number(r.started_at),
    endsAt: Number(r.ends_at),
    convertedAt: nullableNumber(r.converted_at),
  };
}

export type TrialStatus = 'running' | 'ended' | 'converted';

export interface TrialFilter {
  status?: TrialStatus;
  hwidHash?: string;
  userId?: string;
}

function matching(appId: string, filter: TrialFilter, now: number): { where: string; params: (string | number)[] } {
  let where = 'app_id = ?';
  const params: (string | number)[] = [appId];
  if (filter.status === 'converted') where += ' AND converted_at IS NOT NULL';
  if (filter.status === 'running') where += ' AND converted_at IS NULL AND user_id IS NOT NULL AND ends_at > ?', params.push(now);
  if (filter.status === 'ended') where += ' AND converted_at IS NULL AND (user_id IS NULL OR ends_at <= ?)', params.push(now);
  if (filter.hwidHash !== undefined) where += ' AND hwid_hash = ?', params.push(filter.hwidHash);
  if (filter.userId !== undefined) where += ' AND user_id = ?', params.push(filter.userId);
  return { where, params };
}

/** Trials: one row per (app, hardware id hash) and per (app, email key) ever, enforced by unique indexes. */
export function trialsRepository(q: Queryable) {
  return {
    /** False when this device or this email already had a trial (a racing request included): the unique indexes decide. */
    async insert(t: TrialRecord): Promise<boolean> {
      return (await q.run(
        `INSERT INTO trials (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
        [t.id, t.appId, t.hwidHash, t.emailKey, t.userId, t.startedAt, t.endsAt, t.convertedAt],
      )) === 1;
    },

    async findByHwid(appId: string, hwidHash: string): Promise<TrialRecord | undefined> {
      const r = await q.one(`SELECT ${COLUMNS} FROM trials WHERE app_id = ? AND hwid_hash = ?`, [appId, hwidHash]);
      return r && toTrial(r);
    },

    async existsByEmail(appId: string, emailKey: string): Promise<boolean> {
      return (await q.one('SELECT 1 AS x FROM trials WHERE app_id = ? AND email_key = ?', [appId, emailKey])) !== undefined;
    },

    async findById(appId: string, id: string): Promise<TrialRecord | undefined> {
      const r = await q.one(`SELECT ${COLUMNS} FROM trials WHERE id = ? AND app_id = ?`, [id, appId]);
      return r && toTrial(r);
    },

    /** The user's trial converts (a license redeemed): true when it was running or ended unconverted. */
    async convert(userId: string, now: number): Promise<boolean> {
      return (await q.run('UPDATE trials SET converted_at = ? WHERE user_id = ? AND converted_at IS NULL', [now, userId])) === 1;
    },

    async list(appId: string, filter: TrialFilter, now: number, cursor: Cursor | null, limit: number): Promise<Page<TrialRecord>> {
      const match = matching(appId, filter, now);
      const rows = await q.all(
        `SELECT ${COLUMNS}, started_at AS created_at FROM trials WHERE ${match.where} AND ${SEEK_CURSOR.replace('created_at', 'started_at')}
         AND ${AFTER_CURSOR.replaceAll('created_at', 'started_at')} ORDER BY started_at, id LIMIT ?`,
        [...match.params, seekParam(cursor), ...cursorParams(cursor), limit + 1],
      );
      return toPage(rows, limit, toTrial, (r) => ({ at: Number(r.started_at), id: r.id as string }));
    },

    async count(appId: string, filter: TrialFilter, now: number): Promise<number> {
      const match = matching(appId, filter, now);
      const r = await q.one<{ n: number | string }>(`SELECT COUNT(*) AS n FROM trials WHERE ${match.where}`, match.params);
      return Number(r?.n ?? 0);
    },

    /** Trials started in [from, to), counted per bucket of `step` ms (aligned to the epoch): the dashboard's series. */
    async startedPerBucket(appId: string, from: number, to: number, step: number): Promise<Map<number, number>> {
      const rows = await q.all(
        // GROUP BY 1: PostgreSQL takes two placeholders for two different expressions.
        'SELECT (started_at - (started_at % ?)) AS at, COUNT(*) AS n FROM trials WHERE app_id = ? AND started_at >= ? AND started_at < ? GROUP BY 1',
        [step, appId, from, to],
      );
      return new Map(rows.map((r) => [Number(r.at), Number(r.n)]));
    },

    /** The operator resets a device's trial: the record goes, so the device (and its email) may start one again. */
    async delete(appId: string, id: string): Promise<boolean> {
      return (await q.run('DELETE FROM trials WHERE id = ? AND app_id = ?', [id, appId])) === 1;
    },
  };
}

export type TrialsRepository = ReturnType<typeof trialsRepository>;
