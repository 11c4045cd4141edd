import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DASHBOARD_CSP } from '../src/http/dashboard.js';
import { expectError, harness, type Harness } from './helpers.js';
import { makeOperator, OPERATOR_PASSWORD, signIn, totpCode, withTotp } from './operator-helpers.js';

/** Issue 16 attacked from the outside (helper R16): escalation, races on the owner rule, TOTP guessing, CSRF, CSV and headers. */

let h: Harness;
let dir = '';
afterEach(async () => {
  const done = h;
  h = undefined as unknown as Harness;
  await done?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = '';
});

describe('the last active owner, under concurrency', () => {
  it('two owners demoting, disabling or deleting each other at once: one wins, the other is refused, one owner is left', async () => {
    h = await harness();
    let survivor: string | null = null;
    for (let round = 0; round < 9; round++) {
      const a = await makeOperator(h, `ra${round}`, 'owner');
      const b = await makeOperator(h, `rb${round}`, 'owner');
      // The previous round's survivor steps down, so only these two are active owners.
      if (survivor) expect((await h.admin('PATCH', `/operators/${survivor}`, { role: 'viewer' })).statusCode).toBe(200);
      const change = [{ role: 'admin' }, { disabled: true }, null][round % 3];
      const act = (id: string) => (change ? h.admin('PATCH', `/operators/${id}`, change) : h.admin('DELETE', `/operators/${id}`));
      const answers = await Promise.all([act(a), act(b)]);
      const owners = (await h.admin('GET', '/operators?limit=500')).json().items.filter((o: { role: string; disabled: boolean }) => o.role === 'owner' && !o.disabled);
      expect(owners.length, `round ${round}: ${answers.map((r) => `${r.statusCode} ${r.body}`).join(' | ')}`).toBe(1);
      expect(answers.map((r) => r.statusCode).sort()).toEqual([change ? 200 : 204, 409]);
      survivor = owners[0].id;
    }
  });
});


describe('guessing a second factor through a session', () => {
  it('DELETE /session/totp with 200 wrong codes at once: only the sign-in limit (10) are checked, the rest 429, and TOTP stays on', async () => {
    h = await harness({ env: { RATE_LIMIT: 'on' } });
    await makeOperator(h, 'alice', 'owner');
    const { session: s, secret } = await withTotp(h, 'alice');
    const valid = new Set([-1, 0, 1].map((d) => totpCode(secret, h.clock.ms, d)));
    const guesses: string[] = [];
    for (let n = 0; guesses.length < 200; n++) {
      const code = String(n).padStart(6, '0');
      if (!valid.has(code)) guesses.push(code);
    }
    // A stolen cookie must not turn the second factor off by trying the 10^6 codes.
    const answers = await Promise.all(guesses.map((code) => s.call('DELETE', '/session/totp', { code })));
    const statuses = answers.map((r) => r.statusCode);
    expect(statuses.filter((c) => c === 401).length).toBe(10);
    expect(statuses.filter((c) => c === 429).length).toBe(190);
    expect((await s.call('GET', '/session')).json().operator.totp_enabled).toBe(true);
  });

  it('DELETE /session/totp from 15 addresses, 10 wrong codes each: 10 codes are checked per operator, and the right code then waits (no way past the ceiling)', async () => {
    h = await harness({ env: { RATE_LIMIT: 'on' } });
    await makeOperator(h, 'alice', 'owner');
    const { session: s, secret } = await withTotp(h, 'alice');
    const valid = new Set([-1, 0, 1].map((d) => totpCode(secret, h.clock.ms, d)));
    const wrong = Array.from({ length: 160 }, (_, n) => String(n).padStart(6, '0')).filter((c) => !valid.has(c));
    // The stolen cookie sent from many addresses: each its own pair slot, all one operator's second factor.
    const turnOff = (ip: string, code: string) => h.inject({
      method: 'DELETE', url: '/admin/v1/session/totp', payload: { code }, remoteAddress: ip,
      headers: { cookie: `tollgate_session=${s.cookie}`, 'x-csrf-token': s.csrf },
    });
    const statuses: number[] = [];
    for (let a = 0; a < 15; a++) {
      for (let i = 0; i < 10; i++) statuses.push((await turnOff(`198.51.${a}.20`, wrong[a * 10 + i]!)).statusCode);
    }
    expect(statuses.filter((c) => c === 401).length).toBe(10);
    expect(statuses.filter((c) => c === 429).length).toBe(140);
    expectError(await turnOff('203.0.113.50', totpCode(secret, h.clock.ms)), 429, 'rate_limited');
    expect((await s.call('GET', '/session')).json().operator.totp_enabled).toBe(true);
  });
});

