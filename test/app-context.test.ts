import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { ADMIN_TOKEN, PASSWORD, errorOf, harness, type Harness, type TestApp, expectError } from './helpers.js';

let h: Harness;
beforeEach(async () => {
  h = await harness();
});
afterEach(async () => h.close());

const ANONYMOUS_DETAIL = 'Only logged in users are allowed to access';
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const legacy = (username: string, password = PASSWORD) => ({ 'x-api-username': username, 'x-api-password': password });

function context(app: TestApp, headers: Record<string, string> = {}, remoteAddress?: string): Promise<LightMyRequestResponse> {
  return h.inject({ method: 'GET', url: '/app_context', headers: { ...app.headers, ...headers }, ...(remoteAddress !== undefined && { remoteAddress }) });
}

async function setVariable(app: TestApp, name: string, value: string): Promise<void> {
  const res = await h.admin('PUT', `/apps/${app.id}/variables/${encodeURIComponent(name)}`, { value });
  if (res.statusCode !== 200) throw new Error(`variable: ${res.statusCode} ${res.body}`);
}

interface Uploaded {
  id: string;
  name: string;
  mime_type: string;
  is_encrypted: boolean;
}

async function upload(app: TestApp, name: string, content: Buffer, mimeType = 'application/octet-stream', encrypted = false): Promise<Uploaded> {
  const qs = new URLSearchParams({ name, mime_type: mimeType, is_encrypted: String(encrypted) });
  const res = await h.inject({
    method: 'POST',
    url: `/admin/v1/apps/${app.id}/files?${qs}`,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/octet-stream' },
    payload: content,
  });
  if (res.statusCode !== 201) throw new Error(`upload: ${res.statusCode} ${res.body}`);
  return res.json();
}

async function licenseSignUp(app: TestApp, code: string, hardwareId?: string): Promise<{ id: string; username: string }> {
  const res = await h.client(app, 'POST', '/sign_up_with_license_code', { code, ...(hardwareId !== undefined && { hardware_id: hardwareId }) });
  if (res.statusCode !== 200) throw new Error(`license sign-up: ${res.statusCode} ${res.body}`);
  return res.json();
}

describe('GET /app_context, response shape', () => {
  it('SPEC 4.5 / 2.3: the response is exactly {application:{id,name,variables,files}, user, server_time}', async () => {
    const app = await h.createApp({ name: 'Shape app' });
    await setVariable(app, 'motd', 'hello');
    await setVariable(app, 'api_url', 'https://example.test');
    const file = await upload(app, 'payload.bin', Buffer.from('abc'), 'application/x-custom', true);
    const userId = await h.activeUser(app, 'alice');
    const token = await h.login(app, 'alice');

    h.clock.advance(1234);
    const res = await context(app, bearer(token));
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.json()).toEqual({
      application: {
        id: app.id,
        name: 'Shape app',
        variables: [
          { name: 'api_url', value: 'https://example.test' },
          { name: 'motd', value: 'hello' },
        ],
        files: [{ id: file.id, name: 'payload.bin', mime_type: 'application/x-custom', is_encrypted: true }],
      },
      user: {
        id: userId,
        username: 'alice',
        membership: { is_active: true, is_lifetime: false, active_until: h.clock.iso(60 * 60_000 - 1234), entitlements: [] },
      },
      server_time: h.clock.iso(),
    });
  });

  it('SPEC 4.5 rule 1: server_time is the server clock (ISO 8601 UTC with ms and Z), not the device clock', async () => {
    const app = await h.createApp({ anonymous_access_allowed: true });
    const first = await context(app);
    expect(first.json().server_time).toBe('2026-01-01T00:00:00.000Z');
    h.clock.advance(90_061_001);
    const second = await context(app);
    expect(second.json().server_time).toBe('2026-01-02T01:01:01.001Z');
  });

  it('SPEC 4.5 rule 1: remaining time = active_until − server_time', async () => {
    const app = await h.createApp();
    await h.activeUser(app, 'alice');
    h.clock.minutes(15);
    const body = (await context(app, legacy('alice'))).json();
    expect(Date.parse(body.user.membership.active_until) - Date.parse(body.server_time)).toBe(45 * 60_000);
  });

  it('SPEC 2.2: a lifetime membership has is_lifetime true and active_until null', async () => {
    const app = await h.createApp();
    await h.activeUser(app, 'alice', PASSWORD, undefined, { minutes: undefined, lifetime: true });
    const res = await context(app, legacy('alice'));
    expect(res.statusCode).toBe(200);
    expect(res.json().user.membership).toEqual({ is_active: true, is_lifetime: true, active_until: null, entitlements: [] });
  });

  it('SPEC 2.3: an app with no variables and no files answers empty arrays', async () => {
    const app = await h.createApp({ name: 'Empty', anonymous_access_allowed: true });
    const res = await context(app);
    expect(res.json().application).toEqual({ id: app.id, name: 'Empty', variables: [], files: [] });
  });
});

