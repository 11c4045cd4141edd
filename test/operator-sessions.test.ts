import { afterEach, describe, expect, it } from 'vitest';
import { expectError, harness, type Harness } from './helpers.js';
import { cookieOf, login, loginFrom, makeOperator, OPERATOR_PASSWORD, sessionFrom, signIn, totpCode, withTotp } from './operator-helpers.js';

/** The dashboard's sign-in (issue 16, /work/notes/DASHBOARD-API.md "Sessions"), over HTTP on the store of this project. */

let h: Harness;
afterEach(async () => {
  const done = h;
  h = undefined as unknown as Harness; // a test without a harness must not close the previous one's again
  await done?.close();
});

const IDLE_MS = 1800_000;

describe('sign-in, the cookie, sign-out', () => {
  it('a right password: 200 with the operator, a CSRF token and the idle timeout; the cookie is HttpOnly, SameSite=Strict, Path=/, not Secure over plain HTTP', async () => {
    h = await harness();
    await makeOperator(h, 'Alice', 'admin');
    const res = await login(h, 'alice'); // usernames are case-insensitive
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ operator: { username: 'Alice', role: 'admin', totp_enabled: false }, idle_timeout_seconds: 1800 });
    expect(res.json().csrf_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const cookie = String(res.headers['set-cookie']);
    expect(cookie).toMatch(/^tollgate_session=tg_op_[A-Za-z0-9_-]{43}; /);
    const attrs = cookie.split(';').map((a) => a.trim().toLowerCase());
    expect(attrs).toContain('httponly');
    expect(attrs).toContain('samesite=strict');
    expect(attrs).toContain('path=/');
    expect(attrs).not.toContain('secure');
    expect(res.headers['cache-control']).toBe('no-store');

    const s = sessionFrom(h, res);
    const again = await s.call('GET', '/session');
    expect(again.statusCode).toBe(200);
    expect(again.json()).toEqual(res.json());
    expect((await s.call('GET', '/whoami')).json()).toEqual({ kind: 'operator', name: 'Alice', role: 'admin' });
  });

  it('Secure is set when the request came over HTTPS through a trusted proxy, and not when an untrusted client claims it', async () => {
    h = await harness({ env: { TRUST_PROXY: '10.0.0.1' } });
    await makeOperator(h, 'alice', 'owner');
    const viaProxy = await h.inject({
      method: 'POST', url: '/admin/v1/session', remoteAddress: '10.0.0.1', payload: { username: 'alice', password: OPERATOR_PASSWORD },
      headers: { 'x-forwarded-proto': 'https', 'x-forwarded-for': '203.0.113.9' },
    });
    expect(viaProxy.statusCode, viaProxy.body).toBe(200);
    expect(String(viaProxy.headers['set-cookie']).split(';').map((a) => a.trim())).toContain('Secure');
    const spoofed = await h.inject({
      method: 'POST', url: '/admin/v1/session', remoteAddress: '203.0.113.9', payload: { username: 'alice', password: OPERATOR_PASSWORD },
      headers: { 'x-forwarded-proto': 'https' },
    });
    expect(spoofed.statusCode, spoofed.body).toBe(200);
    expect(String(spoofed.headers['set-cookie'])).not.toMatch(/Secure/);
  });

  it('wrong password, unknown user and a disabled account get the same 401 invalid_credentials', async () => {
    h = await harness();
    const id = await makeOperator(h, 'alice', 'admin');
    await makeOperator(h, 'bob', 'viewer');
    const wrong = await login(h, 'alice', 'not the password at all');
    const unknown = await login(h, 'nobody', OPERATOR_PASSWORD);
    expect((await h.admin('PATCH', `/operators/${id}`, { disabled: true })).statusCode).toBe(200);
    const disabled = await login(h, 'alice', OPERATOR_PASSWORD);
    for (const res of [wrong, unknown, disabled]) {
      expectError(res, 401, 'invalid_credentials');
      expect(res.body).toBe(wrong.body);
      expect(res.headers['set-cookie']).toBeUndefined();
    }
    expect((await login(h, 'bob')).statusCode).toBe(200);
  });

  it('an unknown or disabled operator costs the same argon2id verification as a wrong password', async () => {
    h = await harness();
    const id = await makeOperator(h, 'alice', 'admin');
    await makeOperator(h, 'carol', 'admin');
    expect((await h.admin('PATCH', `/operators/${id}`, { disabled: true })).statusCode).toBe(200);
    const hasher = h.tollgate.services.hasher;
    const original = hasher.verify.bind(hasher);
    const verified: string[] = [];
    hasher.verify = async (hash, password) => {
      verified.push(hash);
      return original(hash, password);
    };
    for (const name of ['carol', 'nobody', 'alice']) expectError(await login(h, name, 'wrong password here'), 401, 'invalid_credentials');
    expect(verified).toHaveLength(3);
    for (const hash of verified) expect(hash).toMatch(/^\$argon2id\$/);
    expect(new Set(verified).size).toBe(3); // the unknown one verified against the dummy hash, not skipped
  });

  it('sign-out: 204, the cookie cleared, and the old cookie no longer works', async () => {
    h = await harness();
    await makeOperator(h, 'alice', 'owner');
    const s = await signIn(h, 'alice');
    const out = await s.call('DELETE', '/session');
    expect(out.statusCode, out.body).toBe(204);
    expect(String(out.headers['set-cookie'])).toMatch(/^tollgate_session=; Path=\/; Max-Age=0; HttpOnly; SameSite=Strict/);
    expectError(await s.call('GET', '/session'), 401, 'not_authenticated');
    expectError(await s.call('GET', '/apps'), 401, 'not_authenticated');
  });

  it('GET /session without a cookie: 401 not_authenticated; with an admin token: not a session, 401', async () => {
    h = await harness();
    expectError(await h.inject({ method: 'GET', url: '/admin/v1/session' }), 401, 'not_authenticated');
    expectError(await h.admin('GET', '/session'), 401, 'not_authenticated');
    expectError(await h.admin('DELETE', '/session'), 401, 'not_authenticated');
    expectError(await h.admin('POST', '/session/totp'), 401, 'not_authenticated');
    expect((await h.admin('GET', '/whoami')).json()).toEqual({ kind: 'token', name: 'TOLLGATE_ADMIN_TOKEN', role: 'owner' });
  });

  it('garbage cookies and bodies: 401 or 422, never a 500', async () => {
    h = await harness();
    await makeOperator(h, 'alice', 'owner');
    const cookies = [
      'tollgate_session=', 'tollgate_session', '=;=;;', 'tollgate_session=%00%ff', `tollgate_session=tg_op_${'A'.repeat(43)}`,
      `tollgate_session=${'x'.repeat(5000)}`, 'tollgate_session="tg_op_"', 'a=b; tollgate_session=é中文', `tollgate_session=tg_op_${'A'.repeat(42)}!`,
    ];
    for (const cookie of cookies) {
      for (const url of ['/admin/v1/session', '/admin/v1/whoami', '/admin/v1/apps']) {
        const res = await h.inject({ method: 'GET', url, headers: { cookie } });
        expect(res.statusCode, `${cookie} ${url}: ${res.body}`).toBe(401);
      }
    }
    for (const payload of [{}, { username: 'alice' }, { username: 1, password: 2 }, { username: 'alice', password: 'x', extra: 1 }, { username: 'a'.repeat(65), password: 'x' }]) {
      expectError(await h.inject({ method: 'POST', url: '/admin/v1/session', payload }), 422, 'validation_error');
    }
    const notJson = await h.inject({ method: 'POST', url: '/admin/v1/session', payload: 'not json', headers: { 'content-type': 'application/json' } });
    expect([400, 422]).toContain(notJson.statusCode);
    expect(typeof notJson.json().code).toBe('string');
  });
});

