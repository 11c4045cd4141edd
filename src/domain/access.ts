import { randomUUID } from 'node:crypto';
import type { AppRecord, SessionRecord, UserRecord } from '../store/records.js';
import type { BanSet } from './bans.js';
import type { ConnectionMemo } from './connection-memo.js';
import { BannedError, DomainError } from './errors.js';
import { effectiveLimits } from './entitlements.js';
import { events } from './events.js';
import { isActive } from './membership.js';
import { keptWith } from './cache.js';
import { usersKey } from './caches.js';
import type { RequestContext } from './request-context.js';
import type { Services } from './service-types.js';
import { wait, type Steps } from './steps.js';
import { constantTimeEqual, digest, digestMatches, sessionTokenShaped } from './tokens.js';
import { write } from './unit-of-work.js';

export type { RequestContext } from './request-context.js';


/** Step 1: the application headers. Unknown key and wrong secret answer alike. */
export async function authenticateApp(s: Services, apiKey: string | undefined, apiSecret: string | undefined): Promise<AppRecord> {
  if (!apiKey || !apiSecret || apiKey.length > 256 || apiSecret.length > 256) {
    throw new DomainError('invalid_app_credentials');
  }
  return checkSecret(await s.caches.appsByKey.get(apiKey), apiSecret);
}

/**
 * Step 1 without waiting, when the app is cached (nearly always): the
 * application, or undefined to take the asynchronous path. Throws as
 * authenticateApp does.
 */
export function authenticateAppCached(s: Services, apiKey: string | undefined, apiSecret: string | undefined, now: number): AppRecord | undefined {
  if (!apiKey || !apiSecret || apiKey.length > 256 || apiSecret.length > 256) return undefined;
  const app = s.caches.appsByKey.peek(apiKey, now);
  return app ? checkSecret(app, apiSecret) : undefined;
}

/**
 * The secret last verified for each cached app record. Every client of an app
 * sends the same secret on every request; comparing it with the one already
 * verified (in constant time) skips hashing it again. A rotation replaces the
 * record, so the old secret is forgotten with it. The secret is one that every
 * installed copy of the vendor's client carries; only its digest is stored.
 */
const verifiedSecret = keptWith<AppRecord, { secret?: string }>(() => ({}));

function checkSecret(app: AppRecord | null, apiSecret: string): AppRecord {
  if (!app) throw new DomainError('invalid_app_credentials');
  const verified = verifiedSecret(app);
  if (verified.secret !== undefined && constantTimeEqual(verified.secret, apiSecret)) return app;
  if (!digestMatches(apiSecret, app.apiSecretHash)) throw new DomainError('invalid_app_credentials');
  verified.secret = apiSecret;
  return app;
}

/** Step 4: IP ban, then hardware-ID ban (a hardware ID counts whenever it was sent or recorded). */
export function* checkRequestBans(s: Services, ctx: RequestContext, hardwareId: string | null | undefined): Steps<BanSet> {
  let bans = s.caches.bans.peek(ctx.app.id); // a hit at once (steps.ts: no generator per lookup on the hot path)
  if (bans === undefined) bans = yield* wait(s.caches.bans.get(ctx.app.id));
  if (bans.ip(ctx.ip)) throw banned(s, ctx, 'ip', 'Your IP address is banned', bans, ctx.ip);
  if (bans.hardwareId(hardwareId)) throw banned(s, ctx, 'hardware_id', 'This device is banned', bans, hardwareId!);
  return bans;
}

/** Every ban refusal: logged (which kind of ban, never its value), counted for the ban (in memory), then answered 403. */
export function banned(
  s: Services, ctx: RequestContext, ban: 'ip' | 'hardware_id' | 'user' | 'license', detail: string, bans: BanSet, value: string, userId?: string,
): DomainError {
  const banId = bans.idOf(ban, value);
  events.banHit(s, ctx, ban, userId);
  if (banId) s.stats.banHit(ctx.app.id, banId, ctx.now);
  return new BannedError(detail, bans.reasonOf(banId)).forUser(userId);
}

/**
 * Step 6: the user, and the license code the request presents or the user was
 * created from (for a license-only account the code is its identity).
 */
