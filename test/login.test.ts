import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { PASSWORD, errorOf, harness, type Harness, type TestApp, expectError } from './helpers.js';

let h: Harness;
beforeEach(async () => {
  h = await harness();
});
afterEach(async () => h.close());

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

function loginRaw(app: TestApp, body: unknown, remoteAddress?: string): Promise<LightMyRequestResponse> {
  return h.inject({ method: 'POST', url: '/auth/login', headers: app.headers, payload: body as object, ...(remoteAddress !== undefined && { remoteAddress }) });
}

/** POST /sign_up_with_license_code; returns the new user's id. */
async function licenseSignUp(app: TestApp, code: string, hardwareId?: string): Promise<string> {
  const res = await h.client(app, 'POST', '/sign_up_with_license_code', { code, ...(hardwareId !== undefined && { hardware_id: hardwareId }) });
  if (res.statusCode !== 200) throw new Error(`license sign-up: ${res.statusCode} ${res.body}`);
  return res.json().id;
}

async function sessionsOf(userId: string) {
  return h.tollgate.services.store.sessions.listLive(userId, h.clock.ms);
}

async function devicesOf(userId: string): Promise<string[]> {
  return (await h.tollgate.services.store.devices.listFor(userId)).map((d) => d.hardwareId);
}

async function contextUser(app: TestApp, token: string) {
  const res = await h.client(app, 'GET', '/app_context', undefined, bearer(token));
  return res;
}

describe('POST /auth/login, password form', () => {
  it('SPEC 4.3: the password form returns a session token (tg_sess_ prefix) that authenticates the user', async () => {
    const app = await h.createApp();
    const userId = await h.activeUser(app, 'alice');
    const res = await loginRaw(app, { credentials: { username: 'alice', password: PASSWORD } });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(Object.keys(body)).toEqual(['session_token']);
    expect(body.session_token).toMatch(/^tg_sess_[A-Za-z0-9_-]{43,}$/);

    const ctx = await contextUser(app, body.session_token);
    expect(ctx.statusCode).toBe(200);
    expect(ctx.json().user.id).toBe(userId);

    const sessions = await sessionsOf(userId);
    expect(sessions).toHaveLength(1);
    expect(sessions[0]!.appId).toBe(app.id);
    expect(sessions[0]!.hardwareId).toBeNull();
    expect(sessions[0]!.expiresAt).toBe(h.clock.ms + 86_400_000);
  });

  it('DECISIONS: each login issues a distinct token', async () => {
    const app = await h.createApp();
    const userId = await h.activeUser(app, 'alice');
    const a = await h.login(app, 'alice');
    const b = await h.login(app, 'alice');
    expect(a).not.toBe(b);
    expect(await sessionsOf(userId)).toHaveLength(2);
  });

  it('DECISIONS: the username matches case-insensitively (username_key)', async () => {
    const app = await h.createApp();
    const userId = await h.activeUser(app, 'Alice');
    const res = await loginRaw(app, { credentials: { username: 'ALICE', password: PASSWORD } });
    expect(res.statusCode).toBe(200);
    expect((await contextUser(app, res.json().session_token)).json().user.id).toBe(userId);
  });

  it('SPEC 4.3: 401 invalid_credentials for a wrong password, and no session is created', async () => {
    const app = await h.createApp();
    const userId = await h.activeUser(app, 'alice');
    const res = await loginRaw(app, { credentials: { username: 'alice', password: 'wrong password!' } });
    expectError(res, 401, 'invalid_credentials');
    expect(await sessionsOf(userId)).toHaveLength(0);
  });

  it('SPEC 4.3: 401 invalid_credentials for an unknown user, same answer as a wrong password', async () => {
    const app = await h.createApp();
    await h.activeUser(app, 'alice');
    const unknown = await loginRaw(app, { credentials: { username: 'nobody', password: PASSWORD } });
    const wrong = await loginRaw(app, { credentials: { username: 'alice', password: 'wrong password!' } });
    expectError(unknown, 401, 'invalid_credentials');
    expect(unknown.json()).toEqual(wrong.json());
  });

  it('SPEC 4.3: a user of another app is unknown here (401 invalid_credentials)', async () => {
    const appA = await h.createApp({ name: 'A' });
    const appB = await h.createApp({ name: 'B' });
    await h.activeUser(appA, 'alice');
    const res = await loginRaw(appB, { credentials: { username: 'alice', password: PASSWORD } });
    expectError(res, 401, 'invalid_credentials');
  });

  it('SPEC 4.3: 403 membership_inactive for a fresh sign-up, and no session is created', async () => {
    const app = await h.createApp();
    const userId = await h.signUp(app, 'alice');
    const res = await loginRaw(app, { credentials: { username: 'alice', password: PASSWORD } });
    expectError(res, 403, 'membership_inactive');
    expect(await sessionsOf(userId)).toHaveLength(0);
  });

  it('SPEC 4.3: 403 membership_inactive once the membership has expired', async () => {
    const app = await h.createApp();
    await h.activeUser(app, 'alice'); // 60 minutes
    h.clock.minutes(60);
    expectError(await loginRaw(app, { credentials: { username: 'alice', password: PASSWORD } }), 403, 'membership_inactive');
  });

  it('SPEC 4.3: a lifetime membership logs in', async () => {
    const app = await h.createApp();
    await h.activeUser(app, 'alice', PASSWORD, undefined, { minutes: undefined, lifetime: true });
    h.clock.minutes(10 * 365 * 24 * 60);
    expect((await loginRaw(app, { credentials: { username: 'alice', password: PASSWORD } })).statusCode).toBe(200);
  });
});