describe('CSRF', () => {
  it('a cookie request that changes something needs X-CSRF-Token: missing or wrong → 403 csrf_failed and nothing changes; right → done', async () => {
    h = await harness();
    await makeOperator(h, 'alice', 'owner');
    const s = await signIn(h, 'alice');
    const create = (headers: Record<string, string>) =>
      h.inject({ method: 'POST', url: '/admin/v1/apps', headers: { cookie: `tollgate_session=${s.cookie}`, ...headers }, payload: { name: 'Forged' } });
    expectError(await create({}), 403, 'csrf_failed');
    expectError(await create({ 'x-csrf-token': 'wrong' }), 403, 'csrf_failed');
    expectError(await create({ 'x-csrf-token': s.csrf.slice(0, -1) + (s.csrf.endsWith('A') ? 'B' : 'A') }), 403, 'csrf_failed');
    const other = await signIn(h, 'alice'); // another session's token is not this one's
    expectError(await create({ 'x-csrf-token': other.csrf }), 403, 'csrf_failed');
    expect((await h.admin('GET', '/apps')).json().items).toEqual([]);
    expectError(await h.inject({ method: 'DELETE', url: '/admin/v1/session', headers: { cookie: `tollgate_session=${s.cookie}` } }), 403, 'csrf_failed');
    expect((await create({ 'x-csrf-token': s.csrf })).statusCode).toBe(201);
    // Reads need none; a bearer token needs none (a browser never sends it by itself).
    expect((await h.inject({ method: 'GET', url: '/admin/v1/apps', headers: { cookie: `tollgate_session=${s.cookie}` } })).statusCode).toBe(200);
    expect((await h.admin('POST', '/apps', { name: 'By token' })).statusCode).toBe(201);
  });
});