describe('GET /app_context, anonymous access', () => {
  it('SPEC 4.5: 401 for an anonymous caller when anonymous access is off, with the exact message', async () => {
    const app = await h.createApp();
    const res = await context(app);
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual({ detail: ANONYMOUS_DETAIL, code: 'anonymous_not_allowed' });
  });

  it('SPEC 4.5: user is null when anonymous access is allowed and no credentials are sent', async () => {
    const app = await h.createApp({ name: 'Open', anonymous_access_allowed: true });
    await setVariable(app, 'k', 'v');
    const res = await context(app);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      application: { id: app.id, name: 'Open', variables: [{ name: 'k', value: 'v' }], files: [] },
      user: null,
      server_time: h.clock.iso(),
    });
  });

  it('SPEC 4.5: with anonymous access allowed, credentials that are sent are still checked (401 invalid_credentials)', async () => {
    const app = await h.createApp({ anonymous_access_allowed: true });
    await h.activeUser(app, 'alice');
    expectError(await context(app, legacy('alice', 'wrong password!')), 401, 'invalid_credentials');
    expectError(await context(app, bearer('tg_sess_unknown')), 401, 'invalid_credentials');
  });

  it('SPEC 4.5: with anonymous access allowed, a valid user is returned (not null)', async () => {
    const app = await h.createApp({ anonymous_access_allowed: true });
    const userId = await h.activeUser(app, 'alice');
    const res = await context(app, legacy('alice'));
    expect(res.statusCode).toBe(200);
    expect(res.json().user.id).toBe(userId);
  });

  it('SPEC 4.5: with anonymous access allowed, an IP ban still applies to anonymous callers', async () => {
    const app = await h.createApp({ anonymous_access_allowed: true });
    await h.ban(app, 'ip', '203.0.113.9');
    expectError(await context(app, {}, '203.0.113.9'), 403, 'banned');
    expect((await context(app, {}, '203.0.113.10')).statusCode).toBe(200);
  });
});

