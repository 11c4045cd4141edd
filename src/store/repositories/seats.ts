import type { Dialect, Queryable, Row } from '../db.js';

/** A seat (migration 14): one device of one user, alive while expires_at > now. */
export interface SeatRecord {
  id: string;
  appId: string;
  userId: string;
  hardwareId: string;
  checkedOutAt: number;
  heartbeatAt: number;
  expiresAt: number;
  /**
   * The latest exp of an offline lease that took or renewed this seat (migration 15), null when no lease did:
   * until then the user's release and self-reset leave the seat standing (the signed lease runs on offline).
   */
  leaseUntil: number | null;
}

const COLUMNS = 'id, app_id, user_id, hardware_id, checked_out_at, heartbeat_at, expires_at, lease_until';

function toSeat(r: Row): SeatRecord {
  return {
    id: r.id as string,
    appId: r.app_id as string,
    userId: r.user_id as string,
    hardwareId: r.hardware_id as string,
    checkedOutAt: Number(r.checked_out_at),
    heartbeatAt: Number(r.heartbeat_at),
    expiresAt: Number(r.expires_at),
    leaseUntil: r.lease_until == null ? null : Number(r.lease_until),
  };
}

/** A self-reset (migration 14), for the per-year limit and the user page. */
export interface SelfResetStats {
  lastAt: number | null;
  count: number;
}

/**
 * Seats and self-resets. `dialect`: the user's row lock differs (PostgreSQL
 * `FOR UPDATE`; SQLite's write transaction already serialises every writer).
 */
