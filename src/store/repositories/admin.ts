import type { Dialect, Queryable, Row } from '../db.js';
import { foldCase } from '../fold.js';
import type { Role } from './operators.js';
import { nullableNumber } from '../rows.js';
import type { Page } from '../records.js';
import { escapeLike } from './licenses.js';
import { AFTER_CURSOR, cursorParams, toPage, type Cursor } from '../pagination.js';

export interface AdminTokenRecord {
  id: string;
  name: string;
  /** What the token may do (src/domain/admin/roles.ts); tokens made before roles are owner. */
  role: Role;
  createdAt: number;
  lastUsedAt: number | null;
  revokedAt: number | null;
  /** The operator who minted it, by id and by username then; null when no operator did (environment token, local CLI, first start, before migration 9). */
  operatorId: string | null;
  operatorUsername: string | null;
}

export interface AuditRecord {
  id: string;
  at: number;
  actor: string;
  action: string;
  appId: string | null;
  targetId: string | null;
  details: Record<string, unknown>;
}

export interface AuditFilter {
  appId?: string;
  targetId?: string;
  action?: string;
  /** Prefix of the actor, any case. */
  actor?: string;
  since?: number;
  until?: number;
}


const TOKEN_COLUMNS = 'id, name, role, created_at, last_used_at, revoked_at, operator_id, operator_username';

function toToken(r: Row): AdminTokenRecord {
  return {
    id: r.id as string, name: r.name as string, role: r.role as Role, createdAt: Number(r.created_at), lastUsedAt: nullableNumber(r.last_used_at), revokedAt: nullableNumber(r.revoked_at),
    operatorId: (r.operator_id as string | null) ?? null, operatorUsername: (r.operator_username as string | null) ?? null,
  };
}

function toAudit(r: Row): AuditRecord {
  return {
    id: r.id as string, at: Number(r.at), actor: r.actor as string, action: r.action as string,
    appId: (r.app_id as string | null) ?? null, targetId: (r.target_id as string | null) ?? null,
    details: JSON.parse(r.details as string) as Record<string, unknown>,
  };
}

function auditMatching(filter: AuditFilter, dialect: Dialect): { where: string[]; params: (string | number)[] } {
  const where: string[] = [];
  const params: (string | number)[] = [];
  if (filter.appId) where.push('app_id = ?'), params.push(filter.appId);
  if (filter.targetId) where.push('target_id = ?'), params.push(filter.targetId);
  if (filter.action) where.push('action = ?'), params.push(filter.action);
  // Any case, from the start: `operator:alice` or `token:ci` finds that actor without the token's id in brackets.
  if (filter.actor) where.push(`${foldCase(dialect, 'actor')} LIKE ? ESCAPE '\\'`), params.push(escapeLike(filter.actor.toLowerCase()) + '%');
  if (filter.since !== undefined) where.push('at >= ?'), params.push(filter.since);
  if (filter.until !== undefined) where.push('at < ?'), params.push(filter.until);
  return { where, params };
}