describe('GET /app_context, the three authentication methods', () => {
  it('SPEC 5.2: Authorization: Bearer <session_token> authenticates', async () => {
    const app = await h.createApp();
    const userId = await h.activeUser(app, 'alice');
    const token = await h.login(app, 'alice');
    const res = await context(app, bearer(token));
    expect(res.statusCode).toBe(200);
    expect(res.json().user).toMatchObject({ id: userId, username: 'alice' });
  });

  it('SPEC 5.2: x-api-license-code authenticates the license-code account', async () => {
    const app = await h.createApp();
    const [code] = await h.licenses(app);
    const user = await licenseSignUp(app, code!);
    const res = await context(app, { 'x-api-license-code': code! });
    expect(res.statusCode).toBe(200);
    expect(res.json().user).toMatchObject({ id: user.id, username: user.username });
    expect(res.json().user.membership.is_active).toBe(true);
  });

  it('SPEC 5.2: x-api-username + x-api-password authenticate', async () => {
    const app = await h.createApp();
    const userId = await h.activeUser(app, 'alice');
    const res = await context(app, legacy('alice'));
    expect(res.statusCode).toBe(200);
    expect(res.json().user).toMatchObject({ id: userId, username: 'alice' });
  });

  it('SPEC 4.5: 401 invalid_credentials for an unknown or malformed Bearer token', async () => {
    const app = await h.createApp();
    await h.activeUser(app, 'alice');
    expectError(await context(app, bearer('tg_sess_' + 'x'.repeat(43))), 401, 'invalid_credentials');
    expectError(await context(app, bearer('nonsense')), 401, 'invalid_credentials');
    expectError(await context(app, { authorization: 'Basic YWxpY2U6cHc=' }), 401, 'invalid_credentials');
  });

  it('SPEC 4.5: 401 invalid_credentials for an unknown license code, an unused one, or one activated via /activate_license', async () => {
    const app = await h.createApp();
    const [unused, activated] = await h.licenses(app, { count: 2 });
    await h.signUp(app, 'alice');
    expect((await h.client(app, 'POST', '/activate_license', { code: activated, username: 'alice', password: PASSWORD })).statusCode).toBe(200);
    expectError(await context(app, { 'x-api-license-code': 'NO-SUCH-CODE' }), 401, 'invalid_credentials');
    expectError(await context(app, { 'x-api-license-code': unused! }), 401, 'invalid_credentials');
    expectError(await context(app, { 'x-api-license-code': activated! }), 401, 'invalid_credentials');
    const license = await h.tollgate.services.store.licenses.findByCode(app.id, unused!);
    expect(license?.usedAt).toBeNull();
  });

  it('SPEC 4.5: 401 invalid_credentials for a wrong password or an unknown username', async () => {
    const app = await h.createApp();
    await h.activeUser(app, 'alice');
    expectError(await context(app, legacy('alice', 'wrong password!')), 401, 'invalid_credentials');
    expectError(await context(app, legacy('nobody')), 401, 'invalid_credentials');
  });

  it('SPEC 5.2: x-api-username without x-api-password is refused (422), never anonymous', async () => {
    const app = await h.createApp({ anonymous_access_allowed: true });
    await h.activeUser(app, 'alice');
    const res = await context(app, { 'x-api-username': 'alice' });
    expect(res.statusCode).toBe(422);
    expect(errorOf(res).errors?.map((e) => e.field)).toContain('header.x-api-password');
  });

  it('DECISIONS: a Bearer token and legacy headers together: the token wins', async () => {
    const app = await h.createApp();
    const aliceId = await h.activeUser(app, 'alice');
    await h.activeUser(app, 'bob');
    const token = await h.login(app, 'alice');
    // Valid token, bad legacy credentials: the token authenticates.
    const res = await context(app, { ...bearer(token), ...legacy('bob', 'wrong password!') });
    expect(res.statusCode).toBe(200);
    expect(res.json().user.id).toBe(aliceId);
    // Valid legacy credentials of bob with alice's token: still alice.
    const both = await context(app, { ...bearer(token), ...legacy('bob') });
    expect(both.json().user.id).toBe(aliceId);
    // Bad token, good legacy credentials: the token decides, and it fails.
    expectError(await context(app, { ...bearer('tg_sess_bad'), ...legacy('bob') }), 401, 'invalid_credentials');
  });

  it('DECISIONS: a Bearer token and x-api-license-code together: the token wins', async () => {
    const app = await h.createApp();
    const aliceId = await h.activeUser(app, 'alice');
    const token = await h.login(app, 'alice');
    const [code] = await h.licenses(app);
    const codeUser = await licenseSignUp(app, code!);
    const res = await context(app, { ...bearer(token), 'x-api-license-code': code! });
    expect(res.statusCode).toBe(200);
    expect(res.json().user.id).toBe(aliceId);
    expect(res.json().user.id).not.toBe(codeUser.id);
    expectError(await context(app, { ...bearer('tg_sess_bad'), 'x-api-license-code': code! }), 401, 'invalid_credentials');
  });
});

