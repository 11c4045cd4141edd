import type { AppRecord, EntitlementGrant, TemplateHolding, UserRecord } from '../store/records.js';
import { validationError } from './errors.js';
import { applyLicense, type LicenseEffect, type MembershipState } from './membership.js';
import { MAX_TIME } from './validation.js';

/**
 * Entitlements and template limits (docs/decisions.md, issue 24). Pure: the
 * clock is always the caller's. A grant is live at `now` while its end is
 * null (never) or ahead; a user's entitlements are the codes of their live
 * grants, whatever gave them (a redeemed license, the operator, a trial).
 */
export const ENTITLEMENT_CODE = /^[a-z0-9][a-z0-9._-]{0,63}$/;
export const MAX_ENTITLEMENTS = 100;

const live = (until: number | null, now: number): boolean => until === null || until > now;

/** The codes live at `now`, sorted by code point, once each: `user.membership.entitlements`. */
export function liveCodes(grants: readonly EntitlementGrant[], now: number): string[] {
  if (grants.length === 0) return [];
  const codes = new Set<string>();
  for (const g of grants) if (live(g.until, now)) codes.add(g.code);
  return sortCodes([...codes]);
}

/** Code-point order (not locale order): the same in every SDK. Codes are ASCII, so UTF-16 order is code-point order. */
export const sortCodes = (codes: string[]): string[] => codes.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

/** The lease's `entitlements`: one per live code, `until` the latest end among its live grants (null when one never ends). */
export function leaseEntitlements(grants: readonly EntitlementGrant[], now: number): { code: string; until: number | null }[] {
  const ends = new Map<string, number | null>();
  for (const g of grants) {
    if (!live(g.until, now)) continue;
    const known = ends.get(g.code);
    if (known === undefined) ends.set(g.code, g.until);
    else if (known !== null) ends.set(g.code, g.until === null ? null : Math.max(known, g.until));
  }
  return sortCodes([...ends.keys()]).map((code) => ({ code, until: ends.get(code)! }));
}

/** A list of codes as given by the operator: each valid, at most MAX_ENTITLEMENTS; answered sorted and without duplicates. */
export function checkCodes(field: string, codes: readonly string[]): string[] {
  if (codes.length > MAX_ENTITLEMENTS) throw validationError(field, `must hold at most ${MAX_ENTITLEMENTS} codes`);
  for (const [i, code] of codes.entries()) checkCode(`${field}.${i}`, code);
  return sortCodes([...new Set(codes)]);
}

export function checkCode(field: string, code: string): void {
  if (!ENTITLEMENT_CODE.test(code)) throw validationError(field, 'must match ^[a-z0-9][a-z0-9._-]{0,63}$');
}

/**
 * Until when one redemption holds its entitlements and its template's limits, computed once at
 * redemption: a lifetime license never ends (null); a license of minutes holds them until the
 * membership end it stacked onto (the new active_until), or, on a lifetime membership that the
 * minutes do not extend, for its own minutes from now; a license that adds no time holds nothing
 * (it ends at once). A store's renewal of a redeemed license computes its holding's new end here too,
 * passing `heldUntil`, the end the holding had: on a lifetime membership the renewed minutes stack on
 * that end (or now, when it has passed) as minutes stack on a membership.
 */
export function holdingEnd(before: MembershipState, effect: LicenseEffect, now: number, heldUntil = now): number | null {
  if (effect.grantsLifetime) return null;
  if (effect.minutes === null) return now;
  const after = applyLicense(before, effect, now);
  if (!after.isLifetime && after.activeUntil !== null) return after.activeUntil;
  return Math.min(Math.max(heldUntil, now) + effect.minutes * 60_000, MAX_TIME);
}

/** A trial user now: the trial is not converted and has not ended. */
export function isTrialUser(user: Pick<UserRecord, 'trialEndsAt'>, now: number): boolean {
  return user.trialEndsAt !== null && user.trialEndsAt > now;
}

/** What the templates a user holds set, where they set it (issue 25's seats read max_seats and heartbeat_seconds). */
export interface TemplateLimits {
  /** Devices per user: the largest limit among the held templates that set one, else the app's max_devices_per_user. */
  maxDevices: number;
  /** The largest max_seats among the held templates, or null when none sets one (seats not enabled). */
  maxSeats: number | null;
  /** The shortest heartbeat_seconds among the held templates, or null when none sets one. */
  heartbeatSeconds: number | null;
}

/**
 * The effective template limits for this user at `now`: over the templates the user holds (each
 * redeemed license made from one, while its holding is live: holdingEnd above).
 */
export function effectiveLimits(app: Pick<AppRecord, 'maxDevicesPerUser'>, user: Pick<UserRecord, 'holdings'>, now: number): TemplateLimits {
  let maxDevices: number | null = null;
  let maxSeats: number | null = null;
  let heartbeatSeconds: number | null = null;
  for (const h of user.holdings as readonly TemplateHolding[]) {
    if (!live(h.until, now)) continue;
    if (h.maxDevices !== null) maxDevices = Math.max(maxDevices ?? 0, h.maxDevices);
    if (h.maxSeats !== null) maxSeats = Math.max(maxSeats ?? 0, h.maxSeats);
    if (h.heartbeatSeconds !== null) heartbeatSeconds = Math.min(heartbeatSeconds ?? Infinity, h.heartbeatSeconds);
  }
  return { maxDevices: maxDevices ?? app.maxDevicesPerUser, maxSeats, heartbeatSeconds };
}
