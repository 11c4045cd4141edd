import type { LightMyRequestResponse } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { errorOf, harness, type Harness, type TestApp } from './helpers.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const GENERATED = /^user_[a-z2-7]{12}$/;

interface License {
  id: string;
  code: string;
}

describe('POST /sign_up_with_license_code (SPEC 4.2)', () => {
  let h: Harness;
  let app: TestApp;

  beforeEach(async () => {
    h = await harness();
    app = await h.createApp();
  });
  afterEach(async () => h.close());

  const license = (target: TestApp, body?: Record<string, unknown>): Promise<License> => h.license(target, body);

  function licenseSignUp(target: TestApp, body: unknown, ip?: string): Promise<LightMyRequestResponse> {
    return h.inject({
      method: 'POST', url: '/sign_up_with_license_code', headers: target.headers,
      ...(body !== undefined && { payload: body as object }), ...(ip !== undefined && { remoteAddress: ip }),
    });
  }

  async function adminLicense(target: TestApp, id: string): Promise<Record<string, unknown>> {
    const res = await h.admin('GET', `/apps/${target.id}/licenses/${id}`);
    expect(res.statusCode).toBe(200);
    return res.json();
  }

  async function userCount(target: TestApp): Promise<number> {
    return (await h.tollgate.services.store.users.list(target.id, null, null, 500)).items.length;
  }

  function expectValidation(res: LightMyRequestResponse, field: string): void {
    expect(res.statusCode).toBe(422);
    const err = errorOf(res);
    expect(err.code).toBe('validation_error');
    expect(err.errors?.map((e) => e.field)).toContain(field);
  }

  describe('success', () => {
    it('SPEC 4.2: answers 200 with a User whose membership is active immediately (now + license minutes)', async () => {
      const { code } = await license(app, { minutes: 60 });
      const res = await licenseSignUp(app, { code });
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(Object.keys(body).sort()).toEqual(['id', 'membership', 'username']);
      expect(body.id).toMatch(UUID);
      expect(body.membership).toEqual({ is_active: true, is_lifetime: false, active_until: h.clock.iso(60 * 60_000), entitlements: [] });
      const stored = await h.tollgate.services.store.users.findById(app.id, body.id);
      expect(stored?.activeUntil).toBe(h.clock.ms + 60 * 60_000);
    });

    it('SPEC 4.2 / DECISIONS: the generated username is user_ + 12 base32 characters and is not the code', async () => {
      const { code } = await license(app);
      const res = await licenseSignUp(app, { code });
      expect(res.statusCode).toBe(200);
      const username: string = res.json().username;
      expect(username).toMatch(GENERATED);
      expect(username).not.toBe(code);
      expect(username.toLowerCase()).not.toContain(code.toLowerCase().replace(/-/g, '').slice(0, 5));
    });

    it('DECISIONS: generated usernames are random (two sign-ups get different names)', async () => {
      const a = await licenseSignUp(app, { code: (await license(app)).code });
      const b = await licenseSignUp(app, { code: (await license(app)).code });
      expect(a.statusCode).toBe(200);
      expect(b.statusCode).toBe(200);
      expect(a.json().username).toMatch(GENERATED);
      expect(b.json().username).toMatch(GENERATED);
      expect(a.json().username).not.toBe(b.json().username);
      expect(await userCount(app)).toBe(2);
    });

    it('SPEC 4.2: the license record is marked used by the new user (admin GET shows used_by_user_id and used_at)', async () => {
      const l = await license(app);
      expect(await adminLicense(app, l.id)).toMatchObject({ used_at: null, used_by_user_id: null });
      const res = await licenseSignUp(app, { code: l.code });
      expect(res.statusCode).toBe(200);
      expect(await adminLicense(app, l.id)).toMatchObject({ code: l.code, used_at: h.clock.iso(), used_by_user_id: res.json().id });
    });

    it('SPEC 4.2: the license is activated (an activation record of the license is stored for the new user)', async () => {
      const l = await license(app, { minutes: 90 });
      const res = await licenseSignUp(app, { code: l.code });
      expect(res.statusCode).toBe(200);
      const activations = await h.tollgate.services.store.licenses.activationsOf(res.json().id);
      expect(activations).toHaveLength(1);
      expect(activations[0]).toMatchObject({ licenseId: l.id, minutes: 90, occurredAt: h.clock.ms, grantsLifetime: false, revokesLifetime: false });
    });

    it('SPEC 4.2: a lifetime license gives is_lifetime true and active_until null', async () => {
      const { code } = await license(app, { lifetime: true });
      const res = await licenseSignUp(app, { code });
      expect(res.statusCode).toBe(200);
      expect(res.json().membership).toEqual({ is_active: true, is_lifetime: true, active_until: null, entitlements: [] });
    });

    it('DECISIONS login {code}: the created user logs in with the code and sees its membership in the app context', async () => {
      const { code } = await license(app);
      const res = await licenseSignUp(app, { code });
      expect(res.statusCode).toBe(200);
      const login = await h.client(app, 'POST', '/auth/login', { credentials: { code } });
      expect(login.statusCode).toBe(200);
      const ctx = await h.client(app, 'GET', '/app_context', undefined, { authorization: `Bearer ${login.json().session_token}` });
      expect(ctx.statusCode).toBe(200);
      expect(ctx.json().user).toEqual(res.json());
    });

    it('SPEC 4.2: the membership expires after the license minutes', async () => {
      const { code } = await license(app, { minutes: 5 });
      expect((await licenseSignUp(app, { code })).statusCode).toBe(200);
      h.clock.minutes(5);
      const ctx = await h.client(app, 'GET', '/app_context', undefined, { 'x-api-license-code': code });
      expect(ctx.statusCode).toBe(403);
      expect(errorOf(ctx).code).toBe('membership_inactive');
    });
  });

  describe('rule 1: bans', () => {
    it('SPEC 4.2 rule 1: a banned IP answers 403 banned, and the license stays unused', async () => {
      const l = await license(app);
      await h.ban(app, 'ip', '10.1.2.3');
      const res = await licenseSignUp(app, { code: l.code }, '10.1.2.3');
      expect(res.statusCode).toBe(403);
      expect(errorOf(res).code).toBe('banned');
      expect(await userCount(app)).toBe(0);
      expect(await adminLicense(app, l.id)).toMatchObject({ used_at: null, used_by_user_id: null });
    });

    it('SPEC 4.2 rule 1: an IP inside a banned CIDR range answers 403', async () => {
      const l = await license(app);
      await h.ban(app, 'ip', '192.168.0.0/24');
      const res = await licenseSignUp(app, { code: l.code }, '192.168.0.99');
      expect(res.statusCode).toBe(403);
      expect(errorOf(res).code).toBe('banned');
      const ok = await licenseSignUp(app, { code: l.code }, '192.168.1.1');
      expect(ok.statusCode).toBe(200);
    });

    it('SPEC 4.2 rule 1: a banned hardware ID answers 403 (device authentication on), and the license stays unused', async () => {
      const dev = await h.createApp({ device_auth_enabled: true });
      const l = await license(dev);
      await h.ban(dev, 'hardware_id', 'HW-BANNED');
      const res = await licenseSignUp(dev, { code: l.code, hardware_id: 'HW-BANNED' });
      expect(res.statusCode).toBe(403);
      expect(errorOf(res).code).toBe('banned');
      expect(await userCount(dev)).toBe(0);
      expect(await adminLicense(dev, l.id)).toMatchObject({ used_by_user_id: null });
    });

    it('SPEC 4.2 rule 1 / DECISIONS order 4: a sent banned hardware ID answers 403 with device authentication off', async () => {
      const l = await license(app);
      await h.ban(app, 'hardware_id', 'HW-BANNED');
      const res = await licenseSignUp(app, { code: l.code, hardware_id: 'HW-BANNED' });
      expect(res.statusCode).toBe(403);
      expect(errorOf(res).code).toBe('banned');
      expect(await userCount(app)).toBe(0);
    });

    it('SPEC 4.2 rule 1: a banned license (ban type license, value the code) answers 403, and stays unused', async () => {
      const l = await license(app);
      await h.ban(app, 'license', l.code);
      const res = await licenseSignUp(app, { code: l.code });
      expect(res.statusCode).toBe(403);
      expect(errorOf(res).code).toBe('banned');
      expect(await userCount(app)).toBe(0);
      expect(await adminLicense(app, l.id)).toMatchObject({ used_at: null, used_by_user_id: null });
    });

    it('SPEC 4.2 rule 1: a ban of another license does not refuse this one', async () => {
      const banned = await license(app);
      const l = await license(app);
      await h.ban(app, 'license', banned.code);
      const res = await licenseSignUp(app, { code: l.code });
      expect(res.statusCode).toBe(200);
    });

    it('DECISIONS bans: removing the license ban lets the code sign up', async () => {
      const l = await license(app);
      const banId = await h.ban(app, 'license', l.code);
      expect((await licenseSignUp(app, { code: l.code })).statusCode).toBe(403);
      expect((await h.admin('DELETE', `/apps/${app.id}/bans/${banId}`)).statusCode).toBe(204);
      const res = await licenseSignUp(app, { code: l.code });
      expect(res.statusCode).toBe(200);
    });

    it('DECISIONS order: an IP ban (step 4) wins over an invalid code (step 5)', async () => {
      await h.ban(app, 'ip', '10.1.2.3');
      const res = await licenseSignUp(app, { code: 'NOT-A-CODE' }, '10.1.2.3');
      expect(res.statusCode).toBe(403);
      expect(errorOf(res).code).toBe('banned');
    });
  });

  describe('rule 2: invalid, used and missing', () => {
    it('SPEC 4.2 rule 2: an unknown code answers 422 invalid_license and creates no user', async () => {
      const res = await licenseSignUp(app, { code: 'AAAAA-BBBBB-CCCCC-DDDDD-EEEEE' });
      expect(res.statusCode).toBe(422);
      expect(errorOf(res).code).toBe('invalid_license');
      expect(await userCount(app)).toBe(0);
    });

    it('SPEC 4.2 rule 2: codes are matched exactly (the lower-cased code is invalid)', async () => {
      const l = await license(app);
      const res = await licenseSignUp(app, { code: l.code.toLowerCase() });
      expect(res.statusCode).toBe(422);
      expect(errorOf(res).code).toBe('invalid_license');
    });

    it('SPEC 4.2 rule 2: an already used code answers 422 license_used and creates no second user', async () => {
      const l = await license(app);
      const first = await licenseSignUp(app, { code: l.code });
      expect(first.statusCode).toBe(200);
      const again = await licenseSignUp(app, { code: l.code });
      expect(again.statusCode).toBe(422);
      expect(errorOf(again).code).toBe('license_used');
      expect(await userCount(app)).toBe(1);
      expect(await adminLicense(app, l.id)).toMatchObject({ used_by_user_id: first.json().id });
    });

    it('SPEC 4.2 rule 2: a code activated by a password user is used (422 license_used)', async () => {
      await h.signUp(app, 'alice');
      const l = await license(app);
      const act = await h.client(app, 'POST', '/activate_license', { code: l.code, username: 'alice', password: 'correct horse battery' });
      expect(act.statusCode).toBe(200);
      const res = await licenseSignUp(app, { code: l.code });
      expect(res.statusCode).toBe(422);
      expect(errorOf(res).code).toBe('license_used');
      expect(await userCount(app)).toBe(1);
    });

    it('SPEC 4.2 rule 2: a code of app A is invalid in app B (422 invalid_license) and stays usable in A', async () => {
      const appB = await h.createApp({ name: 'B' });
      const l = await license(app);
      const res = await licenseSignUp(appB, { code: l.code });
      expect(res.statusCode).toBe(422);
      expect(errorOf(res).code).toBe('invalid_license');
      expect(await userCount(appB)).toBe(0);
      expect(await adminLicense(app, l.id)).toMatchObject({ used_by_user_id: null });
      expect((await licenseSignUp(app, { code: l.code })).statusCode).toBe(200);
    });

    it('DECISIONS error body: the invalid_license and license_used 422s list body.code in errors[]', async () => {
      const invalid = await licenseSignUp(app, { code: 'NOT-A-CODE' });
      expect(invalid.statusCode).toBe(422);
      expect(errorOf(invalid).code).toBe('invalid_license');
      expect(errorOf(invalid).errors?.map((e) => e.field)).toEqual(['body.code']);
      const l = await license(app);
      expect((await licenseSignUp(app, { code: l.code })).statusCode).toBe(200);
      const used = await licenseSignUp(app, { code: l.code });
      expect(used.statusCode).toBe(422);
      expect(errorOf(used).code).toBe('license_used');
      expect(errorOf(used).errors?.map((e) => e.field)).toEqual(['body.code']);
    });

    it('SPEC 4.2 rule 2: a missing code answers 422 naming body.code', async () => {
      const res = await licenseSignUp(app, {});
      expectValidation(res, 'body.code');
      expect(await userCount(app)).toBe(0);
    });

    it('SPEC 4.2 rule 2: an empty code answers 422 naming body.code', async () => {
      expectValidation(await licenseSignUp(app, { code: '' }), 'body.code');
    });

    it('DECISIONS: a code longer than 128 code points answers 422 naming body.code', async () => {
      expectValidation(await licenseSignUp(app, { code: 'A'.repeat(129) }), 'body.code');
    });

    it('SPEC 4.2 rule 2: a non-string code answers 422 naming body.code', async () => {
      expectValidation(await licenseSignUp(app, { code: 42 }), 'body.code');
    });

    it('SPEC 4.2 rule 2: an absent body answers 422 validation_error', async () => {
      const res = await licenseSignUp(app, undefined);
      expect(res.statusCode).toBe(422);
      expect(errorOf(res).code).toBe('validation_error');
    });

    it('SPEC 4.2 rule 2: a missing hardware_id with device authentication on answers 422 naming body.hardware_id, the license unused', async () => {
      const dev = await h.createApp({ device_auth_enabled: true });
      const l = await license(dev);
      const res = await licenseSignUp(dev, { code: l.code });
      expectValidation(res, 'body.hardware_id');
      expect(await userCount(dev)).toBe(0);
      expect(await adminLicense(dev, l.id)).toMatchObject({ used_by_user_id: null });
    });

    it('DECISIONS: an expired unused license answers 422 invalid_license', async () => {
      const l = await license(app, { minutes: 60, expires_at: h.clock.iso(60_000) });
      h.clock.minutes(1);
      const res = await licenseSignUp(app, { code: l.code });
      expect(res.statusCode).toBe(422);
      expect(errorOf(res).code).toBe('invalid_license');
      expect(await userCount(app)).toBe(0);
    });

    it('DECISIONS: when registration_open is false, license sign-up answers 403 registration_closed and the license stays unused', async () => {
      const closed = await h.createApp({ registration_open: false });
      const l = await license(closed);
      const res = await licenseSignUp(closed, { code: l.code });
      expect(res.statusCode).toBe(403);
      expect(errorOf(res).code).toBe('registration_closed');
      expect(await userCount(closed)).toBe(0);
      expect(await adminLicense(closed, l.id)).toMatchObject({ used_by_user_id: null });
    });
  });

  describe('rule 3: device registration', () => {
    it('SPEC 4.2 rule 3: with device authentication on, the hardware ID is registered to the new user', async () => {
      const dev = await h.createApp({ device_auth_enabled: true });
      const l = await license(dev);
      const res = await licenseSignUp(dev, { code: l.code, hardware_id: 'HW-1' });
      expect(res.statusCode).toBe(200);
      const devices = await h.tollgate.services.store.devices.listFor(res.json().id);
      expect(devices.map((d) => d.hardwareId)).toEqual(['HW-1']);
    });

    it('SPEC 4.2 rule 3: the account is locked to the registered device (login with another hardware ID: 401 device_mismatch)', async () => {
      const dev = await h.createApp({ device_auth_enabled: true });
      const l = await license(dev);
      expect((await licenseSignUp(dev, { code: l.code, hardware_id: 'HW-1' })).statusCode).toBe(200);
      const other = await h.client(dev, 'POST', '/auth/login', { credentials: { code: l.code }, hardware_id: 'HW-2' });
      expect(other.statusCode).toBe(401);
      expect(errorOf(other).code).toBe('device_mismatch');
      const same = await h.client(dev, 'POST', '/auth/login', { credentials: { code: l.code }, hardware_id: 'HW-1' });
      expect(same.statusCode).toBe(200);
    });
  });

  describe('rule 4: IP tracking', () => {
    it('SPEC 4.2 rule 4: the sign-up IP is tracked', async () => {
      const l = await license(app);
      const res = await licenseSignUp(app, { code: l.code }, '10.20.30.40');
      expect(res.statusCode).toBe(200);
      const ips = await h.tollgate.services.store.users.ips(res.json().id);
      expect(ips).toEqual([{ ip: '10.20.30.40', firstSeenAt: h.clock.ms, lastSeenAt: h.clock.ms, count: 1 }]);
    });

    it('SPEC 4.2 rule 4: an IPv6 sign-up IP is tracked', async () => {
      const l = await license(app);
      const res = await licenseSignUp(app, { code: l.code }, '2001:db8::1');
      expect(res.statusCode).toBe(200);
      const ips = await h.tollgate.services.store.users.ips(res.json().id);
      expect(ips.map((i) => i.ip)).toEqual(['2001:db8::1']);
    });
  });
});