describe('expiry', () => {
  it('idle for longer than ADMIN_SESSION_IDLE_SECONDS: 401 session_expired, and the session is gone', async () => {
    h = await harness();
    await makeOperator(h, 'alice', 'owner');
    const s = await signIn(h, 'alice');
    h.clock.advance(IDLE_MS - 1000);
    expect((await s.call('GET', '/whoami')).statusCode).toBe(200); // activity moves the deadline
    h.clock.advance(IDLE_MS - 1000);
    expect((await s.call('GET', '/whoami')).statusCode).toBe(200);
    h.clock.advance(IDLE_MS + 1);
    expectError(await s.call('GET', '/whoami'), 401, 'session_expired');
    expectError(await s.call('GET', '/whoami'), 401, 'not_authenticated');
  });

  it('ADMIN_SESSION_IDLE_SECONDS is honoured', async () => {
    h = await harness({ env: { ADMIN_SESSION_IDLE_SECONDS: '60' } });
    await makeOperator(h, 'alice', 'owner');
    const res = await login(h, 'alice');
    expect(res.json().idle_timeout_seconds).toBe(60);
    const s = sessionFrom(h, res);
    h.clock.advance(61_000);
    expectError(await s.call('GET', '/apps'), 401, 'session_expired');
  });

  it('a busy session still ends 12 hours after sign-in', async () => {
    h = await harness();
    await makeOperator(h, 'alice', 'owner');
    const s = await signIn(h, 'alice');
    const step = IDLE_MS - 1000;
    let elapsed = 0;
    while (elapsed + step < 12 * 3600_000) {
      h.clock.advance(step);
      elapsed += step;
      expect((await s.call('GET', '/whoami')).statusCode, `after ${elapsed} ms`).toBe(200);
    }
    h.clock.advance(12 * 3600_000 - elapsed + 1); // less than the idle time since the last request
    expectError(await s.call('GET', '/whoami'), 401, 'session_expired');
  });

  it('a new password or disabling the account ends its sessions', async () => {
    h = await harness();
    const id = await makeOperator(h, 'alice', 'admin');
    const s = await signIn(h, 'alice');
    expect((await h.admin('PATCH', `/operators/${id}`, { password: 'a brand new password' })).statusCode).toBe(200);
    expectError(await s.call('GET', '/whoami'), 401, 'not_authenticated');
    const t = await signIn(h, 'alice', 'a brand new password');
    expect((await h.admin('PATCH', `/operators/${id}`, { disabled: true })).statusCode).toBe(200);
    expectError(await t.call('GET', '/whoami'), 401, 'not_authenticated');
  });
});

