import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, expectError, harness, PASSWORD, type Harness, type TestApp } from './helpers.js';

/**
 * Issue 30: text that is not Unicode text (invalid UTF-8 bytes, or a JSON
 * escape of a lone surrogate) is refused with a 422 naming the field, in
 * every text field of both APIs, and nothing is stored. It used to be stored
 * with U+FFFD in place of the bytes (`zz\uFFFD\uFFFD\uFFFDzz`).
 */

/** `{"<field>": "zz<ED A0 80>zz", ...rest}` as raw bytes: a surrogate encoded as UTF-8, which UTF-8 forbids. */
function withBadBytes(field: string, rest: Record<string, unknown> = {}): Buffer {
  const [before, after] = JSON.stringify({ ...rest, [field]: 'zz@@zz' }).split('@@') as [string, string];
  return Buffer.concat([Buffer.from(before), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from(after)]);
}

/** The same field carrying `\ud800`, a lone surrogate, as a JSON escape. */
function withLoneSurrogate(field: string, rest: Record<string, unknown> = {}): Buffer {
  return Buffer.from(JSON.stringify({ ...rest, [field]: 'zz@@zz' }).replace('@@', '\\ud800'));
}

const BAD_BODIES = [
  ['invalid UTF-8 bytes', withBadBytes],
  ['a lone surrogate escape', withLoneSurrogate],
] as const;

/** Latin-1 view of bytes, as Node hands a header over. */
const BAD_HEADER = Buffer.from([0x7a, 0x7a, 0xed, 0xa0, 0x80, 0x7a, 0x7a]).toString('latin1');

describe('text that is not UTF-8', () => {
  let h: Harness;
  let app: TestApp;
  beforeEach(async () => {
    h = await harness();
    app = await h.createApp();
  });
  afterEach(async () => h.close());

  const json = { 'content-type': 'application/json' };
  const client = (url: string, payload: Buffer, headers: Record<string, string> = {}) =>
    h.inject({ method: 'POST', url, payload, headers: { ...app.headers, ...json, ...headers } });
  const admin = (method: 'POST' | 'PATCH' | 'PUT', url: string, payload: Buffer) =>
    h.inject({ method, url: `/admin/v1${url}`, payload, headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...json } });

  it.each(BAD_BODIES)('sign_up refuses a username with %s, and stores nothing', async (_, body) => {
    const res = await client('/sign_up', body('username', { password: PASSWORD }));
    const err = expectError(res, 422, 'validation_error');
    expect(err.errors).toEqual([{ field: 'body.username', message: expect.stringContaining('UTF-8') }]);
    const users = await h.admin('GET', `/apps/${app.id}/users`);
    expect(users.json().items).toEqual([]);
  });

  it.each(BAD_BODIES)('a nested field with %s is named by its path (login credentials.password)', async (_, body) => {
    await h.signUp(app, 'alice');
    const raw = body('password').toString('latin1').replace(/^\{/, '{"credentials":{"username":"alice",').replace(/\}$/, '}}');
    const res = await client('/auth/login', Buffer.from(raw, 'latin1'));
    expect(expectError(res, 422, 'validation_error').errors![0]!.field).toBe('body.credentials.password');
  });

  it('a hardware id header that is not UTF-8 is refused on every user route (fast path included), and no device is stored', async () => {
    app = await h.createApp({ device_auth_enabled: true });
    const id = await h.activeUser(app, 'alice', PASSWORD, 'hw-1');
    const headers = { ...app.headers, 'x-api-username': 'alice', 'x-api-password': PASSWORD, 'x-hardware-id': BAD_HEADER };
    const res = await h.inject({ method: 'GET', url: '/app_context', headers });
    expect(expectError(res, 422, 'validation_error').errors).toEqual([{ field: 'header.x-hardware-id', message: expect.stringContaining('UTF-8') }]);
    const user = await h.admin('GET', `/apps/${app.id}/users/${id}`);
    expect(user.json().devices.map((d: { hardware_id: string }) => d.hardware_id)).toEqual(['hw-1']);
    const lease = await h.inject({ method: 'POST', url: '/lease', headers: { ...headers, 'tollgate-nonce': 'AAAAAAAAAAAAAAAAAAAAAA' } });
    expect(lease.statusCode).toBe(422);
  });

  it.each(['x-api-username', 'x-api-password', 'x-api-license-code'])('a %s header that is not UTF-8 is a 422 naming it', async (name) => {
    const res = await h.inject({ method: 'GET', url: '/app_context', headers: { ...app.headers, [name]: BAD_HEADER } });
    expect(expectError(res, 422, 'validation_error').errors![0]!.field).toBe(`header.${name}`);
  });

  it('valid non-ASCII text still passes, escaped or not (a surrogate pair is one character)', async () => {
    const res = await client('/sign_up', Buffer.from('{"username":"Zoë\\ud83d\\ude00🎉","password":"' + PASSWORD + '"}'));
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().username).toBe('Zoë😀🎉');
    const login = await h.inject({ method: 'GET', url: '/app_context', headers: { ...app.headers, 'x-api-username': Buffer.from('Zoë😀🎉').toString('latin1'), 'x-api-password': PASSWORD, 'x-hardware-id': 'hw-1' } });
    expect(login.statusCode, login.body).toBe(403); // credentials accepted; no membership yet
    expect(login.json().code).toBe('membership_inactive');
  });

  it.each(BAD_BODIES)('the admin API refuses %s in every kind of text field, and stores nothing', async (_, body) => {
    const cases: [string, 'POST' | 'PATCH' | 'PUT', string, Buffer, string][] = [
      ['app name', 'POST', '/apps', body('name'), 'body.name'],
      ['app rename', 'PATCH', `/apps/${app.id}`, body('name'), 'body.name'],
      ['license note', 'POST', `/apps/${app.id}/licenses`, body('note', { count: 1, minutes: 60 }), 'body.note'],
      ['ban reason', 'POST', `/apps/${app.id}/bans`, body('reason', { type: 'hardware_id', value: 'hw' }), 'body.reason'],
      ['ban value', 'POST', `/apps/${app.id}/bans`, body('value', { type: 'hardware_id' }), 'body.value'],
      ['variable value', 'PUT', `/apps/${app.id}/variables/motd`, body('value'), 'body.value'],
    ];
    for (const [what, method, url, payload, field] of cases) {
      const res = await admin(method, url, payload);
      expect(res.statusCode, `${what}: ${res.body}`).toBe(422);
      expect(res.json().errors[0].field, what).toBe(field);
    }
    const apps = await h.admin('GET', '/apps');
    expect(apps.json().items.map((a: { name: string }) => a.name)).toEqual([app.name]);
    expect((await h.admin('GET', `/apps/${app.id}/licenses`)).json().items).toEqual([]);
    expect((await h.admin('GET', `/apps/${app.id}/bans`)).json().items).toEqual([]);
  });

  it('the admin API still refuses prototype keys as before and takes valid text', async () => {
    const proto = await admin('POST', '/apps', Buffer.from('{"name":"x","__proto__":{"a":1}}'));
    expect(proto.statusCode).toBeGreaterThanOrEqual(400);
    expect(proto.statusCode).toBeLessThan(500);
    const ok = await admin('POST', '/apps', Buffer.from('{"name":"Café \\ud83d\\ude00"}'));
    expect(ok.statusCode, ok.body).toBe(201);
    expect(ok.json().name).toBe('Café 😀');
  });
});
