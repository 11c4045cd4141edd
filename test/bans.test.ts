import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { ADMIN_TOKEN, PASSWORD, errorOf, harness, type Harness, type TestApp, expectError } from './helpers.js';

let h: Harness;
beforeEach(async () => {
  h = await harness();
});
afterEach(async () => h.close());

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const legacy = (username: string, password = PASSWORD) => ({ 'x-api-username': username, 'x-api-password': password });

/** A client request from a given socket address (the client IP of DECISIONS). */
function from(app: TestApp, ip: string, method: 'GET' | 'POST', url: string, payload?: unknown, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> {
  return h.inject({ method, url, remoteAddress: ip, headers: { ...app.headers, ...headers }, ...(payload !== undefined && { payload: payload as object }) });
}

function expectBanned(res: LightMyRequestResponse): void {
  expect(res.statusCode).toBe(403);
  expect(errorOf(res).code).toBe('banned');
}

async function userCount(app: TestApp): Promise<number> {
  return (await h.tollgate.services.store.users.list(app.id, null, null, 500)).items.length;
}

async function licenseUsed(app: TestApp, code: string): Promise<boolean> {
  const license = await h.tollgate.services.store.licenses.findByCode(app.id, code);
  if (!license) throw new Error('no such license');
  return license.usedAt !== null;
}

async function upload(app: TestApp, name: string, content: Buffer): Promise<string> {
  const res = await h.inject({
    method: 'POST',
    url: `/admin/v1/apps/${app.id}/files?name=${encodeURIComponent(name)}`,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/octet-stream' },
    payload: content,
  });
  if (res.statusCode !== 201) throw new Error(`upload: ${res.statusCode} ${res.body}`);
  return res.json().id;
}

const loginBody = (username = 'alice', extra: Record<string, unknown> = {}) => ({ credentials: { username, password: PASSWORD }, ...extra });

/**
 * Every endpoint where SPEC lists an IP ban, tried from `ip`: each must answer
 * 403 banned and leave no trace (no user, no session, license unused).
 */
async function expectIpBannedEverywhere(app: TestApp, ip: string): Promise<void> {
  const users = await userCount(app);
  const [code] = await h.licenses(app);
  expectBanned(await from(app, ip, 'POST', '/sign_up', { username: 'newcomer', password: PASSWORD }));
  expectBanned(await from(app, ip, 'POST', '/sign_up_with_license_code', { code }));
  expectBanned(await from(app, ip, 'POST', '/activate_license', { code, username: 'alice', password: PASSWORD }));
  expectBanned(await from(app, ip, 'POST', '/auth/login', loginBody()));
  expectBanned(await from(app, ip, 'GET', '/app_context', undefined, legacy('alice')));
  expect(await userCount(app)).toBe(users);
  expect(await licenseUsed(app, code!)).toBe(false);
}

async function expectIpAllowed(app: TestApp, ip: string): Promise<void> {
  expect((await from(app, ip, 'POST', '/auth/login', loginBody())).statusCode).toBe(200);
  expect((await from(app, ip, 'GET', '/app_context', undefined, legacy('alice'))).statusCode).toBe(200);
}

describe('IP bans', () => {
  it('DECISIONS: an exact IP ban refuses that address on every endpoint SPEC lists, and only that address', async () => {
    const app = await h.createApp();
    await h.activeUser(app, 'alice');
    await h.ban(app, 'ip', '203.0.113.5');
    await expectIpBannedEverywhere(app, '203.0.113.5');
    await expectIpAllowed(app, '203.0.113.6');
  });

  it('DECISIONS: an IPv4 CIDR ban (10.0.0.0/8) refuses every address in the range', async () => {
    const app = await h.createApp();
    await h.activeUser(app, 'alice');
    await h.ban(app, 'ip', '10.0.0.0/8');
    await expectIpBannedEverywhere(app, '10.1.2.3');
    expectBanned(await from(app, '10.0.0.0', 'POST', '/auth/login', loginBody()));
    expectBanned(await from(app, '10.255.255.255', 'POST', '/auth/login', loginBody()));
    await expectIpAllowed(app, '11.0.0.1');
    await expectIpAllowed(app, '9.255.255.255');
  });

  it('DECISIONS: an IPv6 CIDR ban (2001:db8::/32) refuses every address in the range', async () => {
    const app = await h.createApp();
    await h.activeUser(app, 'alice');
    await h.ban(app, 'ip', '2001:db8::/32');
    await expectIpBannedEverywhere(app, '2001:db8:abcd:12::1');
    expectBanned(await from(app, '2001:DB8:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF', 'POST', '/auth/login', loginBody()));
    await expectIpAllowed(app, '2001:db9::1');
    await expectIpAllowed(app, '10.1.2.3');
  });

  it('DECISIONS: an exact IPv6 ban matches the address however it is written', async () => {
    const app = await h.createApp();
    await h.activeUser(app, 'alice');
    await h.ban(app, 'ip', '2001:db8:0:0:0:0:0:1');
    expectBanned(await from(app, '2001:db8::1', 'POST', '/auth/login', loginBody()));
    await expectIpAllowed(app, '2001:db8::2');
  });

  it('DECISIONS: an IPv4-mapped client address (::ffff:10.1.2.3) is matched by an IPv4 ban', async () => {
    const app = await h.createApp();
    await h.activeUser(app, 'alice');
    await h.ban(app, 'ip', '10.0.0.0/8');
    await expectIpBannedEverywhere(app, '::ffff:10.1.2.3');
    await expectIpAllowed(app, '::ffff:11.1.2.3');
  });

  it('DECISIONS: an exact IPv4 ban matches the IPv4-mapped client address, and a mapped ban value matches the IPv4 client', async () => {
    const app = await h.createApp();
    await h.activeUser(app, 'alice');
    await h.ban(app, 'ip', '10.1.2.3');
    await h.ban(app, 'ip', '::ffff:192.0.2.1');
    expectBanned(await from(app, '::ffff:10.1.2.3', 'POST', '/auth/login', loginBody()));
    expectBanned(await from(app, '192.0.2.1', 'POST', '/auth/login', loginBody()));
    expectBanned(await from(app, '::ffff:192.0.2.1', 'POST', '/auth/login', loginBody()));
    await expectIpAllowed(app, '::ffff:10.1.2.4');
  });

  it('DECISIONS: an IP ban applies to downloads and to anonymous callers', async () => {
    const app = await h.createApp({ anonymous_access_allowed: true });
    const fileId = await upload(app, 'f.bin', Buffer.from('data'));
    await h.ban(app, 'ip', '198.51.100.0/24');
    expectBanned(await from(app, '198.51.100.1', 'GET', `/files/${fileId}/download`));
    expectBanned(await from(app, '198.51.100.1', 'GET', '/app_context'));
    const ok = await from(app, '198.51.101.1', 'GET', `/files/${fileId}/download`);
    expect(ok.statusCode).toBe(200);
    expect(ok.body).toBe('data');
  });

  it('DECISIONS: an IP ban of app A does not affect app B', async () => {
    const appA = await h.createApp({ name: 'A' });
    const appB = await h.createApp({ name: 'B' });
    await h.activeUser(appA, 'alice');
    await h.activeUser(appB, 'alice');
    await h.ban(appA, 'ip', '203.0.113.5');
    expectBanned(await from(appA, '203.0.113.5', 'POST', '/auth/login', loginBody()));
    await expectIpAllowed(appB, '203.0.113.5');
  });

  it('DECISIONS: the IP ban comes before the credential check, after the request shape check', async () => {
    const app = await h.createApp();
    await h.activeUser(app, 'alice');
    await h.ban(app, 'ip', '203.0.113.5');
    // Wrong password from a banned IP: banned, not invalid_credentials.
    expectBanned(await from(app, '203.0.113.5', 'POST', '/auth/login', { credentials: { username: 'alice', password: 'wrong password!' } }));
    // A malformed request from a banned IP: 422 first.
    const res = await from(app, '203.0.113.5', 'POST', '/sign_up', { username: 'newcomer' });
    expect(res.statusCode).toBe(422);
    expect(errorOf(res).code).toBe('validation_error');
  });
});

describe('Temporary bans and removal', () => {
  it('DECISIONS: a ban with expires_at applies before it and is gone after it (TestClock)', async () => {
    const app = await h.createApp();
    await h.activeUser(app, 'alice', PASSWORD, undefined, { minutes: undefined, lifetime: true });
    const expiresAt = h.clock.iso(10 * 60_000);
    const res = await h.admin('POST', `/apps/${app.id}/bans`, { type: 'ip', value: '203.0.113.5', reason: 'cool-off', expires_at: expiresAt });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({ type: 'ip', value: '203.0.113.5', reason: 'cool-off', expires_at: expiresAt });

    expectBanned(await from(app, '203.0.113.5', 'POST', '/auth/login', loginBody()));
    h.clock.advance(10 * 60_000 - 1);
    expectBanned(await from(app, '203.0.113.5', 'POST', '/auth/login', loginBody()));
    h.clock.advance(2);
    expect((await from(app, '203.0.113.5', 'POST', '/auth/login', loginBody())).statusCode).toBe(200);
    expect((await from(app, '203.0.113.5', 'GET', '/app_context', undefined, legacy('alice'))).statusCode).toBe(200);
  });

  it('DECISIONS: a temporary user ban ends while a permanent one stays', async () => {
    const app = await h.createApp();
    const alice = await h.activeUser(app, 'alice', PASSWORD, undefined, { minutes: undefined, lifetime: true });
    const bob = await h.activeUser(app, 'bob', PASSWORD, undefined, { minutes: undefined, lifetime: true });
    await h.ban(app, 'user', alice, { expires_at: h.clock.iso(60_000) });
    await h.ban(app, 'user', bob);
    expectBanned(await h.client(app, 'GET', '/app_context', undefined, legacy('alice')));
    expectBanned(await h.client(app, 'GET', '/app_context', undefined, legacy('bob')));
    h.clock.advance(60_001);
    expect((await h.client(app, 'GET', '/app_context', undefined, legacy('alice'))).statusCode).toBe(200);
    expectBanned(await h.client(app, 'GET', '/app_context', undefined, legacy('bob')));
  });

  it('DECISIONS: deleting a ban restores access at once (204; the ban is no longer listed)', async () => {
    const app = await h.createApp();
    const userId = await h.activeUser(app, 'alice');
    const token = await h.login(app, 'alice');
    const ipBan = await h.ban(app, 'ip', '203.0.113.5');
    const userBan = await h.ban(app, 'user', userId);
    expectBanned(await h.client(app, 'GET', '/app_context', undefined, bearer(token)));
    expectBanned(await from(app, '203.0.113.5', 'POST', '/auth/login', loginBody()));

    expect((await h.admin('DELETE', `/apps/${app.id}/bans/${userBan}`)).statusCode).toBe(204);
    expect((await h.client(app, 'GET', '/app_context', undefined, bearer(token))).statusCode).toBe(200);
    expectBanned(await from(app, '203.0.113.5', 'POST', '/auth/login', loginBody()));

    expect((await h.admin('DELETE', `/apps/${app.id}/bans/${ipBan}`)).statusCode).toBe(204);
    expect((await from(app, '203.0.113.5', 'POST', '/auth/login', loginBody())).statusCode).toBe(200);

    const list = await h.admin('GET', `/apps/${app.id}/bans`);
    expect(list.statusCode).toBe(200);
    expect(list.json().items).toEqual([]);
  });

  it('DECISIONS: deleting an unknown ban → 404', async () => {
    const app = await h.createApp();
    expectError(await h.admin('DELETE', `/apps/${app.id}/bans/${randomUUID()}`), 404, 'not_found');
  });
});

describe('Hardware-ID bans', () => {
  it('DECISIONS: a hardware_id ban applies with device auth off whenever a hardware ID is sent', async () => {
    const app = await h.createApp({ anonymous_access_allowed: false });
    await h.activeUser(app, 'alice');
    const fileId = await upload(app, 'f.bin', Buffer.from('data'));
    await h.ban(app, 'hardware_id', 'hw-bad');
    const [code] = await h.licenses(app);
    const users = await userCount(app);

    expectBanned(await h.client(app, 'POST', '/sign_up', { username: 'newcomer', password: PASSWORD, hardware_id: 'hw-bad' }));
    expectBanned(await h.client(app, 'POST', '/sign_up_with_license_code', { code, hardware_id: 'hw-bad' }));
    expectBanned(await h.client(app, 'POST', '/activate_license', { code, username: 'alice', password: PASSWORD, hardware_id: 'hw-bad' }));
    expectBanned(await h.client(app, 'POST', '/auth/login', loginBody('alice', { hardware_id: 'hw-bad' })));
    expectBanned(await h.client(app, 'GET', '/app_context', undefined, { ...legacy('alice'), 'x-hardware-id': 'hw-bad' }));
    expectBanned(await h.client(app, 'GET', `/files/${fileId}/download`, undefined, { ...legacy('alice'), 'x-hardware-id': 'hw-bad' }));
    expect(await userCount(app)).toBe(users);
    expect(await licenseUsed(app, code!)).toBe(false);

    // Without a hardware ID, or with another one, nothing is banned.
    expect((await h.client(app, 'POST', '/auth/login', loginBody())).statusCode).toBe(200);
    expect((await h.client(app, 'GET', '/app_context', undefined, { ...legacy('alice'), 'x-hardware-id': 'hw-ok' })).statusCode).toBe(200);
    expect((await h.client(app, 'POST', '/sign_up', { username: 'newcomer', password: PASSWORD, hardware_id: 'hw-ok' })).statusCode).toBe(200);
  });

  it('DECISIONS: a hardware_id ban with device auth on refuses the device, including its existing sessions', async () => {
    const app = await h.createApp({ device_auth_enabled: true });
    await h.activeUser(app, 'alice', PASSWORD, 'hw-1');
    const token = await h.login(app, 'alice', PASSWORD, 'hw-1');
    await h.ban(app, 'hardware_id', 'hw-1');
    expectBanned(await h.client(app, 'POST', '/auth/login', loginBody('alice', { hardware_id: 'hw-1' })));
    expectBanned(await h.client(app, 'GET', '/app_context', undefined, bearer(token)));
    expectBanned(await h.client(app, 'GET', '/app_context', undefined, { ...legacy('alice'), 'x-hardware-id': 'hw-1' }));
    expectBanned(await h.client(app, 'POST', '/sign_up', { username: 'newcomer', password: PASSWORD, hardware_id: 'hw-1' }));
  });

  it('DECISIONS: the hardware-ID ban comes before the credential check', async () => {
    const app = await h.createApp();
    await h.activeUser(app, 'alice');
    await h.ban(app, 'hardware_id', 'hw-bad');
    expectBanned(await h.client(app, 'POST', '/auth/login', { credentials: { username: 'nobody', password: 'wrong password!' }, hardware_id: 'hw-bad' }));
  });
});

describe('License bans', () => {
  it('SPEC 4.2: a banned license cannot be used to sign up (403) and stays unused', async () => {
    const app = await h.createApp();
    const [code] = await h.licenses(app);
    await h.ban(app, 'license', code!);
    expectBanned(await h.client(app, 'POST', '/sign_up_with_license_code', { code }));
    expect(await userCount(app)).toBe(0);
    expect(await licenseUsed(app, code!)).toBe(false);
  });

  it('SPEC 4.7: a banned license cannot be activated (403) and the membership is unchanged', async () => {
    const app = await h.createApp();
    const userId = await h.signUp(app, 'alice');
    const [code] = await h.licenses(app);
    await h.ban(app, 'license', code!);
    expectBanned(await h.client(app, 'POST', '/activate_license', { code, username: 'alice', password: PASSWORD }));
    expect(await licenseUsed(app, code!)).toBe(false);
    const user = await h.tollgate.services.store.users.findById(app.id, userId);
    expect(user?.activeUntil).toBeNull();
    expect(user?.isLifetime).toBe(false);
  });

  it('SPEC 4.3 / 5.2: a license-code account whose license is banned is refused on login and legacy headers', async () => {
    const app = await h.createApp();
    const [code] = await h.licenses(app);
    const signup = await h.client(app, 'POST', '/sign_up_with_license_code', { code });
    expect(signup.statusCode).toBe(200);
    const login = await h.client(app, 'POST', '/auth/login', { credentials: { code } });
    expect(login.statusCode).toBe(200);
    const token = login.json().session_token as string;
    await h.ban(app, 'license', code!);
    expectBanned(await h.client(app, 'POST', '/auth/login', { credentials: { code } }));
    expectBanned(await h.client(app, 'GET', '/app_context', undefined, { 'x-api-license-code': code! }));
    expectBanned(await h.client(app, 'GET', '/app_context', undefined, bearer(token)));
  });

  it('DECISIONS: a license ban does not affect a password user who activated that license earlier', async () => {
    const app = await h.createApp();
    await h.signUp(app, 'alice');
    const [code] = await h.licenses(app);
    expect((await h.client(app, 'POST', '/activate_license', { code, username: 'alice', password: PASSWORD })).statusCode).toBe(200);
    await h.ban(app, 'license', code!);
    expect((await h.client(app, 'GET', '/app_context', undefined, legacy('alice'))).statusCode).toBe(200);
  });

  it('DECISIONS: a ban on a code that is not a license of the app is refused (404); the code stays 401 invalid_license', async () => {
    const app = await h.createApp();
    await h.signUp(app, 'alice');
    expectError(await h.admin('POST', `/apps/${app.id}/bans`, { type: 'license', value: 'NO-SUCH-CODE' }), 404, 'not_found');
    expectError(await h.client(app, 'POST', '/activate_license', { code: 'NO-SUCH-CODE', username: 'alice', password: PASSWORD }), 401, 'invalid_license');
  });
});

describe('User bans', () => {
  it('SPEC 4.3 / 4.5 / 4.6 / 4.7: a banned user is refused on login, app context, download and activation', async () => {
    const app = await h.createApp();
    const userId = await h.activeUser(app, 'alice');
    const token = await h.login(app, 'alice');
    const fileId = await upload(app, 'f.bin', Buffer.from('data'));
    const [code] = await h.licenses(app);
    await h.ban(app, 'user', userId, { reason: 'chargeback' });

    expectBanned(await h.client(app, 'POST', '/auth/login', loginBody()));
    expectBanned(await h.client(app, 'GET', '/app_context', undefined, bearer(token)));
    expectBanned(await h.client(app, 'GET', '/app_context', undefined, legacy('alice')));
    expectBanned(await h.client(app, 'GET', `/files/${fileId}/download`, undefined, bearer(token)));
    expectBanned(await h.client(app, 'POST', '/activate_license', { code, username: 'alice', password: PASSWORD }));
    expect(await licenseUsed(app, code!)).toBe(false);
  });

  it('DECISIONS: a user ban comes after the credential check (wrong password is 401, not 403)', async () => {
    const app = await h.createApp();
    const userId = await h.activeUser(app, 'alice');
    await h.ban(app, 'user', userId);
    expectError(await h.client(app, 'POST', '/auth/login', { credentials: { username: 'alice', password: 'wrong password!' } }), 401, 'invalid_credentials');
  });

  it('DECISIONS: a user ban affects only that user', async () => {
    const app = await h.createApp();
    const alice = await h.activeUser(app, 'alice');
    await h.activeUser(app, 'bob');
    await h.ban(app, 'user', alice);
    expect((await h.client(app, 'GET', '/app_context', undefined, legacy('bob'))).statusCode).toBe(200);
  });

  it('DECISIONS: a user ban given with an upper-case UUID matches the user', async () => {
    const app = await h.createApp();
    const userId = await h.activeUser(app, 'alice');
    await h.ban(app, 'user', userId.toUpperCase());
    expectBanned(await h.client(app, 'GET', '/app_context', undefined, legacy('alice')));
  });
});

describe('Admin: creating bans', () => {
  it('DECISIONS: POST /bans answers 201 with the ban, and GET /bans lists it', async () => {
    const app = await h.createApp();
    const res = await h.admin('POST', `/apps/${app.id}/bans`, { type: 'ip', value: '203.0.113.5', reason: 'abuse' });
    expect(res.statusCode).toBe(201);
    const ban = res.json();
    expect(ban).toMatchObject({ type: 'ip', value: '203.0.113.5', reason: 'abuse', expires_at: null, created_at: h.clock.iso() });
    expect(ban.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    const list = await h.admin('GET', `/apps/${app.id}/bans`);
    expect(list.json().items.map((b: { id: string }) => b.id)).toEqual([ban.id]);
  });

  it('DECISIONS: type ip with a value that is not an IP → 422 naming body.value; nothing stored', async () => {
    const app = await h.createApp();
    for (const value of ['not-an-ip', '10.0.0.0/33', '10.0.0.0/8/8', '2001:db8::/129', '']) {
      const res = await h.admin('POST', `/apps/${app.id}/bans`, { type: 'ip', value });
      expect(res.statusCode, value).toBe(422);
      const err = errorOf(res);
      expect(err.code).toBe('validation_error');
      expect(err.errors?.map((e) => e.field)).toContain('body.value');
    }
    expect((await h.admin('GET', `/apps/${app.id}/bans`)).json().items).toEqual([]);
  });

  it('DECISIONS: type user with a value that is not a UUID → 422', async () => {
    const app = await h.createApp();
    await h.signUp(app, 'alice');
    const res = await h.admin('POST', `/apps/${app.id}/bans`, { type: 'user', value: 'alice' });
    expect(res.statusCode).toBe(422);
    const err = errorOf(res);
    expect(err.code).toBe('validation_error');
    expect(err.errors?.map((e) => e.field)).toContain('body.value');
    expect((await h.admin('GET', `/apps/${app.id}/bans`)).json().items).toEqual([]);
  });

  it('DECISIONS: an unknown ban type or a bad expires_at → 422', async () => {
    const app = await h.createApp();
    expectError(await h.admin('POST', `/apps/${app.id}/bans`, { type: 'email', value: 'a@b.c' }), 422, 'validation_error');
    expectError(await h.admin('POST', `/apps/${app.id}/bans`, { type: 'ip', value: '10.0.0.1', expires_at: 'tomorrow' }), 422, 'validation_error');
    expect((await h.admin('GET', `/apps/${app.id}/bans`)).json().items).toEqual([]);
  });

  it('DECISIONS: a user ban for a user of another app → 404 (an object of another app is not found)', async () => {
    const appA = await h.createApp({ name: 'A' });
    const appB = await h.createApp({ name: 'B' });
    const userOfB = await h.activeUser(appB, 'bob');
    const res = await h.admin('POST', `/apps/${appA.id}/bans`, { type: 'user', value: userOfB });
    expect(res.statusCode).toBe(404);
    expect(errorOf(res).code).toBe('not_found');
    expect((await h.admin('GET', `/apps/${appA.id}/bans`)).json().items).toEqual([]);
    expect((await h.client(appB, 'GET', '/app_context', undefined, legacy('bob'))).statusCode).toBe(200);
  });

  it('DECISIONS: a user ban for a UUID that is no user → 404', async () => {
    const app = await h.createApp();
    expectError(await h.admin('POST', `/apps/${app.id}/bans`, { type: 'user', value: randomUUID() }), 404, 'not_found');
  });
});
