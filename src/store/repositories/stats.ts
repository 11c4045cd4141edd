import type { Queryable } from '../db.js';

/** One app's activity in one UTC hour (the counters of src/domain/stats.ts). */
export interface ActivityCounts {
  signUps: number;
  logins: number;
  activations: number;
  failedLogins: number;
}

export interface ActivityRow extends ActivityCounts {
  hour: number;
}

export interface BanHitsRow {
  banId: string;
  type: string;
  value: string;
  hits: number;
}

const num = (v: unknown) => Number(v ?? 0);
/** Rows per statement: 6 parameters each, well under SQLite's 32,766 and PostgreSQL's 65,535. */
const BATCH = 500;

export function statsRepository(q: Queryable) {
  return {
    /**
     * Adds one node's counts to the rows of their hours, many rows a statement. Through a SELECT
     * guarded by the app's existence: counts of an app deleted since are dropped, not a foreign-key
     * error that would fail the whole flush again and again. (The WHERE also settles SQLite's
     * INSERT … SELECT … ON CONFLICT parse.) VALUES columns are column1… in both dialects; the CASTs
     * give PostgreSQL the parameters' types.
     */
    async addActivity(rows: { appId: string; hour: number; counts: ActivityCounts }[]): Promise<void> {
      for (let i = 0; i < rows.length; i += BATCH) {
        const batch = rows.slice(i, i + BATCH);
        await q.run(
          `INSERT INTO activity_stats (app_id, hour, sign_ups, logins, activations, failed_logins)
           SELECT column1, column2, column3, column4, column5, column6
           FROM (VALUES ${batch.map(() => '(CAST(? AS TEXT), CAST(? AS BIGINT), CAST(? AS INTEGER), CAST(? AS INTEGER), CAST(? AS INTEGER), CAST(? AS INTEGER))').join(', ')}) AS v
           WHERE EXISTS (SELECT 1 FROM apps WHERE apps.id = v.column1)
           ON CONFLICT (app_id, hour) DO UPDATE SET
             sign_ups = activity_stats.sign_ups + excluded.sign_ups, logins = activity_stats.logins + excluded.logins,
             activations = activity_stats.activations + excluded.activations, failed_logins = activity_stats.failed_logins + excluded.failed_logins`,
          batch.flatMap((r) => [r.appId, r.hour, r.counts.signUps, r.counts.logins, r.counts.activations, r.counts.failedLogins]),
        );
      }
    },

    async addBanHits(rows: { appId: string; hour: number; banId: string; hits: number }[]): Promise<void> {
      for (let i = 0; i < rows.length; i += BATCH) {
        const batch = rows.slice(i, i + BATCH);
        await q.run(
          `INSERT INTO ban_hit_stats (app_id, hour, ban_id, hits)
           SELECT column1, column2, column3, column4
           FROM (VALUES ${batch.map(() => '(CAST(? AS TEXT), CAST(? AS BIGINT), CAST(? AS TEXT), CAST(? AS INTEGER))').join(', ')}) AS v
           WHERE EXISTS (SELECT 1 FROM apps WHERE apps.id = v.column1)
           ON CONFLICT (app_id, hour, ban_id) DO UPDATE SET hits = ban_hit_stats.hits + excluded.hits`,
          batch.flatMap((r) => [r.appId, r.hour, r.banId, r.hits]),
        );
      }
    },

    /** The hours in [from, to) that have counts (the others are zero). */
    async activity(appId: string, from: number, to: number): Promise<ActivityRow[]> {
      const rows = await q.all(
        'SELECT hour, sign_ups, logins, activations, failed_logins FROM activity_stats WHERE app_id = ? AND hour >= ? AND hour < ? ORDER BY hour',
        [appId, from, to],
      );
      return rows.map((r) => ({ hour: num(r.hour), signUps: num(r.sign_ups), logins: num(r.logins), activations: num(r.activations), failedLogins: num(r.failed_logins) }));
    },

    /** The bans hit most in [from, to), still in place; ties by id so pages are stable. */
    async topBanHits(appId: string, from: number, to: number, limit: number): Promise<BanHitsRow[]> {
      const rows = await q.all(
        `SELECT b.id, b.type, b.value, SUM(h.hits) AS hits FROM ban_hit_stats h JOIN bans b ON b.id = h.ban_id
         WHERE h.app_id = ? AND h.hour >= ? AND h.hour < ? GROUP BY b.id, b.type, b.value ORDER BY SUM(h.hits) DESC, b.id LIMIT ?`,
        [appId, from, to, limit],
      );
      return rows.map((r) => ({ banId: r.id as string, type: r.type as string, value: r.value as string, hits: num(r.hits) }));
    },

    /** Users whose membership is in force at `now`: lifetime, or active until later (two index range counts). */
    async activeMemberships(appId: string, now: number): Promise<number> {
      const r = await q.one(
        `SELECT (SELECT COUNT(*) FROM users WHERE app_id = ? AND is_lifetime = 1)
              + (SELECT COUNT(*) FROM users WHERE app_id = ? AND is_lifetime = 0 AND active_until > ?) AS n`,
        [appId, appId, now],
      );
      return num(r?.n);
    },
  };
}

export type StatsRepository = ReturnType<typeof statsRepository>;
