import { randomUUID } from 'node:crypto';
import type { UserRecord } from '../store/records.js';
import {
  cachedUser, checkDevice, checkMembership, checkRequestBans, checkUserBans, findSession, judgeSession, verifyPassword, type RequestContext,
} from './access.js';
import { DomainError } from './errors.js';
import { events } from './events.js';
import type { Services, UserRef } from './service-types.js';
import { run, wait, type Steps } from './steps.js';
import { digest, newToken } from './tokens.js';
import { write } from './unit-of-work.js';
import { Checker, HARDWARE_ID, LICENSE_CODE, USERNAME, usernameKey } from './validation.js';

export interface LoginInput {
  credentials: { username?: string | undefined; password?: string | undefined; code?: string | undefined };
  hardware_id?: string | undefined;
}

/**
 * POST /auth/login; a refusal (not a malformed request, not an outage) is an event line with its code.
 * Both outcomes are counted for the dashboard (in memory; stats.ts writes them later).
 */
export async function login(s: Services, ctx: RequestContext, input: LoginInput): Promise<{ session_token: string }> {
  try {
    const answer = await logIn(s, ctx, input);
    s.stats.count(ctx.app.id, 'logins', ctx.now);
    return answer;
  } catch (err) {
    if (err instanceof DomainError && err.code !== 'validation_error') {
      events.loginFailed(s, ctx, err.code);
      s.stats.count(ctx.app.id, 'failedLogins', ctx.now);
    }
    throw err;
  }
}

async function logIn(s: Services, ctx: RequestContext, input: LoginInput): Promise<{ session_token: string }> {
  const { username, password, code } = input.credentials;
  const check = new Checker();
  const passwordForm = username !== undefined || password !== undefined;
  if (passwordForm && code !== undefined) {
    check.add('body.credentials', 'must be either {username, password} or {code}, not both');
  } else if (passwordForm) {
    check.required('body.credentials.username', username);
    check.required('body.credentials.password', password);
    check.text('body.credentials.username', username, USERNAME);
    check.password('body.credentials.password', password, null);
  } else if (code === undefined) {
    check.add('body.credentials', 'must be either {username, password} or {code}');
  } else {
    check.text('body.credentials.code', code, LICENSE_CODE);
  }
  if (input.hardware_id !== undefined) check.text('body.hardware_id', input.hardware_id, HARDWARE_ID);
  check.throwIfAny();
  if (ctx.app.deviceAuthEnabled && input.hardware_id === undefined) throw new DomainError('device_required');

  const bans = await run(checkRequestBans(s, ctx, input.hardware_id));
  const user = code !== undefined
    ? await run(userByCode(s, ctx, code))
    : await s.limits.attempt(ctx, { username }, () => userByPassword(s, ctx, username!, password!));
  checkUserBans(s, ctx, bans, user, code);
  if (ctx.app.deviceAuthEnabled) await checkDevice(s, ctx, user, input.hardware_id!);
  checkMembership(user, ctx.now);

  const token = newToken('session', s.random);
  await write(s, async ({ tx, changed }) => {
    await tx.sessions.insert(
      {
        id: randomUUID(), appId: ctx.app.id, userId: user.id, hardwareId: input.hardware_id ?? null, ip: ctx.ip,
        createdAt: ctx.now, expiresAt: ctx.now + ctx.app.sessionTtlSeconds * 1000,
      },
      digest(token),
    );
    await tx.users.trackIp(user.id, ctx.ip, ctx.now);
    if (ctx.app.maxSessionsPerUser > 0) {
      await tx.sessions.trim(user.id, ctx.app.maxSessionsPerUser, ctx.now);
      changed({ user: user.id }); // older sessions may have ended
    }
  });
  return { session_token: token };
}

/**
 * The account a license-code sign-up created with this code; any other code is
 * not a credential. A code already known to belong to a user (cached) is no
 * guess and takes no place in the limits: the legacy-header hot path pays
 * nothing for it. Any other code is looked up holding a place.
 */
export function* userByCode(s: Services, ctx: RequestContext, code: string): Steps<UserRecord> {
  const key = `${ctx.app.id}\0${code}`;
  const known = s.caches.userIdsByCode.peek(key);
  if (known) return yield* owner(s, known);
  return yield* wait(s.limits.attempt(ctx, { code }, () => run(codeOwner(s, key))));
}

function* codeOwner(s: Services, key: string): Steps<UserRecord> {
  const hit = s.caches.userIdsByCode.peek(key);
  return yield* owner(s, hit !== undefined ? hit : yield* wait(s.caches.userIdsByCode.get(key)));
}

function* owner(s: Services, ref: UserRef | null): Steps<UserRecord> {
  const user = ref ? yield* cachedUser(s, ref.usersKey) : undefined;
  if (!user) throw new DomainError('invalid_credentials');
  return user;
}

export async function userByPassword(s: Services, ctx: RequestContext, username: string, password: string): Promise<UserRecord> {
  const user = await s.store.users.findByUsernameKey(ctx.app.id, usernameKey(username));
  return verifyPassword(s, user, password);
}

/** POST /auth/logout: revokes the presented token. No ban or membership check. */
export async function logout(s: Services, ctx: RequestContext, token: string | undefined): Promise<void> {
  if (!token) throw new DomainError('invalid_credentials', 'A Bearer session token is required');
  const session = judgeSession(ctx, await run(findSession(s, token)));
  await write(s, async ({ tx, changed }) => {
    await tx.sessions.delete(session.id);
    changed({ session: digest(token) });
  });
}