describe('the license export in a spreadsheet', () => {
  it('a code made from a mask that starts like a formula is defused like a note (the export is read by every role)', async () => {
    h = await harness();
    const app = await h.createApp();
    const res = await h.admin('POST', `/apps/${app.id}/licenses`, { count: 1, minutes: 60, mask: '=HYPERLINK("http://x")XXXXXXXXXXXXXX', note: '+1' });
    expect(res.statusCode, res.body).toBe(201);
    const csv = await h.admin('GET', `/apps/${app.id}/licenses/export.csv`);
    const row = csv.body.split('\r\n')[1]!;
    const cells = row.match(/("([^"]|"")*"|[^,]*)(,|$)/g)!.map((c) => c.replace(/,$/, ''));
    expect(cells[1]).toMatch(/^"'=HYPERLINK\(""http:\/\/x""\)[A-Z0-9]{14}"$/);
    expect(cells[5]).toBe("'+1");
  });
});

describe('who may do what, beyond the table', () => {
  it('support and viewer sessions: every write they are not granted is 403 and changes nothing', async () => {
    h = await harness();
    const app = await h.createApp();
    const lic = await h.license(app);
    const token = (await h.admin('POST', '/tokens', { name: 't' })).json();
    const opId = await makeOperator(h, 'victim', 'viewer');
    await makeOperator(h, 'sup', 'support');
    await makeOperator(h, 'view', 'viewer');
    const writes: [string, string, unknown?][] = [
      ['POST', '/apps', { name: 'x' }], ['PATCH', `/apps/${app.id}`, { name: 'y' }], ['DELETE', `/apps/${app.id}`], ['POST', `/apps/${app.id}/secret`],
      ['POST', `/apps/${app.id}/licenses`, { count: 1, minutes: 1 }], ['DELETE', `/apps/${app.id}/licenses/${lic.id}`], ['POST', `/apps/${app.id}/licenses/delete_unused`, {}],
      ['PUT', `/apps/${app.id}/variables/v`, { value: 'x' }], ['POST', '/tokens', { name: 'mine', role: 'viewer' }], ['DELETE', `/tokens/${token.id}`],
      ['POST', '/operators', { username: 'new1', password: OPERATOR_PASSWORD, role: 'viewer' }], ['PATCH', `/operators/${opId}`, { role: 'owner' }],
      ['DELETE', `/operators/${opId}`], ['POST', `/operators/${opId}/reset_totp`], ['GET', '/operators'],
      ['POST', `/apps/${app.id}/signing-keys`, {}], ['PUT', `/apps/${app.id}/root-key`, {}],
    ];
    for (const name of ['sup', 'view']) {
      const s = await signIn(h, name);
      for (const [method, url, body] of writes) {
        const res = await s.call(method as 'POST', url, body);
        expect(res.statusCode, `${name} ${method} ${url}: ${res.body}`).toBe(403);
      }
    }
    expect((await h.admin('GET', `/apps/${app.id}/licenses/${lic.id}`)).statusCode).toBe(200);
    expect((await h.admin('GET', '/operators')).json().items.find((o: { id: string }) => o.id === opId).role).toBe('viewer');
  });
});

describe('dashboard answers carry the CSP whatever the status', () => {
  it('404 for a missing asset or a path out of the directory (as the dashboard route sees it), and 503 before a build, all with CSP and nosniff', async () => {
    const root = mkdtempSync(join(tmpdir(), 'tollgate-dash-'));
    dir = root;
    mkdirSync(join(root, 'dist', 'assets'), { recursive: true });
    writeFileSync(join(root, 'dist', 'index.html'), '<!doctype html><title>t</title>');
    h = await harness({ env: { DASHBOARD_DIR: join(root, 'dist') } });
    for (const url of ['/dashboard/assets/gone.js', '/dashboard/..%2f..%2fetc%2fpasswd', '/dashboard/%00', '/dashboard/assets/..%2f..%2fsecret.txt']) {
      const res = await h.inject({ method: 'GET', url });
      expect(res.statusCode, url).toBe(404);
      expect(res.headers['content-security-policy'], url).toBe(DASHBOARD_CSP);
      expect(res.headers['x-content-type-options'], url).toBe('nosniff');
    }
    await h.close();
    h = await harness({ env: { DASHBOARD_DIR: join(root, 'none') } });
    const res = await h.inject({ method: 'GET', url: '/dashboard/apps' });
    expect(res.statusCode).toBe(503);
    expect(res.headers['content-security-policy']).toBe(DASHBOARD_CSP);
  });
});