export function adminRepository(q: Queryable, dialect: Dialect) {
  return {
    async insertToken(t: AdminTokenRecord, tokenHash: string): Promise<void> {
      await q.run(
        'INSERT INTO admin_tokens (id, name, role, token_hash, created_at, last_used_at, revoked_at, operator_id, operator_username) VALUES (?, ?, ?, ?, ?, NULL, NULL, ?, ?)',
        [t.id, t.name, t.role, tokenHash, t.createdAt, t.operatorId, t.operatorUsername],
      );
    },

    /** A live (unrevoked) token by the digest of the presented token. */
    async findLiveToken(tokenHash: string): Promise<AdminTokenRecord | undefined> {
      const r = await q.one(`SELECT ${TOKEN_COLUMNS} FROM admin_tokens WHERE token_hash = ? AND revoked_at IS NULL`, [tokenHash]);
      return r && toToken(r);
    },

    /** The id of a revoked token by the digest of the presented token (for the failure's log line only). */
    async revokedTokenId(tokenHash: string): Promise<string | undefined> {
      const r = await q.one<{ id: string }>('SELECT id FROM admin_tokens WHERE token_hash = ? AND revoked_at IS NOT NULL', [tokenHash]);
      return r?.id;
    },

    /** A token by its id, revoked or not. */
    async findToken(id: string): Promise<AdminTokenRecord | undefined> {
      const r = await q.one(`SELECT ${TOKEN_COLUMNS} FROM admin_tokens WHERE id = ?`, [id]);
      return r && toToken(r);
    },

    async touchToken(id: string, now: number): Promise<void> {
      await q.run('UPDATE admin_tokens SET last_used_at = ? WHERE id = ?', [now, id]);
    },

    async listTokens(cursor: Cursor | null, limit: number): Promise<Page<AdminTokenRecord>> {
      const rows = await q.all(
        `SELECT ${TOKEN_COLUMNS} FROM admin_tokens WHERE ${AFTER_CURSOR} ORDER BY created_at, id LIMIT ?`,
        [...cursorParams(cursor), limit + 1],
      );
      return toPage(rows, limit, toToken, (r) => ({ at: Number(r.created_at), id: r.id as string }));
    },

    async countTokens(): Promise<number> {
      const r = await q.one<{ n: number | string }>('SELECT COUNT(*) AS n FROM admin_tokens');
      return Number(r?.n ?? 0);
    },

    async revokeToken(id: string, now: number): Promise<boolean> {
      return (await q.run('UPDATE admin_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL', [now, id])) === 1;
    },

    /** The live tokens an operator minted, oldest first (few: one operator's). */
    async liveTokensOf(operatorId: string): Promise<AdminTokenRecord[]> {
      const rows = await q.all(`SELECT ${TOKEN_COLUMNS} FROM admin_tokens WHERE operator_id = ? AND revoked_at IS NULL ORDER BY created_at, id`, [operatorId]);
      return rows.map(toToken);
    },

    async setTokenRole(id: string, role: Role): Promise<boolean> {
      return (await q.run('UPDATE admin_tokens SET role = ? WHERE id = ? AND revoked_at IS NULL', [role, id])) === 1;
    },

    async insertAudit(a: AuditRecord): Promise<void> {
      await q.run('INSERT INTO audit_log (id, at, actor, action, app_id, target_id, details) VALUES (?, ?, ?, ?, ?, ?, ?)', [
        a.id, a.at, a.actor, a.action, a.appId, a.targetId, JSON.stringify(a.details),
      ]);
    },

    /** Newest first, keyset-paginated on (at, id) descending. */
    async listAudit(filter: AuditFilter, cursor: { at: number; id: string } | null, limit: number): Promise<Page<AuditRecord>> {
      const { where, params } = auditMatching(filter, dialect);
      if (cursor) {
        where.push('(at < ? OR (at = ? AND id < ?))');
        params.push(cursor.at, cursor.at, cursor.id);
      }
      const rows = await q.all(
        `SELECT id, at, actor, action, app_id, target_id, details FROM audit_log ${where.length ? 'WHERE ' + where.join(' AND ') : ''} ORDER BY at DESC, id DESC LIMIT ?`,
        [...params, limit + 1],
      );
      const more = rows.length > limit;
      const kept = (more ? rows.slice(0, limit) : rows).map(toAudit);
      const last = kept.at(-1);
      return { items: kept, nextCursor: more && last ? Buffer.from(`${last.at}:${last.id}`).toString('base64url') : null };
    },

    async countAudit(filter: AuditFilter): Promise<number> {
      const { where, params } = auditMatching(filter, dialect);
      const r = await q.one<{ n: number | string }>(`SELECT COUNT(*) AS n FROM audit_log ${where.length ? 'WHERE ' + where.join(' AND ') : ''}`, params);
      return Number(r?.n ?? 0);
    },
  };
}

export type AdminRepository = ReturnType<typeof adminRepository>;
