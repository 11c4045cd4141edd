import type { AppRecord, EntitlementGrant, LicenseRecord, TemplateHolding, UserRecord } from '../store/records.js';
import { validationError } from './errors.js';
import type { LicenseEffect } from './membership.js';
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
 * The latest end among the ends live at `now` (docs/decisions.md, "Each entitlement stacks on itself"):
 * undefined when none is live, null when a live one never ends.
 */
export function latestLiveEnd(ends: Iterable<number | null>, now: number): number | null | undefined {
  let latest: number | undefined;
  for (const end of ends) {
    if (!live(end, now)) continue;
    if (end === null) return null;
    latest = latest === undefined ? end : Math.max(latest, end);
  }
  return latest;
}

/**
 * Until when one redemption (or a store's renewal) holds one thing it lends, an entitlement code or its
 * template's limits, computed once (docs/decisions.md, "Each entitlement stacks on itself"). `held` is the
 * user's latest live end of the same thing (latestLiveEnd): the minutes stack on it, or on now when none is
 * live, capped as the membership is; a never-ending one (null) stays never-ending by itself, so these minutes
 * count from now (they outlast it when it is taken away). A lifetime license never ends (null); a license that
 * adds no time holds nothing (it ends at once). The membership's own end plays no part: a day of "pro"
 * redeemed on a year of "basic" is a day of "pro".
 */
export function stackedEnd(held: number | null | undefined, effect: LicenseEffect, now: number): number | null {
  if (effect.grantsLifetime) return null;
  if (effect.minutes === null) return now;
  const from = held === undefined || held === null ? now : Math.max(held, now);
  return Math.min(from + effect.minutes * 60_000, MAX_TIME);
}

/** What a license lends: its entitlement codes and its template's limits (copied onto it). */
export type Lent = Pick<LicenseRecord, 'entitlements' | 'maxDevices' | 'maxSeats' | 'heartbeatSeconds'>;

/** Whether a license sets any template limit: only then is its redemption a holding effectiveLimits reads. */
export const setsLimits = (l: Pick<Lent, 'maxDevices' | 'maxSeats' | 'heartbeatSeconds'>): boolean =>
  l.maxDevices !== null || l.maxSeats !== null || l.heartbeatSeconds !== null;

const sameLimits = (a: Pick<Lent, 'maxDevices' | 'maxSeats' | 'heartbeatSeconds'>, b: TemplateHolding): boolean =>
  a.maxDevices === b.maxDevices && a.maxSeats === b.maxSeats && a.heartbeatSeconds === b.heartbeatSeconds;

/** The ends one redemption (or renewal) of `effect` gives what `lent` lends, over what the user holds at `now`. */
export interface LentEnds {
  /** The holding of the license's limits (activations.ends_at): stacked on the live holdings of the same limits. */
  holding: number | null;
  /** Each code, stacked on the user's live grants of that code (whatever gave them). */
  codes: { code: string; endsAt: number | null }[];
}

/**
 * Each code stacks on itself, and the limits on the same limits (max_devices, max_seats, heartbeat_seconds
 * alike: a template's limits, whichever template copied them). A license that sets no limits holds none: its
 * activation's end is then its own minutes from now.
 */
export function lentEnds(held: Pick<UserRecord, 'grants' | 'holdings'>, lent: Lent, effect: LicenseEffect, now: number): LentEnds {
  const holding = stackedEnd(setsLimits(lent) ? latestLiveEnd(held.holdings.filter((h) => sameLimits(lent, h)).map((h) => h.until), now) : undefined, effect, now);
  const codes = lent.entitlements.map((code) => ({
    code, endsAt: stackedEnd(latestLiveEnd(held.grants.filter((g) => g.code === code).map((g) => g.until), now), effect, now),
  }));
  return { holding, codes };
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
 * redeemed license made from one, while its holding is live: lentEnds above).
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
