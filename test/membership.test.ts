import type { LightMyRequestResponse } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { errorOf, harness, PASSWORD, type Harness, type TestApp } from './helpers.js';

const MINUTE = 60_000;

interface MembershipJson {
  is_active: boolean;
  is_lifetime: boolean;
  active_until: string | null;
}

describe('membership arithmetic (SPEC 3, 4.7; DECISIONS membership)', () => {
  let h: Harness;
  let app: TestApp;
  let userId: string;
  let start: number;

  beforeEach(async () => {
    h = await harness();
    app = await h.createApp();
    userId = await h.signUp(app, 'alice');
    start = h.clock.ms;
  });
  afterEach(async () => h.close());

  /** Activates a fresh license of the given kind for alice; returns the activation record. */
  async function activate(body: Record<string, unknown>): Promise<Record<string, unknown>> {
    const [code] = await h.licenses(app, { minutes: undefined, ...body });
    const res = await h.client(app, 'POST', '/activate_license', { code, username: 'alice', password: PASSWORD });
    expect(res.statusCode).toBe(200);
    return res.json();
  }

  /** GET /app_context with the legacy username/password headers. */
  function context(): Promise<LightMyRequestResponse> {
    return h.client(app, 'GET', '/app_context', undefined, { 'x-api-username': 'alice', 'x-api-password': PASSWORD });
  }

  /** The membership as the client sees it; fails the test unless the context answers 200. */
  async function membership(): Promise<MembershipJson> {
    const res = await context();
    expect(res.statusCode).toBe(200);
    expect(res.json().server_time).toBe(h.clock.iso());
    return res.json().user.membership;
  }

  async function stored(): Promise<{ isLifetime: boolean; activeUntil: number | null }> {
    const u = await h.tollgate.services.store.users.findById(app.id, userId);
    if (!u) throw new Error('no user');
    return { isLifetime: u.isLifetime, activeUntil: u.activeUntil };
  }

  function expectInactive(res: LightMyRequestResponse): void {
    expect(res.statusCode).toBe(403);
    expect(errorOf(res).code).toBe('membership_inactive');
  }

  describe('minutes', () => {
    it('DECISIONS: one 60-minute license on a new membership gives active_until = now + 60 min', async () => {
      await activate({ minutes: 60 });
      expect(await membership()).toEqual({ is_active: true, is_lifetime: false, active_until: new Date(start + 60 * MINUTE).toISOString(), entitlements: [] });
      expect(await stored()).toEqual({ isLifetime: false, activeUntil: start + 60 * MINUTE });
    });

    it('SPEC 4.7 rule 2: stacking two 60-minute licenses gives active_until = now + 120 min', async () => {
      await activate({ minutes: 60 });
      await activate({ minutes: 60 });
      expect(await membership()).toEqual({ is_active: true, is_lifetime: false, active_until: new Date(start + 120 * MINUTE).toISOString(), entitlements: [] });
      expect(await stored()).toEqual({ isLifetime: false, activeUntil: start + 120 * MINUTE });
    });

    it('SPEC 4.7 rule 2: a license activated while time remains extends from active_until, not from now', async () => {
      await activate({ minutes: 60 });
      h.clock.minutes(45);
      await activate({ minutes: 30 });
      expect(await membership()).toEqual({ is_active: true, is_lifetime: false, active_until: new Date(start + 90 * MINUTE).toISOString(), entitlements: [] });
    });

    it('DECISIONS: activating after expiry starts from now (max(active_until, now) + minutes)', async () => {
      await activate({ minutes: 60 });
      h.clock.minutes(100); // expired 40 minutes ago
      expectInactive(await context());
      await activate({ minutes: 30 });
      expect(await membership()).toEqual({ is_active: true, is_lifetime: false, active_until: new Date(start + 130 * MINUTE).toISOString(), entitlements: [] });
      expect(await stored()).toEqual({ isLifetime: false, activeUntil: start + 130 * MINUTE });
    });

    it('DECISIONS: activating exactly at expiry starts from now (which equals active_until)', async () => {
      await activate({ minutes: 60 });
      h.clock.minutes(60);
      await activate({ minutes: 10 });
      expect((await stored()).activeUntil).toBe(start + 70 * MINUTE);
    });

    it('SPEC 4.5 rule 1: remaining time is active_until minus server_time', async () => {
      await activate({ minutes: 60 });
      h.clock.minutes(15);
      const res = await context();
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(Date.parse(body.user.membership.active_until) - Date.parse(body.server_time)).toBe(45 * MINUTE);
    });
  });

  describe('expiry', () => {
    it('DECISIONS: is_active is true at active_until - 1 ms', async () => {
      await activate({ minutes: 60 });
      h.clock.advance(60 * MINUTE - 1);
      expect(await membership()).toEqual({ is_active: true, is_lifetime: false, active_until: new Date(start + 60 * MINUTE).toISOString(), entitlements: [] });
    });

    it('DECISIONS: at exactly active_until the membership is inactive: GET /app_context answers 403 membership_inactive (legacy and token)', async () => {
      await activate({ minutes: 60 });
      const token = await h.login(app, 'alice');
      h.clock.advance(60 * MINUTE);
      expectInactive(await context());
      expectInactive(await h.client(app, 'GET', '/app_context', undefined, { authorization: `Bearer ${token}` }));
      const login = await h.client(app, 'POST', '/auth/login', { credentials: { username: 'alice', password: PASSWORD } });
      expectInactive(login);
      // The stored state is unchanged: expiry is computed at read time.
      expect(await stored()).toEqual({ isLifetime: false, activeUntil: start + 60 * MINUTE });
    });

    it('DECISIONS: a revoke-only license on an expired timed membership changes nothing (it stays inactive)', async () => {
      await activate({ minutes: 60 });
      h.clock.minutes(61);
      // A revoke-only license changes nothing on a non-lifetime membership; the context stays 403.
      await activate({ revokes_lifetime_access: true });
      expect(await stored()).toEqual({ isLifetime: false, activeUntil: start + 60 * MINUTE });
      expectInactive(await context());
    });

    it('SPEC 4.1 rule 5: a membership never granted is inactive (403 membership_inactive), stored active_until null', async () => {
      expectInactive(await context());
      expect(await stored()).toEqual({ isLifetime: false, activeUntil: null });
    });
  });

  describe('lifetime', () => {
    it('SPEC 4.7 rule 3: a lifetime license gives is_lifetime true and active_until null', async () => {
      const record = await activate({ lifetime: true });
      expect(record).toMatchObject({ minutes: null, grants_lifetime_access: true });
      expect(await membership()).toEqual({ is_active: true, is_lifetime: true, active_until: null, entitlements: [] });
      expect(await stored()).toEqual({ isLifetime: true, activeUntil: null });
    });

    it('SPEC 4.7 rule 3: a lifetime membership never expires (still active years later, read with a token)', async () => {
      await activate({ lifetime: true });
      const token = await h.login(app, 'alice');
      h.clock.advance(10 * 365 * 24 * 60 * MINUTE);
      expect(await membership()).toEqual({ is_active: true, is_lifetime: true, active_until: null, entitlements: [] });
      const res = await h.client(app, 'GET', '/app_context', undefined, { authorization: `Bearer ${token}` });
      // The session itself has expired (default TTL one day): a token is not the way to read this.
      expect(res.statusCode).toBe(401);
      expect(errorOf(res).code).toBe('session_expired');
      const fresh = await h.login(app, 'alice');
      const again = await h.client(app, 'GET', '/app_context', undefined, { authorization: `Bearer ${fresh}` });
      expect(again.statusCode).toBe(200);
      expect(again.json().user.membership).toEqual({ is_active: true, is_lifetime: true, active_until: null, entitlements: [] });
    });

    it('DECISIONS: a lifetime grant over remaining time sets active_until null', async () => {
      await activate({ minutes: 60 });
      await activate({ lifetime: true });
      expect(await membership()).toEqual({ is_active: true, is_lifetime: true, active_until: null, entitlements: [] });
      expect(await stored()).toEqual({ isLifetime: true, activeUntil: null });
    });

    it('DECISIONS: minutes on a lifetime membership are recorded (activation minutes returned) but active_until stays null', async () => {
      await activate({ lifetime: true });
      h.clock.minutes(1);
      const record = await activate({ minutes: 60 });
      expect(record).toMatchObject({ minutes: 60, grants_lifetime_access: false, revokes_lifetime_access: false });
      expect(await membership()).toEqual({ is_active: true, is_lifetime: true, active_until: null, entitlements: [] });
      expect(await stored()).toEqual({ isLifetime: true, activeUntil: null });
      const activations = await h.tollgate.services.store.licenses.activationsOf(userId);
      expect(activations.map((a) => [a.occurredAt - start, a.minutes])).toEqual([[0, null], [MINUTE, 60]]);
    });
  });

  describe('revoking lifetime', () => {
    it('DECISIONS: a revoke-lifetime license (no minutes) makes is_lifetime false and the membership inactive', async () => {
      await activate({ lifetime: true });
      const record = await activate({ revokes_lifetime_access: true });
      expect(record).toMatchObject({ minutes: null, grants_lifetime_access: false, revokes_lifetime_access: true });
      expect(await stored()).toEqual({ isLifetime: false, activeUntil: null });
      expectInactive(await context());
    });

    it('DECISIONS: revoke + minutes on a lifetime membership gives is_lifetime false and active_until = now + minutes', async () => {
      await activate({ lifetime: true });
      h.clock.minutes(5);
      await activate({ revokes_lifetime_access: true, minutes: 30 });
      expect(await membership()).toEqual({ is_active: true, is_lifetime: false, active_until: h.clock.iso(30 * MINUTE), entitlements: [] });
      expect(await stored()).toEqual({ isLifetime: false, activeUntil: h.clock.ms + 30 * MINUTE });
    });

    it('DECISIONS: time held before a lifetime grant is not restored after revocation', async () => {
      await activate({ minutes: 120 });
      await activate({ lifetime: true });
      await activate({ revokes_lifetime_access: true });
      expect(await stored()).toEqual({ isLifetime: false, activeUntil: null });
      expectInactive(await context());
    });

    it('DECISIONS: time held before a lifetime grant is not restored after revoke + minutes (now + minutes only)', async () => {
      await activate({ minutes: 120 });
      await activate({ lifetime: true });
      await activate({ revokes_lifetime_access: true, minutes: 10 });
      expect(await membership()).toEqual({ is_active: true, is_lifetime: false, active_until: new Date(start + 10 * MINUTE).toISOString(), entitlements: [] });
    });

    it('DECISIONS: revoke + minutes on a timed membership only adds the minutes', async () => {
      await activate({ minutes: 60 });
      await activate({ revokes_lifetime_access: true, minutes: 30 });
      expect(await stored()).toEqual({ isLifetime: false, activeUntil: start + 90 * MINUTE });
    });

    it('DECISIONS: a lifetime license granted after a revocation gives lifetime again', async () => {
      await activate({ lifetime: true });
      await activate({ revokes_lifetime_access: true });
      await activate({ lifetime: true });
      expect(await membership()).toEqual({ is_active: true, is_lifetime: true, active_until: null, entitlements: [] });
    });

    it('DECISIONS: a license both revoking and granting lifetime leaves lifetime (revoke, then grant)', async () => {
      await activate({ minutes: 60 });
      await activate({ lifetime: true, revokes_lifetime_access: true });
      expect(await stored()).toEqual({ isLifetime: true, activeUntil: null });
    });
  });

  describe('license sign-up memberships', () => {
    it('SPEC 4.2: a license sign-up membership runs from now + minutes and expires at active_until (license-code header: 403)', async () => {
      const [first] = await h.licenses(app, { minutes: 60 });
      const res = await h.client(app, 'POST', '/sign_up_with_license_code', { code: first });
      expect(res.statusCode).toBe(200);
      expect(res.json().membership.active_until).toBe(new Date(start + 60 * MINUTE).toISOString());
      h.clock.advance(60 * MINUTE - 1);
      const live = await h.client(app, 'GET', '/app_context', undefined, { 'x-api-license-code': first! });
      expect(live.statusCode).toBe(200);
      expect(live.json().user.membership.is_active).toBe(true);
      h.clock.advance(1);
      const ctx = await h.client(app, 'GET', '/app_context', undefined, { 'x-api-license-code': first! });
      expectInactive(ctx);
    });
  });
});
