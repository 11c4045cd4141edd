import { randomUUID } from 'node:crypto';
import type { Repositories } from '../store/index.js';
import type { ActivationRecord, LicenseRecord } from '../store/records.js';
import type { RequestContext } from './access.js';
import { DomainError } from './errors.js';
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
export async function redeem(tx: Repositories, ctx: RequestContext, userId: string, license: LicenseRecord): Promise<ActivationRecord> {
  await claim(tx, ctx, userId, license);
  return applyClaimed(tx, ctx, userId, license);
}

/** Applies a license already claimed in this transaction, reading the membership under a row lock. */
export async function applyClaimed(tx: Repositories, ctx: RequestContext, userId: string, license: LicenseRecord): Promise<ActivationRecord> {
  // What the license holds now, read after the claim took its row: a sale's renewal may have added minutes to
  // the unredeemed code since it was read (src/domain/sales/apply.ts); once claimed, no renewal changes it.
  license = (await tx.licenses.findById(ctx.app.id, license.id)) ?? license;
  await tx.users.lockRow(userId, ctx.now);
  const user = await tx.users.findById(ctx.app.id, userId);
  if (!user) throw new DomainError('invalid_credentials');
  const next = applyLicense(
    user,
    { minutes: license.minutes, grantsLifetime: license.grantsLifetime, revokesLifetime: license.revokesLifetime },
    ctx.now,
  );
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
  };
  await tx.licenses.insertActivation(activation);
  return activation;
}