describe('GET /app_context, membership and bans', () => {
  it('SPEC 4.5: 403 membership_inactive for a user without an active membership (legacy)', async () => {
    const app = await h.createApp();
    await h.signUp(app, 'alice');
    expectError(await context(app, legacy('alice')), 403, 'membership_inactive');
  });

  it('SPEC 4.5: 403 membership_inactive once a token holder\'s membership expires', async () => {
    const app = await h.createApp();
    await h.activeUser(app, 'alice');
    const token = await h.login(app, 'alice');
    h.clock.advance(60 * 60_000 - 1);
    expect((await context(app, bearer(token))).statusCode).toBe(200);
    h.clock.advance(1);
    expectError(await context(app, bearer(token)), 403, 'membership_inactive');
  });

  it('SPEC 4.5: 403 banned for a banned user (token and legacy)', async () => {
    const app = await h.createApp();
    const userId = await h.activeUser(app, 'alice');
    const token = await h.login(app, 'alice');
    await h.ban(app, 'user', userId);
    expectError(await context(app, bearer(token)), 403, 'banned');
    expectError(await context(app, legacy('alice')), 403, 'banned');
  });

  it('SPEC 4.5: 403 banned for a banned IP address', async () => {
    const app = await h.createApp();
    await h.activeUser(app, 'alice');
    const token = await h.login(app, 'alice');
    await h.ban(app, 'ip', '198.51.100.77');
    expectError(await context(app, bearer(token), '198.51.100.77'), 403, 'banned');
    expectError(await context(app, legacy('alice'), '198.51.100.77'), 403, 'banned');
    expect((await context(app, bearer(token), '198.51.100.78')).statusCode).toBe(200);
  });

  it('DECISIONS: 403 banned for a hardware ID sent in x-hardware-id, device authentication off', async () => {
    const app = await h.createApp();
    await h.activeUser(app, 'alice');
    const token = await h.login(app, 'alice');
    await h.ban(app, 'hardware_id', 'hw-bad');
    expectError(await context(app, { ...legacy('alice'), 'x-hardware-id': 'hw-bad' }), 403, 'banned');
    expectError(await context(app, { ...bearer(token), 'x-hardware-id': 'hw-bad' }), 403, 'banned');
    expect((await context(app, { ...legacy('alice'), 'x-hardware-id': 'hw-ok' })).statusCode).toBe(200);
  });

  it('DECISIONS: 403 banned for the hardware ID recorded in the session token (no x-hardware-id sent)', async () => {
    const app = await h.createApp({ device_auth_enabled: true });
    await h.activeUser(app, 'alice', PASSWORD, 'hw-1');
    const token = await h.login(app, 'alice', PASSWORD, 'hw-1');
    expect((await context(app, bearer(token))).statusCode).toBe(200);
    await h.ban(app, 'hardware_id', 'hw-1');
    expectError(await context(app, bearer(token)), 403, 'banned');
  });

  it('DECISIONS: the hardware ID recorded in a token counts even after device authentication is turned off', async () => {
    const app = await h.createApp();
    await h.activeUser(app, 'alice');
    const res = await h.client(app, 'POST', '/auth/login', { credentials: { username: 'alice', password: PASSWORD }, hardware_id: 'hw-rec' });
    expect(res.statusCode).toBe(200);
    const token = res.json().session_token as string;
    await h.ban(app, 'hardware_id', 'hw-rec');
    expectError(await context(app, bearer(token)), 403, 'banned');
  });

  it('SPEC 4.5: 403 banned for a license-code account whose license is banned', async () => {
    const app = await h.createApp();
    const [code] = await h.licenses(app);
    await licenseSignUp(app, code!);
    await h.ban(app, 'license', code!);
    expectError(await context(app, { 'x-api-license-code': code! }), 403, 'banned');
  });
});