describe('rate limits', () => {
  it('200 parallel wrong passwords for one operator from address A: exactly the limit (10) are checked, the rest 429; then the right password waits on A and works from B', async () => {
    h = await harness({ env: { RATE_LIMIT: 'on' } });
    await makeOperator(h, 'alice', 'owner');
    const answers = await Promise.all(Array.from({ length: 200 }, (_, i) => login(h, 'alice', `wrong password ${i}`)));
    const statuses = answers.map((r) => r.statusCode);
    expect(statuses.filter((s) => s === 401).length).toBe(10);
    expect(statuses.filter((s) => s === 429).length).toBe(190);
    for (const r of answers.filter((a) => a.statusCode === 429)) {
      expect(r.json().code).toBe('rate_limited');
      expect(Number(r.headers['retry-after'])).toBeGreaterThan(0);
    }
    expectError(await login(h, 'alice'), 429, 'rate_limited');
    // The guesser's address is stopped, the owner's is not (issue 28: no lockout by a stranger).
    expect((await loginFrom(h, '192.0.2.30', 'alice')).statusCode).toBe(200);
    // Another operator from the same address is not locked out: the address has used 10 of its 30.
    await makeOperator(h, 'bob', 'viewer');
    expect((await login(h, 'bob')).statusCode).toBe(200);
  });

  it('the per-username ceiling (100 across addresses) holds; past it only a sign-in with a right TOTP code gets through, and every other outcome is 429', async () => {
    h = await harness({ env: { RATE_LIMIT: 'on' } });
    h.clock.ms = Date.parse('2026-01-01T00:00:10Z');
    await makeOperator(h, 'alice', 'owner');
    await makeOperator(h, 'bob', 'admin');
    const { secret } = await withTotp(h, 'alice');
    // Ten addresses, ten wrong passwords each, in parallel: the ceiling bounds them all together too.
    for (const who of ['alice', 'bob']) {
      const answers = await Promise.all(Array.from({ length: 150 }, (_, i) => loginFrom(h, `198.51.${i % 15}.8`, who, `wrong ${i}`)));
      const statuses = answers.map((r) => r.statusCode);
      expect(statuses.filter((c) => c === 401).length).toBeLessThanOrEqual(100);
      expect(statuses.filter((c) => c !== 401 && c !== 429)).toEqual([]);
      // Sequentially up to the ceiling, whatever the parallel burst left in flight.
      for (let i = 0; i < 150 && (await loginFrom(h, `198.51.${20 + (i % 15)}.8`, who, `more ${i}`)).statusCode === 401; i++);
    }
    // bob has no second factor: past the ceiling even his right password is refused, on a fresh address too.
    const bob = await loginFrom(h, '203.0.113.31', 'bob');
    expectError(bob, 429, 'rate_limited');
    expect(bob.headers['ratelimit-limit']).toBe('100');
    // alice has TOTP: a wrong password or a wrong code past the ceiling is the ceiling's 429, not a 401 to learn from.
    const wrongCode = totpCode(secret, h.clock.ms, 5);
    expectError(await loginFrom(h, '203.0.113.32', 'alice', 'wrong password', { totp: totpCode(secret, h.clock.ms) }), 429, 'rate_limited');
    expectError(await loginFrom(h, '203.0.113.32', 'alice', OPERATOR_PASSWORD, { totp: wrongCode }), 429, 'rate_limited');
    expectError(await loginFrom(h, '203.0.113.32', 'alice'), 429, 'rate_limited');
    // The right password with a current code signs her in.
    const owner = await loginFrom(h, '203.0.113.33', 'alice', OPERATOR_PASSWORD, { totp: totpCode(secret, h.clock.ms) });
    expect(owner.statusCode, owner.body).toBe(200);
    // The per-address limit still holds past the ceiling: ten wrong tries from one address, then 429 there.
    h.clock.advance(30_000);
    for (let i = 0; i < 10; i++) expectError(await loginFrom(h, '203.0.113.34', 'alice', `again ${i}`, { totp: '000000' }), 429, 'rate_limited');
    expectError(await loginFrom(h, '203.0.113.34', 'alice', OPERATOR_PASSWORD, { totp: totpCode(secret, h.clock.ms) }), 429, 'rate_limited');
  });

  it('with the right password, wrong TOTP codes from many addresses: 10 are checked per operator, then even the right code waits for the window', async () => {
    h = await harness({ env: { RATE_LIMIT: 'on' } });
    h.clock.ms = Date.parse('2026-01-01T00:00:10Z');
    await makeOperator(h, 'alice', 'owner');
    const { secret } = await withTotp(h, 'alice');
    const wrong = wrongCodes(secret, h.clock.ms);
    // Below the ceiling: three addresses, ten wrong codes each with the leaked password. Only ten codes are checked.
    const statuses: number[] = [];
    for (let a = 0; a < 3; a++) {
      for (let i = 0; i < 10; i++) statuses.push((await loginFrom(h, `198.51.${a}.9`, 'alice', OPERATOR_PASSWORD, { totp: wrong() })).statusCode);
    }
    expect(statuses.filter((c) => c === 401).length).toBe(10);
    expect(statuses.filter((c) => c === 429).length).toBe(20);
    // The right code waits too: the password holder used up the operator's code checks for this window.
    expectError(await loginFrom(h, '203.0.113.40', 'alice', OPERATOR_PASSWORD, { totp: totpCode(secret, h.clock.ms) }), 429, 'rate_limited');
    h.clock.minutes(15);
    expect((await loginFrom(h, '203.0.113.40', 'alice', OPERATOR_PASSWORD, { totp: totpCode(secret, h.clock.ms) })).statusCode).toBe(200);
  });

  it('past the ceiling the second-factor slot still holds: 50 wrong codes from 5 addresses, then even the right code is 429; a stranger who filled the ceiling without the password does not stop the owner', async () => {
    h = await harness({ env: { RATE_LIMIT: 'on' } });
    h.clock.ms = Date.parse('2026-01-01T00:00:10Z');
    await makeOperator(h, 'alice', 'owner');
    const { secret } = await withTotp(h, 'alice');
    const wrong = wrongCodes(secret, h.clock.ms);
    // A stranger fills the ceiling: wrong passwords (with made-up codes) from ten addresses.
    for (let a = 0; a < 10; a++) {
      for (let i = 0; i < 10; i++) expectError(await loginFrom(h, `198.51.${a}.8`, 'alice', `wrong ${a} ${i}`, { totp: wrong() }), 401, 'invalid_credentials');
    }
    expectError(await loginFrom(h, '203.0.113.30', 'alice', 'one more', { totp: wrong() }), 429, 'rate_limited');
    // None of that reached a code check: the owner with password and code signs in.
    expect((await loginFrom(h, '203.0.113.31', 'alice', OPERATOR_PASSWORD, { totp: totpCode(secret, h.clock.ms) })).statusCode).toBe(200);
    h.clock.advance(30_000);
    // One with the password tries codes past the ceiling from fresh addresses: every answer is 429, ten are checked.
    for (let a = 0; a < 5; a++) {
      for (let i = 0; i < 10; i++) expectError(await loginFrom(h, `192.0.2.${a + 1}`, 'alice', OPERATOR_PASSWORD, { totp: wrong() }), 429, 'rate_limited');
    }
    // Had the codes past the ten been checked, the right one would be served here.
    expectError(await loginFrom(h, '203.0.113.32', 'alice', OPERATOR_PASSWORD, { totp: totpCode(secret, h.clock.ms) }), 429, 'rate_limited');
  });

  it('IPv6: ten addresses of one /64 with ten wrong passwords each fill one pair, not the ceiling: the owner signs in from another address', async () => {
    h = await harness({ env: { RATE_LIMIT: 'on' } });
    await makeOperator(h, 'alice', 'owner');
    const statuses: number[] = [];
    for (let a = 1; a <= 10; a++) {
      for (let i = 0; i < 10; i++) statuses.push((await loginFrom(h, `2001:db8::${a.toString(16)}`, 'alice', `wrong ${a} ${i}`)).statusCode);
    }
    expect(statuses.filter((c) => c === 401).length).toBe(10);
    expect(statuses.filter((c) => c === 429).length).toBe(90);
    expect((await loginFrom(h, '198.51.100.7', 'alice')).statusCode).toBe(200);
    // The /64 is the pair's address: its owner waits there, and signs in from another /64.
    expectError(await loginFrom(h, '2001:db8::ff', 'alice'), 429, 'rate_limited');
    expect((await loginFrom(h, '2001:db8:0:1::1', 'alice')).statusCode).toBe(200);
  });
});

