import type { LightMyRequestResponse } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, errorOf, harness, PASSWORD, type Harness, type TestApp } from './helpers.js';

/** Application A and application B share one server and one database, and nothing else. */

let h: Harness;
let a: TestApp;
let b: TestApp;

beforeEach(async () => {
  h = await harness();
  a = await h.createApp({ name: 'App A' });
  b = await h.createApp({ name: 'App B' });
});
afterEach(async () => h.close());

function expectError(res: LightMyRequestResponse, status: number, code: string): void {
  expect(res.statusCode, res.body).toBe(status);
  expect(errorOf(res).code).toBe(code);
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

async function uploadFile(app: TestApp, name: string, content: Buffer): Promise<string> {
  const res = await h.inject({
    method: 'POST',
    url: `/admin/v1/apps/${app.id}/files?name=${encodeURIComponent(name)}`,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/octet-stream' },
    payload: content,
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().id;
}

async function licenseRow(app: TestApp, code: string): Promise<{ used_at: string | null; used_by_user_id: string | null }> {
  const res = await h.admin('GET', `/apps/${app.id}/licenses?q=${encodeURIComponent(code)}`);
  expect(res.statusCode, res.body).toBe(200);
  const items = res.json().items as { code: string; used_at: string | null; used_by_user_id: string | null }[];
  const row = items.find((l) => l.code === code);
  if (!row) throw new Error(`license ${code} not listed in app ${app.name}`);
  return row;
}

async function count(sql: string, params: (string | number)[] = []): Promise<number> {
  const [row] = await h.tollgate.services.store.db.all<{ n: number }>(sql, params);
  return Number(row?.n);
}

describe('sessions', () => {
  it("A's session token is 401 invalid_credentials on B's /app_context, and still valid on A", async () => {
    await h.activeUser(a, 'alice');
    const token = await h.login(a, 'alice');
    expectError(await h.client(b, 'GET', '/app_context', undefined, bearer(token)), 401, 'invalid_credentials');
    const onA = await h.client(a, 'GET', '/app_context', undefined, bearer(token));
    expect(onA.statusCode, onA.body).toBe(200);
    expect(onA.json().user.username).toBe('alice');
  });

  it("A's session token is 401 on B's file download, even for a file of B", async () => {
    await h.activeUser(a, 'alice');
    const token = await h.login(a, 'alice');
    const fileOfB = await uploadFile(b, 'b.bin', Buffer.from('content of B'));
    expectError(await h.client(b, 'GET', `/files/${fileOfB}/download`, undefined, bearer(token)), 401, 'invalid_credentials');
  });

  it("A's session token is 401 on B's /app_context even when B allows anonymous access", async () => {
    await h.admin('PATCH', `/apps/${b.id}`, { anonymous_access_allowed: true });
    await h.activeUser(a, 'alice');
    const token = await h.login(a, 'alice');
    expectError(await h.client(b, 'GET', '/app_context', undefined, bearer(token)), 401, 'invalid_credentials');
  });

  it("logging out A's token through B → 401, and the token still works on A", async () => {
    await h.activeUser(a, 'alice');
    const token = await h.login(a, 'alice');
    expectError(await h.client(b, 'POST', '/auth/logout', undefined, bearer(token)), 401, 'invalid_credentials');
    expect((await h.client(a, 'GET', '/app_context', undefined, bearer(token))).statusCode).toBe(200);
  });
});

describe('license codes', () => {
  it("A's code is invalid for B's /sign_up_with_license_code (422 invalid_license) and stays unused in A", async () => {
    const [code] = (await h.licenses(a)) as [string];
    const res = await h.client(b, 'POST', '/sign_up_with_license_code', { code });
    expectError(res, 422, 'invalid_license');
    expect(await count('SELECT COUNT(*) AS n FROM users WHERE app_id = ?', [b.id])).toBe(0);
    expect((await licenseRow(a, code)).used_at).toBeNull();
    // and A can still redeem it
    const onA = await h.client(a, 'POST', '/sign_up_with_license_code', { code });
    expect(onA.statusCode, onA.body).toBe(200);
  });

  it("A's code is invalid for B's /activate_license (401 invalid_license) and stays unused", async () => {
    const [code] = (await h.licenses(a)) as [string];
    await h.signUp(b, 'bob');
    const res = await h.client(b, 'POST', '/activate_license', { code, username: 'bob', password: PASSWORD });
    expectError(res, 401, 'invalid_license');
    expect((await licenseRow(a, code)).used_at).toBeNull();
    expect(await count('SELECT COUNT(*) AS n FROM activations')).toBe(0);
    const ctx = await h.client(b, 'GET', '/app_context', undefined, { 'x-api-username': 'bob', 'x-api-password': PASSWORD });
    expectError(ctx, 403, 'membership_inactive');
  });

  it("a code that signed a user up in A does not log in to B (login {code} → 401 invalid_credentials)", async () => {
    const [code] = (await h.licenses(a)) as [string];
    expect((await h.client(a, 'POST', '/sign_up_with_license_code', { code })).statusCode).toBe(200);
    const res = await h.client(b, 'POST', '/auth/login', { credentials: { code } });
    expectError(res, 401, 'invalid_credentials');
    expect(await count('SELECT COUNT(*) AS n FROM sessions')).toBe(0);
    const onA = await h.client(a, 'POST', '/auth/login', { credentials: { code } });
    expect(onA.statusCode, onA.body).toBe(200);
  });

  it("a code that signed a user up in A is 401 as B's legacy x-api-license-code header", async () => {
    const [code] = (await h.licenses(a)) as [string];
    expect((await h.client(a, 'POST', '/sign_up_with_license_code', { code })).statusCode).toBe(200);
    expectError(await h.client(b, 'GET', '/app_context', undefined, { 'x-api-license-code': code }), 401, 'invalid_credentials');
  });
});

describe('users', () => {
  it("a user of A cannot log in to B (401 invalid_credentials)", async () => {
    await h.activeUser(a, 'alice');
    const res = await h.client(b, 'POST', '/auth/login', { credentials: { username: 'alice', password: PASSWORD } });
    expectError(res, 401, 'invalid_credentials');
    expect(await count('SELECT COUNT(*) AS n FROM sessions')).toBe(0);
  });

  it("a user of A cannot use B's legacy username/password headers (401 invalid_credentials)", async () => {
    await h.activeUser(a, 'alice');
    const res = await h.client(b, 'GET', '/app_context', undefined, { 'x-api-username': 'alice', 'x-api-password': PASSWORD });
    expectError(res, 401, 'invalid_credentials');
  });

  it("a user of A cannot activate B's license (401 invalid_credentials) and B's license stays unused", async () => {
    await h.signUp(a, 'alice');
    const [codeOfB] = (await h.licenses(b)) as [string];
    const res = await h.client(b, 'POST', '/activate_license', { code: codeOfB, username: 'alice', password: PASSWORD });
    expectError(res, 401, 'invalid_credentials');
    expect((await licenseRow(b, codeOfB)).used_at).toBeNull();
    expect(await count('SELECT COUNT(*) AS n FROM activations')).toBe(0);
  });

  it('the same username can exist in both apps, as two users with their own passwords and memberships', async () => {
    const idA = await h.activeUser(a, 'alice', 'password of A');
    const idB = await h.signUp(b, 'Alice', 'password of B');
    expect(idB).not.toBe(idA);
    expect(await count('SELECT COUNT(*) AS n FROM users')).toBe(2);
    // each password works only in its own app
    expect((await h.client(a, 'POST', '/auth/login', { credentials: { username: 'alice', password: 'password of B' } })).statusCode).toBe(401);
    expect((await h.client(b, 'POST', '/auth/login', { credentials: { username: 'alice', password: 'password of A' } })).statusCode).toBe(401);
    expect((await h.client(a, 'POST', '/auth/login', { credentials: { username: 'alice', password: 'password of A' } })).statusCode).toBe(200);
    // B's alice has no membership: A's activation did not reach her
    expectError(await h.client(b, 'POST', '/auth/login', { credentials: { username: 'alice', password: 'password of B' } }), 403, 'membership_inactive');
    // and the name is still taken within each app
    expectError(await h.client(b, 'POST', '/sign_up', { username: 'ALICE', password: PASSWORD }), 422, 'username_taken');
  });
});

describe('files', () => {
  it("a file of A is 404 file_not_found through B, for an active user of B", async () => {
    const fileOfA = await uploadFile(a, 'a.bin', Buffer.from('secret content of A'));
    await h.activeUser(b, 'bob');
    const token = await h.login(b, 'bob');
    const res = await h.client(b, 'GET', `/files/${fileOfA}/download`, undefined, bearer(token));
    expectError(res, 404, 'file_not_found');
    expect(res.body).not.toContain('secret content of A');
    const ctx = await h.client(b, 'GET', '/app_context', undefined, bearer(token));
    expect(ctx.json().application.files).toEqual([]);
  });

  it("a file of A is 404 through B with anonymous access on B", async () => {
    const fileOfA = await uploadFile(a, 'a.bin', Buffer.from('secret content of A'));
    await h.admin('PATCH', `/apps/${b.id}`, { anonymous_access_allowed: true });
    expectError(await h.client(b, 'GET', `/files/${fileOfA}/download`), 404, 'file_not_found');
  });
});

describe('bans', () => {
  it('an IP ban in A does not affect B', async () => {
    await h.ban(a, 'ip', '127.0.0.1');
    expectError(await h.client(a, 'POST', '/sign_up', { username: 'carol', password: PASSWORD }), 403, 'banned');
    const res = await h.client(b, 'POST', '/sign_up', { username: 'carol', password: PASSWORD });
    expect(res.statusCode, res.body).toBe(200);
    await h.activeUser(b, 'bob');
    expect((await h.client(b, 'POST', '/auth/login', { credentials: { username: 'bob', password: PASSWORD } })).statusCode).toBe(200);
  });

  it('a CIDR ban of every address in A does not affect B', async () => {
    await h.ban(a, 'ip', '0.0.0.0/0');
    expectError(await h.client(a, 'POST', '/sign_up', { username: 'carol', password: PASSWORD }), 403, 'banned');
    expect((await h.client(b, 'POST', '/sign_up', { username: 'carol', password: PASSWORD })).statusCode).toBe(200);
  });

  it('a hardware_id ban in A does not affect B', async () => {
    await h.ban(a, 'hardware_id', 'HW-1');
    expectError(await h.client(a, 'POST', '/sign_up', { username: 'carol', password: PASSWORD, hardware_id: 'HW-1' }), 403, 'banned');
    const res = await h.client(b, 'POST', '/sign_up', { username: 'carol', password: PASSWORD, hardware_id: 'HW-1' });
    expect(res.statusCode, res.body).toBe(200);
  });

  it("a user ban in A blocks A's user and not B's user of the same name", async () => {
    const idA = await h.activeUser(a, 'alice');
    await h.activeUser(b, 'alice');
    await h.ban(a, 'user', idA);
    expectError(await h.client(a, 'POST', '/auth/login', { credentials: { username: 'alice', password: PASSWORD } }), 403, 'banned');
    expect((await h.client(b, 'POST', '/auth/login', { credentials: { username: 'alice', password: PASSWORD } })).statusCode).toBe(200);
  });

  it("a user ban in A cannot name a user of B (404) and B's user keeps access", async () => {
    const idB = await h.activeUser(b, 'bob');
    const res = await h.admin('POST', `/apps/${a.id}/bans`, { type: 'user', value: idB });
    expectError(res, 404, 'not_found');
    expect(await count('SELECT COUNT(*) AS n FROM bans')).toBe(0);
    expect((await h.client(b, 'POST', '/auth/login', { credentials: { username: 'bob', password: PASSWORD } })).statusCode).toBe(200);
  });

  it("a license ban in A cannot name B's code (404) and B's code keeps working", async () => {
    const [codeOfB] = (await h.licenses(b)) as [string];
    expectError(await h.admin('POST', `/apps/${a.id}/bans`, { type: 'license', value: codeOfB }), 404, 'not_found');
    const res = await h.client(b, 'POST', '/sign_up_with_license_code', { code: codeOfB });
    expect(res.statusCode, res.body).toBe(200);
    expect((await h.client(b, 'POST', '/auth/login', { credentials: { code: codeOfB } })).statusCode).toBe(200);
  });

  it("a license ban in A blocks A's code in A (control for the test above)", async () => {
    const [codeOfA] = (await h.licenses(a)) as [string];
    await h.ban(a, 'license', codeOfA);
    expectError(await h.client(a, 'POST', '/sign_up_with_license_code', { code: codeOfA }), 403, 'banned');
  });
});

describe('variables', () => {
  it("variables of A are not in B's /app_context", async () => {
    expect((await h.admin('PUT', `/apps/${a.id}/variables/motd`, { value: 'hello from A' })).statusCode).toBe(200);
    await h.admin('PATCH', `/apps/${a.id}`, { anonymous_access_allowed: true });
    await h.admin('PATCH', `/apps/${b.id}`, { anonymous_access_allowed: true });
    const onB = await h.client(b, 'GET', '/app_context');
    expect(onB.statusCode, onB.body).toBe(200);
    expect(onB.json().application).toEqual({ id: b.id, name: 'App B', variables: [], files: [] });
    expect(onB.body).not.toContain('hello from A');
    const onA = await h.client(a, 'GET', '/app_context');
    expect(onA.json().application.variables).toEqual([{ name: 'motd', value: 'hello from A' }]);
  });

  it('a variable of the same name in each app keeps its own value', async () => {
    await h.admin('PUT', `/apps/${a.id}/variables/motd`, { value: 'A' });
    await h.admin('PUT', `/apps/${b.id}/variables/motd`, { value: 'B' });
    await h.admin('PATCH', `/apps/${a.id}`, { anonymous_access_allowed: true });
    await h.admin('PATCH', `/apps/${b.id}`, { anonymous_access_allowed: true });
    expect((await h.client(a, 'GET', '/app_context')).json().application.variables).toEqual([{ name: 'motd', value: 'A' }]);
    expect((await h.client(b, 'GET', '/app_context')).json().application.variables).toEqual([{ name: 'motd', value: 'B' }]);
  });
});

describe("admin routes: A's objects through B's app id are not found", () => {
  it("a license of A: GET and DELETE through B → 404, and the license survives", async () => {
    const created = await h.admin('POST', `/apps/${a.id}/licenses`, { count: 1, minutes: 60 });
    const license = created.json().licenses[0] as { id: string; code: string };
    expectError(await h.admin('GET', `/apps/${b.id}/licenses/${license.id}`), 404, 'not_found');
    expectError(await h.admin('DELETE', `/apps/${b.id}/licenses/${license.id}`), 404, 'not_found');
    expect((await h.admin('GET', `/apps/${a.id}/licenses/${license.id}`)).statusCode).toBe(200);
    const listB = await h.admin('GET', `/apps/${b.id}/licenses`);
    expect(listB.json().items).toEqual([]);
    const searchB = await h.admin('GET', `/apps/${b.id}/licenses?q=${encodeURIComponent(license.code)}`);
    expect(searchB.json().items).toEqual([]);
  });

  it("a file of A: GET and DELETE through B → 404, and the file survives", async () => {
    const fileOfA = await uploadFile(a, 'a.bin', Buffer.from('content'));
    expectError(await h.admin('GET', `/apps/${b.id}/files/${fileOfA}`), 404, 'not_found');
    expectError(await h.admin('DELETE', `/apps/${b.id}/files/${fileOfA}`), 404, 'not_found');
    expect((await h.admin('GET', `/apps/${a.id}/files/${fileOfA}`)).statusCode).toBe(200);
    expect((await h.admin('GET', `/apps/${b.id}/files`)).json().items).toEqual([]);
    await h.admin('PATCH', `/apps/${a.id}`, { anonymous_access_allowed: true });
    const download = await h.client(a, 'GET', `/files/${fileOfA}/download`);
    expect(download.statusCode).toBe(200);
    expect(download.body).toBe('content');
  });

  it("a ban of A: DELETE through B → 404, B's list does not show it, and the ban still holds in A", async () => {
    const banId = await h.ban(a, 'ip', '127.0.0.1');
    expectError(await h.admin('DELETE', `/apps/${b.id}/bans/${banId}`), 404, 'not_found');
    expect((await h.admin('GET', `/apps/${b.id}/bans`)).json().items).toEqual([]);
    const listA = await h.admin('GET', `/apps/${a.id}/bans`);
    expect(listA.json().items.map((x: { id: string }) => x.id)).toEqual([banId]);
    expectError(await h.client(a, 'POST', '/sign_up', { username: 'carol', password: PASSWORD }), 403, 'banned');
  });

  it("a variable of A: GET and DELETE through B → 404, and the variable survives", async () => {
    await h.admin('PUT', `/apps/${a.id}/variables/motd`, { value: 'A' });
    expectError(await h.admin('GET', `/apps/${b.id}/variables/motd`), 404, 'not_found');
    expectError(await h.admin('DELETE', `/apps/${b.id}/variables/motd`), 404, 'not_found');
    expect((await h.admin('GET', `/apps/${b.id}/variables`)).json().items).toEqual([]);
    const onA = await h.admin('GET', `/apps/${a.id}/variables/motd`);
    expect(onA.statusCode).toBe(200);
    expect(onA.json().value).toBe('A');
  });

  it("deleting app B leaves every object of A in place", async () => {
    await h.activeUser(a, 'alice');
    await h.admin('PUT', `/apps/${a.id}/variables/motd`, { value: 'A' });
    await uploadFile(a, 'a.bin', Buffer.from('content'));
    await h.ban(a, 'hardware_id', 'HW-1');
    await h.activeUser(b, 'bob');
    const before = await count('SELECT COUNT(*) AS n FROM users WHERE app_id = ?', [a.id]);
    expect((await h.admin('DELETE', `/apps/${b.id}?confirm=${encodeURIComponent('App B')}`)).statusCode).toBe(204);
    expect(await count('SELECT COUNT(*) AS n FROM users WHERE app_id = ?', [a.id])).toBe(before);
    expect(await count('SELECT COUNT(*) AS n FROM users WHERE app_id = ?', [b.id])).toBe(0);
    const token = await h.login(a, 'alice');
    const ctx = await h.client(a, 'GET', '/app_context', undefined, bearer(token));
    expect(ctx.statusCode).toBe(200);
    expect(ctx.json().application.variables).toEqual([{ name: 'motd', value: 'A' }]);
    expect(ctx.json().application.files).toHaveLength(1);
  });
});
