import { randomUUID } from 'node:crypto';
import type { Repositories } from '../../store/index.js';
import type { Cursor } from '../../store/pagination.js';
import type { BanRecord, BanType, Page } from '../../store/records.js';
import type { BanFilter } from '../../store/repositories/bans.js';
import { DomainError, validationError } from '../errors.js';
import { parseIpRange } from '../../net/address.js';
import { iso } from '../membership.js';
import type { Services } from '../service-types.js';
import { write } from '../unit-of-work.js';
import { Checker, HARDWARE_ID, LICENSE_CODE, parseTimestamp, TIMESTAMP_HINT } from '../validation.js';
import { getApp } from './apps.js';
import { requireBanType, type Role } from './roles.js';
import { type AdminServices } from './audit.js';

export const BAN_TYPES: readonly BanType[] = ['ip', 'hardware_id', 'license', 'user'];

export interface BanInput {
  type: BanType;
  value: string;
  reason?: string;
  expires_at?: string;
}

export interface BanView {
  id: string;
  type: BanType;
  value: string;
  reason: string | null;
  expires_at: string | null;
  created_at: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function viewBan(b: BanRecord): BanView {
  return { id: b.id, type: b.type, value: b.value, reason: b.reason, expires_at: b.expiresAt === null ? null : iso(b.expiresAt), created_at: iso(b.createdAt) };
}

/** Values are stored normalised (an IP range in canonical form, a user id lower-case) so matching is exact. */
function normaliseValue(type: BanType, value: string): string {
  const check = new Checker();
  switch (type) {
    case 'ip': {
      const range = parseIpRange(value);
      if (!range) throw validationError('body.value', 'must be an IP address or CIDR range');
      const full = range.family === 'ipv4' ? 32 : 128;
      return range.prefix === full ? range.address : `${range.address}/${range.prefix}`;
    }
    case 'hardware_id':
      check.text('body.value', value, HARDWARE_ID);
      break;
    case 'license':
      check.text('body.value', value, LICENSE_CODE);
      break;
    case 'user':
      if (!UUID.test(value)) check.add('body.value', 'must be a user id (UUID)');
      break;
  }
  check.throwIfAny();
  return type === 'user' ? value.toLowerCase() : value;
}

/** `actorRole` limits the types (requireBanType); owner for a caller that is not an operator's. */
export async function createBan(s: AdminServices, appId: string, input: BanInput, actorRole: Role = 'owner'): Promise<BanView> {
  await getApp(s, appId);
  requireBanType(actorRole, input.type, 'create');
  const value = normaliseValue(input.type, input.value);
  if (input.reason !== undefined && [...input.reason].length > 512) throw validationError('body.reason', 'must be at most 512 characters');
  const now = s.clock();
  let expiresAt: number | null = null;
  if (input.expires_at !== undefined) {
    expiresAt = parseTimestamp(input.expires_at);
    if (expiresAt === null) throw validationError('body.expires_at', TIMESTAMP_HINT);
    // A ban over before it starts would be listed as made while banning nobody (issue 30 item 5).
    if (expiresAt <= now) throw validationError('body.expires_at', 'must be in the future (a ban that has already lifted bans nobody)');
  }
  const ban: BanRecord = { id: randomUUID(), appId, type: input.type, value, reason: input.reason ?? null, expiresAt, createdAt: now };
  const view = viewBan(ban);
  await write(s, async ({ tx, audit, changed, forgetUser, emit }) => {
    await requireTarget(tx, ban);
    await tx.bans.lockValue(appId, ban.type, ban.value);
    const existing = await tx.bans.findActive(appId, ban.type, ban.value, now);
    if (existing) throw duplicateBan(existing);
    await tx.bans.insert(ban);
    // A banned license code may be unbanned and used again: keep it out of the audit log like every code.
    const logged = view.type === 'license' ? `…${view.value.slice(-4)}` : view.value;
    await audit('ban.create', appId, ban.id, { after: { type: view.type, value: logged, reason: view.reason, expires_at: view.expires_at } });
    await emit('ban.created', appId, { ...view, value: logged });
    if (ban.type === 'user') forgetUser(ban.value);
    changed({ bans: appId });
  });
  return view;
}

/**
 * A second ban in force on the same value bans nobody more, and lifting one would leave the other:
 * 409 as for every other duplicate the admin API refuses (an operator's username), with the ban
 * in force named so a script can adopt it, change it (lift, then ban again) or carry on
 * (docs/decisions.md, issue 30 item 5).
 */
function duplicateBan(existing: BanRecord): DomainError {
  const until = existing.expiresAt === null ? 'with no end' : `until ${iso(existing.expiresAt)}`;
  return new DomainError('conflict', `This ${existing.type} is already banned ${until}: ban ${existing.id}`);
}

/**
 * A user or license ban must name one of this app, or it would ban nothing
 * while the operator believes otherwise. A license is matched exactly as the
 * client endpoints match codes (findByCode: byte for byte, no case folding or
 * trimming), so the stored value is the one the access check compares.
 */
async function requireTarget(tx: Repositories, ban: BanRecord): Promise<void> {
  if (ban.type === 'user' && !(await tx.users.findById(ban.appId, ban.value))) throw new DomainError('not_found', 'User not found in this application');
  if (ban.type === 'license' && !(await tx.licenses.findByCode(ban.appId, ban.value))) throw new DomainError('not_found', 'License not found in this application');
}

export async function listBans(s: Services, appId: string, cursor: Cursor | null, limit: number, filter: BanFilter = {}, withTotal = false): Promise<Page<BanView>> {
  await getApp(s, appId);
  const [page, total] = await Promise.all([s.store.bans.list(appId, cursor, limit, filter), withTotal ? s.store.bans.count(appId, filter) : undefined]);
  return { items: page.items.map(viewBan), nextCursor: page.nextCursor, ...(total !== undefined && { total }) };
}

export async function deleteBan(s: AdminServices, appId: string, id: string, actorRole: Role = 'owner'): Promise<void> {
  await getApp(s, appId);
  await write(s, async ({ tx, audit, changed, emit }) => {
    const ban = await tx.bans.findById(appId, id);
    if (!ban) throw new DomainError('not_found', 'Ban not found');
    requireBanType(actorRole, ban.type, 'delete');
    if (!(await tx.bans.delete(appId, id))) throw new DomainError('not_found', 'Ban not found');
    await audit('ban.delete', appId, id, {});
    const view = viewBan(ban);
    await emit('ban.deleted', appId, { ...view, value: view.type === 'license' ? `…${view.value.slice(-4)}` : view.value });
    changed({ bans: appId });
  });
}
