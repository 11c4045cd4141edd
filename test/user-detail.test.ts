import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { expectError, harness, PASSWORD, type Harness, type TestApp, writableStore } from './helpers.js';

/**
 * The users page of the dashboard: search (?q=, compared as usernames are: NFKC and any case) with
 * its total, and the detail page (membership, devices, IP history, sessions, activations).
 */

interface Detail {
  id: string;
  username: string;
  membership: { is_active: boolean };
  devices: { hardware_id: string }[];
  ips: { ip: string; first_seen_at: string; last_seen_at: string; count: number }[];
  sessions: { ip: string | null; hardware_id: string | null }[];
  activations: { license_id: string }[];
}

describe('user detail', () => {
  let h: Harness;
  let app: TestApp;
  beforeEach(async () => {
    h = await harness();
    app = await h.createApp({ device_auth_enabled: true, max_devices_per_user: 3 });
  });
  afterEach(async () => h.close());

  const detail = async (id: string) => {
    const res = await h.admin('GET', `/apps/${app.id}/users/${id}`);
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as Detail;
  };
  const from = (ip: string, url: string, payload: object, headers: Record<string, string> = {}) =>
    h.inject({ method: url === '/app_context' ? 'GET' : 'POST', url, headers: { ...app.headers, ...headers }, ...(url !== '/app_context' && { payload }), remoteAddress: ip });

  it('IP history from sign-up and logins (first seen, last seen, count, newest first); /app_context writes none', async () => {
    const signUp = await from('198.51.100.1', '/sign_up', { username: 'alice', password: PASSWORD, hardware_id: 'hw-1' });
    expect(signUp.statusCode, signUp.body).toBe(200);
    const id = signUp.json().id as string;
    const { code } = await h.license(app, { minutes: 600 });
    expect((await from('198.51.100.1', '/activate_license', { code, username: 'alice', password: PASSWORD, hardware_id: 'hw-1' })).statusCode).toBe(200);
    h.clock.minutes(1);
    const login = { credentials: { username: 'alice', password: PASSWORD }, hardware_id: 'hw-2' };
    expect((await from('198.51.100.2', '/auth/login', login)).statusCode).toBe(200);
    h.clock.minutes(1);
    const second = await from('198.51.100.2', '/auth/login', login);
    expect(second.statusCode).toBe(200);
    h.clock.minutes(1);
    const token = second.json().session_token as string;
    for (let i = 0; i < 3; i++) {
      expect((await from('203.0.113.9', '/app_context', {}, { authorization: `Bearer ${token}`, 'x-hardware-id': 'hw-2' })).statusCode).toBeLessThan(500);
    }

    const d = await detail(id);
    expect(d.ips).toEqual([
      { ip: '198.51.100.2', first_seen_at: '2026-01-01T00:01:00.000Z', last_seen_at: '2026-01-01T00:02:00.000Z', count: 2 },
      { ip: '198.51.100.1', first_seen_at: '2026-01-01T00:00:00.000Z', last_seen_at: '2026-01-01T00:00:00.000Z', count: 1 },
    ]);
    expect(d.ips.map((i) => i.ip)).not.toContain('203.0.113.9');
    expect(d.devices.map((x) => x.hardware_id).sort()).toEqual(['hw-1', 'hw-2']);
    expect(d.sessions).toHaveLength(2);
    expect(d.sessions.every((x) => x.ip === '198.51.100.2' && x.hardware_id === 'hw-2')).toBe(true);
    expect(d.activations).toHaveLength(1);
    expect(d.membership.is_active).toBe(true);
  });

  it('shows the 100 addresses seen most recently when there are more', async () => {
    const id = await h.signUp(app, 'roamer', PASSWORD, 'hw-1');
    // 150 distinct networks, as years of logins from mobile networks would leave.
    for (let i = 0; i < 150; i++) {
      await writableStore(h.tollgate.services).users.trackIp(id, `10.0.${Math.floor(i / 200)}.${i % 200}`, h.clock.ms + (i + 1) * 1000);
    }
    const d = await detail(id);
    expect(d.ips).toHaveLength(100);
    expect(d.ips[0]!.ip).toBe('10.0.0.149');
    expect(d.ips.at(-1)!.ip).toBe('10.0.0.50');
  });
});

describe('user search', () => {
  let h: Harness;
  let app: TestApp;
  beforeEach(async () => {
    h = await harness();
    app = await h.createApp();
  });
  afterEach(async () => h.close());

  const search = async (q: string, a: TestApp = app) => {
    const res = await h.admin('GET', `/apps/${a.id}/users?with_total=true&q=${encodeURIComponent(q)}`);
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json() as { items: { username: string }[]; total: number };
    expect(body.total).toBe(body.items.length);
    return body.items.map((u) => u.username).sort();
  };

  it('matches a prefix (or any part) of the username in any case and in NFKC, as usernames are compared', async () => {
    for (const name of ['alice', 'Alicia', 'bob', 'malice']) await h.signUp(app, name);
    expect(await search('ali')).toEqual(['Alicia', 'alice', 'malice']);
    expect(await search('ALIC')).toEqual(['Alicia', 'alice', 'malice']);
    expect(await search('ａｌｉｃｅ')).toEqual(['alice', 'malice']); // fullwidth letters are the same username key
    expect(await search('bob')).toEqual(['bob']);
    expect(await search('nobody')).toEqual([]);
  });

  it('a user id finds that user (in any case), only in its own app', async () => {
    const other = await h.createApp({ name: 'B' });
    const id = await h.signUp(app, 'alice');
    await h.signUp(app, 'bob');
    const elsewhere = await h.signUp(other, 'carol');
    expect(await search(id)).toEqual(['alice']);
    expect(await search(id.toUpperCase())).toEqual(['alice']);
    expect(await search(elsewhere)).toEqual([]);
  });

  it('garbage is a 422', async () => {
    expectError(await h.admin('GET', `/apps/${app.id}/users?q=${'a'.repeat(129)}`), 422, 'validation_error');
    expectError(await h.admin('GET', `/apps/${app.id}/users?q=a%00b`), 422, 'validation_error');
    expectError(await h.admin('GET', `/apps/${app.id}/users?with_total=1x`), 422, 'validation_error');
  });
});
