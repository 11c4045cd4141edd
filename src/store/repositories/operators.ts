import type { Dialect, Queryable, Row } from '../db.js';
import { AFTER_CURSOR, cursorParams, toPage, type Cursor } from '../pagination.js';
import type { Page } from '../records.js';
import { nullableNumber } from '../rows.js';

export type Role = 'owner' | 'admin' | 'support' | 'viewer';

export interface OperatorRecord {
  id: string;
  username: string;
  passwordHash: string;
  role: Role;
  totpSecret: string | null;
  totpPendingSecret: string | null;
  totpEnabled: boolean;
  disabled: boolean;
  createdAt: number;
  lastLoginAt: number | null;
}

export interface OperatorSessionRecord {
  operatorId: string;
  csrfToken: string;
  createdAt: number;
  lastSeenAt: number;
  ip: string | null;
}

const COLUMNS = 'o.id, o.username, o.password_hash, o.role, o.totp_secret, o.totp_pending_secret, o.totp_enabled, o.disabled, o.created_at, o.last_login_at';

function toOperator(r: Row): OperatorRecord {
  return {
    id: r.id as string, username: r.username as string, passwordHash: r.password_hash as string, role: r.role as Role,
    totpSecret: (r.totp_secret as string | null) ?? null, totpPendingSecret: (r.totp_pending_secret as string | null) ?? null,
    totpEnabled: Number(r.totp_enabled) === 1, disabled: Number(r.disabled) === 1,
    createdAt: Number(r.created_at), lastLoginAt: nullableNumber(r.last_login_at),
  };
}

export interface OperatorChanges {
  role?: Role;
  passwordHash?: string;
  disabled?: boolean;
}

