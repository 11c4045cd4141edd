import type { OperatorRecord } from '../../store/repositories/operators.js';
import { DomainError } from '../errors.js';
import { events } from '../events.js';
import type { Services } from '../service-types.js';
import { constantTimeEqual, digest } from '../tokens.js';
import { write } from '../unit-of-work.js';
import { Checker, PASSWORD_MAX_BYTES, usernameKey } from '../validation.js';
import type { AdminServices } from './audit.js';
import type { Role } from './roles.js';
import { matchTotp, newTotpSecret, otpauthUri, qrSvg } from './totp.js';

/** A session ends 12 hours after sign-in however busy it is: a stolen cookie is not good forever. */
export const SESSION_ABSOLUTE_MS = 12 * 3600_000;

const SESSION_PREFIX = 'tg_op_';
/** The cookie's shape: anything else is not looked up. */
const SESSION_VALUE = /^tg_op_[A-Za-z0-9_-]{43}$/;

/** Who is calling the admin API, and with what. */
export interface Principal {
  kind: 'operator' | 'token';
  name: string;
  role: Role;
  /** The audit log's actor. */
  actor: string;
  /** A cookie session: the operator, the digest of the cookie and the CSRF token it must be sent with. */
  session?: { operator: OperatorRecord; idHash: string; csrfToken: string };
  /**
   * The operator behind the call: the signed-in one, or the one who minted the
   * token. A token minted with this principal records it, so the operator's
   * deletion or demotion reaches every token minted in their name, tokens
   * minted by those tokens included.
   */
  operator: Minter | null;
}

/** An operator as a token records its minter. */
export interface Minter {
  id: string;
  username: string;
}

export interface OperatorView {
  id: string;
  username: string;
  role: Role;
  totp_enabled: boolean;
}

export const operatorActor = (username: string): string => `operator:${username}`;

const viewSelf = (o: OperatorRecord): OperatorView => ({ id: o.id, username: o.username, role: o.role, totp_enabled: o.totpEnabled });

export interface SignedIn {
  /** The cookie's value; only its digest is stored. */
  cookie: string;
  csrf_token: string;
  operator: OperatorView;
}

export interface LoginInput {
  username: string;
  password: string;
  totp?: string | undefined;
}

/**
 * POST /admin/v1/session. The password is checked holding a place in the
 * same failure limits as a user's login; an unknown username is verified
 * against the dummy hash, so the answer and its time are the same as for a
 * wrong password (and for a disabled account).
 */
export async function loginOperator(s: Services, ip: string, input: LoginInput, reqId?: string): Promise<SignedIn> {
  let named: OperatorRecord | undefined;
  try {
    return await signIn(s, ip, input, (found) => (named = found));
  } catch (err) {
    // totp_required is the sign-in's second step (the password was right), not a failure.
    if (err instanceof DomainError && err.code !== 'totp_required' && err.code !== 'validation_error') {
      events.adminAuthFailed(s, { reqId, ip, via: 'sign_in', code: err.code, operator: named?.username });
    }
    throw err;
  }
}

async function signIn(s: Services, ip: string, input: LoginInput, looked: (found: OperatorRecord | undefined) => void): Promise<SignedIn> {
  const check = new Checker();
  check.text('body.username', input.username, { min: 1, max: 64 });
  if (Buffer.byteLength(input.password, 'utf8') > PASSWORD_MAX_BYTES) check.add('body.password', `must be at most ${PASSWORD_MAX_BYTES} bytes`);
  check.throwIfAny();
  const now = s.clock();
  const operator = await s.limits.attemptOperator(ip, input.username, now, async () => {
    const found = await s.store.operators.findByUsernameKey(usernameKey(input.username));
    looked(found);
    const ok = await s.hasher.verify(found?.passwordHash ?? s.dummyHash, input.password);
    if (!found || !ok || found.disabled) throw new DomainError('invalid_credentials');
    if (found.totpEnabled) {
      if (input.totp === undefined || input.totp === '') throw new DomainError('totp_required');
      // In the operator's second-factor slot, which bounds the codes tried however many addresses send them.
      await s.limits.attemptSecondFactor(found.username, now, () => useTotp(s, found, found.totpSecret!, input.totp!));
    }
    return found;
  }, input.totp ? (signedIn) => signedIn.totpEnabled : undefined);
  const cookie = SESSION_PREFIX + s.random(32).toString('base64url');
  const csrfToken = s.random(32).toString('base64url');
  await write({ ...s, actor: operatorActor(operator.username) }, async ({ tx, audit }) => {
    // A session nobody signed out of is otherwise only deleted when its cookie comes back: the table would keep every
    // closed browser's row forever. Those past the absolute lifetime go at each sign-in (few: 12 hours' worth at most).
    await tx.operators.deleteSessionsCreatedBefore(now - SESSION_ABSOLUTE_MS);
    await tx.operators.insertSession(digest(cookie), { operatorId: operator.id, csrfToken, createdAt: now, lastSeenAt: now, ip });
    await tx.operators.touchLogin(operator.id, now);
    await audit('operator.login', null, operator.id, { ip });
  });
  return { cookie, csrf_token: csrfToken, operator: viewSelf(operator) };
}

