import { randomUUID } from 'node:crypto';
import type { UserRecord } from '../store/records.js';
import type { RequestContext } from './access.js';
import { isTrialUser, leaseEntitlements } from './entitlements.js';
import { DomainError, validationError } from './errors.js';
import type { Services } from './service-types.js';
import { ed25519 } from './signing/ed25519.js';
import { b64url, hwidHash, leaseFile, leaseInput, type LeasePayload } from './signing/format.js';
import { currentSigningKey, unsealedCause, type SigningKey } from './signing/keys.js';
import { events } from './events.js';
import { emitTaken, noteExpired, seatPolicy, seatsExhausted, seatWindowMs, takeSeat } from './seats.js';
import { run } from './steps.js';
import { authenticateUser, type UserCredentials } from './user-auth.js';
import { write } from './unit-of-work.js';

export const NO_SIGNING_KEY_DETAIL = 'This application has no usable signing key, so it cannot issue leases: the operator must run `tollgate keys init` (or `keys rotate`)';
/** The log line (event signing_key_sealed) names the key, the KEK it needs and the setting; the client learns only the kind. */
export const SEALED_KEY_DETAIL =
  "This application's signing key is sealed under a key-encryption key this server was not given, so it cannot issue leases: the operator must set SIGNING_KEY_SEAL";
export const ANONYMOUS_LEASE_DETAIL = 'A lease is issued only to a logged in user';

/**
 * POST /lease (docs/signing.md, "Offline leases"): an offline permit for one
 * user on one device, signed with the app's current signing key. The checks,
 * in order (each an early return; this order is the precedence):
 *
 *  1-2. app headers and the rate limits of legacy headers (hooks, as on every client route);
 *  a. no Tollgate-Nonce: 422 nonce_required (a lease is always asked for with a nonce,
 *     so the answer that carries it is signed and bound to this request);
 *  b. the app gives no leases (offline_grace_seconds 0): 403 leases_disabled, before any
 *     credential is tried (no password hashed, no attempt counted, no device slot taken for nothing);
 *  c. no x-hardware-id: 422 validation_error (a lease is bound to a device, device auth on or off);
 *  d. no usable signing key: 503 service_unavailable (an operator error; still before the credentials);
 *  3-8. the whole access check of GET /app_context (authenticateUser), in its order;
 *  an anonymous caller (the app allows anonymous access): 401 anonymous_not_allowed, which is
 *  not a "drop your lease" code: sending no credentials must not cost a user their lease.
 */
export async function issueLease(s: Services, ctx: RequestContext, nonce: string | undefined, creds: UserCredentials): Promise<string> {
  if (nonce === undefined) {
    throw new DomainError('nonce_required', 'A lease is asked for with a nonce: send a Tollgate-Nonce header', [{ field: 'header.tollgate-nonce', message: 'is required for a lease' }]);
  }
  const app = ctx.app;
  if (app.offlineGraceSeconds <= 0) throw new DomainError('leases_disabled');
  if (creds.hardwareId === undefined) throw validationError('header.x-hardware-id', 'is required');
  const key = await currentSigningKey(s, app.id, ctx.now);
  if (!key) throw new DomainError('service_unavailable', (await unsealedCause(s, app.id)) === null ? NO_SIGNING_KEY_DETAIL : SEALED_KEY_DETAIL);

  const user = await run(authenticateUser(s, ctx, creds));
  if (!user) throw new DomainError('anonymous_not_allowed', ANONYMOUS_LEASE_DETAIL);

  const hardwareHash = hwidHash(app.id, creds.hardwareId);
  const leaseId = randomUUID();
  const hardwareId = creds.hardwareId;
  // Under a seat policy the lease holds this device's seat until its exp (docs/decisions.md, issue 25): a floating
  // license does not become unlimited by going offline. The seat's lease_until becomes at least exp, so the user's
  // release and self-reset leave it standing until then. A full pool refuses the lease; nothing is written then.
  const policy = seatPolicy(app, user, ctx.now);
  const exp = leaseExp(ctx, user, key.notAfter);
  const outcome = await write(s, async ({ tx, emit }) => {
    const seat = policy && (await takeSeat(tx, app.id, user.id, hardwareId, policy, ctx.now, Math.max(exp, ctx.now + seatWindowMs(policy)), exp));
    if (seat && !seat.ok) throw seatsExhausted(policy!, seat.inUse, seat.nextFreeAt, ctx.now);
    if (seat) await emitTaken(emit, app.id, seat);
    const seq = seat === undefined ? undefined : await tx.leases.nextSeq({ appId: app.id, userId: user.id, hwidHash: hardwareHash, leaseId, issuedAt: ctx.now });
    return { seq, seat };
  });
  // The user was deleted after the access check read it (cached): as for a deleted user's credentials.
  if (outcome.seq === undefined) throw new DomainError('invalid_credentials');
  if (outcome.seat) noteExpired(s, ctx, outcome.seat.expired);
  if (outcome.seat?.ok && outcome.seat.created) events.seatCheckedOut(s, ctx, user.id, outcome.seat.seat.id);
  return signedLease(key, leasePayload(ctx, user, leaseId, outcome.seq, hardwareHash, key.notAfter));
}

/** The payload of docs/signing.md's table, its fields in the table's order. */
export function leasePayload(ctx: RequestContext, user: UserRecord, leaseId: string, seq: number, hardwareHash: string, keyNotAfter: number): LeasePayload {
  const { app, now: iat } = ctx;
  const activeUntil = user.isLifetime ? null : user.activeUntil;
  const entitlements = leaseEntitlements(user.grants, iat);
  const trial = isTrialUser(user, iat);
  return {
    lease_id: leaseId,
    seq,
    app_id: app.id,
    user_id: user.id,
    hwid_hash: hardwareHash,
    is_lifetime: user.isLifetime,
    active_until: activeUntil,
    iat,
    renew_after: iat + app.leaseRenewSeconds * 1000,
    exp: leaseExp(ctx, user, keyNotAfter),
    max_offline_runtime_s: app.offlineGraceSeconds,
    // Both or neither (docs/signing.md): neither for a user without entitlements or a trial, whose payload is then
    // exactly the one SDKs of before issue 24 verify; both otherwise, as the SDKs of issue 24 require.
    ...((entitlements.length > 0 || trial) && { entitlements, is_trial: trial }),
  };
}

/**
 * When a lease issued now ends. Offline use never outlasts the membership the lease was issued under, nor the
 * key that signs it (amendment B): a leaked private key of an ended key cannot mint a lease that runs on for years.
 * A trial user's lease also ends with the trial (issue 24).
 */
export function leaseExp(ctx: RequestContext, user: UserRecord, keyNotAfter: number): number {
  const activeUntil = user.isLifetime ? null : user.activeUntil;
  const trialEnd = isTrialUser(user, ctx.now) ? user.trialEndsAt! : Infinity;
  return Math.min(ctx.now + ctx.app.offlineGraceSeconds * 1000, activeUntil ?? Infinity, keyNotAfter, trialEnd);
}

/**
 * Serialised ONCE: the signature covers these bytes, and the lease carries
 * them as they are (base64url), so no verifier ever re-serialises JSON.
 */
export function signedLease(key: SigningKey, payload: LeasePayload): string {
  const payloadBytes = Buffer.from(JSON.stringify(payload), 'utf8');
  const sig = ed25519.sign(leaseInput(payloadBytes), key.privateKey);
  return leaseFile({ kid: key.kid, cert: key.certificate, payload: b64url(payloadBytes), sig: b64url(sig) });
}
