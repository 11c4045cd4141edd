import type { Cursor } from '../../store/pagination.js';
import type { Page, UserRecord } from '../../store/records.js';
import { DomainError, validationError } from '../errors.js';
import { checkCode } from '../entitlements.js';
import { endLifetimeHoldings } from '../licenses.js';
import { applyLicense, iso, viewMembership } from '../membership.js';
import { viewUserMembership, type UserMembershipView } from '../users.js';
import type { Services } from '../service-types.js';
import { write } from '../unit-of-work.js';
import { Checker, parseTimestamp, TIMESTAMP_HINT, usernameKey } from '../validation.js';
import { noteResetSeats, resetDevicesIn } from '../device-reset.js';
import { getApp } from './apps.js';
import { viewSeat, type SeatView } from '../seats.js';
import { type AdminServices } from './audit.js';

export interface UserSummaryView {
  id: string;
  username: string;
  membership: UserMembershipView;
  created_at: string;
  password_set: boolean;
  device_count: number;
}

export interface UserDetailView extends UserSummaryView {
  devices: { id: string; hardware_id: string; created_at: string; last_seen_at: string }[];
  ips: { ip: string; first_seen_at: string; last_seen_at: string; count: number }[];
  activations: { id: string; license_id: string; occurred_at: string; minutes: number | null; grants_lifetime_access: boolean; revokes_lifetime_access: boolean }[];
  sessions: { id: string; hardware_id: string | null; ip: string | null; created_at: string; expires_at: string }[];
  signup_license_id: string | null;
  /** Every grant, live or ended, with where it came from. */
  entitlement_grants: { id: string; code: string; source: string; license_id: string | null; until: string | null; live: boolean; created_at: string }[];
  seats: SeatView[];
  self_resets: { count: number; last_at: string | null };
}

/** A user as the admin API lists it: also the `data` of the user events. */
export function summary(u: UserRecord, now: number): UserSummaryView {
  return {
    id: u.id, username: u.username, membership: viewUserMembership(u, now), created_at: iso(u.createdAt),
    password_set: u.passwordHash !== null, device_count: u.deviceCount,
  };
}

async function findUser(s: Services, appId: string, userId: string): Promise<UserRecord> {
  await getApp(s, appId);
  const user = await s.store.users.findById(appId, userId);
  if (!user) throw new DomainError('not_found', 'User not found');
  return user;
}

/** `search`: a substring of the username compared as the store compares usernames (usernameKey), or a user id. */
export async function listUsers(
  s: Services, appId: string, search: string | null, cursor: Cursor | null, limit: number, withTotal = false, only: { entitlement?: string; trial?: boolean } = {},
): Promise<Page<UserSummaryView>> {
  await getApp(s, appId);
  const now = s.clock();
  if (only.entitlement !== undefined) checkCode('querystring.entitlement', only.entitlement);
  const key = search ? usernameKey(search) : null;
  const filter = { ...only, now };
  const [page, total] = await Promise.all([s.store.users.list(appId, key, cursor, limit, filter), withTotal ? s.store.users.count(appId, key, filter) : undefined]);
  return { items: page.items.map((u) => summary(u, now)), nextCursor: page.nextCursor, ...(total !== undefined && { total }) };
}

/**
 * IP history is one row per distinct address (sign-ups and logins write it; /app_context never
 * does), so it grows with every new network a user signs in from: the detail shows the latest.
 */
export const MAX_IPS_SHOWN = 100;

export async function userDetail(s: Services, appId: string, userId: string): Promise<UserDetailView> {
  const user = await findUser(s, appId, userId);
  const now = s.clock();
  const [devices, ips, activations, sessions, grants, seats, resets] = await Promise.all([
    s.store.devices.listFor(user.id), s.store.users.ips(user.id, MAX_IPS_SHOWN), s.store.licenses.activationsOf(user.id), s.store.sessions.listLive(user.id, now),
    s.store.entitlements.listFor(user.id), s.store.seats.liveOfUser(user.id, now), s.store.seats.selfResetStats(user.id),
  ]);
  return {
    ...summary(user, now),
    signup_license_id: user.signupLicenseId,
    devices: devices.map((d) => ({ id: d.id, hardware_id: d.hardwareId, created_at: iso(d.createdAt), last_seen_at: iso(d.lastSeenAt) })),
    ips: ips.map((i) => ({ ip: i.ip, first_seen_at: iso(i.firstSeenAt), last_seen_at: iso(i.lastSeenAt), count: i.count })),
    activations: activations.map((a) => ({
      id: a.id, license_id: a.licenseId, occurred_at: iso(a.occurredAt), minutes: a.minutes,
      grants_lifetime_access: a.grantsLifetime, revokes_lifetime_access: a.revokesLifetime,
    })),
    sessions: sessions.map((x) => ({ id: x.id, hardware_id: x.hardwareId, ip: x.ip, created_at: iso(x.createdAt), expires_at: iso(x.expiresAt) })),
    entitlement_grants: grants.map((g) => ({
      id: g.id, code: g.code, source: g.source, license_id: g.licenseId, until: g.until === null ? null : iso(g.until), live: g.until === null || g.until > now, created_at: iso(g.createdAt),
    })),
    seats: seats.map(viewSeat),
    self_resets: { count: resets.count, last_at: resets.lastAt === null ? null : iso(resets.lastAt) },
  };
}