export function checkUserBans(s: Services, ctx: RequestContext, bans: BanSet, user: UserRecord, presentedCode?: string): void {
  if (bans.user(user.id)) throw banned(s, ctx, 'user', 'This user is banned', bans, user.id, user.id);
  const code = bans.license(presentedCode) ? presentedCode! : bans.license(user.signupCode) ? user.signupCode! : null;
  if (code !== null) throw banned(s, ctx, 'license', 'This license is banned', bans, code, user.id);
}

/**
 * Step 7 with device authentication on: a known device passes; an unknown one
 * is registered while the user has a free slot. The slot is taken by a
 * conditional update, so concurrent requests cannot exceed the limit.
 */
export async function checkDevice(s: Services, ctx: RequestContext, user: UserRecord, hardwareId: string): Promise<void> {
  if (await s.store.devices.find(user.id, hardwareId)) return;
  const deviceId = randomUUID();
  // A template the user holds may set its own limit (entitlements.ts, effectiveLimits).
  const limit = effectiveLimits(ctx.app, user, ctx.now).maxDevices;
  const outcome = await write(s, async ({ tx, emit }) => {
    if (!(await tx.users.takeDeviceSlot(user.id, limit))) return 'full' as const;
    const inserted = await tx.devices.insert({
      id: deviceId, appId: ctx.app.id, userId: user.id, hardwareId, createdAt: ctx.now, lastSeenAt: ctx.now,
    });
    if (!inserted) throw ALREADY_REGISTERED; // registered concurrently: give the slot back
    await emit('device.registered', ctx.app.id, { user_id: user.id, device_id: deviceId, hardware_id: hardwareId });
    return 'added' as const;
  }).catch((err: unknown) => {
    if (err === ALREADY_REGISTERED) return 'registered' as const;
    throw err;
  });
  if (outcome === 'added') events.deviceAdded(s, ctx, user.id, deviceId);
  if (outcome === 'full') {
    const code = limit <= 1 ? 'device_mismatch' : 'device_limit';
    events.deviceLimitHit(s, ctx, user.id, code);
    throw (code === 'device_mismatch'
      ? new DomainError(code, 'This account is locked to another device')
      : new DomainError(code, 'This account has reached its device limit')).forUser(user.id);
  }
}

const ALREADY_REGISTERED = Symbol('already registered');

/** Step 8. */
export function checkMembership(user: UserRecord, now: number): void {
  if (!isActive(user, now)) throw new DomainError('membership_inactive').forUser(user.id);
}

/**
 * Resolves a presented session token to its session (any app, any expiry); the caller judges it. With the
 * connection's memo, a token the connection presented last is not hashed again (connection-memo.ts).
 */
export function* findSession(s: Services, token: string, memo?: ConnectionMemo): Steps<SessionRecord | undefined> {
  if (!sessionTokenShaped(token)) return undefined;
  let key: string;
  if (memo !== undefined && memo.token === token) key = memo.tokenDigest!;
  else {
    key = digest(token);
    if (memo !== undefined) {
      memo.token = token;
      memo.tokenDigest = key;
    }
  }
  const hit = s.caches.sessions.peek(key);
  return (hit !== undefined ? hit : yield* wait(s.caches.sessions.get(key))) ?? undefined;
}

/** A user through the cache the hot paths share, by its key there (services.ts, UserRef). */
export function* cachedUser(s: Services, key: string): Steps<UserRecord | undefined> {
  const hit = s.caches.users.peek(key);
  return (hit !== undefined ? hit : yield* wait(s.caches.users.get(key))) ?? undefined;
}

/**
 * The users cache's key of a session's user. It is kept with the cached session record (immutable: a change
 * replaces it), so the key string and its hash are made once, not per request.
 */
export const sessionUsersKey: (session: SessionRecord) => string = keptWith((session: SessionRecord) => usersKey(session.appId, session.userId));

/** Step 5 for a session: unknown or another app's token is invalid; an expired one says so. */
export function judgeSession(ctx: RequestContext, session: SessionRecord | undefined): SessionRecord {
  if (!session || session.appId !== ctx.app.id) throw new DomainError('invalid_credentials');
  if (session.expiresAt <= ctx.now) throw new DomainError('session_expired');
  return session;
}

/** Verifies a password; for an unknown user it burns the same hash work so timing reveals nothing. */
export async function verifyPassword(s: Services, user: UserRecord | undefined, password: string): Promise<UserRecord> {
  const ok = await s.hasher.verify(user?.passwordHash ?? s.dummyHash, password);
  if (!user || !user.passwordHash || !ok) throw new DomainError('invalid_credentials');
  return user;
}