export function seatsRepository(q: Queryable, dialect: Dialect) {
  /**
   * The user's release, of one device's seat or (hardwareId undefined) of all of them: those a live lease holds
   * end at lease_until (`held`), the others are deleted (`gone`). The caller holds the user's lock (lockUser, or the
   * self-reset's update of the user row). A device holds one seat at most (UNIQUE (user_id, hardware_id)): when
   * its seat is held, there is nothing to delete.
   */
  async function releaseOfUser(userId: string, now: number, hardwareId?: string): Promise<{ held: SeatRecord[]; gone: SeatRecord[] }> {
    const device = hardwareId === undefined ? '' : ' AND hardware_id = ?';
    const params = hardwareId === undefined ? [userId, now] : [userId, hardwareId, now];
    const held = await q.all(`UPDATE seats SET expires_at = lease_until WHERE user_id = ?${device} AND lease_until > ? RETURNING ${COLUMNS}`, params);
    if (hardwareId !== undefined && held.length > 0) return { held: held.map(toSeat), gone: [] };
    const gone = await q.all(`DELETE FROM seats WHERE user_id = ?${device} AND (lease_until IS NULL OR lease_until <= ?) RETURNING ${COLUMNS}`, params);
    return { held: held.map(toSeat), gone: gone.map(toSeat) };
  }

  return {
    /**
     * Serialises every seat change of this user until the transaction ends, on every node: the count of
     * live seats and the insert that follows it are then one step. False when the user no longer exists.
     */
    async lockUser(appId: string, userId: string): Promise<boolean> {
      const sql = dialect === 'postgres' ? 'SELECT id FROM users WHERE id = ? AND app_id = ? FOR UPDATE' : 'SELECT id FROM users WHERE id = ? AND app_id = ?';
      return (await q.one(sql, [userId, appId])) !== undefined;
    },

    /** Deletes the user's dead seats (their places are free already) and returns them, for the seat.expired events. */
    async sweepDead(userId: string, now: number): Promise<SeatRecord[]> {
      const rows = await q.all(`DELETE FROM seats WHERE user_id = ? AND expires_at <= ? RETURNING ${COLUMNS}`, [userId, now]);
      return rows.map(toSeat);
    },

    /**
     * Deletes up to `limit` dead seats of any user and returns them (the periodic sweep). The DELETE is the claim:
     * of nodes sweeping at once, each row comes back to one of them only.
     */
    async sweepDeadBatch(now: number, limit: number): Promise<SeatRecord[]> {
      const rows = await q.all(
        `DELETE FROM seats WHERE id IN (SELECT id FROM seats WHERE expires_at <= ? ORDER BY expires_at LIMIT ?) AND expires_at <= ? RETURNING ${COLUMNS}`,
        [now, limit, now],
      );
      return rows.map(toSeat);
    },

    async findLive(userId: string, hardwareId: string, now: number): Promise<SeatRecord | undefined> {
      const r = await q.one(`SELECT ${COLUMNS} FROM seats WHERE user_id = ? AND hardware_id = ? AND expires_at > ?`, [userId, hardwareId, now]);
      return r && toSeat(r);
    },

    /** How many seats of the user are alive, and the earliest end among them (when one frees up at the latest). */
    async countLive(userId: string, now: number): Promise<{ inUse: number; nextFreeAt: number | null }> {
      const r = await q.one<{ n: unknown; next: unknown }>('SELECT count(*) AS n, min(expires_at) AS next FROM seats WHERE user_id = ? AND expires_at > ?', [userId, now]);
      return { inUse: Number(r?.n ?? 0), nextFreeAt: r?.next == null ? null : Number(r.next) };
    },

    async insert(seat: SeatRecord): Promise<void> {
      await q.run(`INSERT INTO seats (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, [
        seat.id, seat.appId, seat.userId, seat.hardwareId, seat.checkedOutAt, seat.heartbeatAt, seat.expiresAt, seat.leaseUntil,
      ]);
    },

    /**
     * A checkout or a lease: the seat lives at least until `until` (never shortened: a lease may hold it longer).
     * A lease (`leaseUntil` its exp) also pushes lease_until on to it, never back; a checkout (null) leaves it.
     */
    async extend(id: string, now: number, until: number, leaseUntil: number | null): Promise<SeatRecord | undefined> {
      // The later of lease_until and leaseUntil, a null on either side ignored (NULL > x is NULL: the ELSE, then COALESCE).
      const r = await q.one(
        `UPDATE seats SET heartbeat_at = ?, expires_at = CASE WHEN expires_at > ? THEN expires_at ELSE ? END,
           lease_until = COALESCE(CASE WHEN lease_until > ? THEN lease_until ELSE ? END, lease_until) WHERE id = ? RETURNING ${COLUMNS}`,
        [now, until, until, leaseUntil, leaseUntil, id],
      );
      return r && toSeat(r);
    },

    /** A heartbeat: the device's seat is extended only while it is alive (a dead one is never revived); undefined otherwise. */
    async extendLive(userId: string, hardwareId: string, now: number, until: number): Promise<SeatRecord | undefined> {
      const r = await q.one(
        `UPDATE seats SET heartbeat_at = ?, expires_at = CASE WHEN expires_at > ? THEN expires_at ELSE ? END
           WHERE user_id = ? AND hardware_id = ? AND expires_at > ? RETURNING ${COLUMNS}`,
        [now, until, until, userId, hardwareId, now],
      );
      return r && toSeat(r);
    },

    /**
     * The user gives the device's seat back (releaseOfUser for this device). The caller holds the user's lock
     * (lockUser).
     */
    async releaseByUser(userId: string, hardwareId: string, now: number): Promise<{ held?: SeatRecord; gone?: SeatRecord }> {
      const { held, gone } = await releaseOfUser(userId, now, hardwareId);
      return { ...(held[0] && { held: held[0] }), ...(gone[0] && { gone: gone[0] }) };
    },

    /** The operator releases one seat of the app. */
    async releaseById(appId: string, id: string): Promise<SeatRecord | undefined> {
      const r = await q.one(`DELETE FROM seats WHERE id = ? AND app_id = ? RETURNING ${COLUMNS}`, [id, appId]);
      return r && toSeat(r);
    },

    /** Every seat of the user, dead or alive, leases or not (the operator's device reset). */
    async releaseAll(userId: string): Promise<SeatRecord[]> {
      const rows = await q.all(`DELETE FROM seats WHERE user_id = ? RETURNING ${COLUMNS}`, [userId]);
      return rows.map(toSeat);
    },

    /**
     * The user's self-reset: each seat a live lease holds (lease_until > now) is not deleted but ends at
     * lease_until (its heartbeat part ends now, its lease part cannot); every other is deleted, dead or alive,
     * and returned. The caller holds the user's row lock (the self-reset's conditional update of the user row takes
     * it), so no lease renews a seat between the two statements.
     */
    async releaseAllByUser(userId: string, now: number): Promise<SeatRecord[]> {
      return (await releaseOfUser(userId, now)).gone;
    },

    async liveOfUser(userId: string, now: number): Promise<SeatRecord[]> {
      const rows = await q.all(`SELECT ${COLUMNS} FROM seats WHERE user_id = ? AND expires_at > ? ORDER BY checked_out_at, id`, [userId, now]);
      return rows.map(toSeat);
    },

    /** The app's live seats, soonest to end first; at most `limit`, and the count of all. */
    async liveOfApp(appId: string, now: number, limit: number): Promise<{ items: SeatRecord[]; total: number }> {
      const [rows, count] = await Promise.all([
        q.all(`SELECT ${COLUMNS} FROM seats WHERE app_id = ? AND expires_at > ? ORDER BY expires_at, id LIMIT ?`, [appId, now, limit]),
        q.one<{ n: unknown }>('SELECT count(*) AS n FROM seats WHERE app_id = ? AND expires_at > ?', [appId, now]),
      ]);
      return { items: rows.map(toSeat), total: Number(count?.n ?? 0) };
    },

    /**
     * Takes the user's self-reset if the cooldown allows it: ONE conditional update, so of parallel resets
     * exactly one passes (PostgreSQL re-checks the condition on the row the first one changed; SQLite serialises).
     */
    async takeSelfReset(appId: string, userId: string, now: number, cooldownMs: number): Promise<boolean> {
      const changed = await q.run(
        'UPDATE users SET last_self_reset_at = ? WHERE id = ? AND app_id = ? AND (last_self_reset_at IS NULL OR last_self_reset_at <= ?)',
        [now, userId, appId, now - cooldownMs],
      );
      return changed === 1;
    },

    async lastSelfReset(userId: string): Promise<number | null> {
      const r = await q.one<{ at: unknown }>('SELECT last_self_reset_at AS at FROM users WHERE id = ?', [userId]);
      return r?.at == null ? null : Number(r.at);
    },

    /** The self-resets since `since`, oldest first (the per-year window). */
    async selfResetsSince(userId: string, since: number): Promise<number[]> {
      const rows = await q.all<{ at: unknown }>('SELECT at FROM device_resets WHERE user_id = ? AND at > ? ORDER BY at', [userId, since]);
      return rows.map((r) => Number(r.at));
    },

    async recordSelfReset(r: { id: string; appId: string; userId: string; at: number; devicesRemoved: number }): Promise<void> {
      await q.run('INSERT INTO device_resets (id, app_id, user_id, at, devices_removed) VALUES (?, ?, ?, ?, ?)', [r.id, r.appId, r.userId, r.at, r.devicesRemoved]);
    },

    async selfResetStats(userId: string): Promise<SelfResetStats> {
      const r = await q.one<{ n: unknown; last: unknown }>('SELECT count(*) AS n, max(at) AS last FROM device_resets WHERE user_id = ?', [userId]);
      return { count: Number(r?.n ?? 0), lastAt: r?.last == null ? null : Number(r.last) };
    },
  };
}

export type SeatsRepository = ReturnType<typeof seatsRepository>;
