import type { RequestContext } from './access.js';
import type { Services } from './services.js';

/** Where the domain's event lines go: the server's logger, at info. */
export interface EventLog {
  info(obj: object, msg: string): void;
  /** A condition the operator must fix (a signing key this node cannot unseal); info when absent. */
  error?(obj: object, msg: string): void;
}

export const silentLog: EventLog = { info: () => undefined };

/**
 * The events an operator follows at LOG_LEVEL=info, one line each, written
 * where the event happens and (for writes) once it has committed. Each line
 * has a stable `event` name for machines and a short message for people.
 * Ids only: never a password, token, license code, hardware id, username or
 * app secret (a username is often a mistyped password; codes and hardware
 * ids are credentials or ban values).
 */
export const events = {
  signedUp(s: Services, ctx: RequestContext, userId: string, via: 'password' | 'license'): void {
    s.log.info({ event: 'sign_up', ...who(ctx), userId, via }, 'sign-up');
  },
  loginFailed(s: Services, ctx: RequestContext, code: string): void {
    s.log.info({ event: 'login_failed', ...who(ctx), code }, 'login failed');
  },
  licenseRedeemed(s: Services, ctx: RequestContext, userId: string, licenseId: string): void {
    s.log.info({ event: 'license_redeemed', ...who(ctx), userId, licenseId }, 'license redeemed');
  },
  deviceAdded(s: Services, ctx: RequestContext, userId: string, deviceId: string): void {
    s.log.info({ event: 'device_added', ...who(ctx), userId, deviceId }, 'device added');
  },
  deviceLimitHit(s: Services, ctx: RequestContext, userId: string, code: 'device_mismatch' | 'device_limit'): void {
    s.log.info({ event: 'device_limit', ...who(ctx), userId, code, maxDevices: ctx.app.maxDevicesPerUser }, 'device limit hit');
  },
  banHit(s: Services, ctx: RequestContext, ban: 'ip' | 'hardware_id' | 'user' | 'license', userId?: string): void {
    s.log.info({ event: 'ban_hit', ...who(ctx), ban, userId }, 'ban hit');
  },
  /** An admin write, as its audit entry records it (without the entry's details). */
  adminWrite(s: Services, entry: { actor: string; action: string; appId: string | null; targetId: string | null }, reqId?: string): void {
    s.log.info({ event: 'admin_write', reqId, actor: entry.actor, action: entry.action, appId: entry.appId ?? undefined, targetId: entry.targetId ?? undefined }, 'admin write');
  },
};

const who = (ctx: RequestContext) => ({ reqId: ctx.reqId, appId: ctx.app.id, ip: ctx.ip });