describe('CSRF and cookies over real HTTP', () => {
  it('another session’s CSRF token, a method override, HEAD or OPTIONS, a text/plain body, or a bad Bearer beside a good cookie: nothing is written', async () => {
    h = await harness();
    await makeOperator(h, 'alice', 'owner');
    await makeOperator(h, 'mallory', 'viewer');
    const alice = await signIn(h, 'alice');
    const mallory = await signIn(h, 'mallory');
    const base = await h.tollgate.server.listen({ port: 0, host: '127.0.0.1' });
    const cookie = `tollgate_session=${alice.cookie}`;
    const post = (headers: Record<string, string>, body = JSON.stringify({ name: 'csrf' }), method = 'POST') =>
      fetch(`${base}/admin/v1/apps`, { method, headers: { cookie, 'content-type': 'application/json', ...headers }, body: method === 'HEAD' ? null : body });
    expect((await post({ 'x-csrf-token': mallory.csrf })).status).toBe(403);
    expect((await post({})).status).toBe(403);
    expect((await post({ 'x-csrf-token': '' })).status).toBe(403);
    expect((await post({ 'x-http-method-override': 'GET', 'x-csrf-token': 'x' })).status).toBe(403);
    expect((await post({ 'content-type': 'text/plain' }, '{"name":"csrf"}')).status).toBe(403);
    expect((await post({ authorization: 'Bearer not-a-token', 'x-csrf-token': alice.csrf })).status).toBe(401);
    expect((await post({}, '', 'HEAD')).status).toBe(200); // the GET /apps it mirrors: a read
    expect((await post({}, '', 'OPTIONS')).status).toBeGreaterThanOrEqual(400);
    // Two cookies of the name: the first decides, and a garbage first one is not skipped for a good second one.
    const two = await fetch(`${base}/admin/v1/whoami`, { headers: { cookie: `tollgate_session=garbage; tollgate_session=${alice.cookie}` } });
    expect(two.status).toBe(401);
    const huge = await fetch(`${base}/admin/v1/whoami`, { headers: { cookie: `a=${'x'.repeat(9000)}; ${cookie}` } });
    expect([401, 431]).toContain(huge.status);
    const latin = await fetch(`${base}/admin/v1/whoami`, { headers: { cookie: Buffer.from(`tollgate_session=tg_op_\xe9\xe9; x=1`, 'latin1').toString('latin1') } });
    expect(latin.status).toBe(401);
    const apps = (await h.admin('GET', '/apps')).json().items;
    expect(apps.filter((a: { name: string }) => a.name === 'csrf')).toEqual([]);
    expect((await post({ 'x-csrf-token': alice.csrf })).status).toBe(201);
  });

  it('sign-out ends the session on the server: the old cookie with its CSRF token is refused everywhere afterwards', async () => {
    h = await harness();
    await makeOperator(h, 'alice', 'owner');
    const s = await signIn(h, 'alice');
    const t = await signIn(h, 'alice');
    expect((await s.call('DELETE', '/session')).statusCode).toBe(204);
    expectError(await s.call('GET', '/apps'), 401, 'not_authenticated');
    expectError(await s.call('POST', '/apps', { name: 'after' }), 401, 'not_authenticated');
    // The other browser's session is its own.
    expect((await t.call('GET', '/whoami')).statusCode).toBe(200);
  });
});

describe('dead sessions', () => {
  it('sessions past the 12-hour lifetime that nobody signed out of are deleted at the next sign-in, not kept forever', async () => {
    h = await harness();
    await makeOperator(h, 'alice', 'owner');
    await makeOperator(h, 'bob', 'viewer');
    for (let i = 0; i < 5; i++) await signIn(h, 'alice'); // browsers closed without signing out
    await signIn(h, 'bob');
    const count = async () => Number((await h.tollgate.services.store.db.all<{ n: number | string }>('SELECT COUNT(*) AS n FROM operator_sessions'))[0]!.n);
    expect(await count()).toBe(6);
    h.clock.advance(12 * 3600_000 + 1);
    await signIn(h, 'bob'); // anyone's sign-in clears every dead session
    expect(await count()).toBe(1);
  });
});

