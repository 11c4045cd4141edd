import type { Queryable, Row } from '../db.js';
import type { SessionRecord } from '../records.js';

const COLUMNS = 'id, app_id, user_id, hardware_id, ip, created_at, expires_at';

function toSession(r: Row): SessionRecord {
  return {
    id: r.id as string,
    appId: r.app_id as string,
    userId: r.user_id as string,
    hardwareId: (r.hardware_id as string | null) ?? null,
    ip: (r.ip as string | null) ?? null,
    createdAt: Number(r.created_at),
    expiresAt: Number(r.expires_at),
  };
}

export function sessionsRepository(q: Queryable) {
  return {
    async insert(s: SessionRecord, tokenHash: string): Promise<void> {
      await q.run(`INSERT INTO sessions (${COLUMNS}, token_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, [
        s.id, s.appId, s.userId, s.hardwareId, s.ip, s.createdAt, s.expiresAt, tokenHash,
      ]);
    },

    /** Looked up by the token's SHA-256 digest; the token itself is never stored. */
    async findByHash(tokenHash: string): Promise<SessionRecord | undefined> {
      const r = await q.one(`SELECT ${COLUMNS} FROM sessions WHERE token_hash = ?`, [tokenHash]);
      return r && toSession(r);
    },

    async delete(id: string): Promise<boolean> {
      return (await q.run('DELETE FROM sessions WHERE id = ?', [id])) === 1;
    },

    async deleteForUser(userId: string): Promise<number> {
      return q.run('DELETE FROM sessions WHERE user_id = ?', [userId]);
    },

    /** Keeps the `keep` newest sessions of the user and deletes the rest, and any that expired. */
    async trim(userId: string, keep: number, now: number): Promise<void> {
      await q.run(
        `DELETE FROM sessions WHERE user_id = ? AND (expires_at <= ? OR id NOT IN (
           SELECT id FROM sessions WHERE user_id = ? ORDER BY created_at DESC, id DESC LIMIT ?))`,
        [userId, now, userId, keep],
      );
    },

    async listLive(userId: string, now: number): Promise<SessionRecord[]> {
      const rows = await q.all(`SELECT ${COLUMNS} FROM sessions WHERE user_id = ? AND expires_at > ? ORDER BY created_at`, [userId, now]);
      return rows.map(toSession);
    },
  };
}

export type SessionsRepository = ReturnType<typeof sessionsRepository>;
