import { afterEach, describe, expect, it } from 'vitest';
import { prettyLine } from '../src/http/log-output.js';
import { ADMIN_TOKEN, PASSWORD, harness, type Harness } from './helpers.js';
import { captureLog, fields, type LogCapture } from './log-capture.js';

/**
 * Issue 15: at LOG_LEVEL=info an operator saw only "Server listening". The
 * access log writes one info line per request: method, route pattern, status,
 * duration, client IP, app id and the error code, and never a credential
 * (headers, query values, bodies). ACCESS_LOG=off writes none; LOG_FORMAT=pretty
 * writes the same lines as text for people.
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('the access log', () => {
  let h: Harness | undefined;
  let log: LogCapture;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  async function start(env: Record<string, string> = {}, parse = true): Promise<Harness> {
    log = captureLog(parse);
    h = await harness({ env: { LOG_LEVEL: 'info', ...env }, logStream: log.stream });
    return h;
  }

  const requests = () => log.named('request');

  it('one line per request: method, route, status, ms, client IP and app id; an error answer adds its code', async () => {
    const t = await start();
    const app = await t.createApp();
    await t.activeUser(app, 'alice');
    const token = await t.login(app, 'alice');
    const before = requests().length;

    const ok = await t.inject({ method: 'GET', url: '/app_context', headers: { ...app.headers, authorization: `Bearer ${token}` }, remoteAddress: '198.51.100.20' });
    expect(ok.statusCode).toBe(200);
    const refused = await t.inject({ method: 'POST', url: '/auth/login', headers: app.headers, payload: { credentials: { username: 'alice', password: 'wrong password' } }, remoteAddress: '198.51.100.21' });
    expect(refused.statusCode).toBe(401);
    const badApp = await t.inject({ method: 'GET', url: '/app_context', headers: { 'x-api-key': app.apiKey, 'x-api-secret': 'not the secret' }, remoteAddress: '198.51.100.22' });
    expect(badApp.statusCode).toBe(401);

    const lines = requests().slice(before);
    expect(lines.map(fields)).toEqual([
      { level: 30, msg: 'request', reqId: expect.any(String), method: 'GET', route: '/app_context', status: 200, ms: expect.any(Number), ip: '198.51.100.20', appId: app.id },
      { level: 30, msg: 'request', reqId: expect.any(String), method: 'POST', route: '/auth/login', status: 401, ms: expect.any(Number), ip: '198.51.100.21', appId: app.id, code: 'invalid_credentials' },
      // The app's credentials were refused: no app id (and never its key).
      { level: 30, msg: 'request', reqId: expect.any(String), method: 'GET', route: '/app_context', status: 401, ms: expect.any(Number), ip: '198.51.100.22', code: 'invalid_app_credentials' },
    ]);
    expect(new Set(lines.map((l) => l.reqId)).size).toBe(3);
    for (const line of lines) expect(line.ms as number).toBeGreaterThanOrEqual(0);
  });

  it('admin routes are logged by their pattern with the app they name; an unmatched path is "unmatched" with its path, never its query, cut to 200 characters', async () => {
    const t = await start();
    const app = await t.createApp();
    const before = requests().length;
    expect((await t.admin('GET', `/apps/${app.id}?cursor=QUERY-SECRET-1`)).statusCode).toBe(200);
    expect((await t.admin('GET', '/apps/not-an-id')).statusCode).toBe(422);
    expect((await t.inject({ method: 'GET', url: '/no/such/path?token=QUERY-SECRET-3' })).statusCode).toBe(404);
    expect((await t.inject({ method: 'GET', url: `/${'a'.repeat(5000)}?QUERY-SECRET-4` })).statusCode).toBe(404);

    expect(requests().slice(before).map(fields)).toEqual([
      { level: 30, msg: 'request', reqId: expect.any(String), method: 'GET', route: '/admin/v1/apps/:app_id', status: 200, ms: expect.any(Number), ip: '127.0.0.1', appId: app.id },
      { level: 30, msg: 'request', reqId: expect.any(String), method: 'GET', route: '/admin/v1/apps/:app_id', status: 422, ms: expect.any(Number), ip: '127.0.0.1', code: 'validation_error' },
      { level: 30, msg: 'request', reqId: expect.any(String), method: 'GET', route: 'unmatched', path: '/no/such/path', status: 404, ms: expect.any(Number), ip: '127.0.0.1', code: 'not_found' },
      { level: 30, msg: 'request', reqId: expect.any(String), method: 'GET', route: 'unmatched', path: `/${'a'.repeat(199)}…`, status: 404, ms: expect.any(Number), ip: '127.0.0.1', code: 'not_found' },
    ]);
    expect(log.text()).not.toMatch(/SECRET/);
  });

  it('200 requests at once: 200 lines, one per request id, each with its own status', async () => {
    const t = await start();
    const app = await t.createApp({ anonymous_access_allowed: true });
    const before = requests().length;
    const answers = await Promise.all(Array.from({ length: 200 }, (_, i) =>
      i % 2 === 0
        ? t.inject({ method: 'GET', url: '/app_context', headers: app.headers, remoteAddress: `192.0.2.${i % 250}` })
        : t.inject({ method: 'GET', url: '/app_context', headers: { ...app.headers, 'x-api-secret': 'wrong' }, remoteAddress: `192.0.2.${i % 250}` })));
    const lines = requests().slice(before);
    expect(lines).toHaveLength(200);
    expect(new Set(lines.map((l) => l.reqId)).size).toBe(200);
    expect(lines.filter((l) => l.status === 200 && l.appId === app.id && l.code === undefined)).toHaveLength(answers.filter((a) => a.statusCode === 200).length);
    expect(lines.filter((l) => l.status === 401 && l.code === 'invalid_app_credentials' && l.appId === undefined)).toHaveLength(100);
  });

  it('the client IP is the one the server trusts: X-Forwarded-For from TRUST_PROXY only', async () => {
    const t = await start({ TRUST_PROXY: '10.0.0.1' });
    const app = await t.createApp();
    const before = requests().length;
    await t.inject({ method: 'GET', url: '/app_context', headers: { ...app.headers, 'x-forwarded-for': '203.0.113.50' }, remoteAddress: '10.0.0.1' });
    await t.inject({ method: 'GET', url: '/app_context', headers: { ...app.headers, 'x-forwarded-for': '203.0.113.51' }, remoteAddress: '192.0.2.9' });
    expect(requests().slice(before).map((l) => l.ip)).toEqual(['203.0.113.50', '192.0.2.9']);
  });

  it('no password, token, secret, license code, username or hardware id reaches the log, whatever carried it', async () => {
    const t = await start();
    const app = await t.createApp({ device_auth_enabled: true });
    const [code] = await t.licenses(app);
    const [code2] = await t.licenses(app);
    const hw = 'hw-SECRET-device-7';
    const user = 'logme_SECRET_name';
    await t.signUp(app, user, PASSWORD, hw);
    await t.client(app, 'POST', '/activate_license', { code, username: user, password: PASSWORD, hardware_id: hw });
    const token = await t.login(app, user, PASSWORD, hw);
    await t.client(app, 'POST', '/auth/login', { credentials: { username: user, password: 'wrong SECRET password' }, hardware_id: hw });
    await t.client(app, 'GET', '/app_context', undefined, { 'x-api-username': user, 'x-api-password': PASSWORD, 'x-hardware-id': hw });
    await t.client(app, 'GET', `/app_context?password=${encodeURIComponent(PASSWORD)}`, undefined, { authorization: `Bearer ${token}`, 'x-hardware-id': hw });
    await t.client(app, 'POST', '/sign_up_with_license_code', { code: code2, hardware_id: hw });
    await t.client(app, 'GET', '/app_context', undefined, { 'x-api-license-code': code2!, 'x-hardware-id': hw });
    await t.client(app, 'POST', '/auth/logout', undefined, { authorization: `Bearer ${token}` });
    await t.ban(app, 'hardware_id', hw);
    await t.ban(app, 'license', code2!);

    expect(requests().length).toBeGreaterThanOrEqual(14);
    const text = log.text();
    for (const secret of [ADMIN_TOKEN, app.apiSecret, app.apiKey, PASSWORD, 'wrong SECRET password', token, code!, code2!, hw, user]) {
      expect(text, secret).not.toContain(secret);
    }
  });

  it('ACCESS_LOG=off: no request line at all, the event lines still', async () => {
    const t = await start({ ACCESS_LOG: 'off' });
    const app = await t.createApp();
    await t.signUp(app, 'bob');
    await t.client(app, 'POST', '/auth/login', { credentials: { username: 'bob', password: 'wrong password' } });
    await t.inject({ method: 'GET', url: '/healthz' });
    expect(requests()).toEqual([]);
    expect(log.named('sign-up')).toHaveLength(1);
    expect(log.named('login failed')).toHaveLength(1);
  });

  it('LOG_LEVEL=warn: no request line (the hooks are not even registered)', async () => {
    const t = await start({ LOG_LEVEL: 'warn' });
    const app = await t.createApp();
    await t.client(app, 'GET', '/app_context');
    expect(requests()).toEqual([]);
    expect(log.lines.filter((l) => l.level < 40)).toEqual([]);
  });

  it('LOG_FORMAT=pretty: the same lines as readable text, one per entry', async () => {
    const t = await start({ LOG_FORMAT: 'pretty' }, false);
    const app = await t.createApp({ anonymous_access_allowed: true });
    await t.client(app, 'GET', '/app_context');
    await t.client(app, 'POST', '/auth/login', { credentials: { username: 'nobody', password: 'wrong password' } });
    const lines = log.text().split('\n').filter(Boolean);
    for (const line of lines) expect(() => JSON.parse(line)).toThrow();
    const iso = '\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z';
    const id = '[0-9a-f-]{36}';
    expect(lines).toContainEqual(expect.stringMatching(new RegExp(`^${iso} INFO  request reqId=req-[0-9a-z]+ method=GET route=/app_context status=200 ms=[\\d.]+ ip=127\\.0\\.0\\.1 appId=${id}$`)));
    expect(lines).toContainEqual(expect.stringMatching(new RegExp(`^${iso} WARN  login failed event=login_failed reqId=req-[0-9a-z]+ appId=${id} ip=127\\.0\\.0\\.1 code=invalid_credentials$`)));
    expect(lines).toContainEqual(expect.stringMatching(new RegExp(`^${iso} INFO  request reqId=req-[0-9a-z]+ method=POST route=/auth/login status=401 ms=[\\d.]+ ip=127\\.0\\.0\\.1 appId=${id} code=invalid_credentials$`)));
    expect(lines.filter((l) => / INFO {2}request /.test(l))).toHaveLength(3);
    expect(app.id).toMatch(UUID);
  });
});

describe('prettyLine', () => {
  it('time, level, message, then the fields; strings with spaces quoted; an error with its stack on indented lines', () => {
    const line = JSON.stringify({
      level: 50, time: Date.UTC(2026, 10, 23, 17, 5, 12, 345), pid: 1, hostname: 'h', reqId: 'req-7', cause: 'disk full (SQLITE_FULL)', n: 3, ok: false,
      err: { type: 'Error', message: 'boom here', stack: 'Error: boom here\n    at x (y.js:1:1)' }, msg: 'unhandled error',
    });
    expect(prettyLine(line)).toBe(
      '2026-11-23T17:05:12.345Z ERROR unhandled error reqId=req-7 cause="disk full (SQLITE_FULL)" n=3 ok=false err="boom here"\n' +
        '    Error: boom here\n        at x (y.js:1:1)\n',
    );
  });

  it('a line that is not JSON passes through unchanged', () => {
    expect(prettyLine('plain text\n')).toBe('plain text\n');
  });
});
