import { randomUUID } from 'node:crypto';
import type { Repositories } from '../store/index.js';
import type { AppRecord, UserRecord } from '../store/records.js';
import type { SeatRecord } from '../store/repositories/seats.js';
import type { RequestContext } from './access.js';
import { effectiveLimits } from './entitlements.js';
import { DomainError } from './errors.js';
import { events, type LineContext } from './events.js';
import { iso } from './membership.js';
import type { Services } from './services.js';
import { run } from './steps.js';
import { ANONYMOUS_DETAIL, authenticateUser, type UserCredentials } from './user-auth.js';
import { write, type Work } from './unit-of-work.js';

/** What bounds a user's seats: how many at once, and how late a heartbeat may come before its seat is dead. */
export interface SeatPolicy {
  maxSeats: number;
  heartbeatSeconds: number;
  graceSeconds: number;
}

/**
 * THE one place that says which seat policy applies to a user now: each value a license template the user
 * holds sets (issue 24's effectiveLimits: the largest max_seats, the shortest heartbeat_seconds among the
 * live holdings) overrides the app's default; the grace is the operator's, per app. Null when no max_seats
 * applies (neither a template nor the app sets one: today's behaviour, no seats).
 */
export function seatPolicy(
  app: Pick<AppRecord, 'maxDevicesPerUser' | 'maxSeats' | 'heartbeatSeconds' | 'seatGraceSeconds'>, user: Pick<UserRecord, 'holdings'>, now: number,
): SeatPolicy | null {
  const limits = effectiveLimits(app, user, now);
  const maxSeats = limits.maxSeats ?? app.maxSeats;
  if (maxSeats === null) return null;
  return { maxSeats, heartbeatSeconds: limits.heartbeatSeconds ?? app.heartbeatSeconds, graceSeconds: app.seatGraceSeconds };
}

/** How long a checkout or heartbeat keeps the seat alive: the interval plus the operator's grace. */
export const seatWindowMs = (p: SeatPolicy): number => (p.heartbeatSeconds + p.graceSeconds) * 1000;

export interface SeatAnswer {
  seat: { id: string; checked_out_at: string; expires_at: string; heartbeat_seconds: number };
  seats: { max: number; in_use: number };
  server_time: string;
}

/** The outcome of taking a seat in a transaction: the seat, or a full pool (the caller throws after commit or inside). */
export type Taken =
  | { ok: true; seat: SeatRecord; created: boolean; inUse: number; expired: SeatRecord[] }
  | { ok: false; inUse: number; nextFreeAt: number | null; expired: SeatRecord[] };

/**
 * Takes (or keeps) this device's seat until at least `until`, in the caller's transaction. A lease passes
 * its exp as `leaseUntil`: the seat's lease_until moves on to it (never back), and until then the user's
 * release and self-reset cannot free the seat; a checkout passes null and leaves lease_until as it is. The user's
 * row is locked first (PostgreSQL `FOR UPDATE`; SQLite's write transaction serialises writers), so the
 * count of live seats and the insert after it are one step on every node: N racing checkouts for
 * max_seats M give exactly M seats. Dead seats are deleted on the way (returned for their events).
 * Undefined when the user no longer exists.
 */
export async function takeSeat(
  tx: Repositories, appId: string, userId: string, hardwareId: string, policy: SeatPolicy, now: number, until: number, leaseUntil: number | null,
): Promise<Taken | undefined> {
  if (!(await tx.seats.lockUser(appId, userId))) return undefined;
  const expired = await tx.seats.sweepDead(userId, now);
  const held = await tx.seats.findLive(userId, hardwareId, now);
  // The operator's release and reset and the periodic sweep delete seats without the user's lock: the seat
  // found may be gone by the time it is extended, and the device then takes a new one like any other.
  const kept = held && (await tx.seats.extend(held.id, now, until, leaseUntil));
  if (kept) return { ok: true, seat: kept, created: false, inUse: (await tx.seats.countLive(userId, now)).inUse, expired };
  const live = await tx.seats.countLive(userId, now);
  if (live.inUse >= policy.maxSeats) return { ok: false, inUse: live.inUse, nextFreeAt: live.nextFreeAt, expired };
  const seat: SeatRecord = { id: randomUUID(), appId, userId, hardwareId, checkedOutAt: now, heartbeatAt: now, expiresAt: until, leaseUntil };
  await tx.seats.insert(seat);
  return { ok: true, seat, created: true, inUse: live.inUse + 1, expired };
}

