import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { errorOf, harness, PASSWORD, type Harness, type TestApp } from './helpers.js';

/**
 * The hot paths read users, sessions and name/code lookups from caches. Every
 * write that changes what they answer must take effect on the very next
 * request (DECISIONS: a ban, logout or expiry takes effect at once on one node).
 * Each test first warms the cache with a successful request.
 */
describe('hot-path caches stay correct', () => {
  let h: Harness;
  let app: TestApp;
  beforeEach(async () => {
    h = await harness();
    app = await h.createApp();
  });
  afterEach(async () => h.close());

  const ctx = (headers: Record<string, string>) => h.client(app, 'GET', '/app_context', undefined, headers);
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

  it('a membership set to the past by the operator: 403 on the next Bearer request', async () => {
    const id = await h.activeUser(app, 'member1');
    const token = await h.login(app, 'member1');
    expect((await ctx(bearer(token))).statusCode).toBe(200);
    expect((await h.admin('PATCH', `/apps/${app.id}/users/${id}`, { active_until: '2020-01-01T00:00:00Z' })).statusCode).toBe(200);
    expect(errorOf(await ctx(bearer(token))).code).toBe('membership_inactive');
  });

  it('an activation shows its new active_until on the next Bearer request', async () => {
    await h.activeUser(app, 'member2');
    const token = await h.login(app, 'member2');
    const before = (await ctx(bearer(token))).json().user.membership.active_until;
    const [code] = await h.licenses(app, { minutes: 30 });
    expect((await h.client(app, 'POST', '/activate_license', { code, username: 'member2', password: PASSWORD })).statusCode).toBe(200);
    const after = (await ctx(bearer(token))).json().user.membership.active_until;
    expect(Date.parse(after) - Date.parse(before)).toBe(30 * 60_000);
  });

  it('a password change, a device reset, a session revocation and a deletion each end a cached session at once', async () => {
    const ids = await Promise.all(['pw1x', 'pw2x', 'pw3x', 'pw4x'].map((name) => h.activeUser(app, name)));
    const tokens = await Promise.all(['pw1x', 'pw2x', 'pw3x', 'pw4x'].map((name) => h.login(app, name)));
    for (const token of tokens) expect((await ctx(bearer(token))).statusCode).toBe(200);
    await h.admin('PATCH', `/apps/${app.id}/users/${ids[0]}`, { password: 'another password' });
    await h.admin('POST', `/apps/${app.id}/users/${ids[1]}/reset-devices`);
    await h.admin('POST', `/apps/${app.id}/users/${ids[2]}/revoke-sessions`);
    await h.admin('DELETE', `/apps/${app.id}/users/${ids[3]}`);
    for (const token of tokens) expect((await ctx(bearer(token))).statusCode).toBe(401);
  });

  it('a cached session expires exactly at its expiry', async () => {
    await h.admin('PATCH', `/apps/${app.id}`, { session_ttl_seconds: 60 });
    await h.activeUser(app, 'session1');
    const token = await h.login(app, 'session1');
    expect((await ctx(bearer(token))).statusCode).toBe(200);
    h.clock.advance(59_999);
    expect((await ctx(bearer(token))).statusCode).toBe(200);
    h.clock.advance(1);
    expect(errorOf(await ctx(bearer(token))).code).toBe('session_expired');
  });

  it('a deleted user’s username, taken again by a new user, authenticates the new user (legacy headers)', async () => {
    const oldId = await h.activeUser(app, 'reused');
    const legacy = { 'x-api-username': 'reused', 'x-api-password': PASSWORD };
    expect((await ctx(legacy)).json().user.id).toBe(oldId);
    await h.admin('DELETE', `/apps/${app.id}/users/${oldId}`);
    expect((await ctx(legacy)).statusCode).toBe(401);
    const newId = await h.activeUser(app, 'reused', 'a different password');
    expect((await ctx({ 'x-api-username': 'reused', 'x-api-password': 'a different password' })).json().user.id).toBe(newId);
    expect((await ctx(legacy)).statusCode).toBe(401);
  });

  it('a license-code account deleted by the operator: its code stops authenticating at once', async () => {
    const [code] = await h.licenses(app);
    const signed = await h.client(app, 'POST', '/sign_up_with_license_code', { code });
    expect((await ctx({ 'x-api-license-code': code! })).statusCode).toBe(200);
    await h.admin('DELETE', `/apps/${app.id}/users/${signed.json().id}`);
    expect(errorOf(await ctx({ 'x-api-license-code': code! })).code).toBe('invalid_credentials');
  });

  it('logout ends the cached session at once', async () => {
    await h.activeUser(app, 'logout1');
    const token = await h.login(app, 'logout1');
    expect((await ctx(bearer(token))).statusCode).toBe(200);
    expect((await h.client(app, 'POST', '/auth/logout', undefined, bearer(token))).statusCode).toBe(204);
    expect((await ctx(bearer(token))).statusCode).toBe(401);
  });

  it('a deleted app’s key stops working at once, and its sessions with it', async () => {
    await h.activeUser(app, 'gone');
    const token = await h.login(app, 'gone');
    expect((await ctx(bearer(token))).statusCode).toBe(200);
    expect((await h.admin('DELETE', `/apps/${app.id}?confirm=${encodeURIComponent(app.name)}`)).statusCode).toBe(204);
    expect(errorOf(await ctx(bearer(token))).code).toBe('invalid_app_credentials');
  });

  it('a license ban reaches a license-only account through its cached user', async () => {
    const [code] = await h.licenses(app);
    const signed = await h.client(app, 'POST', '/sign_up_with_license_code', { code });
    const login = await h.client(app, 'POST', '/auth/login', { credentials: { code } });
    const token = login.json().session_token as string;
    expect((await ctx(bearer(token))).statusCode).toBe(200);
    expect(signed.statusCode).toBe(200);
    await h.ban(app, 'license', code!);
    expect(errorOf(await ctx(bearer(token))).code).toBe('banned');
  });
});