/** Operator accounts and their browser sessions (by the digest of the cookie). */
export function operatorsRepository(q: Queryable, dialect: Dialect) {
  return {
    /** False when the username (case-insensitively) is taken: the unique key decides, not a read before. */
    async insert(o: OperatorRecord, usernameKey: string): Promise<boolean> {
      const r = await q.one(
        `INSERT INTO operators (id, username, username_key, password_hash, role, totp_enabled, disabled, created_at)
         VALUES (?, ?, ?, ?, ?, 0, 0, ?) ON CONFLICT (username_key) DO NOTHING RETURNING id`,
        [o.id, o.username, usernameKey, o.passwordHash, o.role, o.createdAt],
      );
      return r !== undefined;
    },

    async findByUsernameKey(key: string): Promise<OperatorRecord | undefined> {
      const r = await q.one(`SELECT ${COLUMNS} FROM operators o WHERE o.username_key = ?`, [key]);
      return r && toOperator(r);
    },

    async findById(id: string): Promise<OperatorRecord | undefined> {
      const r = await q.one(`SELECT ${COLUMNS} FROM operators o WHERE o.id = ?`, [id]);
      return r && toOperator(r);
    },

    /**
     * The operator, held until the transaction ends: a token minted in their
     * name checks them here, so a concurrent delete, disable or demotion
     * (which writes this row) runs wholly before or wholly after the mint.
     * SQLite's write transactions already run one at a time.
     */
    async findForUpdate(id: string): Promise<OperatorRecord | undefined> {
      const r = await q.one(`SELECT ${COLUMNS} FROM operators o WHERE o.id = ?${dialect === 'postgres' ? ' FOR UPDATE' : ''}`, [id]);
      return r && toOperator(r);
    },

    async list(cursor: Cursor | null, limit: number): Promise<Page<OperatorRecord>> {
      const rows = await q.all(`SELECT ${COLUMNS} FROM operators o WHERE ${AFTER_CURSOR} ORDER BY created_at, id LIMIT ?`, [...cursorParams(cursor), limit + 1]);
      return toPage(rows, limit, toOperator, (r) => ({ at: Number(r.created_at), id: r.id as string }));
    },

    /**
     * Holds the active owners' rows until the transaction ends (an update
     * that changes nothing, which both dialects take as a row lock), so a
     * change that may remove an owner counts the owners left only after every
     * other such change has committed. PostgreSQL (read committed) otherwise
     * lets two owners demote each other at once, each counting the other;
     * SQLite's write transactions already run one at a time. Taken first in
     * the transaction, before any other row: two of these queue, never
     * deadlock (at worst PostgreSQL would break one off, a 503 to retry).
     */
    async lockActiveOwners(): Promise<void> {
      await q.run(`UPDATE operators SET role = role WHERE role = 'owner' AND disabled = 0`);
    },

    async countActiveOwners(): Promise<number> {
      const r = await q.one<{ n: number | string }>(`SELECT COUNT(*) AS n FROM operators WHERE role = 'owner' AND disabled = 0`);
      return Number(r?.n ?? 0);
    },

    async update(id: string, c: OperatorChanges): Promise<boolean> {
      const sets: string[] = [];
      const params: (string | number)[] = [];
      if (c.role !== undefined) sets.push('role = ?'), params.push(c.role);
      if (c.passwordHash !== undefined) sets.push('password_hash = ?'), params.push(c.passwordHash);
      if (c.disabled !== undefined) sets.push('disabled = ?'), params.push(c.disabled ? 1 : 0);
      if (sets.length === 0) return (await q.one('SELECT id FROM operators WHERE id = ?', [id])) !== undefined;
      return (await q.run(`UPDATE operators SET ${sets.join(', ')} WHERE id = ?`, [...params, id])) === 1;
    },

    async delete(id: string): Promise<boolean> {
      return (await q.run('DELETE FROM operators WHERE id = ?', [id])) === 1;
    },

    async touchLogin(id: string, now: number): Promise<void> {
      await q.run('UPDATE operators SET last_login_at = ? WHERE id = ?', [now, id]);
    },

    async setPendingTotp(id: string, secret: string | null): Promise<void> {
      await q.run('UPDATE operators SET totp_pending_secret = ? WHERE id = ?', [secret, id]);
    },

    /** The pending secret becomes the active one; `step` (the code that confirmed it) is used up. */
    async enableTotp(id: string, pending: string, step: number): Promise<boolean> {
      return (await q.run(
        'UPDATE operators SET totp_secret = totp_pending_secret, totp_pending_secret = NULL, totp_enabled = 1, totp_last_step = ? WHERE id = ? AND totp_pending_secret = ?',
        [step, id, pending],
      )) === 1;
    },

    async disableTotp(id: string): Promise<void> {
      await q.run('UPDATE operators SET totp_secret = NULL, totp_pending_secret = NULL, totp_enabled = 0, totp_last_step = 0 WHERE id = ?', [id]);
    },

    /**
     * Uses up a TOTP time step: true only for the first caller with a step
     * later than the last one used, as one conditional update (two parallel
     * logins with the same code: one wins).
     */
    async useTotpStep(id: string, step: number): Promise<boolean> {
      return (await q.run('UPDATE operators SET totp_last_step = ? WHERE id = ? AND totp_last_step < ?', [step, id, step])) === 1;
    },

    async insertSession(idHash: string, s: OperatorSessionRecord): Promise<void> {
      await q.run('INSERT INTO operator_sessions (id_hash, operator_id, csrf_token, created_at, last_seen_at, ip) VALUES (?, ?, ?, ?, ?, ?)', [
        idHash, s.operatorId, s.csrfToken, s.createdAt, s.lastSeenAt, s.ip,
      ]);
    },

    /** A session with its operator, by the digest of the cookie. */
    async findSession(idHash: string): Promise<{ session: OperatorSessionRecord; operator: OperatorRecord } | undefined> {
      const r = await q.one(
        `SELECT ${COLUMNS}, s.csrf_token, s.created_at AS s_created_at, s.last_seen_at, s.ip
         FROM operator_sessions s JOIN operators o ON o.id = s.operator_id WHERE s.id_hash = ?`,
        [idHash],
      );
      if (!r) return undefined;
      return {
        operator: toOperator(r),
        session: { operatorId: r.id as string, csrfToken: r.csrf_token as string, createdAt: Number(r.s_created_at), lastSeenAt: Number(r.last_seen_at), ip: (r.ip as string | null) ?? null },
      };
    },

    async touchSession(idHash: string, now: number): Promise<void> {
      await q.run('UPDATE operator_sessions SET last_seen_at = ? WHERE id_hash = ? AND last_seen_at < ?', [now, idHash, now]);
    },

    async deleteSession(idHash: string): Promise<void> {
      await q.run('DELETE FROM operator_sessions WHERE id_hash = ?', [idHash]);
    },

    /** Sessions created before `cutoff` (past the absolute lifetime): dead, whether or not anyone signed out. */
    async deleteSessionsCreatedBefore(cutoff: number): Promise<number> {
      return q.run('DELETE FROM operator_sessions WHERE created_at < ?', [cutoff]);
    },

    async deleteSessionsOf(operatorId: string): Promise<number> {
      return q.run('DELETE FROM operator_sessions WHERE operator_id = ?', [operatorId]);
    },
  };
}

export type OperatorsRepository = ReturnType<typeof operatorsRepository>;
