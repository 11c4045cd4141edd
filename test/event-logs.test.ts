import { afterEach, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, PASSWORD, harness, type Harness } from './helpers.js';
import { captureLog, fields, type LogCapture } from './log-capture.js';

/**
 * Issue 15: the events an operator follows, one info line each, with ids and
 * never a credential: sign-up, login failure (with its code), license
 * redeemed, device added, device limit hit, ban hit, admin write. Lines of
 * writes come after COMMIT: a refused write logs no success.
 */

const IP = '198.51.100.7';

describe('event lines', () => {
  let h: Harness | undefined;
  let log: LogCapture;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  async function start(): Promise<Harness> {
    log = captureLog();
    // The access log off: these tests look at the event lines alone.
    h = await harness({ env: { LOG_LEVEL: 'info', ACCESS_LOG: 'off' }, logStream: log.stream });
    return h;
  }

  /** The event lines written by `fn`, without time, pid and hostname. */
  async function during(fn: () => Promise<unknown>): Promise<Record<string, unknown>[]> {
    const before = log.lines.length;
    await fn();
    return log.lines.slice(before).map(fields);
  }

  const post = (t: Harness, app: { headers: Record<string, string> }, url: string, payload: object) =>
    t.inject({ method: 'POST', url, headers: app.headers, payload, remoteAddress: IP });

  it('sign-up with a device; login failures with their codes; a second device past the limit', async () => {
    const t = await start();
    const app = await t.createApp({ device_auth_enabled: true, max_devices_per_user: 1 });
    let userId = '';
    const signUp = await during(async () => {
      const res = await post(t, app, '/sign_up', { username: 'alice', password: PASSWORD, hardware_id: 'hw-one' });
      expect(res.statusCode).toBe(200);
      userId = res.json().id;
    });
    const device = expect.stringMatching(/^[0-9a-f-]{36}$/);
    expect(signUp).toEqual([
      { level: 30, msg: 'sign-up', event: 'sign_up', reqId: expect.any(String), appId: app.id, ip: IP, userId, via: 'password' },
      { level: 30, msg: 'device added', event: 'device_added', reqId: expect.any(String), appId: app.id, ip: IP, userId, deviceId: device },
    ]);
    expect(signUp[0]!.reqId).toBe(signUp[1]!.reqId);

    const wrong = await during(() => post(t, app, '/auth/login', { credentials: { username: 'alice', password: 'wrong password' }, hardware_id: 'hw-one' }));
    expect(wrong).toEqual([{ level: 40, msg: 'login failed', event: 'login_failed', reqId: expect.any(String), appId: app.id, ip: IP, code: 'invalid_credentials' }]);

    const otherDevice = await during(() => post(t, app, '/auth/login', { credentials: { username: 'alice', password: PASSWORD }, hardware_id: 'hw-two' }));
    expect(otherDevice).toEqual([
      { level: 30, msg: 'device limit hit', event: 'device_limit', reqId: expect.any(String), appId: app.id, ip: IP, userId, code: 'device_mismatch', maxDevices: 1 },
      { level: 40, msg: 'login failed', event: 'login_failed', reqId: expect.any(String), appId: app.id, ip: IP, code: 'device_mismatch' },
    ]);

    // A malformed request is not a login failure; a taken name is no sign-up.
    expect(await during(() => post(t, app, '/auth/login', { credentials: { username: 'alice' }, hardware_id: 'hw-one' }))).toEqual([]);
    expect(await during(() => post(t, app, '/sign_up', { username: 'alice', password: PASSWORD, hardware_id: 'hw-three' }))).toEqual([]);
  });

  it('a device added at login, then the limit of two reached (device_limit)', async () => {
    const t = await start();
    const app = await t.createApp({ device_auth_enabled: true, max_devices_per_user: 2 });
    const userId = await t.activeUser(app, 'carol', PASSWORD, 'hw-a');
    const second = await during(() => post(t, app, '/auth/login', { credentials: { username: 'carol', password: PASSWORD }, hardware_id: 'hw-b' }));
    expect(second).toEqual([{ level: 30, msg: 'device added', event: 'device_added', reqId: expect.any(String), appId: app.id, ip: IP, userId, deviceId: expect.any(String) }]);
    // A known device adds nothing.
    expect(await during(() => post(t, app, '/auth/login', { credentials: { username: 'carol', password: PASSWORD }, hardware_id: 'hw-a' }))).toEqual([]);
    const third = await during(() => t.inject({ method: 'GET', url: '/app_context', headers: { ...app.headers, 'x-api-username': 'carol', 'x-api-password': PASSWORD, 'x-hardware-id': 'hw-c' }, remoteAddress: IP }));
    expect(third).toEqual([{ level: 30, msg: 'device limit hit', event: 'device_limit', reqId: expect.any(String), appId: app.id, ip: IP, userId, code: 'device_limit', maxDevices: 2 }]);
  });

  it('license redeemed: by activation, and by a license sign-up (which is also a sign-up)', async () => {
    const t = await start();
    const app = await t.createApp();
    const userId = await t.signUp(app, 'dave');
    const first = await t.license(app);
    const activated = await during(() => post(t, app, '/activate_license', { code: first.code, username: 'dave', password: PASSWORD }));
    expect(activated).toEqual([{ level: 30, msg: 'license redeemed', event: 'license_redeemed', reqId: expect.any(String), appId: app.id, ip: IP, userId, licenseId: first.id }]);

    const second = await t.license(app);
    let created = '';
    const signedUp = await during(async () => {
      const res = await post(t, app, '/sign_up_with_license_code', { code: second.code });
      expect(res.statusCode).toBe(200);
      created = res.json().id;
    });
    expect(signedUp).toEqual([
      { level: 30, msg: 'sign-up', event: 'sign_up', reqId: expect.any(String), appId: app.id, ip: IP, userId: created, via: 'license' },
      { level: 30, msg: 'license redeemed', event: 'license_redeemed', reqId: expect.any(String), appId: app.id, ip: IP, userId: created, licenseId: second.id },
    ]);
    // Used already: a failure, no redemption line.
    expect(await during(() => post(t, app, '/activate_license', { code: first.code, username: 'dave', password: PASSWORD }))).toEqual([]);
    expect(log.text()).not.toContain(first.code);
    expect(log.text()).not.toContain(second.code);
  });

  it('ban hits name the kind of ban, never its value: IP, hardware id, user, license', async () => {
    const t = await start();
    const app = await t.createApp();
    const userId = await t.activeUser(app, 'erin');
    const code = (await t.license(app)).code;
    await t.ban(app, 'ip', '203.0.113.0/24');
    await t.ban(app, 'hardware_id', 'hw-banned-value');
    const ctx = (ip: string) => ({ reqId: expect.any(String), appId: app.id, ip });
    const hit = (ip: string, ban: string, user?: string) => ({ level: 30, msg: 'ban hit', event: 'ban_hit', ...ctx(ip), ban, ...(user && { userId: user }) });

    const byIp = await during(() => t.inject({ method: 'POST', url: '/sign_up', headers: app.headers, payload: { username: 'xavier', password: PASSWORD }, remoteAddress: '203.0.113.9' }));
    expect(byIp).toEqual([hit('203.0.113.9', 'ip')]);
    const byHw = await during(() => post(t, app, '/sign_up', { username: 'yvonne', password: PASSWORD, hardware_id: 'hw-banned-value' }));
    expect(byHw).toEqual([hit(IP, 'hardware_id')]);

    await t.ban(app, 'user', userId);
    const byUser = await during(() => post(t, app, '/auth/login', { credentials: { username: 'erin', password: PASSWORD } }));
    expect(byUser).toEqual([hit(IP, 'user', userId), { level: 40, msg: 'login failed', event: 'login_failed', ...ctx(IP), code: 'banned' }]);

    await t.ban(app, 'license', code);
    const licenseUser = await t.signUp(app, 'frank');
    const byLicense = await during(() => post(t, app, '/activate_license', { code, username: 'frank', password: PASSWORD }));
    expect(byLicense).toEqual([hit(IP, 'license', licenseUser)]);

    expect(log.text()).not.toContain('hw-banned-value');
    expect(log.text()).not.toContain(code);
  });

  it('admin writes: the audit entry (actor, action, app, target), never its details or a secret; reads log nothing', async () => {
    const t = await start();
    let app!: Awaited<ReturnType<Harness['createApp']>>;
    const created = await during(async () => {
      app = await t.createApp();
    });
    expect(created).toEqual([{ level: 30, msg: 'admin write', event: 'admin_write', reqId: expect.any(String), actor: 'env:TOLLGATE_ADMIN_TOKEN', action: 'app.create', appId: app.id, targetId: app.id }]);

    let secret = '';
    const rotated = await during(async () => {
      secret = (await t.admin('POST', `/apps/${app.id}/secret`)).json().api_secret;
    });
    expect(rotated).toEqual([{ level: 30, msg: 'admin write', event: 'admin_write', reqId: expect.any(String), actor: 'env:TOLLGATE_ADMIN_TOKEN', action: 'app.rotate_secret', appId: app.id, targetId: app.id }]);
    expect(secret).toMatch(/\S{20,}/);

    let codes: string[] = [];
    const licenses = await during(async () => {
      codes = await t.licenses(app, { count: 3 });
    });
    expect(licenses).toEqual([{ level: 30, msg: 'admin write', event: 'admin_write', reqId: expect.any(String), actor: 'env:TOLLGATE_ADMIN_TOKEN', action: 'licenses.create', appId: app.id }]);

    let token = '';
    const tokens = await during(async () => {
      const res = await t.admin('POST', '/tokens', { name: 'ci' });
      expect(res.statusCode).toBe(201);
      token = res.json().token;
    });
    expect(tokens).toEqual([{ level: 30, msg: 'admin write', event: 'admin_write', reqId: expect.any(String), actor: 'env:TOLLGATE_ADMIN_TOKEN', action: 'admin_token.create', targetId: expect.any(String) }]);

    expect(await during(() => t.admin('GET', `/apps/${app.id}/licenses`))).toEqual([]);
    // A refused write records nothing and logs nothing.
    expect(await during(() => t.admin('POST', `/apps/${app.id}/licenses`, { count: 0 }))).toEqual([]);

    const text = log.text();
    for (const s of [ADMIN_TOKEN, app.apiSecret, secret, token, ...codes]) expect(text, s).not.toContain(s);
  });

  it('admin_auth_failed at warn: a wrong token, a revoked token (with its id), a refused sign-in (the operator only when the account exists); never the token or password', async () => {
    const t = await start();
    const admin = (token: string) => t.inject({ method: 'GET', url: '/admin/v1/apps', headers: { authorization: `Bearer ${token}` }, remoteAddress: IP });
    const base = { level: 40, msg: 'admin authentication failed', event: 'admin_auth_failed', reqId: expect.any(String), ip: IP };

    expect(await during(() => admin('tg_adm_not-a-token-at-all-0123456789'))).toEqual([{ ...base, via: 'token', code: 'invalid_admin_token' }]);

    const minted = (await t.admin('POST', '/tokens', { name: 'old-ci' })).json();
    expect((await t.admin('DELETE', `/tokens/${minted.id}`)).statusCode).toBe(204);
    expect(await during(() => admin(minted.token))).toEqual([{ ...base, via: 'token', code: 'invalid_admin_token', tokenId: minted.id }]);

    expect((await t.admin('POST', '/operators', { username: 'olivia', password: 'operator password 0123', role: 'admin' })).statusCode).toBe(201);
    const signIn = (username: string, password: string) => t.inject({ method: 'POST', url: '/admin/v1/session', payload: { username, password }, remoteAddress: IP });
    expect(await during(() => signIn('olivia', 'wrong password 0123'))).toEqual([{ ...base, via: 'sign_in', code: 'invalid_credentials', operator: 'olivia' }]);
    expect(await during(() => signIn('my secret password', 'x'))).toEqual([{ ...base, via: 'sign_in', code: 'invalid_credentials' }]);
    // The right password: no failure line.
    expect((await during(() => signIn('olivia', 'operator password 0123'))).filter((l) => l.event === 'admin_auth_failed')).toEqual([]);

    const text = log.text();
    for (const s of [minted.token, 'tg_adm_not-a-token-at-all', 'wrong password 0123', 'my secret password']) expect(text, s).not.toContain(s);
  });
});
