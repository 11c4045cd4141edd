import type { LightMyRequestResponse } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { errorOf, harness, PASSWORD, type Harness, type TestApp } from './helpers.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

interface License {
  id: string;
  code: string;
}

describe('POST /activate_license (SPEC 4.7)', () => {
  let h: Harness;
  let app: TestApp;

  beforeEach(async () => {
    h = await harness();
    app = await h.createApp();
  });
  afterEach(async () => h.close());

  const license = (target: TestApp, body?: Record<string, unknown>): Promise<License> => h.license(target, body);

  function activate(target: TestApp, body: unknown, ip?: string): Promise<LightMyRequestResponse> {
    return h.inject({
      method: 'POST', url: '/activate_license', headers: target.headers,
      ...(body !== undefined && { payload: body as object }), ...(ip !== undefined && { remoteAddress: ip }),
    });
  }

  async function usedBy(target: TestApp, id: string): Promise<unknown> {
    const res = await h.admin('GET', `/apps/${target.id}/licenses/${id}`);
    expect(res.statusCode).toBe(200);
    return res.json().used_by_user_id;
  }

  async function membershipOf(target: TestApp, userId: string): Promise<{ isLifetime: boolean; activeUntil: number | null }> {
    const u = await h.tollgate.services.store.users.findById(target.id, userId);
    if (!u) throw new Error('no such user');
    return { isLifetime: u.isLifetime, activeUntil: u.activeUntil };
  }

  function expectError(res: LightMyRequestResponse, status: number, code: string): void {
    expect(res.statusCode).toBe(status);
    expect(errorOf(res).code).toBe(code);
  }

  function expectValidation(res: LightMyRequestResponse, field: string): void {
    expectError(res, 422, 'validation_error');
    expect(errorOf(res).errors?.map((e) => e.field)).toContain(field);
  }

  describe('the activation record (SPEC 2.4)', () => {
    it('SPEC 4.7 / 2.4: returns exactly the activation record (id, occurred_at, minutes, flags, license_id, type license)', async () => {
      h.clock.advance(1234); // a clock reading with milliseconds
      const userId = await h.signUp(app, 'alice');
      const l = await license(app, { minutes: 60 });
      const res = await activate(app, { code: l.code, username: 'alice', password: PASSWORD });
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(body).toEqual({
        id: expect.stringMatching(UUID),
        occurred_at: '2026-01-01T00:00:01.234Z',
        minutes: 60,
        grants_lifetime_access: false,
        revokes_lifetime_access: false,
        license_id: l.id,
        type: 'license',
      });
      expect(body.occurred_at).toBe(h.clock.iso());
      const stored = await h.tollgate.services.store.licenses.activationsOf(userId);
      expect(stored).toEqual([
        { id: body.id, appId: app.id, userId, licenseId: l.id, occurredAt: h.clock.ms, minutes: 60, grantsLifetime: false, revokesLifetime: false, endsAt: h.clock.ms + 60 * 60_000 },
      ]);
    });

    it('DECISIONS timestamps: occurred_at keeps its milliseconds at a whole second (.000Z)', async () => {
      await h.signUp(app, 'alice');
      const l = await license(app);
      const res = await activate(app, { code: l.code, username: 'alice', password: PASSWORD });
      expect(res.statusCode).toBe(200);
      expect(res.json().occurred_at).toBe('2026-01-01T00:00:00.000Z');
    });

    it('SPEC 2.4: a lifetime license gives minutes null and grants_lifetime_access true', async () => {
      await h.signUp(app, 'alice');
      const l = await license(app, { lifetime: true });
      const res = await activate(app, { code: l.code, username: 'alice', password: PASSWORD });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ minutes: null, grants_lifetime_access: true, revokes_lifetime_access: false, license_id: l.id, type: 'license' });
    });

    it('SPEC 2.4: a revoking license gives revokes_lifetime_access true', async () => {
      await h.signUp(app, 'alice');
      const l = await license(app, { revokes_lifetime_access: true });
      const res = await activate(app, { code: l.code, username: 'alice', password: PASSWORD });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ minutes: null, grants_lifetime_access: false, revokes_lifetime_access: true, license_id: l.id });
    });

    it('SPEC 4.7 rule 1: the license is marked used by the activating user', async () => {
      const userId = await h.signUp(app, 'alice');
      const l = await license(app);
      expect(await usedBy(app, l.id)).toBeNull();
      expect((await activate(app, { code: l.code, username: 'alice', password: PASSWORD })).statusCode).toBe(200);
      expect(await usedBy(app, l.id)).toBe(userId);
    });
  });

  describe('rule 2: activation on any membership', () => {
    it('SPEC 3 / DECISIONS order 8: activation works on an inactive membership and makes it active', async () => {
      const userId = await h.signUp(app, 'alice');
      const before = await h.client(app, 'GET', '/app_context', undefined, { 'x-api-username': 'alice', 'x-api-password': PASSWORD });
      expectError(before, 403, 'membership_inactive');
      const l = await license(app, { minutes: 30 });
      const res = await activate(app, { code: l.code, username: 'alice', password: PASSWORD });
      expect(res.statusCode).toBe(200);
      expect(await membershipOf(app, userId)).toEqual({ isLifetime: false, activeUntil: h.clock.ms + 30 * 60_000 });
      const after = await h.client(app, 'GET', '/app_context', undefined, { 'x-api-username': 'alice', 'x-api-password': PASSWORD });
      expect(after.statusCode).toBe(200);
      expect(after.json().user.membership).toEqual({ is_active: true, is_lifetime: false, active_until: h.clock.iso(30 * 60_000), entitlements: [] });
    });

    it('SPEC 4.7: activation works on an expired membership', async () => {
      const userId = await h.activeUser(app, 'alice', PASSWORD, undefined, { minutes: 10 });
      h.clock.minutes(20);
      const l = await license(app, { minutes: 10 });
      const res = await activate(app, { code: l.code, username: 'alice', password: PASSWORD });
      expect(res.statusCode).toBe(200);
      expect(await membershipOf(app, userId)).toEqual({ isLifetime: false, activeUntil: h.clock.ms + 10 * 60_000 });
    });

    it('SPEC 4.7: the username is matched case-insensitively, like sign-up', async () => {
      const userId = await h.signUp(app, 'Alice');
      const l = await license(app);
      const res = await activate(app, { code: l.code, username: 'ALICE', password: PASSWORD });
      expect(res.statusCode).toBe(200);
      expect(await usedBy(app, l.id)).toBe(userId);
    });
  });

  describe('rule 4: 401 authentication failed', () => {
    it('SPEC 4.7 rule 4: a wrong password answers 401 invalid_credentials and leaves the license unused', async () => {
      const userId = await h.signUp(app, 'alice');
      const l = await license(app);
      const res = await activate(app, { code: l.code, username: 'alice', password: 'not the password' });
      expectError(res, 401, 'invalid_credentials');
      expect(await usedBy(app, l.id)).toBeNull();
      expect(await membershipOf(app, userId)).toEqual({ isLifetime: false, activeUntil: null });
    });

    it('SPEC 4.7 rule 4: an unknown user answers 401 invalid_credentials and leaves the license unused', async () => {
      const l = await license(app);
      const res = await activate(app, { code: l.code, username: 'nobody', password: PASSWORD });
      expectError(res, 401, 'invalid_credentials');
      expect(await usedBy(app, l.id)).toBeNull();
    });

    it('SPEC 4.7 rule 4: a user of another app is unknown here (401 invalid_credentials)', async () => {
      const other = await h.createApp({ name: 'Other' });
      await h.signUp(other, 'alice');
      const l = await license(app);
      const res = await activate(app, { code: l.code, username: 'alice', password: PASSWORD });
      expectError(res, 401, 'invalid_credentials');
    });

    it('SPEC 4.7 rule 4: a license-only user (no password) cannot activate with a password (401 invalid_credentials)', async () => {
      const first = await license(app);
      const signup = await h.client(app, 'POST', '/sign_up_with_license_code', { code: first.code });
      expect(signup.statusCode).toBe(200);
      const l = await license(app);
      const res = await activate(app, { code: l.code, username: signup.json().username, password: '' });
      expectError(res, 401, 'invalid_credentials');
      expect(await usedBy(app, l.id)).toBeNull();
    });

    it('SPEC 4.7 rule 4: an invalid license code answers 401 invalid_license', async () => {
      const userId = await h.signUp(app, 'alice');
      const res = await activate(app, { code: 'AAAAA-BBBBB-CCCCC-DDDDD-EEEEE', username: 'alice', password: PASSWORD });
      expectError(res, 401, 'invalid_license');
      expect(await membershipOf(app, userId)).toEqual({ isLifetime: false, activeUntil: null });
    });

    it('SPEC 4.7 rule 4: a code of another app is invalid here (401 invalid_license)', async () => {
      const other = await h.createApp({ name: 'Other' });
      await h.signUp(app, 'alice');
      const l = await license(other);
      const res = await activate(app, { code: l.code, username: 'alice', password: PASSWORD });
      expectError(res, 401, 'invalid_license');
      expect(await usedBy(other, l.id)).toBeNull();
    });

    it('SPEC 4.7 rules 1 and 4: a used code answers 401 license_used (by another user, and by the same user)', async () => {
      const aliceId = await h.signUp(app, 'alice');
      await h.signUp(app, 'bob');
      const l = await license(app, { minutes: 60 });
      expect((await activate(app, { code: l.code, username: 'alice', password: PASSWORD })).statusCode).toBe(200);
      const bob = await activate(app, { code: l.code, username: 'bob', password: PASSWORD });
      expectError(bob, 401, 'license_used');
      const again = await activate(app, { code: l.code, username: 'alice', password: PASSWORD });
      expectError(again, 401, 'license_used');
      expect(await usedBy(app, l.id)).toBe(aliceId);
      // Used once: the minutes were added once.
      expect(await membershipOf(app, aliceId)).toEqual({ isLifetime: false, activeUntil: h.clock.ms + 60 * 60_000 });
      expect(await h.tollgate.services.store.licenses.activationsOf(aliceId)).toHaveLength(1);
    });

    it('SPEC 4.7 rule 4: a code used by a license sign-up answers 401 license_used', async () => {
      await h.signUp(app, 'alice');
      const l = await license(app);
      expect((await h.client(app, 'POST', '/sign_up_with_license_code', { code: l.code })).statusCode).toBe(200);
      expectError(await activate(app, { code: l.code, username: 'alice', password: PASSWORD }), 401, 'license_used');
    });

    it('DECISIONS error body: a 401 is {detail, code} only (no errors[], which only a 422 adds)', async () => {
      await h.signUp(app, 'alice');
      const l = await license(app);
      expect((await activate(app, { code: l.code, username: 'alice', password: PASSWORD })).statusCode).toBe(200);
      for (const res of [
        await activate(app, { code: 'NOT-A-CODE', username: 'alice', password: PASSWORD }),
        await activate(app, { code: l.code, username: 'alice', password: PASSWORD }),
        await activate(app, { code: l.code, username: 'alice', password: 'wrong password' }),
      ]) {
        expect(res.statusCode).toBe(401);
        expect(Object.keys(res.json()).sort()).toEqual(['code', 'detail']);
        expect(typeof res.json().detail).toBe('string');
      }
    });

    it('DECISIONS: an expired unused license answers 401 invalid_license', async () => {
      await h.signUp(app, 'alice');
      const l = await license(app, { minutes: 60, expires_at: h.clock.iso(60_000) });
      h.clock.minutes(1);
      expectError(await activate(app, { code: l.code, username: 'alice', password: PASSWORD }), 401, 'invalid_license');
      expect(await usedBy(app, l.id)).toBeNull();
    });
  });

  describe('rule 4: 403 banned', () => {
    it('SPEC 4.7 rule 4: a banned user answers 403 banned and the license stays unused', async () => {
      const userId = await h.signUp(app, 'alice');
      const l = await license(app);
      await h.ban(app, 'user', userId);
      const res = await activate(app, { code: l.code, username: 'alice', password: PASSWORD });
      expectError(res, 403, 'banned');
      expect(await usedBy(app, l.id)).toBeNull();
      expect(await membershipOf(app, userId)).toEqual({ isLifetime: false, activeUntil: null });
    });

    it('SPEC 4.7 rule 4: a banned IP answers 403 banned and the license stays unused', async () => {
      await h.signUp(app, 'alice');
      const l = await license(app);
      await h.ban(app, 'ip', '10.1.2.3');
      const res = await activate(app, { code: l.code, username: 'alice', password: PASSWORD }, '10.1.2.3');
      expectError(res, 403, 'banned');
      expect(await usedBy(app, l.id)).toBeNull();
    });

    it('SPEC 4.7 rule 4: an IP in a banned CIDR range answers 403 banned', async () => {
      await h.signUp(app, 'alice');
      const l = await license(app);
      await h.ban(app, 'ip', '10.0.0.0/8');
      expectError(await activate(app, { code: l.code, username: 'alice', password: PASSWORD }, '10.200.1.1'), 403, 'banned');
      expect((await activate(app, { code: l.code, username: 'alice', password: PASSWORD }, '11.0.0.1')).statusCode).toBe(200);
    });

    it('SPEC 4.7 rule 4: a banned license answers 403 banned and stays unused', async () => {
      await h.signUp(app, 'alice');
      const l = await license(app);
      await h.ban(app, 'license', l.code);
      const res = await activate(app, { code: l.code, username: 'alice', password: PASSWORD });
      expectError(res, 403, 'banned');
      expect(await usedBy(app, l.id)).toBeNull();
    });

    it('DECISIONS order 4: a banned hardware ID answers 403 banned', async () => {
      await h.signUp(app, 'alice');
      const l = await license(app);
      await h.ban(app, 'hardware_id', 'HW-BANNED');
      expectError(await activate(app, { code: l.code, username: 'alice', password: PASSWORD, hardware_id: 'HW-BANNED' }), 403, 'banned');
      expect(await usedBy(app, l.id)).toBeNull();
    });

    it('DECISIONS order: an IP ban (step 4) wins over a wrong password (step 5)', async () => {
      await h.signUp(app, 'alice');
      const l = await license(app);
      await h.ban(app, 'ip', '10.1.2.3');
      expectError(await activate(app, { code: l.code, username: 'alice', password: 'wrong password' }, '10.1.2.3'), 403, 'banned');
    });

    it('DECISIONS order: a wrong password (step 5) wins over a user ban (step 6)', async () => {
      const userId = await h.signUp(app, 'alice');
      const l = await license(app);
      await h.ban(app, 'user', userId);
      expectError(await activate(app, { code: l.code, username: 'alice', password: 'wrong password' }), 401, 'invalid_credentials');
    });

    it('DECISIONS bans: removing a user ban restores activation at once', async () => {
      const userId = await h.signUp(app, 'alice');
      const l = await license(app);
      const banId = await h.ban(app, 'user', userId);
      expectError(await activate(app, { code: l.code, username: 'alice', password: PASSWORD }), 403, 'banned');
      expect((await h.admin('DELETE', `/apps/${app.id}/bans/${banId}`)).statusCode).toBe(204);
      expect((await activate(app, { code: l.code, username: 'alice', password: PASSWORD })).statusCode).toBe(200);
    });
  });

  describe('rule 4: 422 missing fields', () => {
    it('SPEC 4.7 rule 4: a missing code answers 422 naming body.code', async () => {
      await h.signUp(app, 'alice');
      expectValidation(await activate(app, { username: 'alice', password: PASSWORD }), 'body.code');
    });

    it('SPEC 4.7 rule 4: a missing username answers 422 naming body.username', async () => {
      const l = await license(app);
      expectValidation(await activate(app, { code: l.code, password: PASSWORD }), 'body.username');
      expect(await usedBy(app, l.id)).toBeNull();
    });

    it('SPEC 4.7 rule 4: a missing password answers 422 naming body.password', async () => {
      await h.signUp(app, 'alice');
      const l = await license(app);
      expectValidation(await activate(app, { code: l.code, username: 'alice' }), 'body.password');
      expect(await usedBy(app, l.id)).toBeNull();
    });

    it('SPEC 4.7 rule 4: an empty body names all three missing fields', async () => {
      const res = await activate(app, {});
      expectValidation(res, 'body.code');
      expectValidation(res, 'body.username');
      expectValidation(res, 'body.password');
    });

    it('SPEC 4.7 rule 4: an absent body answers 422 validation_error', async () => {
      expectError(await activate(app, undefined), 422, 'validation_error');
    });

    it('SPEC 4.7 rule 4: an empty code answers 422 naming body.code', async () => {
      await h.signUp(app, 'alice');
      expectValidation(await activate(app, { code: '', username: 'alice', password: PASSWORD }), 'body.code');
    });

    it('DECISIONS order: a missing field (step 3) wins over an IP ban (step 4)', async () => {
      await h.ban(app, 'ip', '10.1.2.3');
      expectValidation(await activate(app, { username: 'alice', password: PASSWORD }, '10.1.2.3'), 'body.code');
    });
  });

  describe('device authentication', () => {
    it('SPEC 4.7 / DECISIONS order 3: a missing hardware_id with device authentication on answers 422 naming body.hardware_id', async () => {
      const dev = await h.createApp({ device_auth_enabled: true });
      await h.signUp(dev, 'alice', PASSWORD, 'HW-1');
      const l = await license(dev);
      const res = await activate(dev, { code: l.code, username: 'alice', password: PASSWORD });
      expectValidation(res, 'body.hardware_id');
      expect(await usedBy(dev, l.id)).toBeNull();
    });

    it('SPEC 4.7: the registered device activates', async () => {
      const dev = await h.createApp({ device_auth_enabled: true });
      const userId = await h.signUp(dev, 'alice', PASSWORD, 'HW-1');
      const l = await license(dev);
      expect((await activate(dev, { code: l.code, username: 'alice', password: PASSWORD, hardware_id: 'HW-1' })).statusCode).toBe(200);
      expect(await usedBy(dev, l.id)).toBe(userId);
    });

    it('DECISIONS devices: an unknown device when the limit (1) is reached answers 401 device_mismatch; the license stays unused', async () => {
      const dev = await h.createApp({ device_auth_enabled: true });
      const userId = await h.signUp(dev, 'alice', PASSWORD, 'HW-1');
      const l = await license(dev);
      const res = await activate(dev, { code: l.code, username: 'alice', password: PASSWORD, hardware_id: 'HW-2' });
      expectError(res, 401, 'device_mismatch');
      expect(await usedBy(dev, l.id)).toBeNull();
      expect(await membershipOf(dev, userId)).toEqual({ isLifetime: false, activeUntil: null });
      expect((await h.tollgate.services.store.devices.listFor(userId)).map((d) => d.hardwareId)).toEqual(['HW-1']);
    });

    it('DECISIONS devices: an unknown device when a limit above 1 is reached answers 401 device_limit', async () => {
      const dev = await h.createApp({ device_auth_enabled: true, max_devices_per_user: 2 });
      const userId = await h.signUp(dev, 'alice', PASSWORD, 'HW-1');
      const first = await license(dev);
      // A second device fits under the limit and is registered by the activation.
      expect((await activate(dev, { code: first.code, username: 'alice', password: PASSWORD, hardware_id: 'HW-2' })).statusCode).toBe(200);
      expect((await h.tollgate.services.store.devices.listFor(userId)).map((d) => d.hardwareId).sort()).toEqual(['HW-1', 'HW-2']);
      const second = await license(dev);
      expectError(await activate(dev, { code: second.code, username: 'alice', password: PASSWORD, hardware_id: 'HW-3' }), 401, 'device_limit');
      expect(await usedBy(dev, second.id)).toBeNull();
    });

    it('DECISIONS order: a user ban (step 6) wins over a device mismatch (step 7)', async () => {
      const dev = await h.createApp({ device_auth_enabled: true });
      const userId = await h.signUp(dev, 'alice', PASSWORD, 'HW-1');
      const l = await license(dev);
      await h.ban(dev, 'user', userId);
      expectError(await activate(dev, { code: l.code, username: 'alice', password: PASSWORD, hardware_id: 'HW-2' }), 403, 'banned');
    });
  });
});