/** A code from the authenticator, once: its time step is used up in the database, so a replay (even a parallel one) fails. */
async function useTotp(s: Services, operator: OperatorRecord, secret: string, code: string): Promise<number> {
  const step = matchTotp(secret, code, s.clock());
  if (step === null) throw new DomainError('invalid_totp');
  const fresh = await write(s, ({ tx }) => tx.operators.useTotpStep(operator.id, step));
  if (!fresh) throw new DomainError('invalid_totp', 'This two-factor code was already used; wait for the next one');
  return step;
}

/**
 * The operator behind a session cookie. Idle for longer than `idleMs`, or
 * older than 12 hours: the session is deleted and the answer is
 * session_expired. Each accepted request moves its idle deadline.
 */
export async function authenticateSession(s: Services, cookie: string, idleMs: number): Promise<Principal> {
  if (!SESSION_VALUE.test(cookie)) throw new DomainError('not_authenticated');
  const idHash = digest(cookie);
  const found = await s.store.operators.findSession(idHash);
  if (!found) throw new DomainError('not_authenticated');
  const now = s.clock();
  const { session, operator } = found;
  if (operator.disabled || now - session.lastSeenAt > idleMs || now - session.createdAt > SESSION_ABSOLUTE_MS) {
    await write(s, ({ tx }) => tx.operators.deleteSession(idHash));
    throw new DomainError(operator.disabled ? 'not_authenticated' : 'session_expired');
  }
  await write(s, ({ tx }) => tx.operators.touchSession(idHash, now));
  return {
    kind: 'operator', name: operator.username, role: operator.role, actor: operatorActor(operator.username),
    session: { operator, idHash, csrfToken: session.csrfToken }, operator: { id: operator.id, username: operator.username },
  };
}

/** A state-changing request on a cookie session must echo the session's CSRF token (constant time: attacker input). */
export function checkCsrf(principal: Principal, presented: string | undefined): void {
  if (!principal.session) return;
  if (presented === undefined || !constantTimeEqual(presented, principal.session.csrfToken)) throw new DomainError('csrf_failed');
}

export function sessionView(principal: Principal, idleSeconds: number): { operator: OperatorView; csrf_token: string; idle_timeout_seconds: number } {
  if (!principal.session) throw new DomainError('not_authenticated', 'Not signed in: this call needs a dashboard session, not an admin token');
  return { operator: viewSelf(principal.session.operator), csrf_token: principal.session.csrfToken, idle_timeout_seconds: idleSeconds };
}

export async function logoutOperator(a: AdminServices, principal: Principal): Promise<void> {
  const session = principal.session;
  if (!session) throw new DomainError('not_authenticated', 'Not signed in: this call needs a dashboard session, not an admin token');
  await write(a, async ({ tx, audit }) => {
    await tx.operators.deleteSession(session.idHash);
    await audit('operator.logout', null, session.operator.id, {});
  });
}

function sessionOperator(principal: Principal): OperatorRecord {
  if (!principal.session) throw new DomainError('not_authenticated', 'Not signed in: this call needs a dashboard session, not an admin token');
  return principal.session.operator;
}

