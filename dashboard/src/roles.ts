/**
 * What each role may change, mirrored from the server's rules (docs/decisions.md, issue 16) so
 * the page does not offer buttons that can only fail. The server decides: a refusal it
 * answers is shown like any other error.
 */
import type { Role } from './api';

/**
 * `delete_users` apart from `users`: support acts on users but deletes none (the server's
 * delete_users). `bans` is user and device bans; `ban_any` adds IP and license bans, which
 * support may neither create nor lift (the server's requireBanType).
 */
export type Area = 'apps' | 'licenses' | 'content' | 'users' | 'delete_users' | 'bans' | 'ban_any' | 'tokens' | 'operators' | 'keys';

const WRITE: Record<Role, ReadonlySet<Area>> = {
  owner: new Set(['apps', 'licenses', 'content', 'users', 'delete_users', 'bans', 'ban_any', 'tokens', 'operators', 'keys']),
  admin: new Set(['apps', 'licenses', 'content', 'users', 'delete_users', 'bans', 'ban_any', 'tokens']),
  support: new Set(['users', 'bans']),
  viewer: new Set(),
};

export function canWrite(role: Role, area: Area): boolean {
  return WRITE[role].has(area);
}

export const ROLES: readonly Role[] = ['owner', 'admin', 'support', 'viewer'];

export const ROLE_HELP: Record<Role, string> = {
  owner: 'everything',
  admin: 'everything except operators and signing keys',
  support: 'reads everything; acts on users (extend, devices, sessions, user and device bans), deletes none',
  viewer: 'reads everything, changes nothing',
};