describe('POST /auth/login, license-code form', () => {
  it('SPEC 4.3 / DECISIONS: {code} logs in the user created by /sign_up_with_license_code with that code', async () => {
    const app = await h.createApp();
    const [code] = await h.licenses(app);
    const userId = await licenseSignUp(app, code!);
    const res = await loginRaw(app, { credentials: { code } });
    expect(res.statusCode).toBe(200);
    expect(res.json().session_token).toMatch(/^tg_sess_/);
    const ctx = await contextUser(app, res.json().session_token);
    expect(ctx.statusCode).toBe(200);
    expect(ctx.json().user.id).toBe(userId);
    expect(await sessionsOf(userId)).toHaveLength(1);
  });

  it('DECISIONS: {code} of a license activated via /activate_license is not a login credential (401 invalid_credentials)', async () => {
    const app = await h.createApp();
    const userId = await h.signUp(app, 'alice');
    const [code] = await h.licenses(app);
    const act = await h.client(app, 'POST', '/activate_license', { code, username: 'alice', password: PASSWORD });
    expect(act.statusCode).toBe(200);
    const res = await loginRaw(app, { credentials: { code } });
    expectError(res, 401, 'invalid_credentials');
    expect(await sessionsOf(userId)).toHaveLength(0);
  });

  it('DECISIONS: {code} of an unused license is 401 invalid_credentials and does not consume the license', async () => {
    const app = await h.createApp();
    const [code] = await h.licenses(app);
    const res = await loginRaw(app, { credentials: { code } });
    expectError(res, 401, 'invalid_credentials');
    const license = await h.tollgate.services.store.licenses.findByCode(app.id, code!);
    expect(license?.usedAt).toBeNull();
  });

  it('DECISIONS: {code} that does not exist is 401 invalid_credentials', async () => {
    const app = await h.createApp();
    expectError(await loginRaw(app, { credentials: { code: 'NOPE-NOPE-NOPE' } }), 401, 'invalid_credentials');
  });

  it('SPEC 4.3: {code} of another app is 401 invalid_credentials', async () => {
    const appA = await h.createApp({ name: 'A' });
    const appB = await h.createApp({ name: 'B' });
    const [code] = await h.licenses(appA);
    await licenseSignUp(appA, code!);
    expectError(await loginRaw(appB, { credentials: { code } }), 401, 'invalid_credentials');
  });

  it('SPEC 4.3: 403 banned when the license of the code form is banned', async () => {
    const app = await h.createApp();
    const [code] = await h.licenses(app);
    const userId = await licenseSignUp(app, code!);
    await h.ban(app, 'license', code!);
    const res = await loginRaw(app, { credentials: { code } });
    expectError(res, 403, 'banned');
    expect(await sessionsOf(userId)).toHaveLength(0);
  });

  it('SPEC 4.3: a license-code account has no password: the password form cannot log it in', async () => {
    const app = await h.createApp();
    const [code] = await h.licenses(app);
    const signup = await h.client(app, 'POST', '/sign_up_with_license_code', { code });
    const username = signup.json().username as string;
    expectError(await loginRaw(app, { credentials: { username, password: code } }), 401, 'invalid_credentials');
    expectError(await loginRaw(app, { credentials: { username, password: '' } }), 401, 'invalid_credentials');
  });
});

