import { randomUUID } from 'node:crypto';
import type { Repositories } from '../store/index.js';
import type { ActivationRecord, LicenseRecord } from '../store/records.js';
import type { RequestContext } from './access.js';
import { DomainError } from './errors.js';
import { lentEnds, setsLimits, type LentEnds } from './entitlements.js';
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
 * arithmetic of the seed. Apart from it, each entitlement code the license lends stacks on the user's
 * live grants of that code, and its limits on the live holdings of the same limits (entitlements.ts
 * lentEnds): read here, under the row lock, so parallel redemptions for one user each stack on the last.
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
  // What the user holds once the trial's grants and a revoked lifetime's have ended (read again only then).
  const held = convertedTrial || (license.revokesLifetime && user.isLifetime) ? ((await tx.users.findById(ctx.app.id, userId)) ?? user) : user;
  const ends = lentEnds(held, license, effect, ctx.now);
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
    endsAt: ends.holding,
  };
  await tx.licenses.insertActivation(activation);
  await grantLicenseEntitlements(tx, activation, ends.codes, activation.occurredAt);
  return { ...activation, convertedTrial, license };
}

/** A redemption's activation, and whether it converted the user's trial (the caller emits trial.converted). */
export interface Redemption extends ActivationRecord {
  convertedTrial: boolean;
  /** The license as claimed (read after the claim, used): the object of the caller's license.redeemed. */
  license: LicenseRecord;
}

/** The grants of one redemption (or renewal): one row per code, each with its own end (lentEnds). */
export async function grantLicenseEntitlements(tx: Repositories, activation: Pick<ActivationRecord, 'appId' | 'userId' | 'licenseId'>, codes: LentEnds['codes'], at: number): Promise<void> {
  for (const { code, endsAt } of codes) {
    await tx.entitlements.insert({
      id: randomUUID(), appId: activation.appId, userId: activation.userId, code, source: 'license', licenseId: activation.licenseId, endsAt, createdAt: at,
    });
  }
}

/** Lifetime access revoked (a revoking license, or the operator): what lifetime licenses granted, which never ended, ends now. */
export async function endLifetimeHoldings(tx: Repositories, userId: string, now: number): Promise<void> {
  await tx.licenses.endOpenActivations(userId, now);
  await tx.entitlements.endOpenLicenseGrants(userId, now);
}

/**
 * A store's renewal of a license `userId` redeemed, by the `minutes` it was sold with (src/domain/sales/apply.ts,
 * after the membership took them): what the license lends now stacks as a redemption of those minutes would
 * (lentEnds). Each of its codes: the license's grant of it to this user moves to max(now, the user's latest live
 * end of that code) + the minutes, never earlier (one the operator ended apart included: a paid period lends it
 * again, as a redemption would), or a grant is made when the license has none of that code; its limits holding
 * (the activation's end) moves to max(now, the latest live end of the same limits) + the minutes, never earlier.
 * A never-ending holding (a lifetime license) has nothing to extend.
 */
export async function renewRedemption(tx: Repositories, license: LicenseRecord, userId: string, minutes: number, now: number): Promise<void> {
  const end = await tx.licenses.holdingEnd(license.id, userId);
  if (end === undefined || end === null) return;
  await tx.users.lockRow(userId, now);
  const user = await tx.users.findById(license.appId, userId);
  if (!user) return;
  const ends = lentEnds(user, license, { minutes, grantsLifetime: false, revokesLifetime: false }, now);
  if (ends.holding !== null && ends.holding > end) await tx.licenses.extendActivation(license.id, userId, end, ends.holding);
  const mine = (await tx.entitlements.ofLicense(license.id)).filter((g) => g.userId === userId);
  const missing: LentEnds['codes'] = [];
  for (const c of ends.codes) {
    // The license's latest grant of the code (a never-ending one has nothing to extend).
    const own = mine.filter((g) => g.code === c.code).sort((a, b) => (a.until === null ? 1 : b.until === null ? -1 : a.until - b.until)).at(-1);
    if (own === undefined) missing.push(c);
    else if (own.until !== null && c.endsAt !== null && c.endsAt > own.until) await tx.entitlements.setEnd(own.id, c.endsAt);
  }
  await grantLicenseEntitlements(tx, { appId: license.appId, userId, licenseId: license.id }, missing, now);
}

