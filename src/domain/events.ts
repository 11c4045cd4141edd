import type { RequestContext } from './request-context.js';

/** Where a line happened: a client request, or an admin one (no client IP; the app from the path). */
export type LineContext = Pick<RequestContext, 'reqId'> & { app: { id: string }; ip?: string };

/** What writing an event line needs: the services, or anything else with the log. */
type Logs = { readonly log: EventLog };

/** Where the domain's event lines go: the server's logger. */
export interface EventLog {
  info(obj: object, msg: string): void;
  /** Failed authentication (login_failed, admin_auth_failed): what `LOG_LEVEL=warn` and `select(.level>=40)` keep. */
  warn(obj: object, msg: string): void;
  /** What LOG_LEVEL=debug adds (cache misses, change notices heard) and trace (cache hits off the fast path). */
  debug(obj: object, msg: string): void;
  trace(obj: object, msg: string): void;
  /** Whether lines of this level are written: checked before measuring anything for them. */
  enabled(level: 'debug' | 'trace'): boolean;
  /** A condition the operator must fix (a signing key this node cannot unseal); info when absent. */
  error(obj: object, msg: string): void;
}

export const silentLog: EventLog = { info: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined, trace: () => undefined, enabled: () => false };

/** A failed admin authentication, as admin_auth_failed logs it. */
export interface AdminAuthFailure {
  reqId?: string | undefined;
  ip?: string | undefined;
  /** `token`: a Bearer token that is not a live one; `sign_in`: a refused dashboard sign-in. */
  via: 'token' | 'sign_in';
  code: string;
  /** The id of a token that exists but is revoked (a leaked old token being tried, or a script never updated). */
  tokenId?: string | undefined;
  /** The operator account a sign-in named, only when it exists (else the name may be a mistyped password). */
  operator?: string | undefined;
}

/**
 * The events an operator follows at LOG_LEVEL=info (authentication failures
 * at warn, so a warn-level log still shows them), one line each, written
 * where the event happens and (for writes) once it has committed. Each line
 * has a stable `event` name for machines and a short message for people.
 * Ids only: never a password, token, license code, hardware id, username or
 * app secret (a username is often a mistyped password; codes and hardware
 * ids are credentials or ban values). One exception: admin_auth_failed names
 * the operator account a refused sign-in named, only when that account exists.
 */
export const events = {
  signedUp(s: Logs, ctx: RequestContext, userId: string, via: 'password' | 'license' | 'trial'): void {
    s.log.info({ event: 'sign_up', ...who(ctx), userId, via }, 'sign-up');
  },
  loginFailed(s: Logs, ctx: RequestContext, code: string): void {
    s.log.warn({ event: 'login_failed', ...who(ctx), code }, 'login failed');
  },
  licenseRedeemed(s: Logs, ctx: RequestContext, userId: string, licenseId: string): void {
    s.log.info({ event: 'license_redeemed', ...who(ctx), userId, licenseId }, 'license redeemed');
  },
  trialResumed(s: Logs, ctx: RequestContext, userId: string): void {
    s.log.info({ event: 'trial_resumed', ...who(ctx), userId }, 'trial resumed');
  },
  trialRefused(s: Logs, ctx: RequestContext, code: string): void {
    s.log.info({ event: 'trial_refused', ...who(ctx), code }, 'trial refused');
  },
  deviceAdded(s: Logs, ctx: RequestContext, userId: string, deviceId: string): void {
    s.log.info({ event: 'device_added', ...who(ctx), userId, deviceId }, 'device added');
  },
  deviceLimitHit(s: Logs, ctx: RequestContext, userId: string, code: 'device_mismatch' | 'device_limit'): void {
    s.log.info({ event: 'device_limit', ...who(ctx), userId, code, maxDevices: ctx.app.maxDevicesPerUser }, 'device limit hit');
  },
  banHit(s: Logs, ctx: RequestContext, ban: 'ip' | 'hardware_id' | 'user' | 'license', userId?: string): void {
    s.log.info({ event: 'ban_hit', ...who(ctx), ban, userId }, 'ban hit');
  },
  seatCheckedOut(s: Logs, ctx: RequestContext, userId: string, seatId: string): void {
    s.log.info({ event: 'seat_checked_out', ...who(ctx), userId, seatId }, 'seat checked out');
  },
  /** `by`: the device gave it back, the operator released it, or a reset (the user's or the operator's) freed it. */
  seatReleased(s: Logs, ctx: LineContext, userId: string, seatId: string, by: 'user' | 'operator' | 'reset'): void {
    s.log.info({ event: 'seat_released', ...who(ctx), userId, seatId, by }, 'seat released');
  },
  /** A seat found dead (its heartbeat too late) and deleted. */
  seatExpired(s: Logs, ctx: LineContext, userId: string, seatId: string): void {
    s.log.info({ event: 'seat_expired', ...who(ctx), userId, seatId }, 'seat expired');
  },
  devicesReset(s: Logs, ctx: RequestContext, userId: string, devicesRemoved: number): void {
    s.log.info({ event: 'devices_reset', ...who(ctx), userId, devicesRemoved }, 'devices reset by the user');
  },
  /** Never the token or the password; the operator's name only for an existing account. */
  adminAuthFailed(s: Logs, f: AdminAuthFailure): void {
    s.log.warn({ event: 'admin_auth_failed', reqId: f.reqId, ip: f.ip, via: f.via, code: f.code, tokenId: f.tokenId, operator: f.operator }, 'admin authentication failed');
  },
  /** An admin write, as its audit entry records it (without the entry's details). */
  adminWrite(s: Logs, entry: { actor: string; action: string; appId: string | null; targetId: string | null }, reqId?: string): void {
    s.log.info({ event: 'admin_write', reqId, actor: entry.actor, action: entry.action, appId: entry.appId ?? undefined, targetId: entry.targetId ?? undefined }, 'admin write');
  },
};

const who = (ctx: LineContext) => ({ reqId: ctx.reqId, appId: ctx.app.id, ip: ctx.ip });
