import type { SeatRecord } from '../store/repositories/seats.js';
import { uuidv7 } from './ids.js';
import type { RequestContext } from './access.js';
import type { AdminServices } from './admin/audit.js';
import { DomainError } from './errors.js';
import { events, type LineContext } from './events.js';
import { iso } from './membership.js';
import type { Services } from './services.js';
import { run } from './steps.js';
import { ANONYMOUS_DETAIL, authenticateUser, type UserCredentials } from './user-auth.js';
import { noteExpired, seatData } from './seats.js';
import { write, type AdminWork } from './unit-of-work.js';

const YEAR_MS = 365 * 86_400_000;

/**
 * What a device reset does, the operator's and the user's alike, in the caller's transaction: every
 * device forgotten (slots freed), every session ended, every seat given back, and the audit entry.
 * One difference (docs/decisions.md, issue 25): the user's reset leaves a seat an offline lease holds
 * standing until the lease's exp (its heartbeat part ends now), since the signed lease runs on offline and
 * a reset must not free a floating seat early; such a seat emits nothing now (seat.expired when it dies).
 * The operator's reset frees every seat: the operator is trusted, and has other means against a lease
 * (banning the device or the user, rotating the signing key).
 * Returns the devices removed, the live seats released and the dead ones swept (for their log lines after COMMIT).
 */
export async function resetDevicesIn(
  w: AdminWork, appId: string, userId: string, now: number, by: 'operator' | 'user',
): Promise<{ devicesRemoved: number; seatsReleased: string[]; seatsExpired: SeatRecord[] }> {
  const { tx } = w;
  const devices = await tx.devices.listFor(userId);
  await tx.devices.deleteFor(userId);
  await tx.users.clearDeviceSlots(userId);
  await tx.sessions.deleteForUser(userId);
  const seats = by === 'user' ? await tx.seats.releaseAllByUser(userId, now) : await tx.seats.releaseAll(userId);
  const seatsReleased = seats.filter((seat) => seat.expiresAt > now).map((seat) => seat.id);
  const seatsExpired = seats.filter((seat) => seat.expiresAt <= now);
  await w.audit('user.reset_devices', appId, userId, { before: { hardware_ids: devices.map((d) => d.hardwareId), seats: seatsReleased.length } });
  await w.emit('devices.reset', appId, { user_id: userId, devices_removed: devices.length, seats_released: seatsReleased.length, by });
  for (const seat of seats) {
    const live = seat.expiresAt > now;
    await w.emit(live ? 'seat.released' : 'seat.expired', appId, { seat: seatData(seat), ...(live && { by: 'reset' }) });
  }
  w.forgetUser(userId);
  w.changed({ user: userId });
  return { devicesRemoved: devices.length, seatsReleased, seatsExpired };
}

/** The log lines of the seats a reset freed and swept (the user's and the operator's alike), once its write committed. */
export function noteResetSeats(s: Services, ctx: LineContext, userId: string, done: { seatsReleased: readonly string[]; seatsExpired: readonly SeatRecord[] }): void {
  for (const seatId of done.seatsReleased) events.seatReleased(s, ctx, userId, seatId, 'reset');
  noteExpired(s, ctx, done.seatsExpired);
}

export interface DeviceResetAnswer {
  reset_at: string;
  next_reset_at: string | null;
  devices_removed: number;
  server_time: string;
}

/** Why a self-reset is refused now: the cooldown, or the yearly cap; when it is allowed again and the last one. */
class Refused {
  constructor(readonly allowedAt: number, readonly lastAt: number, readonly why: 'cooldown' | 'yearly') {}
}

/**
 * POST /devices/reset (issue 25): the user does what the operator's reset-devices does, at most once per
 * device_reset_cooldown_seconds and device_resets_per_year times in any 365 days. Both limits are held by
 * the database: the cooldown is ONE conditional update of the user's last_self_reset_at (of parallel
 * resets exactly one passes; PostgreSQL re-checks the condition on the row the winner changed, SQLite
 * serialises writers), and the yearly count is read after it, under that row's lock. Audited with actor
 * `user:<id>`. The operator's reset is neither limited by nor counted in either.
 *
 * Order: reset_disabled before any credential is tried; then the access check of GET /app_context
 * without its device step (bans, credentials, membership); then the limits.
 */
export async function selfResetDevices(s: Services, ctx: RequestContext, creds: UserCredentials): Promise<DeviceResetAnswer> {
  const app = ctx.app;
  if (app.deviceResetCooldownSeconds <= 0) throw new DomainError('reset_disabled');
  const user = await run(authenticateUser(s, ctx, creds, false));
  if (!user) throw new DomainError('anonymous_not_allowed', ANONYMOUS_DETAIL);
  const now = ctx.now;
  const cooldownMs = app.deviceResetCooldownSeconds * 1000;
  const perYear = app.deviceResetsPerYear;
  const acting: AdminServices = { ...s, actor: `user:${user.id}`, ...(ctx.reqId !== undefined && { reqId: ctx.reqId }) };
  let outcome;
  try {
    outcome = await write(acting, async (w) => {
      if (!(await w.tx.seats.takeSelfReset(app.id, user.id, now, cooldownMs))) {
        const last = await w.tx.seats.lastSelfReset(user.id);
        if (last === null) return undefined; // the user was deleted meanwhile
        return new Refused(last + cooldownMs, last, 'cooldown');
      }
      // Earlier self-resets within the last 365 days, oldest first (this one not yet among them).
      const recent = await w.tx.seats.selfResetsSince(user.id, now - YEAR_MS);
      if (perYear !== null && recent.length >= perYear) {
        // Thrown, so the cooldown taken above rolls back with it.
        throw new Refused(recent[recent.length - perYear]! + YEAR_MS, recent.at(-1)!, 'yearly');
      }
      const done = await resetDevicesIn(w, app.id, user.id, now, 'user');
      await w.tx.seats.recordSelfReset({ id: uuidv7(), appId: app.id, userId: user.id, at: now, devicesRemoved: done.devicesRemoved });
      const all = [...recent, now];
      const yearlyNext = perYear !== null && all.length >= perYear ? all[all.length - perYear]! + YEAR_MS : -Infinity;
      return { ...done, nextAt: Math.max(now + cooldownMs, yearlyNext) };
    });
  } catch (err) {
    if (!(err instanceof Refused)) throw err;
    outcome = err;
  }
  if (outcome === undefined) throw new DomainError('invalid_credentials');
  if (outcome instanceof Refused) {
    const retryAfter = Math.max(1, Math.ceil((outcome.allowedAt - now) / 1000));
    const detail = outcome.why === 'cooldown'
      ? 'Devices were reset recently; try again later'
      : `Devices can be reset ${perYear} times a year; try again later`;
    throw new DomainError('reset_cooldown', detail).with({ retry_after: retryAfter, last_reset_at: iso(outcome.lastAt) });
  }
  events.devicesReset(s, ctx, user.id, outcome.devicesRemoved);
  noteResetSeats(s, ctx, user.id, outcome);
  return { reset_at: iso(now), next_reset_at: iso(outcome.nextAt), devices_removed: outcome.devicesRemoved, server_time: iso(now) };
}
