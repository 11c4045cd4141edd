import type { Role } from '../../store/repositories/operators.js';
import { DomainError } from '../errors.js';

export type { Role };
export const ROLES: readonly Role[] = ['owner', 'admin', 'support', 'viewer'];

/**
 * What a route needs. Each admin route names exactly one (src/http/roles.ts);
 * a role is the set of these it holds.
 */
export type Permission =
  | 'read' // every GET of the admin API except operators
  | 'self' // who am I, my own session and TOTP
  | 'users' // extend, lifetime, reset devices, revoke sessions
  | 'delete_users' // delete a user: irreversible, so not support's (the support list stops at unban)
  | 'bans' // ban and unban
  | 'apps' // create, change, rotate the secret of, delete an app
  | 'licenses' // create and delete licenses
  | 'content' // variables and files
  | 'keys' // root and signing keys
  | 'tokens' // create and revoke admin tokens
  | 'operators'; // operator accounts

const ALL: readonly Permission[] = ['read', 'self', 'users', 'delete_users', 'bans', 'apps', 'licenses', 'content', 'keys', 'tokens', 'operators'];

/**
 * The roles, as sets: owner everything; admin all but operators and
 * keys; support reads and acts on users (extend, reset devices, revoke
 * sessions, ban, unban: not delete); viewer reads.
 */
export const GRANTS: Readonly<Record<Role, ReadonlySet<Permission>>> = {
  owner: new Set(ALL),
  admin: new Set(ALL.filter((p) => p !== 'operators' && p !== 'keys')),
  support: new Set<Permission>(['read', 'self', 'users', 'bans']),
  viewer: new Set<Permission>(['read', 'self']),
};

const RANK: Record<Role, number> = { owner: 3, admin: 2, support: 1, viewer: 0 };

const WHAT: Record<Permission, string> = {
  read: 'read the admin API', self: 'use its own session', users: 'act on users', delete_users: 'delete users', bans: 'ban or unban', apps: 'change apps',
  licenses: 'create or delete licenses', content: 'change variables or files', keys: 'manage signing keys', tokens: 'create or revoke admin tokens',
  operators: 'manage operators',
};

/**
 * Support bans users and their devices (a chargeback, a shared account), not
 * addresses or license codes: one `0.0.0.0/0` ban refuses every client of the
 * app. The other roles that hold `bans` ban anything.
 */
const SUPPORT_BAN_TYPES: ReadonlySet<string> = new Set(['user', 'hardware_id']);

/** Refuses (403 forbidden, naming the role and the type) a ban, or lifting one, of a type the role may not touch. */
export function requireBanType(role: Role, type: string, act: 'create' | 'delete'): void {
  if (role === 'support' && !SUPPORT_BAN_TYPES.has(type)) {
    throw new DomainError('forbidden', `The support role may not ${act} bans of type ${type}, only of type user or hardware_id`);
  }
}

export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value);
}

/** Refuses (403 forbidden, naming the role and the action) unless the role holds the permission. */
export function requirePermission(role: Role, needed: Permission): void {
  if (!GRANTS[role].has(needed)) throw new DomainError('forbidden', `The ${role} role may not ${WHAT[needed]}`);
}

/**
 * Nobody hands out more than they hold: a token or an operator gets at most its
 * creator's role. Nor takes away from above: `what` names another act on a
 * holder of the role (revoking an owner's token is an admin locking the owner out).
 */
export function requireGrantable(actorRole: Role, granted: Role, what = `grant the ${granted} role`): void {
  if (outranks(granted, actorRole)) throw new DomainError('forbidden', `The ${actorRole} role may not ${what}`);
}

/** Whether `role` holds more than `than` (a token above its demoted minter's new role). */
export function outranks(role: Role, than: Role): boolean {
  return RANK[role] > RANK[than];
}