describe('POST /auth/login, request shape', () => {
  it('SPEC 4.3: both forms at once → 422 validation_error', async () => {
    const app = await h.createApp();
    const [code] = await h.licenses(app);
    await licenseSignUp(app, code!);
    await h.activeUser(app, 'alice');
    const res = await loginRaw(app, { credentials: { username: 'alice', password: PASSWORD, code } });
    expect(res.statusCode).toBe(422);
    const err = errorOf(res);
    expect(err.code).toBe('validation_error');
    expect(err.errors?.map((e) => e.field)).toContain('body.credentials');
  });

  it('SPEC 4.3: neither form (empty credentials) → 422 validation_error', async () => {
    const app = await h.createApp();
    const res = await loginRaw(app, { credentials: {} });
    expect(res.statusCode).toBe(422);
    const err = errorOf(res);
    expect(err.code).toBe('validation_error');
    expect(err.errors?.length).toBeGreaterThan(0);
  });

  it('SPEC 4.3: missing credentials object → 422 naming body.credentials', async () => {
    const app = await h.createApp();
    const res = await loginRaw(app, { hardware_id: 'hw' });
    expect(res.statusCode).toBe(422);
    const err = errorOf(res);
    expect(err.code).toBe('validation_error');
    expect(err.errors?.map((e) => e.field)).toContain('body.credentials');
  });

  it('SPEC 4.3: password form without the password → 422 naming body.credentials.password', async () => {
    const app = await h.createApp();
    await h.activeUser(app, 'alice');
    const res = await loginRaw(app, { credentials: { username: 'alice' } });
    expect(res.statusCode).toBe(422);
    expect(errorOf(res).errors?.map((e) => e.field)).toContain('body.credentials.password');
  });

  it('DECISIONS: a non-string username is 422, never a 500', async () => {
    const app = await h.createApp();
    const res = await loginRaw(app, { credentials: { username: 42, password: PASSWORD } });
    expect(res.statusCode).toBe(422);
    expect(errorOf(res).code).toBe('validation_error');
  });
});

describe('POST /auth/login, bans', () => {
  it('SPEC 4.3: 403 banned for a banned user', async () => {
    const app = await h.createApp();
    const userId = await h.activeUser(app, 'alice');
    await h.ban(app, 'user', userId);
    const res = await loginRaw(app, { credentials: { username: 'alice', password: PASSWORD } });
    expectError(res, 403, 'banned');
    expect(await sessionsOf(userId)).toHaveLength(0);
  });

  it('SPEC 4.3: 403 banned for a banned IP address (socket address), other addresses unaffected', async () => {
    const app = await h.createApp();
    const userId = await h.activeUser(app, 'alice');
    await h.ban(app, 'ip', '203.0.113.7');
    const body = { credentials: { username: 'alice', password: PASSWORD } };
    expectError(await loginRaw(app, body, '203.0.113.7'), 403, 'banned');
    expect(await sessionsOf(userId)).toHaveLength(0);
    expect((await loginRaw(app, body, '203.0.113.8')).statusCode).toBe(200);
  });

  it('DECISIONS: the IP ban is checked before credentials (a wrong password from a banned IP is 403)', async () => {
    const app = await h.createApp();
    await h.activeUser(app, 'alice');
    await h.ban(app, 'ip', '203.0.113.7');
    expectError(await loginRaw(app, { credentials: { username: 'alice', password: 'wrong password!' } }, '203.0.113.7'), 403, 'banned');
  });

  it('SPEC 4.3: 403 banned for a banned hardware ID (device authentication off, hardware_id sent)', async () => {
    const app = await h.createApp();
    const userId = await h.activeUser(app, 'alice');
    await h.ban(app, 'hardware_id', 'hw-bad');
    const res = await loginRaw(app, { credentials: { username: 'alice', password: PASSWORD }, hardware_id: 'hw-bad' });
    expectError(res, 403, 'banned');
    expect(await sessionsOf(userId)).toHaveLength(0);
    expect((await loginRaw(app, { credentials: { username: 'alice', password: PASSWORD }, hardware_id: 'hw-good' })).statusCode).toBe(200);
  });

  it('SPEC 4.3: 403 banned for a banned hardware ID with device authentication on', async () => {
    const app = await h.createApp({ device_auth_enabled: true });
    await h.activeUser(app, 'alice', PASSWORD, 'hw-1');
    await h.ban(app, 'hardware_id', 'hw-1');
    expectError(await loginRaw(app, { credentials: { username: 'alice', password: PASSWORD }, hardware_id: 'hw-1' }), 403, 'banned');
  });
});

