/**
 * /app_context's user part (src/domain/app-context.ts, userJsonOf): kept with the cached user record for the
 * span of time in which nothing of it turns. Whatever the clock reads, forwards or back, the kept part is the
 * one a fresh serialisation gives; inside one span it is the same object (computed once).
 */
import { describe, expect, it } from 'vitest';
import { spanOf, userJsonOf } from '../src/domain/app-context.js';
import { viewUser } from '../src/domain/users.js';
import type { UserRecord } from '../src/store/records.js';

const T = 1_800_000_000_000;

/** Active until T+100, a trial until T+50, entitlement `a` until T+30 and again until T+70, `b` for ever. */
const record = (): UserRecord => ({
  id: 'u1', appId: 'app1', username: 'alice', passwordHash: null, signupLicenseId: null, signupCode: null,
  isLifetime: false, activeUntil: T + 100, deviceCount: 0, createdAt: T - 1_000,
  grants: [{ code: 'a', until: T + 30 }, { code: 'b', until: null }, { code: 'a', until: T + 70 }],
  holdings: [], trialEndsAt: T + 50,
});

const fresh = (user: UserRecord, now: number) => JSON.stringify(viewUser(user, now));

describe("/app_context's user part", () => {
  it('is the fresh serialisation at every instant, the clock going forwards then back, on one record', () => {
    const user = record();
    const instants = [...Array(141).keys()].map((i) => T - 20 + i);
    for (const now of [...instants, ...instants.reverse()]) {
      const part = userJsonOf(user, now);
      expect(part.json, `at T${now - T >= 0 ? '+' : ''}${now - T}`).toBe(fresh(user, now));
      expect(part.bytes).toBe(Buffer.byteLength(part.json));
    }
  });

  it('is computed once per span: the same part inside it, a new one at its end', () => {
    const user = record();
    const first = userJsonOf(user, T + 31);
    expect(userJsonOf(user, T + 49)).toBe(first); // [T+30, T+50): nothing turns
    const afterTrial = userJsonOf(user, T + 50);
    expect(afterTrial).not.toBe(first);
    expect(JSON.parse(afterTrial.json).membership.is_trial).toBeUndefined();
    expect(JSON.parse(first.json).membership).toMatchObject({ is_trial: true, entitlements: ['a', 'b'] });
  });

  it('a lifetime user: active with no end at every instant; only its grants turn the part, the far future included', () => {
    // A lifetime membership has no instant of its own: its part turns only where an entitlement grant ends.
    const user: UserRecord = { ...record(), isLifetime: true, activeUntil: null, trialEndsAt: null };
    const instants = [...Array(141).keys()].map((i) => T - 20 + i);
    for (const now of [...instants, ...instants.reverse(), T + 1e12, T - 1e12]) {
      const part = userJsonOf(user, now);
      expect(part.json, `at T${now - T >= 0 ? '+' : ''}${now - T}`).toBe(fresh(user, now));
      expect(JSON.parse(part.json).membership).toMatchObject({ is_active: true, is_lifetime: true, active_until: null });
    }
    expect(spanOf(user, T)).toEqual([-Infinity, T + 30]);
    expect(spanOf(user, T + 70)).toEqual([T + 70, Infinity]);
    const early = userJsonOf(user, T + 1);
    expect(userJsonOf(user, T + 29)).toBe(early); // computed once for the span before the first grant ends
    const late = userJsonOf(user, T + 70);
    expect(JSON.parse(late.json).membership.entitlements).toEqual(['b']);
    expect(userJsonOf(user, T + 1e12)).toBe(late); // and once for the rest of time after the last
    // Without grants a lifetime user's part is one for ever.
    const plain: UserRecord = { ...user, grants: [] };
    const once = userJsonOf(plain, T - 1e12);
    expect(userJsonOf(plain, T + 1e12)).toBe(once);
    expect(JSON.parse(once.json).membership).toEqual({ is_active: true, is_lifetime: true, active_until: null, entitlements: [] });
  });

  it("a span runs from the record's last instant at or before now to its first after it", () => {
    const user = record();
    expect(spanOf(user, T)).toEqual([-Infinity, T + 30]);
    expect(spanOf(user, T + 30)).toEqual([T + 30, T + 50]);
    expect(spanOf(user, T + 70)).toEqual([T + 70, T + 100]);
    expect(spanOf(user, T + 100)).toEqual([T + 100, Infinity]);
    expect(spanOf({ ...user, activeUntil: null, trialEndsAt: null, grants: [] }, T)).toEqual([-Infinity, Infinity]);
  });
});