describe('GET /app_context, device authentication', () => {
  it('DECISIONS: legacy username/password with device auth on needs x-hardware-id (401 device_required)', async () => {
    const app = await h.createApp({ device_auth_enabled: true });
    await h.activeUser(app, 'alice', PASSWORD, 'hw-1');
    expectError(await context(app, legacy('alice')), 401, 'device_required');
    expect((await context(app, { ...legacy('alice'), 'x-hardware-id': 'hw-1' })).statusCode).toBe(200);
  });

  it('DECISIONS: legacy license code with device auth on needs x-hardware-id (401 device_required)', async () => {
    const app = await h.createApp({ device_auth_enabled: true });
    const [code] = await h.licenses(app);
    await licenseSignUp(app, code!, 'hw-1');
    expectError(await context(app, { 'x-api-license-code': code! }), 401, 'device_required');
    expect((await context(app, { 'x-api-license-code': code!, 'x-hardware-id': 'hw-1' })).statusCode).toBe(200);
  });

  it('DECISIONS: legacy headers with an unknown device and max_devices_per_user 1 → 401 device_mismatch', async () => {
    const app = await h.createApp({ device_auth_enabled: true });
    const userId = await h.activeUser(app, 'alice', PASSWORD, 'hw-1');
    expectError(await context(app, { ...legacy('alice'), 'x-hardware-id': 'hw-2' }), 401, 'device_mismatch');
    const devices = await h.tollgate.services.store.devices.listFor(userId);
    expect(devices.map((d) => d.hardwareId)).toEqual(['hw-1']);
  });

  it('DECISIONS: Bearer with device auth on: x-hardware-id optional; if sent it must match (else 401 device_mismatch)', async () => {
    const app = await h.createApp({ device_auth_enabled: true });
    await h.activeUser(app, 'alice', PASSWORD, 'hw-1');
    const token = await h.login(app, 'alice', PASSWORD, 'hw-1');
    expect((await context(app, bearer(token))).statusCode).toBe(200);
    expect((await context(app, { ...bearer(token), 'x-hardware-id': 'hw-1' })).statusCode).toBe(200);
    expectError(await context(app, { ...bearer(token), 'x-hardware-id': 'hw-2' }), 401, 'device_mismatch');
  });

  it('DECISIONS: once device auth is turned on, a token that records no device cannot bypass it (401 device_required)', async () => {
    const app = await h.createApp();
    await h.activeUser(app, 'alice');
    const token = await h.login(app, 'alice');
    expect((await context(app, bearer(token))).statusCode).toBe(200);
    expect((await h.admin('PATCH', `/apps/${app.id}`, { device_auth_enabled: true })).statusCode).toBe(200);
    expectError(await context(app, bearer(token)), 401, 'device_required');
  });

  it('DECISIONS: with device auth off, a Bearer token records no device and any x-hardware-id passes', async () => {
    const app = await h.createApp();
    await h.activeUser(app, 'alice');
    const token = await h.login(app, 'alice');
    expect((await context(app, { ...bearer(token), 'x-hardware-id': 'anything' })).statusCode).toBe(200);
  });
});