describe('POST /auth/login, device authentication', () => {
  it('DECISIONS: 401 device_required when device authentication is on and no hardware_id is sent', async () => {
    const app = await h.createApp({ device_auth_enabled: true });
    const userId = await h.activeUser(app, 'alice', PASSWORD, 'hw-1');
    const res = await loginRaw(app, { credentials: { username: 'alice', password: PASSWORD } });
    expectError(res, 401, 'device_required');
    expect(await sessionsOf(userId)).toHaveLength(0);
  });

  it('SPEC 4.3 rule 3: with device authentication on, the session records the device', async () => {
    const app = await h.createApp({ device_auth_enabled: true });
    const userId = await h.activeUser(app, 'alice', PASSWORD, 'hw-1');
    const res = await loginRaw(app, { credentials: { username: 'alice', password: PASSWORD }, hardware_id: 'hw-1' });
    expect(res.statusCode).toBe(200);
    const sessions = await sessionsOf(userId);
    expect(sessions).toHaveLength(1);
    expect(sessions[0]!.hardwareId).toBe('hw-1');
    expect(await devicesOf(userId)).toEqual(['hw-1']);
  });

  it('DECISIONS: 401 device_mismatch for an unknown device when max_devices_per_user is 1; nothing registered', async () => {
    const app = await h.createApp({ device_auth_enabled: true, max_devices_per_user: 1 });
    const userId = await h.activeUser(app, 'alice', PASSWORD, 'hw-1');
    const res = await loginRaw(app, { credentials: { username: 'alice', password: PASSWORD }, hardware_id: 'hw-2' });
    expectError(res, 401, 'device_mismatch');
    expect(await devicesOf(userId)).toEqual(['hw-1']);
    expect(await sessionsOf(userId)).toHaveLength(0);
  });

  it('DECISIONS: with max_devices_per_user 2 a second device is registered, a third is 401 device_limit', async () => {
    const app = await h.createApp({ device_auth_enabled: true, max_devices_per_user: 2 });
    const userId = await h.activeUser(app, 'alice', PASSWORD, 'hw-1');
    const second = await loginRaw(app, { credentials: { username: 'alice', password: PASSWORD }, hardware_id: 'hw-2' });
    expect(second.statusCode).toBe(200);
    expect((await devicesOf(userId)).sort()).toEqual(['hw-1', 'hw-2']);

    const third = await loginRaw(app, { credentials: { username: 'alice', password: PASSWORD }, hardware_id: 'hw-3' });
    expectError(third, 401, 'device_limit');
    expect((await devicesOf(userId)).sort()).toEqual(['hw-1', 'hw-2']);

    // Both registered devices keep working.
    expect((await loginRaw(app, { credentials: { username: 'alice', password: PASSWORD }, hardware_id: 'hw-1' })).statusCode).toBe(200);
    expect((await loginRaw(app, { credentials: { username: 'alice', password: PASSWORD }, hardware_id: 'hw-2' })).statusCode).toBe(200);
  });

  it('DECISIONS: the device check comes after credentials (wrong password with unknown device is invalid_credentials)', async () => {
    const app = await h.createApp({ device_auth_enabled: true });
    await h.activeUser(app, 'alice', PASSWORD, 'hw-1');
    expectError(await loginRaw(app, { credentials: { username: 'alice', password: 'wrong password!' }, hardware_id: 'hw-2' }), 401, 'invalid_credentials');
  });

  it('DECISIONS: a {code} account with device authentication on is bound to its sign-up device', async () => {
    const app = await h.createApp({ device_auth_enabled: true });
    const [code] = await h.licenses(app);
    const userId = await licenseSignUp(app, code!, 'hw-1');
    expect((await loginRaw(app, { credentials: { code }, hardware_id: 'hw-1' })).statusCode).toBe(200);
    expectError(await loginRaw(app, { credentials: { code }, hardware_id: 'hw-2' }), 401, 'device_mismatch');
    expectError(await loginRaw(app, { credentials: { code } }), 401, 'device_required');
    expect(await devicesOf(userId)).toEqual(['hw-1']);
  });
});

