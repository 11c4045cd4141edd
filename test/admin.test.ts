import { createHash } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, errorOf, harness, PASSWORD, type Harness, type TestApp } from './helpers.js';

/** The admin subset of DECISIONS.md ("Admin API (operators)"). */

let h: Harness;
beforeEach(async () => {
  h = await harness();
});
afterEach(async () => h.close());

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const SYMBOL = '[A-HJ-NP-Z2-9]';
const DEFAULT_CODE = new RegExp(`^${SYMBOL}{5}(-${SYMBOL}{5}){4}$`);
const ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';

function expectError(res: LightMyRequestResponse, status: number, code: string) {
  expect(res.statusCode, res.body).toBe(status);
  const body = errorOf(res);
  expect(body.code).toBe(code);
  if (status === 422) expect(body.errors?.length, res.body).toBeGreaterThan(0);
  return body;
}

/** A 422 whose errors name `field`. */
function expect422(res: LightMyRequestResponse, field: string) {
  const body = expectError(res, 422, 'validation_error');
  const fields = body.errors!.map((e) => e.field);
  expect(fields.some((f) => f === field || f.startsWith(`${field}.`)), `fields ${JSON.stringify(fields)} should name ${field}`).toBe(true);
}

async function count(table: string): Promise<number> {
  const [row] = await h.tollgate.services.store.db.all<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table}`);
  return Number(row?.n);
}

function upload(appId: string, query: string, payload: Buffer | string, contentType: string | null = 'application/octet-stream') {
  return h.inject({
    method: 'POST',
    url: `/admin/v1/apps/${appId}/files${query}`,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(contentType !== null && { 'content-type': contentType }) },
    payload,
  });
}

const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');

// ---------------------------------------------------------------------------------------------

describe('admin token', () => {
  let app: TestApp;
  beforeEach(async () => {
    app = await h.createApp({ name: 'Guarded' });
  });

  const routes = (): [string, string, unknown?][] => [
    ['GET', '/admin/v1/apps'],
    ['POST', '/admin/v1/apps', { name: 'Sneaky' }],
    ['GET', `/admin/v1/apps/${app.id}`],
    ['PATCH', `/admin/v1/apps/${app.id}`, { anonymous_access_allowed: true }],
    ['DELETE', `/admin/v1/apps/${app.id}?confirm=Guarded`],
    ['POST', `/admin/v1/apps/${app.id}/secret`],
    ['POST', `/admin/v1/apps/${app.id}/licenses`, { count: 1, minutes: 60 }],
    ['GET', `/admin/v1/apps/${app.id}/licenses`],
    ['PUT', `/admin/v1/apps/${app.id}/variables/motd`, { value: 'x' }],
    ['POST', `/admin/v1/apps/${app.id}/bans`, { type: 'ip', value: '10.0.0.1' }],
    ['GET', `/admin/v1/apps/${app.id}/bans`],
    ['GET', `/admin/v1/apps/${app.id}/files`],
  ];

  const attempts: [string, Record<string, string>][] = [
    ['no Authorization header', {}],
    ['a wrong token', { authorization: 'Bearer not-the-admin-token-0000' }],
    ['the token with one character changed', { authorization: `Bearer ${ADMIN_TOKEN.slice(0, -1)}X` }],
    ['the token as a prefix', { authorization: `Bearer ${ADMIN_TOKEN}extra` }],
    ['an empty Bearer', { authorization: 'Bearer ' }],
    ['the token without the Bearer scheme', { authorization: ADMIN_TOKEN }],
    ['the token under Basic', { authorization: `Basic ${ADMIN_TOKEN}` }],
    ["an app's api secret", {}],
  ];

  it.each(attempts)('%s → 401 invalid_admin_token on every route, nothing changes', async (label, headers) => {
    const effective = label === "an app's api secret" ? { authorization: `Bearer ${app.apiSecret}`, ...app.headers } : headers;
    const before = await Promise.all(['apps', 'licenses', 'variables', 'bans'].map(count));
    for (const [method, url, payload] of routes()) {
      const res = await h.inject({ method: method as 'GET', url, headers: effective, ...(payload !== undefined && { payload: payload as object }) });
      expect(res.statusCode, `${method} ${url}: ${res.body}`).toBe(401);
      expect(errorOf(res).code).toBe('invalid_admin_token');
    }
    expect(await Promise.all(['apps', 'licenses', 'variables', 'bans'].map(count))).toEqual(before);
    // the app's secret still works: no rotation happened
    expect((await h.client(app, 'POST', '/sign_up', { username: 'still', password: PASSWORD })).statusCode).toBe(200);
  });

  it('a file upload without the token → 401 and nothing stored', async () => {
    const res = await h.inject({ method: 'POST', url: `/admin/v1/apps/${app.id}/files?name=x.bin`, headers: { 'content-type': 'application/octet-stream' }, payload: Buffer.from('data') });
    expectError(res, 401, 'invalid_admin_token');
    expect(await count('files')).toBe(0);
    expect(await count('blobs')).toBe(0);
  });

  it('the Bearer scheme is case-insensitive', async () => {
    const res = await h.inject({ method: 'GET', url: '/admin/v1/apps', headers: { authorization: `bearer ${ADMIN_TOKEN}` } });
    expect(res.statusCode).toBe(200);
  });

  it('without TOLLGATE_ADMIN_TOKEN configured, no token is accepted', async () => {
    const bare = await harness({ env: { TOLLGATE_ADMIN_TOKEN: '' } });
    try {
      expectError(await bare.inject({ method: 'GET', url: '/admin/v1/apps', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }), 401, 'invalid_admin_token');
      expectError(await bare.inject({ method: 'GET', url: '/admin/v1/apps', headers: { authorization: 'Bearer ' } }), 401, 'invalid_admin_token');
    } finally {
      await bare.close();
    }
  });
});

// ---------------------------------------------------------------------------------------------

describe('apps', () => {
  it('POST /apps → 201 with id, name, api_key, api_secret (tg_sec_) and the default settings', async () => {
    const res = await h.admin('POST', '/apps', { name: 'My app' });
    expect(res.statusCode, res.body).toBe(201);
    const body = res.json();
    expect(body).toMatchObject({
      name: 'My app',
      device_auth_enabled: false,
      anonymous_access_allowed: false,
      max_devices_per_user: 1,
      session_ttl_seconds: 86400,
      password_min_length: 8,
      registration_open: true,
    });
    expect(body.id).toMatch(UUID);
    expect(typeof body.api_key).toBe('string');
    expect(body.api_key.length).toBeGreaterThan(0);
    expect(body.api_secret).toMatch(/^tg_sec_[A-Za-z0-9_-]{43,}$/);
    expect(body.api_secret).not.toBe(body.api_key);
    expect(body.created_at).toMatch(ISO);
    // the new credentials work on the client interface
    const app = { headers: { 'x-api-key': body.api_key, 'x-api-secret': body.api_secret } };
    const signUp = await h.inject({ method: 'POST', url: '/sign_up', headers: app.headers, payload: { username: 'first', password: PASSWORD } });
    expect(signUp.statusCode, signUp.body).toBe(200);
  });

  it('the secret is stored only as a digest', async () => {
    const res = await h.admin('POST', '/apps', { name: 'Digest' });
    const secret = res.json().api_secret as string;
    const rows = await h.tollgate.services.store.db.all<Record<string, unknown>>('SELECT * FROM apps');
    expect(JSON.stringify(rows)).not.toContain(secret);
  });

  it('two apps get different keys and secrets', async () => {
    const one = (await h.admin('POST', '/apps', { name: 'One' })).json();
    const two = (await h.admin('POST', '/apps', { name: 'Two' })).json();
    expect(one.api_key).not.toBe(two.api_key);
    expect(one.api_secret).not.toBe(two.api_secret);
    expect(one.id).not.toBe(two.id);
  });

  it('POST /apps with settings → they are applied', async () => {
    const res = await h.admin('POST', '/apps', {
      name: 'Custom', device_auth_enabled: true, anonymous_access_allowed: true, max_devices_per_user: 3,
      session_ttl_seconds: 3600, password_min_length: 12, registration_open: false,
    });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({
      device_auth_enabled: true, anonymous_access_allowed: true, max_devices_per_user: 3, session_ttl_seconds: 3600,
      password_min_length: 12, registration_open: false,
    });
  });

  it.each([
    ['no name', {}, 'body.name'],
    ['an empty name', { name: '' }, 'body.name'],
    ['a numeric name', { name: 42 }, 'body.name'],
    ['an unknown property', { name: 'X', colour: 'blue' }, 'body'],
    ['a negative max_devices_per_user', { name: 'X', max_devices_per_user: -1 }, 'body.max_devices_per_user'],
    ['max_devices_per_user 0', { name: 'X', max_devices_per_user: 0 }, 'body.max_devices_per_user'],
    ['a fractional max_devices_per_user', { name: 'X', max_devices_per_user: 1.5 }, 'body.max_devices_per_user'],
    ['a string for a boolean', { name: 'X', anonymous_access_allowed: 'true' }, 'body.anonymous_access_allowed'],
    ['a number for a boolean', { name: 'X', registration_open: 1 }, 'body.registration_open'],
    ['a string for an integer', { name: 'X', session_ttl_seconds: '3600' }, 'body.session_ttl_seconds'],
    ['a negative session_ttl_seconds', { name: 'X', session_ttl_seconds: -5 }, 'body.session_ttl_seconds'],
    ['password_min_length 0', { name: 'X', password_min_length: 0 }, 'body.password_min_length'],
  ])('POST /apps with %s → 422, no app created', async (_label, body, field) => {
    const res = await h.admin('POST', '/apps', body);
    expect422(res, field);
    expect(await count('apps')).toBe(0);
  });

  it('POST /apps with malformed JSON → 422', async () => {
    const res = await h.inject({ method: 'POST', url: '/admin/v1/apps', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, payload: '{"name":' });
    expectError(res, 422, 'validation_error');
    expect(await count('apps')).toBe(0);
  });

  it('GET /apps/:id and GET /apps never return api_secret', async () => {
    const app = await h.createApp({ name: 'Quiet' });
    const one = await h.admin('GET', `/apps/${app.id}`);
    expect(one.statusCode).toBe(200);
    expect(one.json()).not.toHaveProperty('api_secret');
    expect(one.body).not.toContain(app.apiSecret);
    expect(one.json()).toMatchObject({ id: app.id, name: 'Quiet', api_key: app.apiKey, max_devices_per_user: 1 });
    const list = await h.admin('GET', '/apps');
    expect(list.statusCode).toBe(200);
    for (const item of list.json().items) expect(item).not.toHaveProperty('api_secret');
    expect(list.body).not.toContain(app.apiSecret);
    const patched = await h.admin('PATCH', `/apps/${app.id}`, { name: 'Quieter' });
    expect(patched.json()).not.toHaveProperty('api_secret');
    expect(patched.body).not.toContain(app.apiSecret);
  });

  it('GET /apps/:id for an unknown id → 404 not_found; a non-UUID → 422', async () => {
    expectError(await h.admin('GET', '/apps/00000000-0000-4000-8000-000000000000'), 404, 'not_found');
    expect422(await h.admin('GET', '/apps/not-a-uuid'), 'params.app_id');
  });

  it('GET /apps/:id with a 300-character id → a 4xx in the error shape', async () => {
    const res = await h.admin('GET', `/apps/${'a'.repeat(300)}`);
    expect(res.statusCode).toBeGreaterThanOrEqual(400);
    expect(res.statusCode).toBeLessThan(500);
    expect(['not_found', 'validation_error']).toContain(errorOf(res).code);
  });

  it('PATCH changes settings and returns them', async () => {
    const app = await h.createApp();
    const res = await h.admin('PATCH', `/apps/${app.id}`, { name: 'Renamed', max_devices_per_user: 5, session_ttl_seconds: 120 });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ id: app.id, name: 'Renamed', max_devices_per_user: 5, session_ttl_seconds: 120, password_min_length: 8 });
    expect((await h.admin('GET', `/apps/${app.id}`)).json()).toMatchObject({ name: 'Renamed', max_devices_per_user: 5, session_ttl_seconds: 120 });
  });

  it('PATCH anonymous_access_allowed takes effect on /app_context at once (user null)', async () => {
    const app = await h.createApp();
    expectError(await h.client(app, 'GET', '/app_context'), 401, 'anonymous_not_allowed');
    expect((await h.admin('PATCH', `/apps/${app.id}`, { anonymous_access_allowed: true })).statusCode).toBe(200);
    const res = await h.client(app, 'GET', '/app_context');
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().user).toBeNull();
    expect((await h.admin('PATCH', `/apps/${app.id}`, { anonymous_access_allowed: false })).statusCode).toBe(200);
    expectError(await h.client(app, 'GET', '/app_context'), 401, 'anonymous_not_allowed');
  });

  it('PATCH registration_open false closes both sign-ups at once (403 registration_closed)', async () => {
    const app = await h.createApp();
    const [code] = (await h.licenses(app)) as [string];
    await h.admin('PATCH', `/apps/${app.id}`, { registration_open: false });
    expectError(await h.client(app, 'POST', '/sign_up', { username: 'late', password: PASSWORD }), 403, 'registration_closed');
    expectError(await h.client(app, 'POST', '/sign_up_with_license_code', { code }), 403, 'registration_closed');
    expect(await count('users')).toBe(0);
  });

  it('PATCH device_auth_enabled takes effect at once (sign-up without hardware_id → 422)', async () => {
    const app = await h.createApp();
    await h.admin('PATCH', `/apps/${app.id}`, { device_auth_enabled: true });
    expect422(await h.client(app, 'POST', '/sign_up', { username: 'nodevice', password: PASSWORD }), 'body.hardware_id');
  });

  it('PATCH password_min_length takes effect at once', async () => {
    const app = await h.createApp();
    await h.admin('PATCH', `/apps/${app.id}`, { password_min_length: 30 });
    expect422(await h.client(app, 'POST', '/sign_up', { username: 'shorty', password: PASSWORD }), 'body.password');
  });

  it.each([
    ['an unknown property', { colour: 'blue' }, 'body'],
    ['a negative max_devices_per_user', { max_devices_per_user: -1 }, 'body.max_devices_per_user'],
    ['a string for a boolean', { anonymous_access_allowed: 'yes' }, 'body.anonymous_access_allowed'],
    ['null for a boolean', { registration_open: null }, 'body.registration_open'],
    ['an api_secret', { api_secret: 'tg_sec_mine' }, 'body'],
    ['an empty name', { name: '' }, 'body.name'],
  ])('PATCH with %s → 422 and nothing changes', async (_label, body, field) => {
    const app = await h.createApp({ name: 'Stable' });
    const before = (await h.admin('GET', `/apps/${app.id}`)).json();
    expect422(await h.admin('PATCH', `/apps/${app.id}`, body), field);
    expect((await h.admin('GET', `/apps/${app.id}`)).json()).toEqual(before);
    expect((await h.client(app, 'POST', '/sign_up', { username: 'works', password: PASSWORD })).statusCode).toBe(200);
  });

  it('PATCH an unknown app → 404', async () => {
    expectError(await h.admin('PATCH', '/apps/00000000-0000-4000-8000-000000000000', { name: 'x' }), 404, 'not_found');
  });

  it('POST /apps/:id/secret rotates: the old secret → 401 at once, the new one works', async () => {
    const app = await h.createApp();
    expect((await h.client(app, 'POST', '/sign_up', { username: 'before', password: PASSWORD })).statusCode).toBe(200);
    const res = await h.admin('POST', `/apps/${app.id}/secret`);
    expect(res.statusCode, res.body).toBe(200);
    expect(Object.keys(res.json())).toEqual(['api_secret']);
    const secret = res.json().api_secret as string;
    expect(secret).toMatch(/^tg_sec_[A-Za-z0-9_-]{43,}$/);
    expect(secret).not.toBe(app.apiSecret);
    expectError(await h.client(app, 'POST', '/sign_up', { username: 'after', password: PASSWORD }), 401, 'invalid_app_credentials');
    expectError(await h.client(app, 'GET', '/app_context'), 401, 'invalid_app_credentials');
    const fresh = { ...app, apiSecret: secret, headers: { 'x-api-key': app.apiKey, 'x-api-secret': secret } };
    expect((await h.client(fresh, 'POST', '/sign_up', { username: 'after', password: PASSWORD })).statusCode).toBe(200);
    expect((await h.admin('GET', `/apps/${app.id}`)).json().api_key).toBe(app.apiKey);
  });

  it('rotating the secret of an unknown app → 404', async () => {
    expectError(await h.admin('POST', '/apps/00000000-0000-4000-8000-000000000000/secret'), 404, 'not_found');
  });

  it('GET /apps lists {items, next_cursor}; limit pages through every app exactly once', async () => {
    const empty = await h.admin('GET', '/apps');
    expect(empty.statusCode).toBe(200);
    expect(empty.json()).toEqual({ items: [], next_cursor: null });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await h.createApp({ name: `App ${i}` })).id);
    const all = (await h.admin('GET', '/apps')).json();
    expect(Object.keys(all).sort()).toEqual(['items', 'next_cursor']);
    expect(all.next_cursor).toBeNull();
    expect(all.items.map((x: { id: string }) => x.id).sort()).toEqual([...ids].sort());
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const q: string = cursor ? `&cursor=${encodeURIComponent(cursor)}` : '';
      const res = await h.admin('GET', `/apps?limit=2${q}`);
      expect(res.statusCode, res.body).toBe(200);
      const page = res.json() as { items: { id: string }[]; next_cursor: string | null };
      expect(page.items.length).toBeLessThanOrEqual(2);
      seen.push(...page.items.map((x) => x.id));
      cursor = page.next_cursor;
      pages++;
    } while (cursor && pages < 10);
    expect(pages).toBe(3);
    expect(seen.sort()).toEqual([...ids].sort());
  });

  it('DELETE /apps/:id needs ?confirm=<name>: 422 without or with a wrong name, 204 with it, then 404', async () => {
    const app = await h.createApp({ name: 'Doomed app' });
    await h.activeUser(app, 'alice');
    expect422(await h.admin('DELETE', `/apps/${app.id}`), 'querystring.confirm');
    expect422(await h.admin('DELETE', `/apps/${app.id}?confirm=Doomed`), 'querystring.confirm');
    expect422(await h.admin('DELETE', `/apps/${app.id}?confirm=doomed%20app`), 'querystring.confirm');
    expect((await h.admin('GET', `/apps/${app.id}`)).statusCode).toBe(200);
    expect(await count('users')).toBe(1);
    const res = await h.admin('DELETE', `/apps/${app.id}?confirm=${encodeURIComponent('Doomed app')}`);
    expect(res.statusCode, res.body).toBe(204);
    expect(res.body).toBe('');
    expectError(await h.admin('GET', `/apps/${app.id}`), 404, 'not_found');
    expectError(await h.admin('DELETE', `/apps/${app.id}?confirm=${encodeURIComponent('Doomed app')}`), 404, 'not_found');
    expectError(await h.client(app, 'GET', '/app_context'), 401, 'invalid_app_credentials');
    expect(await count('users')).toBe(0);
    expect(await count('licenses')).toBe(0);
    expect(await count('apps')).toBe(0);
  });
});

// ---------------------------------------------------------------------------------------------

describe('licenses', () => {
  let app: TestApp;
  beforeEach(async () => {
    app = await h.createApp();
  });
  const create = (body: Record<string, unknown>) => h.admin('POST', `/apps/${app.id}/licenses`, body);

  it('count 1 with minutes → 201 with one license in the documented shape', async () => {
    const res = await create({ count: 1, minutes: 90, note: 'promo' });
    expect(res.statusCode, res.body).toBe(201);
    const licenses = res.json().licenses;
    expect(licenses).toHaveLength(1);
    expect(licenses[0]).toMatchObject({ minutes: 90, grants_lifetime_access: false, revokes_lifetime_access: false, note: 'promo', used_at: null, used_by_user_id: null });
    expect(licenses[0].id).toMatch(UUID);
    expect(licenses[0].code).toMatch(DEFAULT_CODE);
  });

  it('lifetime: true → minutes null, grants_lifetime_access true', async () => {
    const res = await create({ count: 2, lifetime: true });
    expect(res.statusCode, res.body).toBe(201);
    for (const l of res.json().licenses) expect(l).toMatchObject({ minutes: null, grants_lifetime_access: true, revokes_lifetime_access: false });
  });

  it('revokes_lifetime_access is recorded', async () => {
    const res = await create({ count: 1, minutes: 10, revokes_lifetime_access: true });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().licenses[0]).toMatchObject({ minutes: 10, grants_lifetime_access: false, revokes_lifetime_access: true });
  });

  it.each([
    ['count 0', { count: 0, minutes: 60 }, 'body.count'],
    ['count 10001', { count: 10001, minutes: 60 }, 'body.count'],
    ['a negative count', { count: -1, minutes: 60 }, 'body.count'],
    ['a fractional count', { count: 1.5, minutes: 60 }, 'body.count'],
    ['a string count', { count: '5', minutes: 60 }, 'body.count'],
    ['no count', { minutes: 60 }, 'body.count'],
    ['minutes and lifetime', { count: 1, minutes: 60, lifetime: true }, 'body.minutes'],
    ['neither minutes nor lifetime', { count: 1 }, 'body.minutes'],
    ['minutes 0', { count: 1, minutes: 0 }, 'body.minutes'],
    ['negative minutes', { count: 1, minutes: -60 }, 'body.minutes'],
    ['a mask of 4 X (20 bits)', { count: 1, minutes: 60, mask: 'XXXX' }, 'body.mask'],
    ['a mask of 12 X (60 bits)', { count: 1, minutes: 60, mask: 'XXXXXXXXXXXX' }, 'body.mask'],
    ['a mask without X', { count: 1, minutes: 60, mask: 'PRO-LICENSE-CODE-FIXED' }, 'body.mask'],
    ['an empty mask', { count: 1, minutes: 60, mask: '' }, 'body.mask'],
    ['an unknown property', { count: 1, minutes: 60, colour: 'blue' }, 'body'],
    // The client refuses codes that are not printable (DECISIONS: 1–128 printable code points), so such codes could never be redeemed.
    ['a mask with a NUL literal', { count: 1, minutes: 60, mask: 'XXXXX-XXXXX-XXXXX\u0000' }, 'body.mask'],
    ['a mask with a control-character literal', { count: 1, minutes: 60, mask: 'XXXXX\u0007XXXXX-XXXXX' }, 'body.mask'],
    ['a mask with a zero-width space', { count: 1, minutes: 60, mask: 'XXXXX\u200bXXXXX-XXXXX' }, 'body.mask'],
    ['a mask longer than 128 code points', { count: 1, minutes: 60, mask: 'X'.repeat(129) }, 'body.mask'],
  ])('%s → 422, no license created', async (_label, body, field) => {
    expect422(await create(body), field);
    expect(await count('licenses')).toBe(0);
  });

  it('a mask of 13 X (65 bits) is accepted', async () => {
    const res = await create({ count: 3, minutes: 60, mask: 'XXXXXXXXXXXXX' });
    expect(res.statusCode, res.body).toBe(201);
    for (const l of res.json().licenses) expect(l.code).toMatch(new RegExp(`^${SYMBOL}{13}$`));
  });

  it('the default mask: XXXXX-XXXXX-XXXXX-XXXXX-XXXXX over ABCDEFGHJKLMNPQRSTUVWXYZ23456789 (no 0 O 1 I)', async () => {
    const res = await create({ count: 500, minutes: 60 });
    expect(res.statusCode).toBe(201);
    const codes = res.json().licenses.map((l: { code: string }) => l.code) as string[];
    const used = new Set<string>();
    for (const c of codes) {
      expect(c).toMatch(DEFAULT_CODE);
      for (const ch of c.replaceAll('-', '')) used.add(ch);
    }
    // DECISIONS' alphabet literal is authoritative (32 symbols = 5 bits; it does contain L)
    for (const ch of '01OI') expect(used.has(ch)).toBe(false);
    // 500 × 25 symbols drawn uniformly: every symbol of the alphabet shows up
    expect([...used].sort().join('')).toBe([...ALPHABET].sort().join(''));
  });

  it("a custom mask 'PRO-XXXXXXXXXXXXXXXX' keeps the literal prefix", async () => {
    const res = await create({ count: 20, minutes: 60, mask: 'PRO-XXXXXXXXXXXXXXXX' });
    expect(res.statusCode, res.body).toBe(201);
    for (const l of res.json().licenses) expect(l.code).toMatch(new RegExp(`^PRO-${SYMBOL}{16}$`));
  });

  it('codes are unique across a batch of 2000', async () => {
    const res = await create({ count: 2000, minutes: 60 });
    expect(res.statusCode).toBe(201);
    const codes = res.json().licenses.map((l: { code: string }) => l.code) as string[];
    expect(codes).toHaveLength(2000);
    expect(new Set(codes).size).toBe(2000);
    expect(new Set(res.json().licenses.map((l: { id: string }) => l.id)).size).toBe(2000);
    expect(await count('licenses')).toBe(2000);
  });

  it('count 10000 (the maximum) → 201 with 10000 licenses', async () => {
    const res = await create({ count: 10000, minutes: 60 });
    expect(res.statusCode).toBe(201);
    expect(res.json().licenses).toHaveLength(10000);
    expect(await count('licenses')).toBe(10000);
  });

  it('a created code works on the client interface', async () => {
    const code = (await create({ count: 1, minutes: 60 })).json().licenses[0].code as string;
    const res = await h.client(app, 'POST', '/sign_up_with_license_code', { code });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().membership.is_active).toBe(true);
  });

  it('list: used=true / used=false filter', async () => {
    const created = (await create({ count: 3, minutes: 60 })).json().licenses as { id: string; code: string }[];
    const redeemed = created[1]!;
    const userId = await h.signUp(app, 'alice');
    expect((await h.client(app, 'POST', '/activate_license', { code: redeemed.code, username: 'alice', password: PASSWORD })).statusCode).toBe(200);

    const used = (await h.admin('GET', `/apps/${app.id}/licenses?used=true`)).json();
    expect(used.items.map((l: { id: string }) => l.id)).toEqual([redeemed.id]);
    expect(used.items[0].used_at).toMatch(ISO);
    expect(used.items[0].used_by_user_id).toBe(userId);
    const unused = (await h.admin('GET', `/apps/${app.id}/licenses?used=false`)).json();
    expect(unused.items.map((l: { id: string }) => l.id).sort()).toEqual([created[0]!.id, created[2]!.id].sort());
    for (const l of unused.items) expect(l.used_at).toBeNull();
    expect((await h.admin('GET', `/apps/${app.id}/licenses`)).json().items).toHaveLength(3);
    expect422(await h.admin('GET', `/apps/${app.id}/licenses?used=maybe`), 'querystring.used');
  });

  it('list: q= searches codes and notes', async () => {
    const alpha = (await create({ count: 2, minutes: 60, note: 'batch alpha' })).json().licenses as { id: string; code: string }[];
    const beta = (await create({ count: 3, minutes: 60, note: 'batch beta' })).json().licenses as { id: string; code: string }[];
    const byNote = (await h.admin('GET', `/apps/${app.id}/licenses?q=alpha`)).json();
    expect(byNote.items.map((l: { id: string }) => l.id).sort()).toEqual(alpha.map((l) => l.id).sort());
    const target = beta[2]!;
    const byCode = (await h.admin('GET', `/apps/${app.id}/licenses?q=${encodeURIComponent(target.code.slice(6, 17))}`)).json();
    expect(byCode.items.map((l: { id: string }) => l.id)).toEqual([target.id]);
    const none = (await h.admin('GET', `/apps/${app.id}/licenses?q=${encodeURIComponent('%')}`)).json();
    expect(none.items).toEqual([]);
    const wildcard = (await h.admin('GET', `/apps/${app.id}/licenses?q=_`)).json();
    expect(wildcard.items).toEqual([]);
  });

  it('cursor pagination with limit=50 visits each of 120 licenses exactly once', async () => {
    const created = (await create({ count: 120, minutes: 60 })).json().licenses as { id: string }[];
    const seen: string[] = [];
    const sizes: number[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const q: string = cursor ? `&cursor=${encodeURIComponent(cursor)}` : '';
      const res = await h.admin('GET', `/apps/${app.id}/licenses?limit=50${q}`);
      expect(res.statusCode, res.body).toBe(200);
      const page = res.json() as { items: { id: string }[]; next_cursor: string | null };
      sizes.push(page.items.length);
      seen.push(...page.items.map((l) => l.id));
      cursor = page.next_cursor;
      pages++;
    } while (cursor && pages < 10);
    expect(sizes).toEqual([50, 50, 20]);
    expect(seen).toHaveLength(120);
    expect(new Set(seen).size).toBe(120);
    expect([...seen].sort()).toEqual(created.map((l) => l.id).sort());
  });

  it('pagination is stable when licenses are added between pages', async () => {
    const first = (await create({ count: 60, minutes: 60 })).json().licenses as { id: string }[];
    const page1 = (await h.admin('GET', `/apps/${app.id}/licenses?limit=50`)).json();
    h.clock.minutes(1);
    await create({ count: 5, minutes: 60 });
    const page2 = (await h.admin('GET', `/apps/${app.id}/licenses?limit=50&cursor=${encodeURIComponent(page1.next_cursor)}`)).json();
    const seen = [...page1.items, ...page2.items].map((l: { id: string }) => l.id);
    expect(new Set(seen).size).toBe(seen.length);
    for (const l of first) expect(seen).toContain(l.id);
  });

  it('DELETE an unused license → 204 and it is gone; DELETE a used one → 409; unknown → 404', async () => {
    const [unused, used] = (await create({ count: 2, minutes: 60 })).json().licenses as [{ id: string; code: string }, { id: string; code: string }];
    const res = await h.admin('DELETE', `/apps/${app.id}/licenses/${unused.id}`);
    expect(res.statusCode, res.body).toBe(204);
    expectError(await h.admin('GET', `/apps/${app.id}/licenses/${unused.id}`), 404, 'not_found');
    expectError(await h.admin('DELETE', `/apps/${app.id}/licenses/${unused.id}`), 404, 'not_found');
    const gone = await h.client(app, 'POST', '/sign_up_with_license_code', { code: unused.code });
    expect(gone.statusCode).toBe(422);
    expect(errorOf(gone).code).toBe('invalid_license');

    expect((await h.client(app, 'POST', '/sign_up_with_license_code', { code: used.code })).statusCode).toBe(200);
    expectError(await h.admin('DELETE', `/apps/${app.id}/licenses/${used.id}`), 409, 'conflict');
    expect((await h.admin('GET', `/apps/${app.id}/licenses/${used.id}`)).statusCode).toBe(200);
    expect(await count('licenses')).toBe(1);
  });

  it('licenses of an unknown app → 404', async () => {
    expectError(await h.admin('POST', '/apps/00000000-0000-4000-8000-000000000000/licenses', { count: 1, minutes: 60 }), 404, 'not_found');
    expectError(await h.admin('GET', '/apps/00000000-0000-4000-8000-000000000000/licenses'), 404, 'not_found');
  });
});

// ---------------------------------------------------------------------------------------------

describe('variables', () => {
  let app: TestApp;
  beforeEach(async () => {
    app = await h.createApp();
  });

  it('PUT → 200 {name, value, updated_at}; GET returns it; PUT again replaces it', async () => {
    const put = await h.admin('PUT', `/apps/${app.id}/variables/motd`, { value: 'hello' });
    expect(put.statusCode, put.body).toBe(200);
    expect(put.json()).toMatchObject({ name: 'motd', value: 'hello' });
    expect(put.json().updated_at).toMatch(ISO);
    expect((await h.admin('GET', `/apps/${app.id}/variables/motd`)).json()).toMatchObject({ name: 'motd', value: 'hello' });
    h.clock.minutes(1);
    const again = await h.admin('PUT', `/apps/${app.id}/variables/motd`, { value: 'bye' });
    expect(again.json()).toMatchObject({ name: 'motd', value: 'bye', updated_at: h.clock.iso() });
    const list = (await h.admin('GET', `/apps/${app.id}/variables`)).json();
    expect(list.next_cursor).toBeNull();
    expect(list.items.map((v: { name: string; value: string }) => [v.name, v.value])).toEqual([['motd', 'bye']]);
  });

  it('a variable reaches /app_context at once, and leaves it on DELETE', async () => {
    await h.admin('PATCH', `/apps/${app.id}`, { anonymous_access_allowed: true });
    expect((await h.client(app, 'GET', '/app_context')).json().application.variables).toEqual([]);
    await h.admin('PUT', `/apps/${app.id}/variables/motd`, { value: 'hello' });
    expect((await h.client(app, 'GET', '/app_context')).json().application.variables).toEqual([{ name: 'motd', value: 'hello' }]);
    await h.admin('PUT', `/apps/${app.id}/variables/motd`, { value: 'changed' });
    expect((await h.client(app, 'GET', '/app_context')).json().application.variables).toEqual([{ name: 'motd', value: 'changed' }]);
    await h.admin('DELETE', `/apps/${app.id}/variables/motd`);
    expect((await h.client(app, 'GET', '/app_context')).json().application.variables).toEqual([]);
  });

  it('DELETE → 204; then GET → 404 and DELETE → 404', async () => {
    await h.admin('PUT', `/apps/${app.id}/variables/motd`, { value: 'hello' });
    const del = await h.admin('DELETE', `/apps/${app.id}/variables/motd`);
    expect(del.statusCode, del.body).toBe(204);
    expectError(await h.admin('GET', `/apps/${app.id}/variables/motd`), 404, 'not_found');
    expectError(await h.admin('DELETE', `/apps/${app.id}/variables/motd`), 404, 'not_found');
    expect(await count('variables')).toBe(0);
  });

  it('a name with spaces and unicode round-trips through the path', async () => {
    const name = 'release notes ✓';
    expect((await h.admin('PUT', `/apps/${app.id}/variables/${encodeURIComponent(name)}`, { value: 'v' })).statusCode).toBe(200);
    expect((await h.admin('GET', `/apps/${app.id}/variables/${encodeURIComponent(name)}`)).json().name).toBe(name);
  });

  it.each([
    ['no value', {}, 'body.value'],
    ['a numeric value', { value: 5 }, 'body.value'],
    ['a null value', { value: null }, 'body.value'],
    ['an unknown property', { value: 'x', extra: 1 }, 'body'],
  ])('PUT with %s → 422, nothing stored', async (_label, body, field) => {
    expect422(await h.admin('PUT', `/apps/${app.id}/variables/motd`, body), field);
    expect(await count('variables')).toBe(0);
  });

  it('an empty value is a value', async () => {
    const res = await h.admin('PUT', `/apps/${app.id}/variables/empty`, { value: '' });
    expect(res.statusCode, res.body).toBe(200);
    expect((await h.admin('GET', `/apps/${app.id}/variables/empty`)).json().value).toBe('');
  });

  it('GET of an unknown variable → 404', async () => {
    expectError(await h.admin('GET', `/apps/${app.id}/variables/nothing`), 404, 'not_found');
  });
});

// ---------------------------------------------------------------------------------------------

describe('files', () => {
  let app: TestApp;
  let token: string;
  beforeEach(async () => {
    app = await h.createApp();
    await h.activeUser(app, 'alice');
    token = await h.login(app, 'alice');
  });
  const download = (id: string) => h.client(app, 'GET', `/files/${id}/download`, undefined, { authorization: `Bearer ${token}` });

  it('upload with application/octet-stream → 201 with size and sha256; the content is stored byte for byte', async () => {
    const content = Buffer.concat([Buffer.from([0x00, 0xff, 0xfe, 0x80, 0x0a, 0x0d]), Buffer.from('binary ✓ data'), Buffer.alloc(1000, 0xc3)]);
    const res = await upload(app.id, '?name=app.bin&mime_type=application/x-custom&is_encrypted=true', content);
    expect(res.statusCode, res.body).toBe(201);
    const file = res.json();
    expect(file).toMatchObject({ name: 'app.bin', mime_type: 'application/x-custom', is_encrypted: true, size: content.length, sha256: sha256(content) });
    expect(file.id).toMatch(UUID);
    const got = await download(file.id);
    expect(got.statusCode).toBe(200);
    expect(got.rawPayload.equals(content)).toBe(true);
    expect(got.headers.etag).toBe(`"${sha256(content)}"`);
    expect(got.headers['content-length']).toBe(String(content.length));
  });

  it.each([
    ['valid JSON', '{"a": 1,   "b": [true, null]}\n'],
    ['invalid JSON', '{"a":'],
    ['a __proto__ key', '{"__proto__": {"x": 1}}'],
  ])('upload with content-type application/json carrying %s: stored byte for byte, not parsed', async (_label, text) => {
    const res = await upload(app.id, '?name=data.json&mime_type=application/json', text, 'application/json');
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({ size: Buffer.byteLength(text), sha256: sha256(text), mime_type: 'application/json' });
    const got = await download(res.json().id);
    expect(got.statusCode).toBe(200);
    expect(got.rawPayload.toString('utf8')).toBe(text);
  });

  it('upload with no content-type is stored as sent', async () => {
    const res = await upload(app.id, '?name=plain.txt', 'just text', null);
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({ size: 9, sha256: sha256('just text'), mime_type: 'application/octet-stream', is_encrypted: false });
  });

  it('an upload over 64 KiB (larger than a client body) and over one storage chunk is stored intact', async () => {
    const content = Buffer.alloc(600 * 1024);
    for (let i = 0; i < content.length; i++) content[i] = (i * 31 + 7) & 0xff;
    const res = await upload(app.id, '?name=big.bin', content);
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({ size: content.length, sha256: sha256(content) });
    const got = await download(res.json().id);
    expect(got.rawPayload.equals(content)).toBe(true);
  });

  it('an empty upload → 201 with size 0', async () => {
    const res = await upload(app.id, '?name=empty.bin', Buffer.alloc(0));
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({ size: 0, sha256: sha256('') });
  });

  it.each([
    ['no ?name', '', 'querystring.name'],
    ['an empty name', '?name=', 'querystring.name'],
    ['a name with a path separator', `?name=${encodeURIComponent('../etc/passwd')}`, 'querystring.name'],
    ['a bad mime_type', '?name=x.bin&mime_type=not%20a%20type', 'querystring.mime_type'],
    ['a bad is_encrypted', '?name=x.bin&is_encrypted=maybe', 'querystring.is_encrypted'],
  ])('upload with %s → 422, nothing stored', async (_label, query, field) => {
    expect422(await upload(app.id, query, Buffer.from('data')), field);
    expect(await count('files')).toBe(0);
    expect(await count('blob_chunks')).toBe(0);
  });

  it('list, get (size and sha256), delete → 204, then download → 404 and get → 404', async () => {
    const one = (await upload(app.id, '?name=one.bin', 'first file')).json();
    const two = (await upload(app.id, '?name=two.bin', 'second file!')).json();
    const list = (await h.admin('GET', `/apps/${app.id}/files`)).json();
    expect(list.next_cursor).toBeNull();
    expect(list.items.map((f: { id: string }) => f.id).sort()).toEqual([one.id, two.id].sort());
    const got = await h.admin('GET', `/apps/${app.id}/files/${two.id}`);
    expect(got.statusCode).toBe(200);
    expect(got.json()).toMatchObject({ id: two.id, name: 'two.bin', size: 12, sha256: sha256('second file!') });

    const ctx = (await h.client(app, 'GET', '/app_context', undefined, { authorization: `Bearer ${token}` })).json();
    expect(ctx.application.files).toContainEqual({ id: two.id, name: 'two.bin', mime_type: 'application/octet-stream', is_encrypted: false });

    const del = await h.admin('DELETE', `/apps/${app.id}/files/${two.id}`);
    expect(del.statusCode, del.body).toBe(204);
    expectError(await download(two.id), 404, 'file_not_found');
    expectError(await h.admin('GET', `/apps/${app.id}/files/${two.id}`), 404, 'not_found');
    expectError(await h.admin('DELETE', `/apps/${app.id}/files/${two.id}`), 404, 'not_found');
    const after = (await h.client(app, 'GET', '/app_context', undefined, { authorization: `Bearer ${token}` })).json();
    expect(after.application.files.map((f: { id: string }) => f.id)).toEqual([one.id]);
    expect((await download(one.id)).body).toBe('first file');
  });

  it('uploading to an unknown app → 404, nothing stored', async () => {
    expectError(await upload('00000000-0000-4000-8000-000000000000', '?name=x.bin', 'data'), 404, 'not_found');
    expect(await count('blobs')).toBe(0);
  });
});

// ---------------------------------------------------------------------------------------------

describe('bans', () => {
  let app: TestApp;
  beforeEach(async () => {
    app = await h.createApp();
  });

  it('create → 201 {id, type, value, reason, expires_at, created_at}; list shows it; delete → 204 restores access', async () => {
    const res = await h.admin('POST', `/apps/${app.id}/bans`, { type: 'ip', value: '127.0.0.1', reason: 'abuse' });
    expect(res.statusCode, res.body).toBe(201);
    const ban = res.json();
    expect(ban).toMatchObject({ type: 'ip', value: '127.0.0.1', reason: 'abuse', expires_at: null });
    expect(ban.id).toMatch(UUID);
    expect(ban.created_at).toMatch(ISO);
    expectError(await h.client(app, 'POST', '/sign_up', { username: 'carol', password: PASSWORD }), 403, 'banned');

    const list = (await h.admin('GET', `/apps/${app.id}/bans`)).json();
    expect(list).toEqual({ items: [ban], next_cursor: null });

    const del = await h.admin('DELETE', `/apps/${app.id}/bans/${ban.id}`);
    expect(del.statusCode, del.body).toBe(204);
    expect((await h.admin('GET', `/apps/${app.id}/bans`)).json().items).toEqual([]);
    expect((await h.client(app, 'POST', '/sign_up', { username: 'carol', password: PASSWORD })).statusCode).toBe(200);
    expectError(await h.admin('DELETE', `/apps/${app.id}/bans/${ban.id}`), 404, 'not_found');
  });

  it('every ban type can be created', async () => {
    const userId = await h.signUp(app, 'alice');
    const { code } = await h.license(app);
    for (const [type, value] of [['ip', '10.0.0.0/8'], ['hardware_id', 'HW-1'], ['license', code], ['user', userId]] as const) {
      const res = await h.admin('POST', `/apps/${app.id}/bans`, { type, value });
      expect(res.statusCode, `${type}: ${res.body}`).toBe(201);
      expect(res.json().type).toBe(type);
    }
    expect((await h.admin('GET', `/apps/${app.id}/bans`)).json().items).toHaveLength(4);
  });

  it('an expires_at is returned as an ISO timestamp', async () => {
    const res = await h.admin('POST', `/apps/${app.id}/bans`, { type: 'hardware_id', value: 'HW-2', expires_at: '2030-01-01T00:00:00Z' });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().expires_at).toBe('2030-01-01T00:00:00.000Z');
  });

  it('DELETE of an unknown ban id → 404; a non-UUID ban id → 422', async () => {
    expectError(await h.admin('DELETE', `/apps/${app.id}/bans/00000000-0000-4000-8000-000000000000`), 404, 'not_found');
    expect422(await h.admin('DELETE', `/apps/${app.id}/bans/nope`), 'params.ban_id');
  });

  it('a user ban naming an unknown user → 404', async () => {
    expectError(await h.admin('POST', `/apps/${app.id}/bans`, { type: 'user', value: '00000000-0000-4000-8000-000000000000' }), 404, 'not_found');
    expect(await count('bans')).toBe(0);
  });

  it.each([
    ['an unknown type', { type: 'email', value: 'x@example.com' }, 'body.type'],
    ['no value', { type: 'ip' }, 'body.value'],
    ['a bad IP', { type: 'ip', value: '999.1.1.1' }, 'body.value'],
    ['a bad CIDR prefix', { type: 'ip', value: '10.0.0.0/33' }, 'body.value'],
    ['a user that is not a UUID', { type: 'user', value: 'alice' }, 'body.value'],
    ['a hardware_id with a NUL', { type: 'hardware_id', value: 'HW\u0000' }, 'body.value'],
    ['a bad expires_at', { type: 'ip', value: '10.0.0.1', expires_at: 'tomorrow' }, 'body.expires_at'],
    ['an unknown property', { type: 'ip', value: '10.0.0.1', colour: 'blue' }, 'body'],
  ])('create with %s → 422, nothing stored', async (_label, body, field) => {
    expect422(await h.admin('POST', `/apps/${app.id}/bans`, body), field);
    expect(await count('bans')).toBe(0);
  });

  it('bans of an unknown app → 404', async () => {
    expectError(await h.admin('GET', '/apps/00000000-0000-4000-8000-000000000000/bans'), 404, 'not_found');
    expectError(await h.admin('POST', '/apps/00000000-0000-4000-8000-000000000000/bans', { type: 'ip', value: '10.0.0.1' }), 404, 'not_found');
  });
});

// ---------------------------------------------------------------------------------------------

describe('list parameters', () => {
  let app: TestApp;
  beforeEach(async () => {
    app = await h.createApp();
  });
  const lists = () => ['/apps', `/apps/${app.id}/licenses`, `/apps/${app.id}/bans`];

  it.each([['0'], ['501'], ['-1'], ['abc'], ['1.5']])('limit=%s → 422 naming querystring.limit on every list', async (limit) => {
    for (const url of lists()) expect422(await h.admin('GET', `${url}?limit=${limit}`), 'querystring.limit');
  });

  it('limit=1 and limit=500 are accepted', async () => {
    for (const url of lists()) {
      expect((await h.admin('GET', `${url}?limit=1`)).statusCode).toBe(200);
      expect((await h.admin('GET', `${url}?limit=500`)).statusCode).toBe(200);
    }
  });

  it('the default limit is 50', async () => {
    await h.licenses(app, { count: 60 });
    const page = (await h.admin('GET', `/apps/${app.id}/licenses`)).json();
    expect(page.items).toHaveLength(50);
    expect(typeof page.next_cursor).toBe('string');
  });

  it.each([['garbage'], ['%%%'], ['not-a-cursor!!'], [Buffer.from('no separator here').toString('base64url')], [Buffer.from('abc:def').toString('base64url')]])(
    'a garbage cursor %s → 422 naming querystring.cursor on every list',
    async (cursor) => {
      for (const url of lists()) expect422(await h.admin('GET', `${url}?cursor=${encodeURIComponent(cursor)}`), 'querystring.cursor');
    },
  );

  it('an over-long cursor → 422', async () => {
    for (const url of lists()) expect422(await h.admin('GET', `${url}?cursor=${'A'.repeat(1000)}`), 'querystring.cursor');
  });
});