describe('GET /app_context, changes are visible on the very next request', () => {
  it('SPEC 4.5: a changed, added or deleted variable is visible at once (cache invalidation)', async () => {
    const app = await h.createApp({ anonymous_access_allowed: true });
    await setVariable(app, 'v', 'one');
    expect((await context(app)).json().application.variables).toEqual([{ name: 'v', value: 'one' }]);
    await setVariable(app, 'v', 'two');
    expect((await context(app)).json().application.variables).toEqual([{ name: 'v', value: 'two' }]);
    await setVariable(app, 'w', 'three');
    expect((await context(app)).json().application.variables).toEqual([
      { name: 'v', value: 'two' },
      { name: 'w', value: 'three' },
    ]);
    expect((await h.admin('DELETE', `/apps/${app.id}/variables/v`)).statusCode).toBe(204);
    expect((await context(app)).json().application.variables).toEqual([{ name: 'w', value: 'three' }]);
  });

  it('SPEC 4.5: a new or deleted file is visible at once (cache invalidation)', async () => {
    const app = await h.createApp({ anonymous_access_allowed: true });
    expect((await context(app)).json().application.files).toEqual([]);
    const file = await upload(app, 'a.bin', Buffer.from('x'));
    expect((await context(app)).json().application.files).toEqual([{ id: file.id, name: 'a.bin', mime_type: 'application/octet-stream', is_encrypted: false }]);
    expect((await h.admin('DELETE', `/apps/${app.id}/files/${file.id}`)).statusCode).toBe(204);
    expect((await context(app)).json().application.files).toEqual([]);
  });

  it('SPEC 4.5: a new ban and its removal are visible at once', async () => {
    const app = await h.createApp();
    const userId = await h.activeUser(app, 'alice');
    const token = await h.login(app, 'alice');
    expect((await context(app, bearer(token))).statusCode).toBe(200);
    const banId = await h.ban(app, 'user', userId);
    expectError(await context(app, bearer(token)), 403, 'banned');
    expect((await h.admin('DELETE', `/apps/${app.id}/bans/${banId}`)).statusCode).toBe(204);
    expect((await context(app, bearer(token))).statusCode).toBe(200);
  });

  it('DECISIONS: an app setting change (anonymous access) applies on the next request', async () => {
    const app = await h.createApp();
    expectError(await context(app), 401, 'anonymous_not_allowed');
    const patch = await h.admin('PATCH', `/apps/${app.id}`, { anonymous_access_allowed: true });
    expect(patch.statusCode).toBe(200);
    const res = await context(app);
    expect(res.statusCode).toBe(200);
    expect(res.json().user).toBeNull();
  });

  it('DECISIONS: a variable of another app never shows', async () => {
    const appA = await h.createApp({ name: 'A', anonymous_access_allowed: true });
    const appB = await h.createApp({ name: 'B', anonymous_access_allowed: true });
    await setVariable(appA, 'secret', 'a-only');
    await upload(appA, 'a.bin', Buffer.from('a'));
    const b = (await context(appB)).json();
    expect(b.application).toEqual({ id: appB.id, name: 'B', variables: [], files: [] });
  });
});

describe('GET /app_context, application authentication', () => {
  it('SPEC 5.1: 401 invalid_app_credentials for missing or wrong x-api-key / x-api-secret', async () => {
    const app = await h.createApp({ anonymous_access_allowed: true });
    const cases: Record<string, string>[] = [
      {},
      { 'x-api-key': app.apiKey },
      { 'x-api-secret': app.apiSecret },
      { 'x-api-key': app.apiKey, 'x-api-secret': app.apiSecret + 'x' },
      { 'x-api-key': 'unknown-key', 'x-api-secret': app.apiSecret },
      { 'x-api-key': app.apiKey, 'x-api-secret': '' },
    ];
    // The right secret first: the one remembered as verified must not let a wrong one through.
    expect((await h.inject({ method: 'GET', url: '/app_context', headers: app.headers })).statusCode).toBe(200);
    for (const headers of cases) {
      const res = await h.inject({ method: 'GET', url: '/app_context', headers });
      expect(res.statusCode).toBe(401);
      expect(errorOf(res).code).toBe('invalid_app_credentials');
    }
  });

  it('DECISIONS: the secret of another app does not open this app', async () => {
    const appA = await h.createApp({ name: 'A', anonymous_access_allowed: true });
    const appB = await h.createApp({ name: 'B', anonymous_access_allowed: true });
    const res = await h.inject({ method: 'GET', url: '/app_context', headers: { 'x-api-key': appA.apiKey, 'x-api-secret': appB.apiSecret } });
    expectError(res, 401, 'invalid_app_credentials');
  });

  it('DECISIONS: app credentials are checked before anything else (malformed input, banned IP)', async () => {
    const app = await h.createApp();
    await h.ban(app, 'ip', '127.0.0.1');
    const bad = { 'x-api-key': app.apiKey, 'x-api-secret': 'wrong' };
    const malformed = await h.inject({ method: 'GET', url: '/app_context', headers: { ...bad, 'x-hardware-id': 'h'.repeat(300), 'x-api-username': 'alice' } });
    expectError(malformed, 401, 'invalid_app_credentials');
    const banned = await h.inject({ method: 'GET', url: '/app_context', headers: bad });
    expectError(banned, 401, 'invalid_app_credentials');
  });

  it('DECISIONS: a malformed x-hardware-id with valid app credentials is 422, not 500', async () => {
    const app = await h.createApp();
    await h.activeUser(app, 'alice');
    const res = await context(app, { ...legacy('alice'), 'x-hardware-id': 'h'.repeat(300) });
    expect(res.statusCode).toBe(422);
    expect(errorOf(res).errors?.map((e) => e.field)).toContain('header.x-hardware-id');
  });

  it('DECISIONS: a rotated secret takes effect on the next request', async () => {
    const app = await h.createApp({ anonymous_access_allowed: true });
    expect((await context(app)).statusCode).toBe(200);
    const rot = await h.admin('POST', `/apps/${app.id}/secret`);
    expect(rot.statusCode).toBe(200);
    const secret = rot.json().api_secret as string;
    expect(secret).toMatch(/^tg_sec_/);
    expectError(await context(app), 401, 'invalid_app_credentials');
    const res = await h.inject({ method: 'GET', url: '/app_context', headers: { 'x-api-key': app.apiKey, 'x-api-secret': secret } });
    expect(res.statusCode).toBe(200);
  });
});