describe('behind a proxy with its own HTTP authentication', () => {
  it('Authorization: Basic (the proxy’s, not ours) beside the session cookie: the session decides; a Bearer is still never mixed with the cookie', async () => {
    h = await harness();
    await makeOperator(h, 'alice', 'support');
    const s = await signIn(h, 'alice');
    const basic = `Basic ${Buffer.from('team:proxy-password').toString('base64')}`;
    const who = await s.call('GET', '/whoami', undefined, { authorization: basic });
    expect(who.statusCode, who.body).toBe(200);
    expect(who.json()).toEqual({ kind: 'operator', name: 'alice', role: 'support' });
    // Writes still need the session's CSRF token.
    expectError(await s.call('POST', '/apps/00000000-0000-4000-8000-000000000000/bans', { type: 'ip', value: '10.0.0.1' }, { authorization: basic, 'x-csrf-token': 'wrong' }), 403, 'csrf_failed');
    expectError(await h.inject({ method: 'GET', url: '/admin/v1/apps', headers: { authorization: basic } }), 401, 'invalid_admin_token');
    expectError(await s.call('GET', '/whoami', undefined, { authorization: 'Bearer wrong-token' }), 401, 'invalid_admin_token');
    expectError(await s.call('GET', '/whoami', undefined, { authorization: 'Bearer' }), 401, 'invalid_admin_token');
  });
});

describe('garbage in the dashboard’s list parameters', () => {
  it('every list, total, export, stats and bulk delete answers garbage with a 4xx in {detail, code}, never a 500', async () => {
    h = await harness();
    const app = await h.createApp();
    await h.license(app, { minutes: 60, note: 'n' });
    const garbage = ['', 'TRUE', '1', 'null', '%00', '%', '_', '\\', "'", '2026-13-45', '9'.repeat(400), '-1', '1e309', '%E9', '%C0%AF', 'a'.repeat(5000), '[]', '{"$gt":""}'];
    const lists = [
      ['licenses', ['with_total', 'used', 'q', 'note', 'created_from', 'created_to', 'cursor', 'limit']],
      ['licenses/export.csv', ['used', 'q', 'note', 'created_from', 'created_to']],
      ['users', ['with_total', 'q', 'cursor', 'limit']],
      ['bans', ['with_total', 'type', 'value', 'cursor']],
      ['stats', ['bucket', 'from', 'to']],
    ] as const;
    const check = (res: { statusCode: number; body: string }, what: string) => {
      expect(res.statusCode, `${what}: ${res.body.slice(0, 200)}`).toBeLessThan(500);
      if (res.statusCode >= 400) expect(Object.keys(JSON.parse(res.body)).sort(), what).toEqual(expect.arrayContaining(['code', 'detail']));
    };
    for (const [path, params] of lists) {
      for (const p of params) {
        for (const g of garbage) {
          const url = `/apps/${app.id}/${path}?${p}=${g.startsWith('%') ? g : encodeURIComponent(g)}`;
          check(await h.admin('GET', url), url);
        }
      }
    }
    for (const p of ['with_total', 'actor', 'action', 'from', 'to', 'since', 'until']) {
      for (const g of garbage) check(await h.admin('GET', `/audit?${p}=${encodeURIComponent(g)}`), `audit ${p}=${g}`);
    }
    for (const body of [{ note: 5 }, { created_from: 'x' }, { note: 'a'.repeat(100_000) }, { extra: 1 }, [], 'text', { note: null }]) {
      check(await h.admin('POST', `/apps/${app.id}/licenses/delete_unused`, body), `delete_unused ${JSON.stringify(body).slice(0, 50)}`);
    }
    expect((await h.admin('GET', `/apps/${app.id}/licenses?with_total=true`)).json().total).toBe(1);
  });
});