/** Codes that are wrong for this secret around `fromMs` and for a minute after (the steps a test may advance to). */
function wrongCodes(secret: string, fromMs: number): () => string {
  const valid = new Set([-1, 0, 1, 2, 3].map((d) => totpCode(secret, fromMs, d)));
  let n = 0;
  return () => {
    while (valid.has(String(n).padStart(6, '0'))) n++;
    return String(n++).padStart(6, '0');
  };
}

describe('TOTP', () => {
  it('set-up, confirm, then sign-in needs the code; a used code is refused (replay), the next step works', async () => {
    h = await harness();
    h.clock.ms = Date.parse('2026-01-01T00:00:10Z');
    await makeOperator(h, 'alice', 'owner');
    const s = await signIn(h, 'alice');
    const started = await s.call('POST', '/session/totp');
    expect(started.statusCode, started.body).toBe(200);
    const { secret, otpauth_uri, qr_svg } = started.json();
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    expect(otpauth_uri).toBe(`otpauth://totp/Tollgate:alice?secret=${secret}&issuer=Tollgate&algorithm=SHA1&digits=6&period=30`);
    expect(qr_svg).toMatch(/^<svg[^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);

    // Not on until confirmed: sign-in still takes the password alone.
    expect((await login(h, 'alice')).statusCode).toBe(200);
    expectError(await s.call('POST', '/session/totp/confirm', { code: totpCode(secret, h.clock.ms, 3) }), 401, 'invalid_totp');
    expectError(await s.call('POST', '/session/totp/confirm', { code: '12345' }), 422, 'validation_error');
    const code = totpCode(secret, h.clock.ms);
    const confirmed = await s.call('POST', '/session/totp/confirm', { code });
    expect(confirmed.json()).toEqual({ totp_enabled: true });

    expectError(await login(h, 'alice'), 401, 'totp_required');
    expectError(await login(h, 'alice', 'wrong password here', { totp: totpCode(secret, h.clock.ms) }), 401, 'invalid_credentials');
    expectError(await login(h, 'alice', OPERATOR_PASSWORD, { totp: code }), 401, 'invalid_totp'); // used to confirm
    h.clock.advance(30_000);
    const next = totpCode(secret, h.clock.ms);
    const ok = await login(h, 'alice', OPERATOR_PASSWORD, { totp: next });
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json().operator.totp_enabled).toBe(true);
    expectError(await login(h, 'alice', OPERATOR_PASSWORD, { totp: next }), 401, 'invalid_totp'); // replay
    // The previous step's code is within the window but older than the one used: refused too.
    expectError(await login(h, 'alice', OPERATOR_PASSWORD, { totp: totpCode(secret, h.clock.ms, -1) }), 401, 'invalid_totp');
    expect((await login(h, 'alice', OPERATOR_PASSWORD, { totp: totpCode(secret, h.clock.ms, 1) })).statusCode).toBe(200);
  });

  it('the same fresh code sent twice in parallel signs in once', async () => {
    h = await harness();
    await makeOperator(h, 'alice', 'owner');
    const s = await signIn(h, 'alice');
    const { secret } = (await s.call('POST', '/session/totp')).json();
    expect((await s.call('POST', '/session/totp/confirm', { code: totpCode(secret, h.clock.ms) })).statusCode).toBe(200);
    h.clock.advance(30_000);
    const code = totpCode(secret, h.clock.ms);
    const answers = await Promise.all(Array.from({ length: 8 }, () => login(h, 'alice', OPERATOR_PASSWORD, { totp: code })));
    expect(answers.map((a) => a.statusCode).sort()).toEqual([200, 401, 401, 401, 401, 401, 401, 401]);
  });

  it('turning it off takes a current code; an owner can reset it for an operator who lost the phone', async () => {
    h = await harness();
    const id = await makeOperator(h, 'alice', 'admin');
    const s = await signIn(h, 'alice');
    const { secret } = (await s.call('POST', '/session/totp')).json();
    expect((await s.call('POST', '/session/totp/confirm', { code: totpCode(secret, h.clock.ms) })).statusCode).toBe(200);
    expectError(await s.call('POST', '/session/totp'), 409, 'conflict');
    h.clock.advance(30_000);
    expectError(await s.call('DELETE', '/session/totp', { code: '000000' === totpCode(secret, h.clock.ms) ? '111111' : '000000' }), 401, 'invalid_totp');
    expect((await s.call('DELETE', '/session/totp', { code: totpCode(secret, h.clock.ms) })).json()).toEqual({ totp_enabled: false });
    expect((await login(h, 'alice')).statusCode).toBe(200);

    const t = await signIn(h, 'alice');
    const again = (await t.call('POST', '/session/totp')).json();
    expect((await t.call('POST', '/session/totp/confirm', { code: totpCode(again.secret, h.clock.ms) })).statusCode).toBe(200);
    const reset = await h.admin('POST', `/operators/${id}/reset_totp`);
    expect(reset.json()).toMatchObject({ username: 'alice', totp_enabled: false });
    expectError(await t.call('GET', '/whoami'), 401, 'not_authenticated');
    expect((await login(h, 'alice')).statusCode).toBe(200);
  });
});

describe('audit', () => {
  it('sign-in, sign-out and every write through a session name the operator', async () => {
    h = await harness();
    await makeOperator(h, 'alice', 'owner');
    const s = await signIn(h, 'alice');
    const app = await s.call('POST', '/apps', { name: 'From the dashboard' });
    expect(app.statusCode).toBe(201);
    await s.call('DELETE', '/session');
    const entries = (await h.admin('GET', '/audit?limit=10')).json().items as { actor: string; action: string }[];
    expect(entries.slice(0, 3).map((e) => [e.action, e.actor])).toEqual([
      ['operator.logout', 'operator:alice'],
      ['app.create', 'operator:alice'],
      ['operator.login', 'operator:alice'],
    ]);
  });
});

void cookieOf;
