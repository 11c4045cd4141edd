import { afterEach, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, PASSWORD, expectError, harness, type Harness, type TestApp } from './helpers.js';

/**
 * Issue 11, finding 7: with TRUST_PROXY, the client address comes from
 * X-Forwarded-For. A hop that is not an IP address (garbage, a leading-zero
 * octet, five octets...) must not stand for the client: it matched no IP ban,
 * was stored as the user's IP and opened a rate-limit bucket of its own.
 * `host:port` and bracketed forms are the address they contain.
 */
const PROXY = '10.0.0.1';

/** Values a proxy (or a client through a lax proxy) may put last in X-Forwarded-For that are not an address. */
const NOT_ADDRESSES = [
  '010.0.0.1', 'garbage', '', ' ', '1.2.3.4.5', ':443', '203.0.113.7:', '203.0.113.7:99999', '203.0.113.7:44a', 'fe80::1%eth0',
  'unknown', '[203.0.113.7', '2001:db8::1]', '[garbage]:80', '203.0.113.7, ', '203.0.113.7,,', '256.1.1.1', '0x7f.0.0.1', '1.2.3',
  // Unspecified addresses: "no address", never a client's source (a proxy's placeholder, or a client's forgery).
  '0.0.0.0', '0.0.0.0:80', '::', '[::]:443', '0:0:0:0:0:0:0:0', '::ffff:0.0.0.0',
];
/** Forms that name an address, each with the address it names. */
const ADDRESSES: [string, string][] = [
  ['203.0.113.7:4444', '203.0.113.7'],
  ['[203.0.113.7]', '203.0.113.7'],
  ['[2001:db8::1]', '2001:db8::1'],
  ['[2001:db8::1]:443', '2001:db8::1'],
  ['[2001:DB8:0:0::1]:443', '2001:db8::1'],
  ['::ffff:203.0.113.7', '203.0.113.7'],
  ['::FFFF:cb00:7107', '203.0.113.7'],
  [' 203.0.113.7 ', '203.0.113.7'],
  ['garbage, 203.0.113.7', '203.0.113.7'], // left of the first untrusted hop: the client's own words, never read
];