/**
 * A refunded renewal (src/domain/sales/apply.ts): what the license lends `userId` gives back the `minutes` that
 * renewal stacked (renewRedemption), its limits holding and each of its live grants ending that much earlier,
 * never before now; what stacked on them moves in by as much (pullStacked). What already ended, or never ends
 * (a lifetime license), stays as it is.
 */
export async function shortenHolding(tx: Repositories, licenseId: string, userId: string, minutes: number, now: number): Promise<void> {
  await giveBack(tx, licenseId, userId, now, (end) => Math.max(now, end - minutes * 60_000));
}

/** A refund, or the lifetime a sold license granted revoked: what that one redemption still holds ends now; what stacked on it moves in. */
export async function endHolding(tx: Repositories, licenseId: string, userId: string, now: number): Promise<void> {
  const before = await stackOf(tx, licenseId, userId, now);
  await tx.licenses.endActivation(licenseId, userId, now);
  await tx.entitlements.endLicenseGrants(licenseId, userId, now);
  await pullStacked(tx, before, (end) => end - now, now);
}

/** What one redemption holds live (its limits holding, its grants) and what the user's other redemptions hold beside it. */
interface Stack {
  /** The redemption's own limits holding, when it lends limits and it is live and finite. */
  holding: Held | null;
  /** The license's own live finite grants to this user. */
  grants: Held[];
  /** The user's other redemptions' live finite limits holdings. */
  otherHoldings: Held[];
  /** The user's other live finite license grants (operators' grants carry an end of the operator's own: never moved). */
  otherGrants: Held[];
}

/** One holding or grant: what it lends (a code, or a set of limits as one string) and until when. */
interface Held {
  id: string;
  lends: string;
  end: number;
}

async function stackOf(tx: Repositories, licenseId: string, userId: string, now: number): Promise<Stack> {
  const stack: Stack = { holding: null, grants: [], otherHoldings: [], otherGrants: [] };
  for (const h of await tx.licenses.holdingsWithLimits(userId)) {
    if (!setsLimits(h) || h.endsAt === null || h.endsAt <= now) continue;
    const held = { id: h.id, lends: `${h.maxDevices}/${h.maxSeats}/${h.heartbeatSeconds}`, end: h.endsAt };
    if (h.licenseId === licenseId) stack.holding = held;
    else stack.otherHoldings.push(held);
  }
  for (const g of await tx.entitlements.listFor(userId)) {
    if (g.source !== 'license' || g.until === null || g.until <= now) continue;
    (g.licenseId === licenseId ? stack.grants : stack.otherGrants).push({ id: g.id, lends: g.code, end: g.until });
  }
  return stack;
}

/** Gives back what `to` takes of each live finite end of one redemption (a refunded renewal), then pulls in what stacked on it. */
async function giveBack(tx: Repositories, licenseId: string, userId: string, now: number, to: (end: number) => number): Promise<void> {
  const before = await stackOf(tx, licenseId, userId, now);
  if (before.holding !== null) await tx.licenses.setActivationEnd(before.holding.id, to(before.holding.end));
  for (const g of before.grants) await tx.entitlements.setEnd(g.id, to(g.end));
  await pullStacked(tx, before, (end) => end - to(end), now);
}

/**
 * What stacked on a redemption that gave time back moves in by as much (docs/decisions.md, "A refund pulls in what
 * stacked on it"): each code and each set of limits stacks on its own latest live end (lentEnds), so a grant of
 * the same code, or a holding of the same limits, that ends after the one given back was stacked on it (or after
 * it); it ends `taken(oldEnd)` earlier, never before now. Without this a cheap day of "pro" redeemed on top of a
 * refunded month of "pro" kept the month.
 */
async function pullStacked(tx: Repositories, before: Stack, taken: (end: number) => number, now: number): Promise<void> {
  const pulled = (given: readonly Held[], others: readonly Held[]): Map<string, number> => {
    const to = new Map<string, number>();
    for (const g of given) {
      const by = taken(g.end);
      if (by <= 0) continue;
      for (const o of others) if (o.lends === g.lends && o.end > g.end) to.set(o.id, Math.min(to.get(o.id) ?? o.end, Math.max(now, o.end - by)));
    }
    return to;
  };
  for (const [id, end] of pulled(before.holding === null ? [] : [before.holding], before.otherHoldings)) await tx.licenses.setActivationEnd(id, end);
  for (const [id, end] of pulled(before.grants, before.otherGrants)) await tx.entitlements.setEnd(id, end);
}