describe('POST /auth/login, IP tracking', () => {
  it('SPEC 4.3 rule 4: the IP address is tracked on login (count grows; a new address is added)', async () => {
    const app = await h.createApp();
    const userId = await h.activeUser(app, 'alice');
    const users = h.tollgate.services.store.users;
    const before = await users.ips(userId);
    expect(before).toHaveLength(1);
    expect(before[0]!.ip).toBe('127.0.0.1');
    expect(before[0]!.count).toBe(1);

    h.clock.minutes(1);
    await h.login(app, 'alice');
    const after = await users.ips(userId);
    expect(after).toHaveLength(1);
    expect(after[0]!.count).toBe(2);
    expect(after[0]!.lastSeenAt).toBe(h.clock.ms);
    expect(after[0]!.firstSeenAt).toBe(before[0]!.firstSeenAt);

    expect((await loginRaw(app, { credentials: { username: 'alice', password: PASSWORD } }, '198.51.100.20')).statusCode).toBe(200);
    const third = await users.ips(userId);
    expect(third.map((r) => r.ip).sort()).toEqual(['127.0.0.1', '198.51.100.20']);
    expect(third.find((r) => r.ip === '198.51.100.20')?.count).toBe(1);
  });

  it('DECISIONS: an IPv4-mapped socket address is tracked as the IPv4 address', async () => {
    const app = await h.createApp();
    const userId = await h.activeUser(app, 'alice');
    expect((await loginRaw(app, { credentials: { username: 'alice', password: PASSWORD } }, '::ffff:198.51.100.20')).statusCode).toBe(200);
    const ips = (await h.tollgate.services.store.users.ips(userId)).map((r) => r.ip).sort();
    expect(ips).toEqual(['127.0.0.1', '198.51.100.20']);
  });

  it('SPEC 4.3: a failed login does not track the IP', async () => {
    const app = await h.createApp();
    const userId = await h.activeUser(app, 'alice');
    await loginRaw(app, { credentials: { username: 'alice', password: 'wrong password!' } }, '198.51.100.20');
    const ips = await h.tollgate.services.store.users.ips(userId);
    expect(ips.map((r) => r.ip)).toEqual(['127.0.0.1']);
    expect(ips[0]!.count).toBe(1);
  });
});

describe('POST /auth/login, the session token', () => {
  it('SPEC 4.3 rule 2: a token is tied to its app (used with app B → 401 invalid_credentials)', async () => {
    const appA = await h.createApp({ name: 'A' });
    const appB = await h.createApp({ name: 'B' });
    await h.activeUser(appA, 'alice');
    await h.activeUser(appB, 'alice');
    const token = await h.login(appA, 'alice');
    const res = await h.client(appB, 'GET', '/app_context', undefined, bearer(token));
    expectError(res, 401, 'invalid_credentials');
    expect((await h.client(appA, 'GET', '/app_context', undefined, bearer(token))).statusCode).toBe(200);
  });

  it('DECISIONS: a token of app A on app B with anonymous access still fails (401 invalid_credentials, not anonymous)', async () => {
    const appA = await h.createApp({ name: 'A' });
    const appB = await h.createApp({ name: 'B', anonymous_access_allowed: true });
    await h.activeUser(appA, 'alice');
    const token = await h.login(appA, 'alice');
    expectError(await h.client(appB, 'GET', '/app_context', undefined, bearer(token)), 401, 'invalid_credentials');
  });

  it('DECISIONS: session_ttl_seconds: valid at expiry - 1 ms, 401 session_expired at expiry exactly', async () => {
    const app = await h.createApp({ session_ttl_seconds: 120 });
    const userId = await h.activeUser(app, 'alice');
    const token = await h.login(app, 'alice');
    const [session] = await sessionsOf(userId);
    expect(session!.expiresAt).toBe(h.clock.ms + 120_000);

    h.clock.advance(120_000 - 1);
    const before = await h.client(app, 'GET', '/app_context', undefined, bearer(token));
    expect(before.statusCode).toBe(200);
    expect(before.json().user.id).toBe(userId);

    h.clock.advance(1);
    expectError(await h.client(app, 'GET', '/app_context', undefined, bearer(token)), 401, 'session_expired');
  });

  it('DECISIONS: default session lifetime is 86400 s', async () => {
    const app = await h.createApp();
    await h.activeUser(app, 'alice', PASSWORD, undefined, { minutes: undefined, lifetime: true });
    const token = await h.login(app, 'alice');
    h.clock.advance(86_400_000 - 1);
    expect((await h.client(app, 'GET', '/app_context', undefined, bearer(token))).statusCode).toBe(200);
    h.clock.advance(1);
    expectError(await h.client(app, 'GET', '/app_context', undefined, bearer(token)), 401, 'session_expired');
  });

  it('DECISIONS: 401 invalid_app_credentials before anything else (wrong secret, even with a malformed body)', async () => {
    const app = await h.createApp();
    const res = await h.inject({ method: 'POST', url: '/auth/login', headers: { 'x-api-key': app.apiKey, 'x-api-secret': 'wrong', 'content-type': 'application/json' }, payload: '{not json' });
    expectError(res, 401, 'invalid_app_credentials');
  });
});