describe('cookie tossing', () => {
  it('two session cookies in one request (another site of the domain planted its own, sent first for its longer path): neither is used', async () => {
    h = await harness();
    await makeOperator(h, 'victim', 'owner');
    await makeOperator(h, 'planter', 'viewer');
    const victim = await signIn(h, 'victim');
    const planted = await signIn(h, 'planter');
    const res = await h.inject({ method: 'GET', url: '/admin/v1/whoami', headers: { cookie: `tollgate_session=${planted.cookie}; tollgate_session=${victim.cookie}` } });
    expectError(res, 401, 'not_authenticated');
    // One cookie among others of other names is read as before.
    const one = await h.inject({ method: 'GET', url: '/admin/v1/whoami', headers: { cookie: `theme=dark; tollgate_session=${victim.cookie}; x=1` } });
    expect(one.json()).toEqual({ kind: 'operator', name: 'victim', role: 'owner' });
  });
});

describe('dashboard paths as a raw client sends them (no URL normalisation, unlike inject and browsers)', () => {
  it('dot segments, encoded, double-encoded, backslashes, NUL and ;-tricks never leave the directory nor reach the admin API, and carry the CSP', async () => {
    const root = mkdtempSync(join(tmpdir(), 'tollgate-dash-'));
    dir = root;
    mkdirSync(join(root, 'dist', 'assets'), { recursive: true });
    writeFileSync(join(root, 'dist', 'index.html'), '<!doctype html><title>t</title>');
    writeFileSync(join(root, 'secret.txt'), 'SECRET');
    h = await harness({ env: { DASHBOARD_DIR: join(root, 'dist') } });
    await h.tollgate.server.listen({ port: 0, host: '127.0.0.1' });
    const port = (h.tollgate.server.server.address() as { port: number }).port;
    const get = (path: string) => new Promise<{ status: number; csp: unknown; body: string }>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path, method: 'GET' }, (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode!, csp: res.headers['content-security-policy'], body }));
      });
      req.on('error', reject);
      req.end();
    });
    for (const path of [
      '/dashboard/../admin/v1/apps', '/dashboard/../secret.txt', '/dashboard/%2e%2e/secret.txt', '/dashboard/..\\secret.txt', '/dashboard/%5c..%5csecret.txt',
      '/dashboard/.%2e/secret.txt', '/dashboard/assets/../../secret.txt', '/dashboard/%252e%252e/secret.txt', '/dashboard/x%00.js', '/dashboard/..;/secret.txt',
    ]) {
      const res = await get(path);
      expect(res.status, path).toBe(404);
      expect(res.csp, path).toBe(DASHBOARD_CSP);
      expect(res.body, path).not.toContain('SECRET');
    }
  });
});

describe('activity counts under load', () => {
  it('200 sign-ups at once (20 of them a taken name): the overview counts exactly the ones that answered 200, once, after flushes racing each other', async () => {
    h = await harness();
    h.tollgate.services.stats.stop();
    const app = await h.createApp();
    const names = Array.from({ length: 200 }, (_, i) => (i < 20 ? 'same-name' : `user-${i}`));
    const answers = await Promise.all(names.map((username) => h.client(app, 'POST', '/sign_up', { username, password: 'correct horse battery' })));
    const created = answers.filter((r) => r.statusCode === 200).length;
    expect(answers.every((r) => [200, 422, 503].includes(r.statusCode)), answers.map((r) => r.statusCode).join(',')).toBe(true);
    expect(created).toBeGreaterThanOrEqual(181);
    await Promise.all(Array.from({ length: 5 }, () => h.tollgate.services.stats.flush()));
    await h.tollgate.services.stats.flush();
    const body = (await h.admin('GET', `/apps/${app.id}/stats`)).json();
    expect(body.series.reduce((n: number, b: { sign_ups: number }) => n + b.sign_ups, 0)).toBe(created);
  });
});