export function seatsExhausted(policy: SeatPolicy, inUse: number, nextFreeAt: number | null, now: number): DomainError {
  return new DomainError('seats_exhausted', `All ${policy.maxSeats} seats of this account are in use`)
    .with({ in_use: inUse, max: policy.maxSeats, next_free_at: iso(nextFreeAt ?? now) });
}

export interface SeatView {
  id: string;
  user_id: string;
  hardware_id: string;
  checked_out_at: string;
  last_heartbeat_at: string;
  expires_at: string;
}

export const viewSeat = (s: SeatRecord): SeatView => ({
  id: s.id, user_id: s.userId, hardware_id: s.hardwareId, checked_out_at: iso(s.checkedOutAt), last_heartbeat_at: iso(s.heartbeatAt), expires_at: iso(s.expiresAt),
});

/** A seat in events (outbox/catalogue.ts). */
export const seatData = (seat: SeatRecord): Record<string, unknown> => ({
  id: seat.id, user_id: seat.userId, hardware_id: seat.hardwareId, checked_out_at: iso(seat.checkedOutAt), expires_at: iso(seat.expiresAt),
});

/** The events of a seat taken in this write: the dead ones swept on the way, and the seat if it is new. */
export async function emitTaken(emit: Work['emit'], appId: string, taken: Taken): Promise<void> {
  for (const seat of taken.expired) await emit('seat.expired', appId, { seat: seatData(seat) });
  if (taken.ok && taken.created) await emit('seat.checked_out', appId, { seat: seatData(taken.seat) });
}

/**
 * The periodic sweep (webhooks/runner.ts, beside the membership expiries): deletes dead seats and emits
 * seat.expired once for each, however many nodes sweep at once (the DELETE is the claim).
 */
export async function sweepDeadSeats(s: Services): Promise<number> {
  const now = s.clock();
  let swept = 0;
  for (;;) {
    const n = await write(s, async ({ tx, emit }) => {
      const dead = await tx.seats.sweepDeadBatch(now, 500);
      for (const seat of dead) await emit('seat.expired', seat.appId, { seat: seatData(seat) });
      return dead.length;
    });
    swept += n;
    if (n < 500) return swept;
  }
}

/** Checks of every seat route before the credentials: a device is named (no password hashed for a request that cannot succeed). */
async function seatUser(s: Services, ctx: RequestContext, creds: UserCredentials): Promise<{ user: UserRecord; hardwareId: string }> {
  if (creds.hardwareId === undefined) {
    throw new DomainError('hardware_id_required', undefined, [{ field: 'header.x-hardware-id', message: 'is required' }]);
  }
  const user = await run(authenticateUser(s, ctx, creds));
  if (!user) throw new DomainError('anonymous_not_allowed', ANONYMOUS_DETAIL);
  return { user, hardwareId: creds.hardwareId };
}

function requirePolicy(ctx: RequestContext, user: UserRecord): SeatPolicy {
  const policy = seatPolicy(ctx.app, user, ctx.now);
  if (!policy) throw new DomainError('seats_not_enabled');
  return policy;
}

function answer(seat: SeatRecord, policy: SeatPolicy, inUse: number, now: number): SeatAnswer {
  return {
    seat: { id: seat.id, checked_out_at: iso(seat.checkedOutAt), expires_at: iso(seat.expiresAt), heartbeat_seconds: policy.heartbeatSeconds },
    seats: { max: policy.maxSeats, in_use: inUse },
    server_time: iso(now),
  };
}

