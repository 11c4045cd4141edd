import type { LightMyRequestResponse } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { errorOf, harness, PASSWORD, type Harness, type TestApp } from './helpers.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('POST /sign_up (SPEC 4.1)', () => {
  let h: Harness;
  let app: TestApp;

  beforeEach(async () => {
    h = await harness();
    app = await h.createApp();
  });
  afterEach(async () => h.close());

  /** A sign-up from a chosen client IP (the socket address). */
  function signUpFrom(target: TestApp, ip: string, body: Record<string, unknown>): Promise<LightMyRequestResponse> {
    return h.inject({ method: 'POST', url: '/sign_up', headers: target.headers, payload: body, remoteAddress: ip });
  }

  function signUpRaw(target: TestApp, body: unknown): Promise<LightMyRequestResponse> {
    return h.client(target, 'POST', '/sign_up', body);
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
    it('SPEC 4.1: answers 200 with a User object (id, username as given, membership)', async () => {
      const res = await signUpRaw(app, { username: 'alice', password: PASSWORD });
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(Object.keys(body).sort()).toEqual(['id', 'membership', 'username']);
      expect(body.id).toMatch(UUID);
      expect(body.username).toBe('alice');
      const stored = await h.tollgate.services.store.users.findById(app.id, body.id);
      expect(stored?.username).toBe('alice');
      expect(stored?.passwordHash).not.toBe(PASSWORD);
    });

    it('SPEC 4.1 rule 5: a new user has an inactive membership (is_active false, is_lifetime false, active_until null)', async () => {
      const res = await signUpRaw(app, { username: 'alice', password: PASSWORD });
      expect(res.statusCode).toBe(200);
      expect(res.json().membership).toEqual({ is_active: false, is_lifetime: false, active_until: null, entitlements: [] });
      const stored = await h.tollgate.services.store.users.findById(app.id, res.json().id);
      expect(stored?.isLifetime).toBe(false);
      expect(stored?.activeUntil).toBeNull();
    });

    it('SPEC 4.1 rule 5: the new user must activate a license to get access (login answers 403 membership_inactive)', async () => {
      await h.signUp(app, 'alice');
      const res = await h.client(app, 'POST', '/auth/login', { credentials: { username: 'alice', password: PASSWORD } });
      expect(res.statusCode).toBe(403);
      expect(errorOf(res).code).toBe('membership_inactive');
    });

    it('SPEC 4.1: the password signs in after sign-up (stored as a hash that verifies)', async () => {
      await h.signUp(app, 'alice');
      const [code] = await h.licenses(app);
      const act = await h.client(app, 'POST', '/activate_license', { code, username: 'alice', password: PASSWORD });
      expect(act.statusCode).toBe(200);
      const wrong = await h.client(app, 'POST', '/activate_license', { code: 'X', username: 'alice', password: 'wrong password!' });
      expect(wrong.statusCode).toBe(401);
      expect(errorOf(wrong).code).toBe('invalid_credentials');
    });
  });

  describe('rule 1: bans', () => {
    it('SPEC 4.1 rule 1: a banned IP is refused with 403 banned and no user is created', async () => {
      await h.ban(app, 'ip', '10.1.2.3');
      const res = await signUpFrom(app, '10.1.2.3', { username: 'alice', password: PASSWORD });
      expect(res.statusCode).toBe(403);
      expect(errorOf(res).code).toBe('banned');
      expect(await userCount(app)).toBe(0);
    });

    it('SPEC 4.1 rule 1: an IP inside a banned CIDR range is refused with 403; one outside it is not', async () => {
      await h.ban(app, 'ip', '10.1.0.0/16');
      const inside = await signUpFrom(app, '10.1.200.7', { username: 'alice', password: PASSWORD });
      expect(inside.statusCode).toBe(403);
      expect(errorOf(inside).code).toBe('banned');
      const outside = await signUpFrom(app, '10.2.0.1', { username: 'alice', password: PASSWORD });
      expect(outside.statusCode).toBe(200);
      expect(await userCount(app)).toBe(1);
    });

    it('SPEC 4.1 rule 1: an IPv6 CIDR ban refuses addresses inside the range', async () => {
      await h.ban(app, 'ip', '2001:db8::/32');
      const res = await signUpFrom(app, '2001:db8:1:2::5', { username: 'alice', password: PASSWORD });
      expect(res.statusCode).toBe(403);
      expect(errorOf(res).code).toBe('banned');
      expect(await userCount(app)).toBe(0);
    });

    it('DECISIONS client IP: an IPv4-mapped IPv6 socket address matches an IPv4 ban', async () => {
      await h.ban(app, 'ip', '10.1.2.3');
      const res = await signUpFrom(app, '::ffff:10.1.2.3', { username: 'alice', password: PASSWORD });
      expect(res.statusCode).toBe(403);
      expect(errorOf(res).code).toBe('banned');
    });

    it('SPEC 4.1 rule 1: a ban of one IP does not refuse other IPs', async () => {
      await h.ban(app, 'ip', '10.1.2.3');
      const res = await signUpFrom(app, '10.1.2.4', { username: 'alice', password: PASSWORD });
      expect(res.statusCode).toBe(200);
    });

    it('SPEC 4.1 rule 1: an IP ban of another app does not apply', async () => {
      const other = await h.createApp({ name: 'Other' });
      await h.ban(other, 'ip', '10.1.2.3');
      const res = await signUpFrom(app, '10.1.2.3', { username: 'alice', password: PASSWORD });
      expect(res.statusCode).toBe(200);
    });

    it('SPEC 4.1 rule 1: a banned hardware ID is refused with 403 (device authentication on)', async () => {
      const dev = await h.createApp({ device_auth_enabled: true });
      await h.ban(dev, 'hardware_id', 'HW-BANNED');
      const res = await signUpRaw(dev, { username: 'alice', password: PASSWORD, hardware_id: 'HW-BANNED' });
      expect(res.statusCode).toBe(403);
      expect(errorOf(res).code).toBe('banned');
      expect(await userCount(dev)).toBe(0);
      const ok = await signUpRaw(dev, { username: 'alice', password: PASSWORD, hardware_id: 'HW-OK' });
      expect(ok.statusCode).toBe(200);
    });

    it('SPEC 4.1 rule 1 / DECISIONS order 4: a sent banned hardware ID is refused with 403 even with device authentication off', async () => {
      await h.ban(app, 'hardware_id', 'HW-BANNED');
      const res = await signUpRaw(app, { username: 'alice', password: PASSWORD, hardware_id: 'HW-BANNED' });
      expect(res.statusCode).toBe(403);
      expect(errorOf(res).code).toBe('banned');
      expect(await userCount(app)).toBe(0);
    });

    it('DECISIONS bans: removing an IP ban restores sign-up at once', async () => {
      const banId = await h.ban(app, 'ip', '10.1.2.3');
      expect((await signUpFrom(app, '10.1.2.3', { username: 'alice', password: PASSWORD })).statusCode).toBe(403);
      const del = await h.admin('DELETE', `/apps/${app.id}/bans/${banId}`);
      expect(del.statusCode).toBe(204);
      const res = await signUpFrom(app, '10.1.2.3', { username: 'alice', password: PASSWORD });
      expect(res.statusCode).toBe(200);
    });

    it('DECISIONS bans: an expired temporary IP ban no longer refuses', async () => {
      await h.ban(app, 'ip', '10.1.2.3', { expires_at: h.clock.iso(60_000) });
      expect((await signUpFrom(app, '10.1.2.3', { username: 'alice', password: PASSWORD })).statusCode).toBe(403);
      h.clock.minutes(2);
      const res = await signUpFrom(app, '10.1.2.3', { username: 'alice', password: PASSWORD });
      expect(res.statusCode).toBe(200);
    });

    it('DECISIONS order: a ban (step 4) wins over a taken username (step 5)', async () => {
      await h.signUp(app, 'alice');
      await h.ban(app, 'ip', '10.1.2.3');
      const res = await signUpFrom(app, '10.1.2.3', { username: 'alice', password: PASSWORD });
      expect(res.statusCode).toBe(403);
      expect(errorOf(res).code).toBe('banned');
    });

    it('DECISIONS order: a missing field (step 3) wins over a ban (step 4)', async () => {
      await h.ban(app, 'ip', '10.1.2.3');
      const res = await signUpFrom(app, '10.1.2.3', { username: 'alice' });
      expectValidation(res, 'body.password');
    });
  });

  describe('rule 2: taken username and missing fields', () => {
    it('SPEC 4.1 rule 2: a taken username answers 422 username_taken and creates no second user', async () => {
      await h.signUp(app, 'alice');
      const res = await signUpRaw(app, { username: 'alice', password: 'another password' });
      expect(res.statusCode).toBe(422);
      expect(errorOf(res).code).toBe('username_taken');
      expect(await userCount(app)).toBe(1);
    });

    it('DECISIONS error body: the username_taken 422 lists body.username in errors[]', async () => {
      await h.signUp(app, 'alice');
      const res = await signUpRaw(app, { username: 'alice', password: PASSWORD });
      expect(res.statusCode).toBe(422);
      const err = errorOf(res);
      expect(err.code).toBe('username_taken');
      expect(err.errors?.map((e) => e.field)).toEqual(['body.username']);
    });

    it('SPEC 4.1 rule 2: usernames are taken case-insensitively (Alice vs alice)', async () => {
      await h.signUp(app, 'Alice');
      const res = await signUpRaw(app, { username: 'alice', password: PASSWORD });
      expect(res.statusCode).toBe(422);
      expect(errorOf(res).code).toBe('username_taken');
      const upper = await signUpRaw(app, { username: 'ALICE', password: PASSWORD });
      expect(upper.statusCode).toBe(422);
      expect(errorOf(upper).code).toBe('username_taken');
      expect(await userCount(app)).toBe(1);
    });

    it('SPEC 4.1 rule 2: usernames are taken by NFKC form (fullwidth ａｌｉｃｅ vs alice), and stored as given', async () => {
      const first = await signUpRaw(app, { username: 'ａｌｉｃｅ', password: PASSWORD });
      expect(first.statusCode).toBe(200);
      expect(first.json().username).toBe('ａｌｉｃｅ');
      const res = await signUpRaw(app, { username: 'alice', password: PASSWORD });
      expect(res.statusCode).toBe(422);
      expect(errorOf(res).code).toBe('username_taken');
      const fullUpper = await signUpRaw(app, { username: 'ＡＬＩＣＥ', password: PASSWORD });
      expect(fullUpper.statusCode).toBe(422);
      expect(errorOf(fullUpper).code).toBe('username_taken');
      expect(await userCount(app)).toBe(1);
    });

    it('SPEC 4.1 rule 2: a username taken in another app is free in this one', async () => {
      const other = await h.createApp({ name: 'Other' });
      await h.signUp(other, 'alice');
      const res = await signUpRaw(app, { username: 'alice', password: PASSWORD });
      expect(res.statusCode).toBe(200);
    });

    it('SPEC 4.1 rule 2: a missing username answers 422 naming body.username', async () => {
      const res = await signUpRaw(app, { password: PASSWORD });
      expectValidation(res, 'body.username');
      expect(await userCount(app)).toBe(0);
    });

    it('SPEC 4.1 rule 2: a missing password answers 422 naming body.password', async () => {
      const res = await signUpRaw(app, { username: 'alice' });
      expectValidation(res, 'body.password');
      expect(await userCount(app)).toBe(0);
    });

    it('SPEC 4.1 rule 2: with both fields missing, the 422 names both', async () => {
      const res = await signUpRaw(app, {});
      expectValidation(res, 'body.username');
      expectValidation(res, 'body.password');
    });

    it('SPEC 4.1 rule 2: an absent body answers 422 validation_error', async () => {
      const res = await h.client(app, 'POST', '/sign_up');
      expect(res.statusCode).toBe(422);
      expect(errorOf(res).code).toBe('validation_error');
      expect(await userCount(app)).toBe(0);
    });

    it('SPEC 4.1 rule 2: a non-string username answers 422 naming body.username', async () => {
      const res = await signUpRaw(app, { username: 12345, password: PASSWORD });
      expectValidation(res, 'body.username');
    });

    it('SPEC 4.1 rule 2: a missing hardware_id with device authentication on answers 422 naming body.hardware_id', async () => {
      const dev = await h.createApp({ device_auth_enabled: true });
      const res = await signUpRaw(dev, { username: 'alice', password: PASSWORD });
      expectValidation(res, 'body.hardware_id');
      expect(await userCount(dev)).toBe(0);
    });

    it('SPEC 4.1: hardware_id is optional with device authentication off', async () => {
      const res = await signUpRaw(app, { username: 'alice', password: PASSWORD });
      expect(res.statusCode).toBe(200);
    });

    it('DECISIONS validation: an empty hardware_id answers 422 naming body.hardware_id', async () => {
      const dev = await h.createApp({ device_auth_enabled: true });
      const res = await signUpRaw(dev, { username: 'alice', password: PASSWORD, hardware_id: '' });
      expectValidation(res, 'body.hardware_id');
    });
  });

  describe('rule 3: device registration', () => {
    it('SPEC 4.1 rule 3: with device authentication on, the hardware ID is registered to the new user', async () => {
      const dev = await h.createApp({ device_auth_enabled: true });
      const userId = await h.signUp(dev, 'alice', PASSWORD, 'HW-1');
      const devices = await h.tollgate.services.store.devices.listFor(userId);
      expect(devices.map((d) => d.hardwareId)).toEqual(['HW-1']);
      expect(devices[0]?.createdAt).toBe(h.clock.ms);
    });

    it('SPEC 4.1 rule 3: the registered device is the one the account is locked to (another hardware ID fails 401 device_mismatch)', async () => {
      const dev = await h.createApp({ device_auth_enabled: true });
      await h.signUp(dev, 'alice', PASSWORD, 'HW-1');
      const [code] = await h.licenses(dev);
      const act = await h.client(dev, 'POST', '/activate_license', { code, username: 'alice', password: PASSWORD, hardware_id: 'HW-1' });
      expect(act.statusCode).toBe(200);

      const other = await h.client(dev, 'POST', '/auth/login', { credentials: { username: 'alice', password: PASSWORD }, hardware_id: 'HW-2' });
      expect(other.statusCode).toBe(401);
      expect(errorOf(other).code).toBe('device_mismatch');
      const same = await h.client(dev, 'POST', '/auth/login', { credentials: { username: 'alice', password: PASSWORD }, hardware_id: 'HW-1' });
      expect(same.statusCode).toBe(200);
      expect(typeof same.json().session_token).toBe('string');
    });
  });

  describe('rule 4: IP tracking', () => {
    it('SPEC 4.1 rule 4: the sign-up IP is tracked (first seen, last seen, count)', async () => {
      const res = await signUpFrom(app, '10.9.8.7', { username: 'alice', password: PASSWORD });
      expect(res.statusCode).toBe(200);
      const ips = await h.tollgate.services.store.users.ips(res.json().id);
      expect(ips).toEqual([{ ip: '10.9.8.7', firstSeenAt: h.clock.ms, lastSeenAt: h.clock.ms, count: 1 }]);
    });

    it('DECISIONS client IP: an IPv4-mapped IPv6 address is tracked as the IPv4 address', async () => {
      const res = await signUpFrom(app, '::ffff:10.9.8.7', { username: 'alice', password: PASSWORD });
      expect(res.statusCode).toBe(200);
      const ips = await h.tollgate.services.store.users.ips(res.json().id);
      expect(ips.map((i) => i.ip)).toEqual(['10.9.8.7']);
    });

    it('DECISIONS client IP: X-Forwarded-For is ignored without TRUST_PROXY (the socket address is tracked)', async () => {
      const res = await h.inject({
        method: 'POST', url: '/sign_up', remoteAddress: '10.9.8.7',
        headers: { ...app.headers, 'x-forwarded-for': '203.0.113.9' }, payload: { username: 'alice', password: PASSWORD },
      });
      expect(res.statusCode).toBe(200);
      const ips = await h.tollgate.services.store.users.ips(res.json().id);
      expect(ips.map((i) => i.ip)).toEqual(['10.9.8.7']);
    });

    it('SPEC 4.1 rule 4: a refused sign-up tracks nothing', async () => {
      await h.signUp(app, 'alice');
      const before = await h.tollgate.services.store.users.findByUsernameKey(app.id, 'alice');
      const res = await signUpFrom(app, '10.9.8.7', { username: 'alice', password: PASSWORD });
      expect(res.statusCode).toBe(422);
      const ips = await h.tollgate.services.store.users.ips(before!.id);
      expect(ips.map((i) => i.ip)).toEqual(['127.0.0.1']);
    });
  });

  describe('password and registration settings', () => {
    it('DECISIONS: a password shorter than the default minimum (8) answers 422 naming body.password', async () => {
      const short = await signUpRaw(app, { username: 'alice', password: '1234567' });
      expectValidation(short, 'body.password');
      expect(await userCount(app)).toBe(0);
      const exact = await signUpRaw(app, { username: 'alice', password: '12345678' });
      expect(exact.statusCode).toBe(200);
    });

    it("DECISIONS: a password shorter than the app's password_min_length answers 422; one at the minimum is accepted", async () => {
      const strict = await h.createApp({ password_min_length: 12 });
      const short = await signUpRaw(strict, { username: 'alice', password: '12345678901' });
      expectValidation(short, 'body.password');
      expect(await userCount(strict)).toBe(0);
      const exact = await signUpRaw(strict, { username: 'alice', password: '123456789012' });
      expect(exact.statusCode).toBe(200);
    });

    it('DECISIONS: password length counts code points, not UTF-16 units', async () => {
      // 4 emoji are 8 UTF-16 units but 4 code points.
      const res = await signUpRaw(app, { username: 'alice', password: '😀😀😀😀' });
      expectValidation(res, 'body.password');
      const ok = await signUpRaw(app, { username: 'alice', password: '😀😀😀😀😀😀😀😀' });
      expect(ok.statusCode).toBe(200);
    });

    it('DECISIONS: a password over 1024 bytes of UTF-8 answers 422 naming body.password', async () => {
      const res = await signUpRaw(app, { username: 'alice', password: 'é'.repeat(513) }); // 1026 bytes
      expectValidation(res, 'body.password');
      const ok = await signUpRaw(app, { username: 'alice', password: 'a'.repeat(1024) });
      expect(ok.statusCode).toBe(200);
    });

    it('DECISIONS: when registration_open is false, sign-up answers 403 registration_closed and creates no user', async () => {
      const closed = await h.createApp({ registration_open: false });
      const res = await signUpRaw(closed, { username: 'alice', password: PASSWORD });
      expect(res.statusCode).toBe(403);
      expect(errorOf(res).code).toBe('registration_closed');
      expect(await userCount(closed)).toBe(0);
    });

    it('DECISIONS: reopening registration (PATCH registration_open true) allows sign-up again', async () => {
      const closed = await h.createApp({ registration_open: false });
      expect((await signUpRaw(closed, { username: 'alice', password: PASSWORD })).statusCode).toBe(403);
      const patch = await h.admin('PATCH', `/apps/${closed.id}`, { registration_open: true });
      expect(patch.statusCode).toBe(200);
      const res = await signUpRaw(closed, { username: 'alice', password: PASSWORD });
      expect(res.statusCode).toBe(200);
    });
  });

  describe('username rules', () => {
    it('DECISIONS: a username of 2 code points answers 422; 3 is accepted', async () => {
      expectValidation(await signUpRaw(app, { username: 'ab', password: PASSWORD }), 'body.username');
      expect((await signUpRaw(app, { username: 'abc', password: PASSWORD })).statusCode).toBe(200);
    });

    it('DECISIONS: a username of 65 code points answers 422; 64 is accepted', async () => {
      expectValidation(await signUpRaw(app, { username: 'a'.repeat(65), password: PASSWORD }), 'body.username');
      expect((await signUpRaw(app, { username: 'a'.repeat(64), password: PASSWORD })).statusCode).toBe(200);
    });

    it('DECISIONS: username length counts code points (64 emoji = 128 UTF-16 units is accepted, 3 emoji too)', async () => {
      expect((await signUpRaw(app, { username: '😀'.repeat(64), password: PASSWORD })).statusCode).toBe(200);
      expect((await signUpRaw(app, { username: '😺'.repeat(3), password: PASSWORD })).statusCode).toBe(200);
      expectValidation(await signUpRaw(app, { username: '😀'.repeat(65), password: PASSWORD }), 'body.username');
    });

    it('DECISIONS: username length is counted after NFKC (㎏ is 2 code points: 33 of them are 66, too long)', async () => {
      expectValidation(await signUpRaw(app, { username: '㎏'.repeat(33), password: PASSWORD }), 'body.username');
      // 'x㎏' is 2 code points as sent, 3 after NFKC: long enough.
      expect((await signUpRaw(app, { username: 'x㎏', password: PASSWORD })).statusCode).toBe(200);
    });

    it('DECISIONS: an empty username answers 422', async () => {
      expectValidation(await signUpRaw(app, { username: '', password: PASSWORD }), 'body.username');
    });

    it('DECISIONS: a username with whitespace (space, no-break space, ideographic space, leading or trailing) answers 422', async () => {
      for (const username of ['al ice', 'al\u00a0ice', 'al\u3000ice', ' alice', 'alice ']) {
        const res = await signUpRaw(app, { username, password: PASSWORD });
        expectValidation(res, 'body.username');
      }
      expect(await userCount(app)).toBe(0);
    });

    it('DECISIONS: a username with non-printable characters (Cc, Cf, Zl, Zp) answers 422', async () => {
      for (const username of ['al\tice', 'al\nice', 'al\u0000ice', 'al\u200bice', 'al\u202eice', 'al\u2028ice', 'al\u2029ice', 'al\u00adice']) {
        const res = await signUpRaw(app, { username, password: PASSWORD });
        expectValidation(res, 'body.username');
      }
      expect(await userCount(app)).toBe(0);
    });

    it('DECISIONS: non-ASCII printable usernames are accepted and stored as given', async () => {
      for (const username of ['Zoë', 'Ярослав', '山田太郎', 'o\'brien-2']) {
        const res = await signUpRaw(app, { username, password: PASSWORD });
        expect(res.statusCode).toBe(200);
        expect(res.json().username).toBe(username);
      }
      expect(await userCount(app)).toBe(4);
    });
  });

  describe('application headers', () => {
    it('DECISIONS order 1: missing application headers answer 401 invalid_app_credentials before anything else', async () => {
      const res = await h.inject({ method: 'POST', url: '/sign_up', payload: {} });
      expect(res.statusCode).toBe(401);
      expect(errorOf(res).code).toBe('invalid_app_credentials');
    });

    it('DECISIONS order 1: a wrong API secret answers 401 invalid_app_credentials and creates no user', async () => {
      const res = await h.inject({
        method: 'POST', url: '/sign_up', headers: { 'x-api-key': app.apiKey, 'x-api-secret': 'wrong' },
        payload: { username: 'alice', password: PASSWORD },
      });
      expect(res.statusCode).toBe(401);
      expect(errorOf(res).code).toBe('invalid_app_credentials');
      expect(await userCount(app)).toBe(0);
    });
  });
});
