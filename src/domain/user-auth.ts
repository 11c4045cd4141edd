import type { UserRecord } from '../store/records.js';
import {
  cachedUser, checkDevice, checkMembership, checkRequestBans, checkUserBans, findSession, judgeSession, sessionUsersKey, verifyPassword, type RequestContext,
} from './access.js';
import { keptWith } from './cache.js';
import type { ConnectionMemo, PasswordKeys } from './connection-memo.js';
import { DomainError } from './errors.js';
import { userByCode } from './login.js';
import type { Services } from './service-types.js';
import { wait, type Steps } from './steps.js';
import { Checker, HARDWARE_ID, LICENSE_CODE, USERNAME, usernameKey } from './validation.js';

/** The user-authentication headers of SPEC 5.2, as the HTTP layer read them. */
export interface UserCredentials {
  bearer?: string | undefined;
  /** The connection's memo, where the route reads one (connection-memo.ts). */
  memo?: ConnectionMemo | undefined;
  licenseCode?: string | undefined;
  username?: string | undefined;
  password?: string | undefined;
  hardwareId?: string | undefined;
}

/**
 * Legacy headers repeat the password on every request: verify it with argon2
 * once, then trust the cached verification while the stored hash is unchanged.
 */
function* userByCachedPassword(s: Services, ctx: RequestContext, username: string, password: string, memo?: ConnectionMemo): Steps<UserRecord> {
  const keys = passwordKeys(s, ctx.app.id, username, password, memo);
  const hit = s.caches.userIdsByName.peek(keys.nameCacheKey);
  const ref = hit !== undefined ? hit : yield* wait(s.caches.userIdsByName.get(keys.nameCacheKey));
  const user = ref ? yield* cachedUser(s, ref.usersKey) : undefined;
  let verified: UserRecord;
  if (user?.passwordHash && s.credentials.verified(keys.credentialKey, user.id, user.passwordHash)) verified = user;
  else verified = yield* wait(verifyOnce(s, ctx, keys.credentialKey, username, user, password));
  if (memo !== undefined) memo.password = keys; // kept once verified: a wrong password is never kept
  return verified;
}

/**
 * The keys of a username and password presented to an app; those the connection presented last (and that
 * verified) are not derived again. Anything else clears what was kept until this one verifies.
 */
function passwordKeys(s: Services, appId: string, username: string, password: string, memo: ConnectionMemo | undefined): PasswordKeys {
  const kept = memo?.password;
  if (kept !== undefined && kept.appId === appId && kept.username === username && kept.password === password) return kept;
  if (memo !== undefined) memo.password = undefined;
  const nameKey = usernameKey(username);
  return { appId, username, password, nameCacheKey: `${appId}\0${nameKey}`, credentialKey: s.credentials.key(appId, nameKey, password) };
}

/** Verifications in flight, by credential key (per Services: one per node). */
const verifying = keptWith((_: Services) => new Map<string, Promise<UserRecord>>());

/**
 * Only a password not verified recently costs a place in the limits (and
 * argon2): the hot path pays neither. Requests sending the same credentials
 * at once (a client's parallel downloads when its cached verification has
 * expired) share one verification and one place, so a burst larger than the
 * limit is not refused; parallel guesses are different passwords and share
 * nothing.
 */
function verifyOnce(s: Services, ctx: RequestContext, key: string, username: string, user: UserRecord | undefined, password: string): Promise<UserRecord> {
  const inFlight = verifying(s);
  const running = inFlight.get(key);
  if (running) return running;
  const verification = s.limits
    .attempt(ctx, { username }, () => verifyPassword(s, user, password))
    .then((verified) => {
      s.credentials.remember(key, verified.id, verified.passwordHash!);
      return verified;
    })
    .finally(() => inFlight.delete(key));
  inFlight.set(key, verification);
  return verification;
}

export const ANONYMOUS_DETAIL = 'Only logged in users are allowed to access';

/**
 * The access check of GET /app_context and downloads, one ordered list of
 * early returns in the order of DECISIONS.md. Ends with the user, or null
 * for an anonymous caller where the app allows that. Synchronous (see
 * steps.ts) while every record it reads is cached.
 *
 * `deviceStep` false skips step 7 (device) alone: POST /devices/reset, which exists for the user the
 * device check locks out (a replaced laptop); bans, credentials and membership are checked as ever.
 * `membershipStep` false skips step 8 (membership) alone: POST /redeem, where redeeming a license is how an
 * ended membership (an expired trial's) starts again, as POST /activate_license has no membership check.
 */
export function* authenticateUser(s: Services, ctx: RequestContext, creds: UserCredentials, deviceStep = true, membershipStep = true): Steps<UserRecord | null> {
  const method = creds.bearer !== undefined ? 'token' : creds.licenseCode !== undefined ? 'code' : creds.username !== undefined || creds.password !== undefined ? 'password' : 'none';
  const device = ctx.app.deviceAuthEnabled;

  // 3. Shape (a Bearer request without a hardware ID has none to check).
  if (creds.hardwareId !== undefined || method === 'code' || method === 'password') {
    const check = new Checker();
    if (creds.hardwareId !== undefined) check.text('header.x-hardware-id', creds.hardwareId, HARDWARE_ID);
    if (method === 'code') check.text('header.x-api-license-code', creds.licenseCode, LICENSE_CODE);
    if (method === 'password') {
      check.required('header.x-api-username', creds.username);
      check.text('header.x-api-username', creds.username, USERNAME);
      check.required('header.x-api-password', creds.password);
      check.password('header.x-api-password', creds.password, null);
    }
    check.throwIfAny();
  }
  if (device && deviceStep && (method === 'code' || method === 'password') && creds.hardwareId === undefined) {
    throw new DomainError('device_required');
  }
  const session = method === 'token' ? yield* findSession(s, creds.bearer!, creds.memo) : undefined;
  const sessionOfApp = session && session.appId === ctx.app.id ? session : undefined;

  // 4. IP ban, hardware-ID ban (sent, or recorded in the token).
  const bans = yield* checkRequestBans(s, ctx, creds.hardwareId ?? sessionOfApp?.hardwareId);
  if (method === 'none') {
    if (ctx.app.anonymousAccessAllowed) return null;
    throw new DomainError('anonymous_not_allowed', ANONYMOUS_DETAIL);
  }

  // 5. Credentials.
  let user: UserRecord | undefined;
  if (method === 'token') {
    const live = judgeSession(ctx, session);
    user = yield* cachedUser(s, sessionUsersKey(live)); // live.appId is ctx.app.id
    if (!user) throw new DomainError('invalid_credentials');
  } else if (method === 'code') {
    user = yield* userByCode(s, ctx, creds.licenseCode!);
  } else {
    user = yield* userByCachedPassword(s, ctx, creds.username!, creds.password!, creds.memo);
  }

  // 6. User and license bans.
  checkUserBans(s, ctx, bans, user, method === 'code' ? creds.licenseCode : undefined);

  // 7. Device.
  if (!deviceStep) {
    // POST /devices/reset: every device of the user is about to be forgotten.
  } else if (method === 'token') {
    const recorded = sessionOfApp?.hardwareId ?? null;
    if (creds.hardwareId !== undefined && recorded !== null && creds.hardwareId !== recorded) {
      throw new DomainError('device_mismatch', 'This session belongs to another device').forUser(user.id);
    }
    if (device && recorded === null) throw new DomainError('device_required', 'This session has no device; log in again');
  } else if (device) {
    yield* wait(checkDevice(s, ctx, user, creds.hardwareId!));
  }

  // 8. Membership.
  if (membershipStep) checkMembership(user, ctx.now);
  return user;
}
