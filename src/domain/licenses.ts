import { randomUUID } from 'node:crypto';
import type { Repositories } from '../store/index.js';
import type { ActivationRecord, LicenseRecord } from '../store/records.js';
import type { RequestContext } from './access.js';
import { DomainError } from './errors.js';
import { applyLicense } from './membership.js';
import type { Services } from './services.js';

/** A code that exists in this app, has not expired unused, and has not been used: else invalid_license / license_used. */
export async function findRedeemableLicense(s: Services, ctx: RequestContext, code: string): Promise<LicenseRecord> {
  const license = await s.store.licenses.findByCode(ctx.app.id, code);
  if (!license) throw new DomainError('invalid_license');
  if (license.usedAt !== null) throw new DomainError('license_used');
  if (license.expiresAt !== null && license.expiresAt <= ctx.now) throw new DomainError('invalid_license', 'This license code has expired');
  return license;
}

/**
 * Inside a transaction: claims the license (only one caller can), then applies
 * it to the user's membership read under a row lock, and records the activation.
 */
export async function redeem(tx: Repositories, ctx: RequestContext, userId: string, license: LicenseRecord): Promise<ActivationRecord> {
  if (!(await tx.licenses.markUsed(license.id, userId, ctx.now))) throw new DomainError('license_used');
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
