import { PassThrough } from 'node:stream';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/index.js';
import { createTollgate, type Tollgate } from '../src/wiring.js';
import { ADMIN_TOKEN, errorOf, fastHasher, harness, PASSWORD, STORE, type Harness } from './helpers.js';
import { UNSEALED_WARNING } from '../src/http/routes/meta.js';

/** A Tollgate on its own SQLite file whose log lines are collected; closed and removed after `fn`. */
async function withLogs(level: string, fn: (t: Tollgate, lines: string[]) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-logs-'));
  const stream = new PassThrough();
  const lines: string[] = [];
  stream.on('data', (d: Buffer) => lines.push(d.toString()));
  const t = await createTollgate(loadConfig({ DATABASE_URL: `sqlite:${join(dir, 'db.sqlite')}`, TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN, LOG_LEVEL: level, RATE_LIMIT: 'off' }), { hasher: fastHasher, logStream: stream });
  try {
    await fn(t, lines);
  } finally {
    await t.close().catch(() => undefined); // a test may have closed the database already
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('no leaks, headers, CORS, session cap', () => {
  let h: Harness;
  afterEach(async () => h?.close());

  it.skipIf(STORE !== 'sqlite')('secrets, passwords, tokens and license codes never reach the logs, even at trace level (SQLite project only: the store plays no part)', async () => {
    await withLogs('trace', async (t, lines) => {
      const adminHeaders = { authorization: `Bearer ${ADMIN_TOKEN}` };
      const app = (await t.server.inject({ method: 'POST', url: '/admin/v1/apps', headers: adminHeaders, payload: { name: 'Logged' } })).json();
      const headers = { 'x-api-key': app.api_key, 'x-api-secret': app.api_secret };
      const code = (await t.server.inject({ method: 'POST', url: `/admin/v1/apps/${app.id}/licenses`, headers: adminHeaders, payload: { count: 1, minutes: 60 } })).json().licenses[0].code;
      await t.server.inject({ method: 'POST', url: '/sign_up', headers, payload: { username: 'logme', password: PASSWORD } });
      await t.server.inject({ method: 'POST', url: '/activate_license', headers, payload: { username: 'logme', password: PASSWORD, code } });
      const token = (await t.server.inject({ method: 'POST', url: '/auth/login', headers, payload: { credentials: { username: 'logme', password: PASSWORD } } })).json().session_token;
      await t.server.inject({ method: 'GET', url: '/app_context', headers: { ...headers, authorization: `Bearer ${token}` } });
      await t.server.inject({ method: 'GET', url: '/app_context', headers: { ...headers, 'x-api-username': 'logme', 'x-api-password': PASSWORD } });
      await t.server.inject({ method: 'GET', url: '/app_context', headers: { ...headers, 'x-api-license-code': code } });
      await t.server.inject({ method: 'POST', url: '/auth/login', headers, payload: { credentials: { username: 'logme', password: 'wrong password' } } });
      await new Promise((r) => setImmediate(r));
      const log = lines.join('');
      expect(log.length).toBeGreaterThan(0); // something was logged at trace level
      for (const secret of [ADMIN_TOKEN, app.api_secret, PASSWORD, 'wrong password', token, code]) expect(log).not.toContain(secret);
    });
  });

  it.skipIf(STORE !== 'sqlite')('/readyz answers 503 when the database does not, and logs the outage once at warn with the request id (SQLite project only: the store plays no part)', async () => {
    await withLogs('warn', async (t, lines) => {
      const up = await t.server.inject({ method: 'GET', url: '/readyz' });
      expect(up.statusCode).toBe(200);
      expect(up.json()).toEqual({ status: 'ok', rate_limits: 'off', signing_key_seal: 'off', warnings: [UNSEALED_WARNING] });
      await t.services.store.db.close(); // the database goes away under the server
      const down = await t.server.inject({ method: 'GET', url: '/readyz' });
      expect(down.statusCode).toBe(503);
      expect(down.json()).toEqual({ status: 'unavailable', detail: 'The database does not answer or cannot take writes', code: 'service_unavailable' });
      await new Promise((r) => setImmediate(r));
      const entries = lines.join('').split('\n').filter(Boolean).map((l) => JSON.parse(l) as { level: number; msg: string; reqId?: string });
      const logged = entries.find((e) => e.msg === 'database unavailable');
      expect(logged, lines.join('')).toBeDefined();
      expect(logged!.level).toBe(40); // pino's warn: an outage, not a bug (test/outage-logs.test.ts bounds the lines)
      expect((logged as { cause?: string }).cause).toBe('readiness: the database does not answer or cannot take writes');
      expect(typeof logged!.reqId).toBe('string');
    });
  });

  it('an internal failure answers a plain 500 in the error shape: no stack trace, no SQL, no driver message', async () => {
    h = await harness();
    const app = await h.createApp();
    await h.tollgate.services.store.db.close(); // the database goes away under the server
    const res = await h.client(app, 'POST', '/sign_up', { username: 'someone', password: PASSWORD });
    expect(res.statusCode).toBe(500);
    expect(res.json()).toEqual({ detail: 'Internal server error', code: 'internal_error' });
    expect(res.body).not.toMatch(/at |sqlite|SELECT|INSERT|Error:/i);
    h = await harness(); // afterEach closes a fresh one
  });

  it('every response carries the security headers', async () => {
    h = await harness();
    for (const url of ['/healthz', '/app_context', '/admin/v1/apps', '/nope']) {
      const res = await h.inject({ method: 'GET', url });
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['x-frame-options']).toBe('DENY');
      expect(res.headers['referrer-policy']).toBe('no-referrer');
    }
  });

  it('CORS is off unless configured: no Access-Control-Allow-Origin for any origin', async () => {
    h = await harness();
    const app = await h.createApp({ anonymous_access_allowed: true });
    const res = await h.inject({ method: 'GET', url: '/app_context', headers: { ...app.headers, origin: 'https://evil.example' } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('with CORS_ORIGINS, listed origins get CORS on the client API (preflight included), others and the admin API do not', async () => {
    h = await harness({ env: { CORS_ORIGINS: 'https://app.example.com' } });
    const app = await h.createApp({ anonymous_access_allowed: true });
    const ok = await h.inject({ method: 'GET', url: '/app_context', headers: { ...app.headers, origin: 'https://app.example.com' } });
    expect(ok.headers['access-control-allow-origin']).toBe('https://app.example.com');
    const preflight = await h.inject({
      method: 'OPTIONS', url: '/auth/login',
      headers: { origin: 'https://app.example.com', 'access-control-request-method': 'POST', 'access-control-request-headers': 'x-api-key,x-api-secret,content-type' },
    });
    expect(preflight.statusCode).toBe(204);
    expect(String(preflight.headers['access-control-allow-headers'])).toContain('x-api-secret');
    const other = await h.inject({ method: 'GET', url: '/app_context', headers: { ...app.headers, origin: 'https://evil.example' } });
    expect(other.headers['access-control-allow-origin']).toBeUndefined();
    const adminRes = await h.inject({ method: 'GET', url: '/admin/v1/apps', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, origin: 'https://app.example.com' } });
    expect(adminRes.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('max_sessions_per_user: a new login ends the oldest session beyond the cap', async () => {
    h = await harness();
    const app = await h.createApp({ max_sessions_per_user: 2 } as never);
    await h.activeUser(app, 'seated');
    const tokens: string[] = [];
    for (let i = 0; i < 3; i++) {
      tokens.push(await h.login(app, 'seated'));
      h.clock.advance(1000);
    }
    const ctx = (token: string) => h.client(app, 'GET', '/app_context', undefined, { authorization: `Bearer ${token}` });
    expect((await ctx(tokens[0]!)).statusCode).toBe(401);
    expect(errorOf(await ctx(tokens[0]!)).code).toBe('invalid_credentials');
    expect((await ctx(tokens[1]!)).statusCode).toBe(200);
    expect((await ctx(tokens[2]!)).statusCode).toBe(200);
  });

  it('max_sessions_per_user defaults to 0: no cap', async () => {
    h = await harness();
    const app = await h.createApp();
    expect((await h.admin('GET', `/apps/${app.id}`)).json().max_sessions_per_user).toBe(0);
    await h.activeUser(app, 'many');
    const tokens = [];
    for (let i = 0; i < 5; i++) tokens.push(await h.login(app, 'many'));
    for (const token of tokens) expect((await h.client(app, 'GET', '/app_context', undefined, { authorization: `Bearer ${token}` })).statusCode).toBe(200);
  });

  it('X-Forwarded-For is ignored unless TRUST_PROXY names the proxy: a client cannot dodge an IP ban by sending it', async () => {
    h = await harness();
    const app = await h.createApp({ anonymous_access_allowed: true });
    await h.ban(app, 'ip', '203.0.113.9');
    const spoofed = await h.inject({ method: 'GET', url: '/app_context', headers: { ...app.headers, 'x-forwarded-for': '198.51.100.1' }, remoteAddress: '203.0.113.9' });
    expect(spoofed.statusCode).toBe(403);
    const framed = await h.inject({ method: 'GET', url: '/app_context', headers: { ...app.headers, 'x-forwarded-for': '203.0.113.9' }, remoteAddress: '198.51.100.1' });
    expect(framed.statusCode).toBe(200);
  });

  it('with TRUST_PROXY, the client address comes from X-Forwarded-For sent by that proxy only', async () => {
    h = await harness({ env: { TRUST_PROXY: '10.0.0.1' } });
    const app = await h.createApp({ anonymous_access_allowed: true });
    await h.ban(app, 'ip', '203.0.113.9');
    const viaProxy = await h.inject({ method: 'GET', url: '/app_context', headers: { ...app.headers, 'x-forwarded-for': '203.0.113.9' }, remoteAddress: '10.0.0.1' });
    expect(viaProxy.statusCode).toBe(403);
    const notProxy = await h.inject({ method: 'GET', url: '/app_context', headers: { ...app.headers, 'x-forwarded-for': '198.51.100.1' }, remoteAddress: '203.0.113.9' });
    expect(notProxy.statusCode).toBe(403);
  });

  it('API secrets, session tokens, admin tokens and passwords are stored only as digests or argon2id hashes', async () => {
    h = await harness();
    const app = await h.createApp();
    const userId = await h.activeUser(app, 'stored');
    const token = await h.login(app, 'stored');
    const adminToken = (await h.admin('POST', '/tokens', { name: 'ops' })).json().token as string;
    const db = h.tollgate.services.store.db;
    const dump = JSON.stringify([
      await db.all('SELECT * FROM apps'), await db.all('SELECT * FROM sessions'), await db.all('SELECT * FROM admin_tokens'),
      await db.all('SELECT id, username, password_hash FROM users'), await db.all('SELECT * FROM audit_log'),
    ]);
    for (const secret of [app.apiSecret, token, adminToken, PASSWORD]) expect(dump).not.toContain(secret);
    const user = await db.one<{ password_hash: string }>('SELECT password_hash FROM users WHERE id = ?', [userId]);
    expect(user?.password_hash).toMatch(/^\$argon2id\$/);
  });

  it('a login for an unknown user costs the same argon2 verification as a wrong password', async () => {
    h = await harness();
    const app = await h.createApp();
    await h.activeUser(app, 'known');
    const hasher = h.tollgate.services.hasher;
    const original = hasher.verify.bind(hasher);
    const verified: string[] = [];
    hasher.verify = async (hash, password) => {
      verified.push(hash);
      return original(hash, password);
    };
    expect((await h.client(app, 'POST', '/auth/login', { credentials: { username: 'known', password: 'wrong password' } })).statusCode).toBe(401);
    expect((await h.client(app, 'POST', '/auth/login', { credentials: { username: 'unknown', password: 'wrong password' } })).statusCode).toBe(401);
    expect(verified).toHaveLength(2);
    expect(verified[1]).toMatch(/^\$argon2id\$/); // the dummy hash: real work, same parameters
  });
});