describe('the audit log names the operator', () => {
  it('every write an owner makes through the dashboard session is one or more audit entries, each with actor operator:<username>', async () => {
    h = await harness();
    const app = await h.createApp();
    const userId = await h.activeUser(app, 'customer');
    const victimOp = await makeOperator(h, 'temp', 'viewer');
    await makeOperator(h, 'boss', 'owner');
    const before = (await h.admin('GET', '/audit?with_total=true')).json().total as number;
    const s = await signIn(h, 'boss');
    const ok = async (method: 'POST' | 'PATCH' | 'PUT' | 'DELETE', url: string, body?: unknown) => {
      const res = await s.call(method, url, body);
      expect(res.statusCode, `${method} ${url}: ${res.body}`).toBeLessThan(300);
      return res.statusCode === 204 ? null : res.json();
    };
    const made = await ok('POST', '/apps', { name: 'Second' });
    await ok('PATCH', `/apps/${made.id}`, { name: 'Second!' });
    await ok('POST', `/apps/${made.id}/secret`);
    await ok('POST', `/apps/${app.id}/licenses`, { count: 2, minutes: 5, note: 'batch' });
    await ok('POST', `/apps/${app.id}/licenses/delete_unused`, { note: 'batch' });
    const ban = await ok('POST', `/apps/${app.id}/bans`, { type: 'ip', value: '198.51.100.9' });
    await ok('DELETE', `/apps/${app.id}/bans/${ban.id}`);
    await ok('PUT', `/apps/${app.id}/variables/motd`, { value: 'hi' });
    await ok('DELETE', `/apps/${app.id}/variables/motd`);
    const token = await ok('POST', '/tokens', { name: 'ci', role: 'viewer' });
    await ok('DELETE', `/tokens/${token.id}`);
    await ok('PATCH', `/apps/${app.id}/users/${userId}`, { extend_minutes: 60 });
    await ok('POST', `/apps/${app.id}/users/${userId}/reset-devices`);
    await ok('POST', `/apps/${app.id}/users/${userId}/revoke-sessions`);
    await ok('DELETE', `/apps/${app.id}/users/${userId}`);
    const op = await ok('POST', '/operators', { username: 'newbie', password: OPERATOR_PASSWORD, role: 'support' });
    await ok('PATCH', `/operators/${op.id}`, { role: 'viewer' });
    await ok('POST', `/operators/${op.id}/reset_totp`);
    await ok('DELETE', `/operators/${op.id}`);
    await ok('DELETE', `/operators/${victimOp}`);
    await ok('DELETE', `/apps/${made.id}?confirm=Second!`);
    const all = (await h.admin('GET', '/audit?limit=500&with_total=true')).json();
    const fresh = all.items.slice(0, all.total - before) as { actor: string; action: string }[];
    expect(fresh.length).toBeGreaterThanOrEqual(22); // the sign-in and the 21 writes
    expect(fresh.filter((e) => e.actor !== 'operator:boss').map((e) => `${e.action} by ${e.actor}`)).toEqual([]);
  });
});

describe('acting on oneself', () => {
  it('an admin cannot raise its own role or mint an owner token; the last owner cannot delete, demote or disable itself through its session', async () => {
    h = await harness();
    const adminId = await makeOperator(h, 'adm', 'admin');
    const ownerId = await makeOperator(h, 'own', 'owner');
    const adm = await signIn(h, 'adm');
    expectError(await adm.call('PATCH', `/operators/${adminId}`, { role: 'owner' }), 403, 'forbidden');
    expectError(await adm.call('POST', '/tokens', { name: 'up', role: 'owner' }), 403, 'forbidden');
    expect((await adm.call('POST', '/tokens', { name: 'same' })).json().role).toBe('admin');
    const own = await signIn(h, 'own');
    expectError(await own.call('DELETE', `/operators/${ownerId}`), 409, 'conflict');
    expectError(await own.call('PATCH', `/operators/${ownerId}`, { role: 'viewer' }), 409, 'conflict');
    expectError(await own.call('PATCH', `/operators/${ownerId}`, { disabled: true }), 409, 'conflict');
    expect((await own.call('GET', '/whoami')).json()).toEqual({ kind: 'operator', name: 'own', role: 'owner' });
  });
});

describe('login CSRF', () => {
  it('a cross-site form cannot sign a browser in to the attacker’s account: text/plain and urlencoded bodies are refused, no cookie is set', async () => {
    h = await harness();
    await makeOperator(h, 'attacker', 'viewer');
    for (const [type, payload] of [
      ['text/plain', JSON.stringify({ username: 'attacker', password: OPERATOR_PASSWORD })],
      ['application/x-www-form-urlencoded', `username=attacker&password=${encodeURIComponent(OPERATOR_PASSWORD)}`],
      ['multipart/form-data; boundary=x', `--x\r\nContent-Disposition: form-data; name="username"\r\n\r\nattacker\r\n--x--\r\n`],
    ]) {
      const res = await h.inject({ method: 'POST', url: '/admin/v1/session', headers: { 'content-type': type!, origin: 'https://evil.example' }, payload });
      expect(res.statusCode, `${type}: ${res.body}`).toBeGreaterThanOrEqual(400);
      expect(res.statusCode, type).toBeLessThan(500);
      expect(res.headers['set-cookie'], type).toBeUndefined();
    }
  });
});
