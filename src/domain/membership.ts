import { MAX_TIME } from './validation.js';

/** Membership arithmetic of DECISIONS.md; pure, so the clock is always the caller's. */
export interface MembershipState {
  isLifetime: boolean;
  activeUntil: number | null; // ms since epoch
}

export interface LicenseEffect {
  minutes: number | null;
  grantsLifetime: boolean;
  revokesLifetime: boolean;
}

export interface MembershipView {
  is_active: boolean;
  is_lifetime: boolean;
  active_until: string | null;
}

export function isActive(m: MembershipState, now: number): boolean {
  return m.isLifetime || (m.activeUntil !== null && m.activeUntil > now);
}

/** Revoke, then grant, then minutes; minutes on a lifetime membership are recorded but change nothing. */
export function applyLicense(m: MembershipState, effect: LicenseEffect, now: number): MembershipState {
  let { isLifetime, activeUntil } = m;
  if (effect.revokesLifetime) isLifetime = false;
  if (effect.grantsLifetime) {
    isLifetime = true;
    activeUntil = null;
  }
  if (effect.minutes !== null && !isLifetime) {
    // Capped at the last representable instant: ten thousand years of stacked licenses is still "active".
    activeUntil = Math.min(Math.max(activeUntil ?? now, now) + effect.minutes * 60_000, MAX_TIME);
  }
  return { isLifetime, activeUntil };
}

export function viewMembership(m: MembershipState, now: number): MembershipView {
  return {
    is_active: isActive(m, now),
    is_lifetime: m.isLifetime,
    active_until: m.isLifetime || m.activeUntil === null ? null : iso(m.activeUntil),
  };
}

/** ISO 8601 UTC with milliseconds and Z. */
export function iso(ms: number): string {
  return new Date(ms).toISOString();
}