/** The log line of each dead seat a request swept on its way (checkout, lease, reset), once its write committed. */
export function noteExpired(s: Services, ctx: LineContext, expired: readonly SeatRecord[]): void {
  for (const seat of expired) events.seatExpired(s, ctx, seat.userId, seat.id);
}

/** POST /seats: checks a seat out for this device, or extends the one it holds (same id). */
export async function checkoutSeat(s: Services, ctx: RequestContext, creds: UserCredentials): Promise<SeatAnswer> {
  const { user, hardwareId } = await seatUser(s, ctx, creds);
  const policy = requirePolicy(ctx, user);
  const now = ctx.now;
  // The sweep of dead seats commits even when the pool is full: the refusal is thrown after COMMIT.
  const taken = await write(s, async ({ tx, emit }) => {
    const t = await takeSeat(tx, ctx.app.id, user.id, hardwareId, policy, now, now + seatWindowMs(policy), null);
    if (t) await emitTaken(emit, ctx.app.id, t);
    return t;
  });
  if (!taken) throw new DomainError('invalid_credentials'); // deleted after the access check read it
  noteExpired(s, ctx, taken.expired);
  if (!taken.ok) throw seatsExhausted(policy, taken.inUse, taken.nextFreeAt, now);
  if (taken.created) events.seatCheckedOut(s, ctx, user.id, taken.seat.id);
  return answer(taken.seat, policy, taken.inUse, now);
}

/**
 * POST /seats/heartbeat: extends this device's live seat. A dead or released seat is not revived (one
 * conditional update): 404 seat_not_found, and the SDK reports the seat lost (it may check out again).
 */
export async function heartbeatSeat(s: Services, ctx: RequestContext, creds: UserCredentials): Promise<SeatAnswer> {
  const { user, hardwareId } = await seatUser(s, ctx, creds);
  const policy = requirePolicy(ctx, user);
  const now = ctx.now;
  const result = await write(s, async ({ tx }) => {
    const seat = await tx.seats.extendLive(user.id, hardwareId, now, now + seatWindowMs(policy));
    return seat && { seat, inUse: (await tx.seats.countLive(user.id, now)).inUse };
  });
  if (!result) throw new DomainError('seat_not_found');
  return answer(result.seat, policy, result.inUse, now);
}

export interface ReleaseAnswer {
  released: boolean;
  /** Only when an offline lease holds the seat: it stays taken until then (the lease's exp), whatever the device says. */
  held_until?: string;
  server_time: string;
}

/**
 * DELETE /seats: gives this device's seat back. A seat an offline lease holds is not given back before the
 * lease ends (docs/decisions.md, issue 25): the signed lease runs on offline whatever the device says, so
 * releasing it early would let lease, release, lease on another device... make a floating license unlimited.
 * Such a seat ends at the lease's exp instead (its heartbeat part ends now): `released: false` and
 * `held_until`, no event (the sweep tells seat.expired when it dies). The user's row is locked first, so a
 * lease renewing the seat at the same moment comes wholly before or after.
 */
export async function releaseSeat(s: Services, ctx: RequestContext, creds: UserCredentials): Promise<ReleaseAnswer> {
  const { user, hardwareId } = await seatUser(s, ctx, creds);
  const out = await write(s, async ({ tx, emit }) => {
    await tx.seats.lockUser(ctx.app.id, user.id);
    const r = await tx.seats.releaseByUser(user.id, hardwareId, ctx.now);
    const seat = r.gone;
    if (seat) await emit(seat.expiresAt > ctx.now ? 'seat.released' : 'seat.expired', ctx.app.id, { seat: seatData(seat), ...(seat.expiresAt > ctx.now && { by: 'user' }) });
    return r;
  });
  if (out.held) return { released: false, held_until: iso(out.held.leaseUntil!), server_time: iso(ctx.now) };
  const gone = out.gone;
  const released = gone !== undefined && gone.expiresAt > ctx.now;
  if (gone && released) events.seatReleased(s, ctx, user.id, gone.id, 'user');
  else if (gone) events.seatExpired(s, ctx, user.id, gone.id);
  return { released, server_time: iso(ctx.now) };
}