/** Starts TOTP set-up: a new secret, pending until a code from it is confirmed (so a mis-scanned code cannot lock anybody out). */
export async function startTotp(a: AdminServices, principal: Principal): Promise<{ secret: string; otpauth_uri: string; qr_svg: string }> {
  const operator = sessionOperator(principal);
  if (operator.totpEnabled) throw new DomainError('conflict', 'Two-factor authentication is already on; turn it off first');
  const secret = newTotpSecret(a.random);
  await write(a, async ({ tx, audit }) => {
    await tx.operators.setPendingTotp(operator.id, secret);
    await audit('operator.totp_start', null, operator.id, {}); // never the secret
  });
  const uri = otpauthUri(secret, operator.username);
  return { secret, otpauth_uri: uri, qr_svg: qrSvg(uri) };
}

export async function confirmTotp(a: AdminServices, principal: Principal, code: string): Promise<{ totp_enabled: true }> {
  const operator = sessionOperator(principal);
  const current = await a.store.operators.findById(operator.id);
  if (!current?.totpPendingSecret) throw new DomainError('conflict', 'No two-factor set-up was started: POST /admin/v1/session/totp first');
  const step = matchTotp(current.totpPendingSecret, code, a.clock());
  if (step === null) throw new DomainError('invalid_totp');
  await write(a, async ({ tx, audit }) => {
    if (!(await tx.operators.enableTotp(operator.id, current.totpPendingSecret!, step))) throw new DomainError('conflict', 'The two-factor set-up changed meanwhile; start again');
    await audit('operator.totp_enable', null, operator.id, {});
  });
  return { totp_enabled: true };
}

/**
 * Turning TOTP off takes a current code: a borrowed unlocked browser alone
 * cannot remove the second factor. Wrong codes count against the same limits
 * as the operator's sign-in (per address and per username) and in the same
 * second-factor slot, or a stolen cookie could try all 10^6 codes at the
 * server's pace.
 */
export async function disableTotp(a: AdminServices, principal: Principal, ip: string, code: string): Promise<{ totp_enabled: false }> {
  const operator = sessionOperator(principal);
  const current = await a.store.operators.findById(operator.id);
  if (!current?.totpEnabled || !current.totpSecret) throw new DomainError('conflict', 'Two-factor authentication is not on');
  const secret = current.totpSecret;
  await a.limits.attemptTotpOff(ip, current.username, a.clock(), () => useTotp(a, current, secret, code));
  await write(a, async ({ tx, audit }) => {
    await tx.operators.disableTotp(operator.id);
    await audit('operator.totp_disable', null, operator.id, {});
  });
  return { totp_enabled: false };
}

export const ENV_TOKEN_ACTOR = 'env:TOLLGATE_ADMIN_TOKEN';

/**
 * Who presents this admin token: the environment's token (owner; compared in
 * constant time) or a live named token with its role (looked up by digest).
 */
export async function authenticateToken(
  s: Services, presented: string | undefined, envDigest: string | null,
  /** For the failure's event line; the address is worked out only then. */
  who: { reqId?: string; ip?: () => string | undefined } = {},
): Promise<Principal> {
  const refuse = async (presentedDigest?: string): Promise<never> => {
    const tokenId = presentedDigest === undefined ? undefined : await s.store.admin.revokedTokenId(presentedDigest);
    events.adminAuthFailed(s, { reqId: who.reqId, ip: who.ip?.(), via: 'token', code: 'invalid_admin_token', tokenId });
    throw new DomainError('invalid_admin_token');
  };
  if (!presented || presented.length > 512) return refuse();
  const presentedDigest = digest(presented);
  if (envDigest && constantTimeEqual(presentedDigest, envDigest)) return { kind: 'token', name: 'TOLLGATE_ADMIN_TOKEN', role: 'owner', actor: ENV_TOKEN_ACTOR, operator: null };
  const token = await s.store.admin.findLiveToken(presentedDigest);
  if (!token) return refuse(presentedDigest);
  await write(s, ({ tx }) => tx.admin.touchToken(token.id, s.clock()));
  return {
    kind: 'token', name: token.name, role: token.role, actor: `token:${token.name} (${token.id})`,
    operator: token.operatorId === null ? null : { id: token.operatorId, username: token.operatorUsername ?? '' },
  };
}