describe('legacy username/password: verified-credential cache', () => {
  let h: Harness;
  beforeEach(async () => {
    h = await harness();
  });
  afterEach(async () => h.close());

  /** Counts argon2 verifications by wrapping the harness's hasher. */
  function countVerifications(): { count: number } {
    const counter = { count: 0 };
    const hasher = h.tollgate.services.hasher;
    const original = hasher.verify.bind(hasher);
    hasher.verify = async (hash, password) => {
      counter.count++;
      return original(hash, password);
    };
    return counter;
  }

  it('a repeated legacy password is verified with argon2 once, not on every request', async () => {
    const app = await h.createApp();
    await h.activeUser(app, 'cached');
    const verifications = countVerifications();
    const headers = { 'x-api-username': 'cached', 'x-api-password': PASSWORD };
    for (let i = 0; i < 5; i++) expect((await h.client(app, 'GET', '/app_context', undefined, headers)).statusCode).toBe(200);
    expect(verifications.count).toBe(1);
  });

  it('a wrong password is never answered from the cache', async () => {
    const app = await h.createApp();
    await h.activeUser(app, 'cached2');
    await h.client(app, 'GET', '/app_context', undefined, { 'x-api-username': 'cached2', 'x-api-password': PASSWORD });
    const res = await h.client(app, 'GET', '/app_context', undefined, { 'x-api-username': 'cached2', 'x-api-password': PASSWORD + 'x' });
    expect(res.statusCode).toBe(401);
  });

  it('a password change invalidates the cached verification at once', async () => {
    const app = await h.createApp();
    const id = await h.activeUser(app, 'cached3');
    const headers = { 'x-api-username': 'cached3', 'x-api-password': PASSWORD };
    expect((await h.client(app, 'GET', '/app_context', undefined, headers)).statusCode).toBe(200);
    expect((await h.admin('PATCH', `/apps/${app.id}/users/${id}`, { password: 'a brand new password' })).statusCode).toBe(200);
    expect((await h.client(app, 'GET', '/app_context', undefined, headers)).statusCode).toBe(401);
    expect((await h.client(app, 'GET', '/app_context', undefined, { 'x-api-username': 'cached3', 'x-api-password': 'a brand new password' })).statusCode).toBe(200);
  });

  it('a ban, a deletion and an expired membership apply at once despite a cached verification', async () => {
    const app = await h.createApp();
    const id = await h.activeUser(app, 'cached4');
    const headers = { 'x-api-username': 'cached4', 'x-api-password': PASSWORD };
    expect((await h.client(app, 'GET', '/app_context', undefined, headers)).statusCode).toBe(200);
    const ban = await h.ban(app, 'user', id);
    expect((await h.client(app, 'GET', '/app_context', undefined, headers)).statusCode).toBe(403);
    await h.admin('DELETE', `/apps/${app.id}/bans/${ban}`);
    h.clock.minutes(61);
    expect(errorOf(await h.client(app, 'GET', '/app_context', undefined, headers)).code).toBe('membership_inactive');
    await h.admin('DELETE', `/apps/${app.id}/users/${id}`);
    expect((await h.client(app, 'GET', '/app_context', undefined, headers)).statusCode).toBe(401);
  });
});
