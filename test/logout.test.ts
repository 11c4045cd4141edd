import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { harness, type Harness, type TestApp, expectError } from './helpers.js';

let h: Harness;
beforeEach(async () => {
  h = await harness();
});
afterEach(async () => h.close());

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

function logout(app: TestApp, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> {
  return h.inject({ method: 'POST', url: '/auth/logout', headers: { ...app.headers, ...headers } });
}

const live = (userId: string) => h.tollgate.services.store.sessions.listLive(userId, h.clock.ms);

describe('POST /auth/logout', () => {
  it('DECISIONS: logout revokes the token → 204 with an empty body; the token then gets 401 on /app_context', async () => {
    const app = await h.createApp();
    const userId = await h.activeUser(app, 'alice');
    const token = await h.login(app, 'alice');
    expect((await h.client(app, 'GET', '/app_context', undefined, bearer(token))).statusCode).toBe(200);

    const res = await logout(app, bearer(token));
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    expect(await live(userId)).toHaveLength(0);

    expectError(await h.client(app, 'GET', '/app_context', undefined, bearer(token)), 401, 'invalid_credentials');
  });

  it('DECISIONS: logout revokes only the presented token; other sessions of the user live on', async () => {
    const app = await h.createApp();
    const userId = await h.activeUser(app, 'alice');
    const first = await h.login(app, 'alice');
    const second = await h.login(app, 'alice');
    expect((await logout(app, bearer(first))).statusCode).toBe(204);
    expect(await live(userId)).toHaveLength(1);
    expect((await h.client(app, 'GET', '/app_context', undefined, bearer(second))).statusCode).toBe(200);
    expectError(await h.client(app, 'GET', '/app_context', undefined, bearer(first)), 401, 'invalid_credentials');
  });

  it('DECISIONS: logging out twice: the second call is 401 (the token is unknown)', async () => {
    const app = await h.createApp();
    await h.activeUser(app, 'alice');
    const token = await h.login(app, 'alice');
    expect((await logout(app, bearer(token))).statusCode).toBe(204);
    expectError(await logout(app, bearer(token)), 401, 'invalid_credentials');
  });

  it('DECISIONS: an unknown token → 401 invalid_credentials', async () => {
    const app = await h.createApp();
    const userId = await h.activeUser(app, 'alice');
    await h.login(app, 'alice');
    expectError(await logout(app, bearer('tg_sess_' + 'A'.repeat(43))), 401, 'invalid_credentials');
    expectError(await logout(app, bearer('garbage')), 401, 'invalid_credentials');
    expect(await live(userId)).toHaveLength(1);
  });

  it('DECISIONS: an expired token → 401 session_expired', async () => {
    const app = await h.createApp({ session_ttl_seconds: 60 });
    await h.activeUser(app, 'alice');
    const token = await h.login(app, 'alice');
    h.clock.advance(60_000);
    expectError(await logout(app, bearer(token)), 401, 'session_expired');
  });

  it('DECISIONS: a token of another app → 401 and the session stays valid in its own app', async () => {
    const appA = await h.createApp({ name: 'A' });
    const appB = await h.createApp({ name: 'B' });
    const userId = await h.activeUser(appA, 'alice');
    const token = await h.login(appA, 'alice');
    expectError(await logout(appB, bearer(token)), 401, 'invalid_credentials');
    expect(await live(userId)).toHaveLength(1);
    expect((await h.client(appA, 'GET', '/app_context', undefined, bearer(token))).statusCode).toBe(200);
  });

  it('DECISIONS: no ban check on logout: a banned user (and banned IP) can still log out', async () => {
    const app = await h.createApp();
    const userId = await h.activeUser(app, 'alice');
    const token = await h.login(app, 'alice');
    await h.ban(app, 'user', userId);
    await h.ban(app, 'ip', '127.0.0.1');
    expectError(await h.client(app, 'GET', '/app_context', undefined, bearer(token)), 403, 'banned');
    const res = await logout(app, bearer(token));
    expect(res.statusCode).toBe(204);
    expect(await live(userId)).toHaveLength(0);
  });

  it('DECISIONS: no membership check on logout: an expired membership can still log out', async () => {
    const app = await h.createApp();
    const userId = await h.activeUser(app, 'alice'); // 60-minute membership
    const token = await h.login(app, 'alice');
    h.clock.minutes(61);
    expectError(await h.client(app, 'GET', '/app_context', undefined, bearer(token)), 403, 'membership_inactive');
    expect((await logout(app, bearer(token))).statusCode).toBe(204);
    expect(await live(userId)).toHaveLength(0);
  });

  it('DECISIONS: a missing Bearer token → 401', async () => {
    const app = await h.createApp();
    const res = await logout(app);
    expectError(res, 401, 'invalid_credentials');
  });

  it('DECISIONS: a non-Bearer Authorization header → 401', async () => {
    const app = await h.createApp();
    await h.activeUser(app, 'alice');
    const token = await h.login(app, 'alice');
    expectError(await logout(app, { authorization: `Basic ${token}` }), 401, 'invalid_credentials');
  });

  it('DECISIONS: logout needs the application headers first (401 invalid_app_credentials)', async () => {
    const app = await h.createApp();
    const userId = await h.activeUser(app, 'alice');
    const token = await h.login(app, 'alice');
    const res = await h.inject({ method: 'POST', url: '/auth/logout', headers: { 'x-api-key': app.apiKey, ...bearer(token) } });
    expectError(res, 401, 'invalid_app_credentials');
    expect(await live(userId)).toHaveLength(1);
  });
});
