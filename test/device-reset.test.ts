import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { expectError, harness, PASSWORD, type Harness, type TestApp } from './helpers.js';

/** POST /devices/reset (issue 25): the user frees their own devices, within the app's cooldown and yearly cap. */
let h: Harness;
beforeEach(async () => {
  h = await harness();
});
afterEach(async () => h.close());

const legacy = (username: string, hw?: string) => ({ 'x-api-username': username, 'x-api-password': PASSWORD, ...(hw !== undefined && { 'x-hardware-id': hw }) });
const reset = (app: TestApp, headers: Record<string, string>, remoteAddress?: string) =>
  h.inject({ method: 'POST', url: '/devices/reset', headers: { ...app.headers, ...headers }, ...(remoteAddress !== undefined && { remoteAddress }) });
const DAY = 86_400_000;
const LIFETIME = { minutes: undefined, lifetime: true };

async function lockedApp(settings: Record<string, unknown> = {}): Promise<TestApp> {
  const app = await h.createApp({ device_auth_enabled: true, max_devices_per_user: 1 });
  if (Object.keys(settings).length > 0) {
    const res = await h.admin('PATCH', `/apps/${app.id}`, settings);
    expect(res.statusCode, res.body).toBe(200);
  }
  return app;
}

describe('POST /devices/reset', () => {
  it('a user locked to an old device resets from a new one: devices forgotten, sessions ended, audited as user:<id>; then 429 inside the cooldown', async () => {
    const app = await lockedApp();
    const id = await h.activeUser(app, 'alice', PASSWORD, 'old-laptop', LIFETIME);
    const token = await h.login(app, 'alice', PASSWORD, 'old-laptop');
    expectError(await h.client(app, 'GET', '/app_context', undefined, legacy('alice', 'new-laptop')), 401, 'device_mismatch');

    const res = await reset(app, legacy('alice', 'new-laptop'));
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ reset_at: h.clock.iso(), next_reset_at: h.clock.iso(7 * DAY), devices_removed: 1, server_time: h.clock.iso() });
    // The session is ended; the new device now takes the free slot.
    expectError(await h.client(app, 'GET', '/app_context', undefined, { authorization: `Bearer ${token}` }), 401, 'invalid_credentials');
    expect((await h.client(app, 'GET', '/app_context', undefined, legacy('alice', 'new-laptop'))).statusCode).toBe(200);
    const audit = (await h.admin('GET', `/audit?app_id=${app.id}`)).json().items;
    expect(audit[0]).toMatchObject({ actor: `user:${id}`, action: 'user.reset_devices', target_id: id });

    h.clock.advance(DAY);
    const again = await reset(app, legacy('alice', 'new-laptop'));
    const body = expectError(again, 429, 'reset_cooldown') as Record<string, unknown>;
    expect(body).toMatchObject({ retry_after: 6 * 86_400, last_reset_at: h.clock.iso(-DAY) });
    expect(again.headers['retry-after']).toBe(String(6 * 86_400));
    h.clock.advance(6 * DAY);
    expect((await reset(app, legacy('alice', 'new-laptop'))).statusCode).toBe(200);
    const detail = (await h.admin('GET', `/apps/${app.id}/users/${id}`)).json();
    expect(detail.self_resets).toEqual({ count: 2, last_at: h.clock.iso() });
  });

  it('by a Bearer session: the reset ends that session too; a lapsed membership cannot reset', async () => {
    const app = await lockedApp();
    await h.activeUser(app, 'alice', PASSWORD, 'hw-1', LIFETIME);
    const token = await h.login(app, 'alice', PASSWORD, 'hw-1');
    const res = await reset(app, { authorization: `Bearer ${token}` });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().devices_removed).toBe(1);
    expectError(await reset(app, { authorization: `Bearer ${token}` }), 401, 'invalid_credentials');
    await h.signUp(app, 'lapsed', PASSWORD, 'hw-2');
    expectError(await reset(app, legacy('lapsed')), 403, 'membership_inactive');
  });

  it('403 reset_disabled when the cooldown is 0, before any credential is tried', async () => {
    const app = await lockedApp({ device_reset_cooldown_seconds: 0 });
    await h.activeUser(app, 'alice', PASSWORD, 'hw-1');
    expectError(await reset(app, legacy('alice', 'hw-1')), 403, 'reset_disabled');
    expectError(await reset(app, { 'x-api-username': 'alice', 'x-api-password': 'wrong password' }), 403, 'reset_disabled');
  });

  it('device_resets_per_year: the cap counts the last 365 days, answered as reset_cooldown with when the oldest leaves the window', async () => {
    const app = await lockedApp({ device_reset_cooldown_seconds: 86_400, device_resets_per_year: 2 });
    await h.activeUser(app, 'alice', PASSWORD, 'hw-1', LIFETIME);
    expect((await reset(app, legacy('alice'))).statusCode).toBe(200);
    const start = h.clock.ms;
    h.clock.advance(10 * DAY);
    const second = await reset(app, legacy('alice'));
    expect(second.json().next_reset_at).toBe(new Date(start + 365 * DAY).toISOString());
    h.clock.advance(10 * DAY);
    const body = expectError(await reset(app, legacy('alice')), 429, 'reset_cooldown') as Record<string, unknown>;
    expect(body.retry_after).toBe((start + 365 * DAY - h.clock.ms) / 1000);
    h.clock.ms = start + 365 * DAY + 1;
    expect((await reset(app, legacy('alice'))).statusCode).toBe(200);
  });

  it('the operator’s reset is unlimited and does not start the user’s cooldown', async () => {
    const app = await lockedApp();
    const id = await h.activeUser(app, 'alice', PASSWORD, 'hw-1');
    for (let i = 0; i < 3; i++) expect((await h.admin('POST', `/apps/${app.id}/users/${id}/reset-devices`)).statusCode).toBe(204);
    expect((await reset(app, legacy('alice'))).statusCode).toBe(200);
    expect((await h.admin('POST', `/apps/${app.id}/users/${id}/reset-devices`)).statusCode).toBe(204);
    expect((await h.admin('GET', `/apps/${app.id}/users/${id}`)).json().self_resets.count).toBe(1);
  });

  it('bans apply: a banned user, device or IP cannot reset; wrong credentials and anonymous callers are refused', async () => {
    const app = await lockedApp();
    const alice = await h.activeUser(app, 'alice', PASSWORD, 'hw-1');
    await h.activeUser(app, 'bob', PASSWORD, 'hw-2');
    await h.activeUser(app, 'carol', PASSWORD, 'hw-3');
    await h.ban(app, 'hardware_id', 'hw-banned');
    expectError(await reset(app, legacy('bob', 'hw-banned')), 403, 'banned');
    await h.ban(app, 'ip', '203.0.113.7');
    expectError(await reset(app, legacy('carol'), '203.0.113.7'), 403, 'banned');
    await h.ban(app, 'user', alice);
    expectError(await reset(app, legacy('alice')), 403, 'banned');
    expectError(await reset(app, { 'x-api-username': 'bob', 'x-api-password': 'wrong password' }), 401, 'invalid_credentials');
    expectError(await reset(app, {}), 401, 'anonymous_not_allowed');
    // None of the refusals started a cooldown.
    expect((await reset(app, legacy('bob'))).statusCode).toBe(200);
    expect((await reset(app, legacy('carol'))).statusCode).toBe(200);
  });

  it('20 parallel resets by one user make exactly one reset', async () => {
    const app = await lockedApp({ device_resets_per_year: 5 });
    const id = await h.activeUser(app, 'alice', PASSWORD, 'hw-1');
    const results = await Promise.all(Array.from({ length: 20 }, () => reset(app, legacy('alice'))));
    expect(results.filter((r) => r.statusCode >= 500).map((r) => r.body)).toEqual([]);
    expect(results.filter((r) => r.statusCode === 200)).toHaveLength(1);
    expect(results.filter((r) => r.statusCode === 429 && r.json().code === 'reset_cooldown')).toHaveLength(19);
    expect((await h.admin('GET', `/apps/${app.id}/users/${id}`)).json().self_resets.count).toBe(1);
    const audit = (await h.admin('GET', `/audit?app_id=${app.id}`)).json().items.filter((e: { action: string }) => e.action === 'user.reset_devices');
    expect(audit).toHaveLength(1);
  });

  it('a reset gives back the user’s seats', async () => {
    const app = await lockedApp();
    await h.admin('PATCH', `/apps/${app.id}`, { max_seats: 1, max_devices_per_user: 5 });
    await h.activeUser(app, 'alice', PASSWORD, 'hw-1');
    expect((await h.client(app, 'POST', '/seats', undefined, legacy('alice', 'hw-1'))).statusCode).toBe(200);
    expectError(await h.client(app, 'POST', '/seats', undefined, legacy('alice', 'hw-2')), 409, 'seats_exhausted');
    expect((await reset(app, legacy('alice', 'hw-2'))).statusCode).toBe(200);
    expect((await h.client(app, 'POST', '/seats', undefined, legacy('alice', 'hw-2'))).statusCode).toBe(200);
  });
});