describe('X-Forwarded-For from a trusted proxy', () => {
  let h: Harness;
  afterEach(async () => h?.close());

  const viaProxy = (app: TestApp, method: 'GET' | 'POST', url: string, forwardedFor: string, payload?: object) =>
    h.inject({ method, url, headers: { ...app.headers, 'x-forwarded-for': forwardedFor }, remoteAddress: PROXY, ...(payload && { payload }) });

  it('under a ban on 0.0.0.0/0 and ::/0, every value is either refused (400) or parsed and banned (403): never served', async () => {
    h = await harness({ env: { TRUST_PROXY: PROXY } });
    const app = await h.createApp({ anonymous_access_allowed: true });
    await h.signUp(app, 'alice');
    await h.ban(app, 'ip', '0.0.0.0/0');
    await h.ban(app, 'ip', '::/0');
    for (const value of NOT_ADDRESSES) {
      for (const res of [
        await viaProxy(app, 'GET', '/app_context', value),
        await viaProxy(app, 'POST', '/auth/login', value, { credentials: { username: 'alice', password: PASSWORD } }),
        await viaProxy(app, 'POST', '/sign_up', value, { username: `u${NOT_ADDRESSES.indexOf(value)}`, password: PASSWORD }),
      ]) {
        const body = expectError(res, 400, 'invalid_client_address');
        expect(body.detail).toMatch(/X-Forwarded-For/);
      }
    }
    for (const [value] of ADDRESSES) {
      expectError(await viaProxy(app, 'GET', '/app_context', value), 403, 'banned');
      expectError(await viaProxy(app, 'POST', '/auth/login', value, { credentials: { username: 'alice', password: PASSWORD } }), 403, 'banned');
    }
    const sessions = await h.tollgate.services.store.db.all<{ n: number }>('SELECT COUNT(*) AS n FROM sessions');
    expect(Number(sessions[0]!.n)).toBe(0);
  });

  it('the address stored for the user is the parsed, canonical one; a request with no address stores nothing', async () => {
    h = await harness({ env: { TRUST_PROXY: PROXY } });
    const app = await h.createApp();
    for (const [i, value] of NOT_ADDRESSES.entries()) {
      expectError(await viaProxy(app, 'POST', '/sign_up', value, { username: `nobody${i}`, password: PASSWORD }), 400, 'invalid_client_address');
    }
    const users = await h.admin('GET', `/apps/${app.id}/users`);
    expect(users.json().items).toEqual([]);

    for (const [i, [value, address]] of ADDRESSES.entries()) {
      const signUp = await viaProxy(app, 'POST', '/sign_up', value, { username: `user${i}`, password: PASSWORD });
      expect(signUp.statusCode, signUp.body).toBe(200);
      expect((await h.admin('PATCH', `/apps/${app.id}/users/${signUp.json().id}`, { lifetime: true })).statusCode).toBe(200);
      const login = await viaProxy(app, 'POST', '/auth/login', value, { credentials: { username: `user${i}`, password: PASSWORD } });
      expect(login.statusCode, login.body).toBe(200);
      const user = (await h.admin('GET', `/apps/${app.id}/users/${signUp.json().id}`)).json();
      expect(user.ips.map((x: { ip: string }) => x.ip), value).toEqual([address]);
      expect(user.sessions.map((x: { ip: string }) => x.ip), value).toEqual([address]);
    }
  });

  it('one address written many ways is one rate-limit bucket; refused values count in none', async () => {
    h = await harness({ env: { TRUST_PROXY: PROXY, RATE_LIMIT: 'on' } });
    const app = await h.createApp();
    expect((await h.admin('PATCH', `/apps/${app.id}`, { rate_signups_per_ip: 3 })).statusCode).toBe(200);
    for (const [i, value] of NOT_ADDRESSES.entries()) {
      expectError(await viaProxy(app, 'POST', '/sign_up', value, { username: `refused${i}`, password: PASSWORD }), 400, 'invalid_client_address');
    }
    const spellings = ['203.0.113.7:1', '[203.0.113.7]:2', '::ffff:203.0.113.7'];
    for (const [i, value] of spellings.entries()) {
      const res = await viaProxy(app, 'POST', '/sign_up', value, { username: `spelled${i}`, password: PASSWORD });
      expect(res.statusCode, `${value}: ${res.body}`).toBe(200);
    }
    expectError(await viaProxy(app, 'POST', '/sign_up', '203.0.113.7:4', { username: 'fourth', password: PASSWORD }), 429, 'rate_limited');
    const elsewhere = await viaProxy(app, 'POST', '/sign_up', '[2001:db8::1]', { username: 'elsewhere', password: PASSWORD });
    expect(elsewhere.statusCode, elsewhere.body).toBe(200);
  });

  it('from a socket that is not a trusted proxy, X-Forwarded-For is not read, garbage or not', async () => {
    h = await harness({ env: { TRUST_PROXY: PROXY } });
    const app = await h.createApp({ anonymous_access_allowed: true });
    const res = await h.inject({ method: 'GET', url: '/app_context', headers: { ...app.headers, 'x-forwarded-for': 'garbage' }, remoteAddress: '203.0.113.9' });
    expect(res.statusCode, res.body).toBe(200);
  });

  it('the admin API and /healthz do not use the client address: garbage from the proxy does not refuse them', async () => {
    h = await harness({ env: { TRUST_PROXY: PROXY } });
    const admin = await h.inject({ method: 'GET', url: '/admin/v1/apps', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'x-forwarded-for': 'garbage' }, remoteAddress: PROXY });
    expect(admin.statusCode, admin.body).toBe(200);
    expect((await h.inject({ method: 'GET', url: '/healthz', headers: { 'x-forwarded-for': 'garbage' }, remoteAddress: PROXY })).statusCode).toBe(200);
  });
});
