import { randomUUID } from 'node:crypto';
import type { AdminTokenRecord } from '../../store/repositories/admin.js';
import type { Cursor } from '../../store/pagination.js';
import type { Page } from '../../store/records.js';
import { DomainError } from '../errors.js';
import { iso } from '../membership.js';
import type { Services } from '../service-types.js';
import { digest, newToken } from '../tokens.js';
import { Checker } from '../validation.js';
import { write, type AdminWork } from '../unit-of-work.js';
import { type AdminServices } from './audit.js';
import type { Minter, Principal } from './operator-sessions.js';
import { outranks, requireGrantable, requirePermission, type Role } from './roles.js';

export interface AdminTokenView {
  id: string;
  name: string;
  role: Role;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
  /** The operator who minted it (null: the environment's token, the local CLI or the first start); kept after the operator is deleted. */
  operator_id: string | null;
  operator_username: string | null;
}

const viewToken = (t: AdminTokenRecord): AdminTokenView => ({
  id: t.id, name: t.name, role: t.role, created_at: iso(t.createdAt),
  last_used_at: t.lastUsedAt === null ? null : iso(t.lastUsedAt), revoked_at: t.revokedAt === null ? null : iso(t.revokedAt),
  operator_id: t.operatorId, operator_username: t.operatorUsername,
});

/** `via`: how the minter's call was authenticated, for the 401 it gets if they are gone (as the next call would). */
async function insertToken(
  a: AdminServices, name: string, role: Role, minter: Minter | null, details: Record<string, unknown>, via: Principal['kind'] = 'token',
): Promise<AdminTokenView & { token: string }> {
  const check = new Checker();
  check.text('body.name', name, { min: 1, max: 128 });
  check.throwIfAny();
  const token = newToken('admin', a.random);
  const record: AdminTokenRecord = { id: randomUUID(), name, role, createdAt: a.clock(), lastUsedAt: null, revokedAt: null,
    operatorId: minter?.id ?? null, operatorUsername: minter?.username ?? null,
  };
  await write(a, async ({ tx, audit }) => {
    if (minter) {
      // The caller was authenticated before this transaction: their operator may have been deleted, disabled or
      // demoted since, and settleOperatorTokens ran without this token. The row is held until COMMIT, so such a
      // change waits for this one (and then cuts the new token too) or has already committed and is seen here.
      const operator = await tx.operators.findForUpdate(minter.id);
      if (!operator || operator.disabled) throw new DomainError(via === 'operator' ? 'not_authenticated' : 'invalid_admin_token');
      // The route's permission and cap were checked against the role read at authentication; a demotion since
      // may have taken away minting altogether (support, viewer) or lowered the cap.
      requirePermission(operator.role, 'tokens');
      requireGrantable(operator.role, role);
    }
    await tx.admin.insertToken(record, digest(token));
    await audit('admin_token.create', null, record.id, details);
  });
  return { ...viewToken(record), token };
}

/**
 * A named token with a role: by default its creator's, never above it (a
 * support operator cannot mint an owner token). The token itself is in this
 * answer only. `minter` is the operator behind the call (operatorTokens below
 * acts on their tokens when they go or lose their role). `actorRole` is owner for the local CLI (it holds the database).
 */
export async function createAdminToken(
  a: AdminServices, name: string, opts: { role?: Role | undefined; actorRole?: Role; minter?: Minter | null; via?: Principal['kind'] } = {},
): Promise<AdminTokenView & { token: string }> {
  const actorRole = opts.actorRole ?? 'owner';
  const role = opts.role ?? actorRole;
  requireGrantable(actorRole, role);
  const minter = opts.minter ?? null;
  return insertToken(a, name, role, minter, { name, role, ...(minter && { operator_id: minter.id, operator_username: minter.username }) }, opts.via);
}

export async function listAdminTokens(s: Services, cursor: Cursor | null, limit: number, withTotal = false): Promise<Page<AdminTokenView>> {
  const [page, total] = await Promise.all([s.store.admin.listTokens(cursor, limit), withTotal ? s.store.admin.countTokens() : undefined]);
  return { items: page.items.map(viewToken), nextCursor: page.nextCursor, ...(total !== undefined && { total }) };
}

/**
 * Revokes a live token whose role is not above the caller's: an admin cannot
 * cut an owner's token (creation is capped the same way). `actorRole` is owner
 * for the local CLI.
 */
export async function revokeAdminToken(a: AdminServices, id: string, actorRole: Role = 'owner'): Promise<void> {
  await write(a, async ({ tx, audit }) => {
    const token = await tx.admin.findToken(id);
    if (!token || token.revokedAt !== null) throw new DomainError('not_found', 'Admin token not found or already revoked');
    requireGrantable(actorRole, token.role, `revoke a token of the ${token.role} role`);
    if (!(await tx.admin.revokeToken(id, a.clock()))) throw new DomainError('not_found', 'Admin token not found or already revoked');
    await audit('admin_token.revoke', null, id, {});
  });
}

/**
 * First start: no admin token anywhere (none stored, none in the environment)
 * means nobody could ever administer this server, so create one and hand it
 * to the operator once. Returns it, or null when one already exists.
 */
export async function bootstrapAdminToken(s: Services, envTokenSet: boolean): Promise<string | null> {
  if (envTokenSet || (await s.store.admin.countTokens()) > 0) return null;
  const created = await insertToken({ ...s, actor: 'system' }, 'initial', 'owner', null, { name: 'initial', role: 'owner', reason: 'first start' });
  return created.token;
}

/**
 * Inside an operator change's transaction: an operator deleted or disabled
 * takes every live token minted in their name with them (revoked, one audit
 * entry per token, so the log names each one cut); one demoted leaves them at
 * most at the new role. Re-enabling or promoting restores nothing: the tokens
 * were cut on purpose, and new ones are one click away.
 */
export async function settleOperatorTokens(
  { tx, audit }: AdminWork,
  operator: { id: string; username: string },
  change: { revoke: string } | { cap: Role },
  now: number,
): Promise<void> {
  for (const token of await tx.admin.liveTokensOf(operator.id)) {
    if ('revoke' in change) {
      if (await tx.admin.revokeToken(token.id, now)) {
        await audit('admin_token.revoke', null, token.id, { name: token.name, reason: change.revoke, operator_id: operator.id, operator_username: operator.username });
      }
    } else if (outranks(token.role, change.cap) && (await tx.admin.setTokenRole(token.id, change.cap))) {
      await audit('admin_token.update', null, token.id, { before: { role: token.role }, after: { role: change.cap }, reason: 'operator demoted', operator_id: operator.id });
    }
  }
}
