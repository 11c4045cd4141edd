import { randomUUID } from 'node:crypto';
import type { AdminTokenRecord } from '../../store/repositories/admin.js';
import type { Cursor } from '../../store/pagination.js';
import type { Page } from '../../store/records.js';
import { DomainError } from '../errors.js';
import { iso } from '../membership.js';
import type { Services } from '../services.js';
import { digest, newToken } from '../tokens.js';
import { Checker } from '../validation.js';
import { write } from '../unit-of-work.js';
import { type AdminServices } from './audit.js';
import { requireGrantable, type Role } from './roles.js';

export interface AdminTokenView {
  id: string;
  name: string;
  role: Role;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

const viewToken = (t: AdminTokenRecord): AdminTokenView => ({
  id: t.id, name: t.name, role: t.role, created_at: iso(t.createdAt),
  last_used_at: t.lastUsedAt === null ? null : iso(t.lastUsedAt), revoked_at: t.revokedAt === null ? null : iso(t.revokedAt),
});

async function insertToken(a: AdminServices, name: string, role: Role, details: Record<string, unknown>): Promise<AdminTokenView & { token: string }> {
  const check = new Checker();
  check.text('body.name', name, { min: 1, max: 128 });
  check.throwIfAny();
  const token = newToken('admin', a.random);
  const record: AdminTokenRecord = { id: randomUUID(), name, role, createdAt: a.clock(), lastUsedAt: null, revokedAt: null };
  await write(a, async ({ tx, audit }) => {
    await tx.admin.insertToken(record, digest(token));
    await audit('admin_token.create', null, record.id, details);
  });
  return { ...viewToken(record), token };
}

/**
 * A named token with a role: by default its creator's, never above it (a
 * support operator cannot mint an owner token). The token itself is in this
 * answer only. `actorRole` is owner for the local CLI (it holds the database).
 */
export async function createAdminToken(a: AdminServices, name: string, opts: { role?: Role | undefined; actorRole?: Role } = {}): Promise<AdminTokenView & { token: string }> {
  const actorRole = opts.actorRole ?? 'owner';
  const role = opts.role ?? actorRole;
  requireGrantable(actorRole, role);
  return insertToken(a, name, role, { name, role });
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
  const created = await insertToken({ ...s, actor: 'system' }, 'initial', 'owner', { name: 'initial', role: 'owner', reason: 'first start' });
  return created.token;
}
