import { randomUUID } from 'node:crypto';
import type { Repositories } from '../store/index.js';
import type { ActivationRecord, LicenseRecord } from '../store/records.js';
import type { RequestContext } from './access.js';
import { DomainError } from './errors.js';
import { holdingEnd } from './entitlements.js';
import { applyLicense } from './membership.js';
import type { Services } from './service-types.js';

// Field errors name the code for the 422 of license sign-up; a 401 (activation) carries none.
const invalidLicense = (detail?: string) => new DomainError('invalid_license', detail, [{ field: 'body.code', message: detail ? 'has expired' : 'is not a valid license code' }]);
const licenseUsed = () => new DomainError('license_used', undefined, [{ field: 'body.code', message: 'has already been used' }]);

/** A code that exists in this app, has not expired unused, and has not been used: else invalid_license / license_used. */
export async function findRedeemableLicense(s: Services, ctx: RequestContext, code: string): Promise<LicenseRecord> {
  const license = await s.store.licenses.findByCode(ctx.app.id, code);
  if (!license) throw invalidLicense();
  if (license.usedAt !== null) throw licenseUsed();
  if (license.expiresAt !== null && license.expiresAt <= ctx.now) throw invalidLicense('This license code has expired');
  return license;
}

/** Inside a transaction, first: claims the license for `userId`. Only one caller can; the others get license_used. */
export async function claim(tx: Repositories, ctx: RequestContext, userId: string, license: LicenseRecord): Promise<void> {
  if (!(await tx.licenses.markUsed(license.id, userId, ctx.now))) throw licenseUsed();
}

/** Inside a transaction: claims the license, then applies it to the user's membership and records the activation. */
export async function redeem(tx: Repositories, ctx: RequestContext, userId: string, license: LicenseRecord): Promise<Redemption> {
  await claim(tx, ctx, userId, license);
  return applyClaimed(tx, ctx, userId, license);
}

/**
 * Applies a license already claimed in this transaction, reading the membership under a row lock
 * (docs/decisions.md, issue 24): a trial converts first (its remaining time and its entitlements end
 * now); a lifetime revoked ends the grants and holdings that never ended; then the membership
 * arithmetic of the seed, and the redemption holds the license's entitlements and limits until
 * holdingEnd.
 */
export async function applyClaimed(tx: Repositories, ctx: RequestContext, userId: string, license: LicenseRecord): Promise<Redemption> {
  // What the license holds now, read after the claim took its row: a sale's renewal may have added minutes to
  // the unredeemed code since it was read (src/domain/sales/apply.ts); once claimed, no renewal changes it.
  license = (await tx.licenses.findById(ctx.app.id, license.id)) ?? license;
  await tx.users.lockRow(userId, ctx.now);
  const user = await tx.users.findById(ctx.app.id, userId);
  if (!user) throw new DomainError('invalid_credentials');
  let before = { isLifetime: user.isLifetime, activeUntil: user.activeUntil };
  const convertedTrial = user.trialEndsAt !== null && (await tx.trials.convert(userId, ctx.now));
  if (convertedTrial) {
    await tx.entitlements.endTrialGrants(userId, ctx.now);
    before = { isLifetime: before.isLifetime, activeUntil: before.activeUntil === null ? null : Math.min(before.activeUntil, ctx.now) };
  }
  const effect = { minutes: license.minutes, grantsLifetime: license.grantsLifetime, revokesLifetime: license.revokesLifetime };
  if (license.revokesLifetime && user.isLifetime) await endLifetimeHoldings(tx, userId, ctx.now);
  const next = applyLicense(before, effect, ctx.now);
  const endsAt = holdingEnd(before, effect, ctx.now);
  await tx.users.setMembership(userId, next.isLifetime, next.activeUntil, ctx.now);
  const activation: ActivationRecord = {
    id: randomUUID(),
    appId: ctx.app.id,
    userId,
    licenseId: license.id,
    occurredAt: ctx.now,
    minutes: license.minutes,
    grantsLifetime: license.grantsLifetime,
    revokesLifetime: license.revokesLifetime,
    endsAt,
  };
  await tx.licenses.insertActivation(activation);
  await grantLicenseEntitlements(tx, activation, license.entitlements);
  return { ...activation, convertedTrial, license };
}

/** A redemption's activation, and whether it converted the user's trial (the caller emits trial.converted). */
export interface Redemption extends ActivationRecord {
  convertedTrial: boolean;
  /** The license as claimed (read after the claim, used): the object of the caller's license.redeemed. */
  license: LicenseRecord;
}

/** The grants of one redemption: one row per code, ending with the redemption's holding. */
export async function grantLicenseEntitlements(tx: Repositories, activation: ActivationRecord, codes: readonly string[]): Promise<void> {
  for (const code of codes) {
    await tx.entitlements.insert({
      id: randomUUID(), appId: activation.appId, userId: activation.userId, code, source: 'license', licenseId: activation.licenseId,
      endsAt: activation.endsAt, createdAt: activation.occurredAt,
    });
  }
}

/** Lifetime access revoked (a revoking license, or the operator): what lifetime licenses granted, which never ended, ends now. */
export async function endLifetimeHoldings(tx: Repositories, userId: string, now: number): Promise<void> {
  await tx.licenses.endOpenActivations(userId, now);
  await tx.entitlements.endOpenLicenseGrants(userId, now);
}

/**
 * A store's renewal of a redeemed license: what its redemption holds (the template limits it lends, its
 * entitlement grants) moves from `from` to `to`. Only what still ends with the holding moves: a grant the
 * operator ended apart stays ended.
 */
export async function extendHolding(tx: Repositories, licenseId: string, userId: string, from: number, to: number): Promise<void> {
  await tx.licenses.extendActivation(licenseId, userId, from, to);
  await tx.entitlements.extendLicenseGrants(licenseId, userId, from, to);
}

/** A refund, or the lifetime a sold license granted revoked: what that one redemption still holds ends now. */
export async function endHolding(tx: Repositories, licenseId: string, userId: string, now: number): Promise<void> {
  await tx.licenses.endActivation(licenseId, userId, now);
  await tx.entitlements.endLicenseGrants(licenseId, userId, now);
}