export interface UserPatch {
  extend_minutes?: number;
  lifetime?: boolean;
  active_until?: string | null;
  password?: string;
}

/**
 * Operator changes to a user. Minutes extend like a license would
 * (max(active_until, now) + minutes); lifetime true grants, false revokes;
 * a new password revokes every session of the user.
 */
export async function patchUser(a: AdminServices, appId: string, userId: string, patch: UserPatch): Promise<UserSummaryView> {
  const app = await getApp(a, appId);
  const user = await findUser(a, appId, userId);
  if (patch.password !== undefined) {
    const check = new Checker();
    check.password('body.password', patch.password, app.passwordMinLength);
    check.throwIfAny();
  }
  let explicitUntil: number | null | undefined;
  if (patch.active_until !== undefined) {
    explicitUntil = patch.active_until === null ? null : parseTimestamp(patch.active_until);
    if (patch.active_until !== null && explicitUntil === null) throw validationError('body.active_until', `${TIMESTAMP_HINT}, or null`);
  }
  const passwordHash = patch.password !== undefined ? await a.hasher.hash(patch.password) : undefined;
  const now = a.clock();
  return write(a, async ({ tx, audit, changed, forgetUser, emit }) => {
    await tx.users.lockRow(user.id, now);
    const current = await tx.users.findById(appId, user.id);
    if (!current) throw new DomainError('not_found', 'User not found'); // deleted meanwhile
    const before = viewMembership(current, now); // read under the lock: what this change replaced, not what a concurrent one did
    let state = { isLifetime: current.isLifetime, activeUntil: current.activeUntil };
    if (explicitUntil !== undefined) state.activeUntil = explicitUntil;
    if (patch.lifetime !== undefined) state = applyLicense(state, { minutes: null, grantsLifetime: patch.lifetime, revokesLifetime: !patch.lifetime }, now);
    // Revoking lifetime ends what lifetime licenses granted, as a revoking license does (licenses.ts).
    if (patch.lifetime === false && current.isLifetime) await endLifetimeHoldings(tx, user.id, now);
    if (patch.extend_minutes !== undefined) state = applyLicense(state, { minutes: patch.extend_minutes, grantsLifetime: false, revokesLifetime: false }, now);
    await tx.users.setMembership(user.id, state.isLifetime, state.activeUntil, now);
    if (passwordHash !== undefined) {
      await tx.users.setPasswordHash(user.id, passwordHash, now);
      await tx.sessions.deleteForUser(user.id);
      forgetUser(user.id);
    }
    const updated = (await tx.users.findById(appId, user.id))!;
    await audit('user.update', appId, user.id, {
      before: { membership: before }, after: { membership: viewMembership(updated, now), ...(passwordHash !== undefined && { password: 'changed' }) },
    });
    changed({ user: user.id });
    await emit('user.updated', appId, summary(updated, now));
    return summary(updated, now);
  });
}

/** Frees every device slot, ends every session and gives back every seat: the user signs in again from the device of their choice. */
export async function resetDevices(a: AdminServices, appId: string, userId: string): Promise<void> {
  const user = await findUser(a, appId, userId);
  // Unlimited, and it does not start the user's self-reset cooldown (docs/decisions.md, issue 25).
  const done = await write(a, (w) => resetDevicesIn(w, appId, user.id, a.clock(), 'operator'));
  noteResetSeats(a, { app: { id: appId }, ...(a.reqId !== undefined && { reqId: a.reqId }) }, user.id, done);
}

export async function revokeSessions(a: AdminServices, appId: string, userId: string): Promise<{ revoked: number }> {
  const user = await findUser(a, appId, userId);
  return write(a, async ({ tx, audit, changed, emit }) => {
    const revoked = (await tx.sessions.listLive(user.id, a.clock())).length; // expired ones go too, but were not live
    await tx.sessions.deleteForUser(user.id);
    await audit('user.revoke_sessions', appId, user.id, { revoked });
    await emit('user.sessions_revoked', appId, { user_id: user.id, revoked });
    changed({ user: user.id });
    return { revoked };
  });
}

/** Deletes the user and everything that is theirs (sessions, devices, IPs, activations); used licenses stay used. */
export async function deleteUser(a: AdminServices, appId: string, userId: string): Promise<void> {
  const user = await findUser(a, appId, userId);
  await write(a, async ({ tx, audit, changed, forgetUser, emit }) => {
    const current = await tx.users.findById(appId, user.id); // the record as deleted, for the audit entry
    if (!current) throw new DomainError('not_found', 'User not found'); // deleted meanwhile
    await tx.users.delete(appId, user.id);
    await audit('user.delete', appId, user.id, { before: { username: current.username, membership: viewMembership(current, a.clock()) } });
    await emit('user.deleted', appId, summary(current, a.clock()));
    forgetUser(user.id);
    changed({ user: user.id });
  });
}
