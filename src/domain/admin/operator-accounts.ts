import { randomUUID } from 'node:crypto';
import type { Cursor } from '../../store/pagination.js';
import type { Page } from '../../store/records.js';
import type { OperatorChanges, OperatorRecord } from '../../store/repositories/operators.js';
import { DomainError } from '../errors.js';
import { iso } from '../membership.js';
import type { Services } from '../service-types.js';
import { write } from '../unit-of-work.js';
import { Checker, USERNAME, usernameKey } from '../validation.js';
import { diff, type AdminServices } from './audit.js';
import { requireGrantable, type Role } from './roles.js';
import { settleOperatorTokens } from './tokens.js';

/** Operators choose their own passwords; 12 characters is the floor a dashboard with every customer's data behind it deserves. */
export const OPERATOR_PASSWORD_MIN = 12;

export interface OperatorAccountView {
  id: string;
  username: string;
  role: Role;
  totp_enabled: boolean;
  disabled: boolean;
  created_at: string;
  last_login_at: string | null;
}

export const viewOperator = (o: OperatorRecord): OperatorAccountView => ({
  id: o.id, username: o.username, role: o.role, totp_enabled: o.totpEnabled, disabled: o.disabled,
  created_at: iso(o.createdAt), last_login_at: o.lastLoginAt === null ? null : iso(o.lastLoginAt),
});

export interface NewOperator {
  username: string;
  password: string;
  role: Role;
}

/** An operator; `actorRole` is the creator's (the CLI acts as owner: whoever runs it holds the database). */
export async function createOperator(a: AdminServices, actorRole: Role, input: NewOperator): Promise<OperatorAccountView> {
  const check = new Checker();
  check.text('body.username', input.username, USERNAME);
  check.password('body.password', input.password, OPERATOR_PASSWORD_MIN);
  check.throwIfAny();
  requireGrantable(actorRole, input.role);
  const record: OperatorRecord = {
    id: randomUUID(), username: input.username, passwordHash: await a.hasher.hash(input.password), role: input.role,
    totpSecret: null, totpPendingSecret: null, totpEnabled: false, disabled: false, createdAt: a.clock(), lastLoginAt: null,
  };
  await write(a, async ({ tx, audit }) => {
    if (!(await tx.operators.insert(record, usernameKey(input.username)))) throw new DomainError('conflict', `An operator named ${input.username} already exists`);
    await audit('operator.create', null, record.id, { username: record.username, role: record.role });
  });
  return viewOperator(record);
}

export async function listOperators(s: Services, cursor: Cursor | null, limit: number): Promise<Page<OperatorAccountView>> {
  const page = await s.store.operators.list(cursor, limit);
  return { items: page.items.map(viewOperator), nextCursor: page.nextCursor };
}

export interface OperatorPatch {
  role?: Role;
  password?: string;
  disabled?: boolean;
}

/**
 * A new role, password or disabled flag. A new password or disabling ends
 * the operator's sessions. The last active owner cannot be demoted, disabled
 * or deleted: nobody could manage operators after that.
 */
export async function patchOperator(a: AdminServices, actorRole: Role, id: string, patch: OperatorPatch): Promise<OperatorAccountView> {
  const check = new Checker();
  check.password('body.password', patch.password, OPERATOR_PASSWORD_MIN);
  check.throwIfAny();
  if (patch.role !== undefined) requireGrantable(actorRole, patch.role);
  const changes: OperatorChanges = {
    ...(patch.role !== undefined && { role: patch.role }),
    ...(patch.disabled !== undefined && { disabled: patch.disabled }),
    ...(patch.password !== undefined && { passwordHash: await a.hasher.hash(patch.password) }),
  };
  return write(a, async (w) => {
    const { tx, audit } = w;
    await tx.operators.lockActiveOwners();
    const before = await tx.operators.findById(id);
    if (!before) throw new DomainError('not_found', 'Operator not found');
    await tx.operators.update(id, changes);
    await keepAnOwner(tx.operators, before);
    if (changes.passwordHash !== undefined || changes.disabled === true) await tx.operators.deleteSessionsOf(id);
    const after = (await tx.operators.findById(id))!;
    const view = viewOperator(after);
    await audit('operator.update', null, id, {
      ...diff({ role: before.role, disabled: before.disabled }, { role: after.role, disabled: after.disabled }),
      ...(patch.password !== undefined && { password_changed: true }),
    });
    // After the operator's own entry, so the log reads cause first. A new password alone leaves the tokens be:
    // it answers a leaked password, and the tokens are not the password.
    if (after.disabled && !before.disabled) await settleOperatorTokens(w, after, { revoke: 'operator disabled' }, a.clock());
    else if (after.role !== before.role) await settleOperatorTokens(w, after, { cap: after.role }, a.clock());
    return view;
  });
}

export async function deleteOperator(a: AdminServices, id: string): Promise<void> {
  await write(a, async (w) => {
    const { tx, audit } = w;
    await tx.operators.lockActiveOwners();
    const before = await tx.operators.findById(id);
    if (!before || !(await tx.operators.delete(id))) throw new DomainError('not_found', 'Operator not found');
    await keepAnOwner(tx.operators, before);
    await audit('operator.delete', null, id, { username: before.username });
    await settleOperatorTokens(w, before, { revoke: 'operator deleted' }, a.clock());
  });
}

/** For an operator who lost their authenticator: TOTP off, sessions ended; they set it up again after signing in. */
export async function resetOperatorTotp(a: AdminServices, id: string): Promise<OperatorAccountView> {
  return write(a, async ({ tx, audit }) => {
    if (!(await tx.operators.findById(id))) throw new DomainError('not_found', 'Operator not found');
    await tx.operators.disableTotp(id);
    await tx.operators.deleteSessionsOf(id);
    await audit('operator.totp_reset', null, id, {});
    return viewOperator((await tx.operators.findById(id))!);
  });
}

/**
 * Inside the write's transaction, after lockActiveOwners (without it two
 * owners demoting each other at once on PostgreSQL each see the other and
 * both go): if this change removed the last active owner, it rolls back.
 */
async function keepAnOwner(ops: { countActiveOwners(): Promise<number> }, before: OperatorRecord): Promise<void> {
  if (before.role === 'owner' && !before.disabled && (await ops.countActiveOwners()) === 0) {
    throw new DomainError('conflict', 'This is the last active owner: make another operator owner first');
  }
}
