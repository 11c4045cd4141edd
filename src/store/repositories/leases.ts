import { ForeignKeyViolation, type Queryable } from '../db.js';

export interface LeaseIssue {
  appId: string;
  userId: string;
  hwidHash: string;
  leaseId: string;
  issuedAt: number;
}

/** lease_devices (migration 6): the lease sequence of each (app, user, hashed hardware id). */
export function leasesRepository(q: Queryable) {
  return {
    /**
     * The next seq of this device: 1 for a new device, else the stored one
     * plus one, taken by ONE upsert so concurrent calls each get their own
     * (the row is locked by the conflict update; SQLite serialises writers).
     * A read-then-write in JS would hand two parallel calls the same seq, and
     * a client could then not tell which lease supersedes the other.
     * Undefined when the user no longer exists in this app (deleted meanwhile).
     */
    async nextSeq(l: LeaseIssue): Promise<number | undefined> {
      try {
        const row = await q.one<{ seq: unknown }>(
          `INSERT INTO lease_devices (app_id, user_id, hwid_hash, seq, last_lease_id, issued_at)
           SELECT ?, id, ?, 1, ?, ? FROM users WHERE id = ? AND app_id = ?
           ON CONFLICT (app_id, user_id, hwid_hash)
           DO UPDATE SET seq = lease_devices.seq + 1, last_lease_id = excluded.last_lease_id, issued_at = excluded.issued_at
           RETURNING seq`,
          [l.appId, l.hwidHash, l.leaseId, l.issuedAt, l.userId, l.appId],
        );
        return row === undefined ? undefined : Number(row.seq);
      } catch (err) {
        // PostgreSQL: the user was deleted by a transaction that committed after our SELECT saw it.
        if (err instanceof ForeignKeyViolation) return undefined;
        throw err;
      }
    },

    /** The stored seq of a device, for tests and the admin view; undefined if it never had a lease. */
    async seqOf(appId: string, userId: string, hwidHash: string): Promise<number | undefined> {
      const row = await q.one<{ seq: unknown }>('SELECT seq FROM lease_devices WHERE app_id = ? AND user_id = ? AND hwid_hash = ?', [appId, userId, hwidHash]);
      return row === undefined ? undefined : Number(row.seq);
    },
  };
}

export type LeasesRepository = ReturnType<typeof leasesRepository>;
