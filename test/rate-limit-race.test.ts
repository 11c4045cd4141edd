import type { LightMyRequestResponse } from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { harness, PASSWORD, STORE, type Harness, type TestApp } from './helpers.js';
import { privateRedis, redisServerMissing, type PrivateRedis } from './private-redis.js';

/**
 * Issue 11, finding 6: limits count attempts, not outcomes. An attempt takes
 * its place in the window before the password or code is checked, so N
 * parallel guesses never get more checks than the limit (10 per username or
 * code, 30 per IP by default): on the store's own counters (memory with
 * SQLite, the database with PostgreSQL) and through Redis.
 */
const PARALLEL = 200;
const PER_IDENTITY = 10;
const PER_IP = 30;
/** The per-username ceiling across addresses: 10 × the per-(username, address) limit. */
const CEILING = 100;

/** Counts the password checks that really run (argon2 verifications). */
function countChecks(h: Harness): { count: number } {
  const s = h.tollgate.services;
  const inner = s.hasher;
  const checks = { count: 0 };
  s.hasher = {
    hash: (password) => inner.hash(password),
    verify: (hash, password) => {
      checks.count++;
      return inner.verify(hash, password);
    },
  };
  return checks;
}

function tally(responses: LightMyRequestResponse[]): Record<number, number> {
  const by: Record<number, number> = {};
  for (const r of responses) by[r.statusCode] = (by[r.statusCode] ?? 0) + 1;
  return by;
}

/** Every answer is the check's own refusal or a 429, never more of the former than the limit. */
function expectAtMost(responses: LightMyRequestResponse[], refused: number, limit: number): void {
  const by = tally(responses);
  expect(Object.keys(by).map(Number).sort(), JSON.stringify(by)).toEqual([refused, 429].filter((s) => by[s]).sort());
  expect(by[refused] ?? 0, JSON.stringify(by)).toBeLessThanOrEqual(limit);
  expect(by[refused] ?? 0, JSON.stringify(by)).toBeGreaterThan(0);
  for (const r of responses.filter((x) => x.statusCode === 429)) expect(r.json().code).toBe('rate_limited');
}

const parallel = (n: number, f: (i: number) => Promise<LightMyRequestResponse>) => Promise.all(Array.from({ length: n }, (_, i) => f(i)));

function raceTests(env: () => Record<string, string>): void {
  let h: Harness;
  let app: TestApp;
  const ip = '203.0.113.44';
  afterEach(async () => h?.close());

  async function setUp(): Promise<void> {
    h = await harness({ env: { RATE_LIMIT: 'on', ...env() } });
    app = await h.createApp();
  }
  const post = (url: string, payload: object, remoteAddress = ip) => h.inject({ method: 'POST', url, headers: app.headers, payload, remoteAddress });

  it(`${PARALLEL} parallel wrong-password logins for one username from address A: at most ${PER_IDENTITY} password checks, the rest 429; the right password then works from B, not from A`, async () => {
    await setUp();
    await h.activeUser(app, 'alice');
    const checks = countChecks(h);
    const answers = await parallel(PARALLEL, (i) => post('/auth/login', { credentials: { username: 'alice', password: `wrong-${i}` } }));
    expectAtMost(answers, 401, PER_IDENTITY);
    expect(checks.count).toBeLessThanOrEqual(PER_IDENTITY);
    // The stranger cannot lock the owner out: the owner's address has its own count.
    const owner = await post('/auth/login', { credentials: { username: 'alice', password: PASSWORD } }, '192.0.2.20');
    expect(owner.statusCode, owner.body).toBe(200);
    // The failures that did run are counted: from A the right password is refused for the rest of the window.
    expect((await post('/auth/login', { credentials: { username: 'alice', password: PASSWORD } })).statusCode).toBe(429);
  });

  it(`${PARALLEL} parallel wrong-password logins for one username from ${PARALLEL} addresses: at most the ceiling (${CEILING}) checked, then the username is refused everywhere`, async () => {
    await setUp();
    await h.activeUser(app, 'ann');
    const checks = countChecks(h);
    const answers = await parallel(PARALLEL, (i) => post('/auth/login', { credentials: { username: 'ann', password: `wrong-${i}` } }, `198.51.${i % 250}.9`));
    expectAtMost(answers, 401, CEILING);
    expect(checks.count).toBeLessThanOrEqual(CEILING);
    const failures = answers.filter((r) => r.statusCode === 401).length;
    // Every place that was checked is a counted failure: once they reach the ceiling a fresh address is refused too.
    if (failures === CEILING) expect((await post('/auth/login', { credentials: { username: 'ann', password: PASSWORD } }, '192.0.2.21')).statusCode).toBe(429);
    else expect(answers.filter((r) => r.statusCode === 429).every((r) => r.headers['retry-after'] === '1')).toBe(true);
  });

  it('legacy username/password headers on /app_context: the same bound per address', async () => {
    await setUp();
    await h.activeUser(app, 'bob');
    const checks = countChecks(h);
    const answers = await parallel(PARALLEL, (i) =>
      h.inject({ method: 'GET', url: '/app_context', headers: { ...app.headers, 'x-api-username': 'bob', 'x-api-password': `wrong-${i}` }, remoteAddress: ip }));
    expectAtMost(answers, 401, PER_IDENTITY);
    expect(checks.count).toBeLessThanOrEqual(PER_IDENTITY);
    const owner = await h.inject({ method: 'GET', url: '/app_context', headers: { ...app.headers, 'x-api-username': 'bob', 'x-api-password': PASSWORD }, remoteAddress: '192.0.2.22' });
    expect(owner.statusCode, owner.body).toBe(200);
  });

  it('a burst of one client’s right legacy credentials, larger than the limit, shares one verification: none refused', async () => {
    await setUp();
    await h.activeUser(app, 'bea');
    const checks = countChecks(h);
    const answers = await parallel(PARALLEL, () =>
      h.inject({ method: 'GET', url: '/app_context', headers: { ...app.headers, 'x-api-username': 'bea', 'x-api-password': PASSWORD }, remoteAddress: ip }));
    expect(tally(answers)).toEqual({ 200: PARALLEL });
    expect(checks.count).toBe(1);
  });

  it('activation with a wrong password: the same bound', async () => {
    await setUp();
    await h.signUp(app, 'carol');
    const [code] = await h.licenses(app);
    const checks = countChecks(h);
    const answers = await parallel(PARALLEL, (i) => post('/activate_license', { code, username: 'carol', password: `wrong-${i}` }, `198.51.100.${i % 250}`));
    expectAtMost(answers, 401, PER_IDENTITY);
    expect(checks.count).toBeLessThanOrEqual(PER_IDENTITY);
  });

  it(`guessed license codes from one IP (login, legacy header, sign-up): at most ${PER_IP} checks each`, async () => {
    await setUp();
    // Sign-ups have their own, lower per-IP allowance; lift it so the failure limit is what is measured.
    await h.admin('PATCH', `/apps/${app.id}`, { rate_signups_per_ip: 10_000 });
    expectAtMost(await parallel(PARALLEL, (i) => post('/auth/login', { credentials: { code: `GUESS-A-${i}` } })), 401, PER_IP);
    h.clock.minutes(5); // the next window
    expectAtMost(await parallel(PARALLEL, (i) => h.inject({ method: 'GET', url: '/app_context', headers: { ...app.headers, 'x-api-license-code': `GUESS-B-${i}` }, remoteAddress: ip })), 401, PER_IP);
    h.clock.minutes(5);
    expectAtMost(await parallel(PARALLEL, (i) => post('/sign_up_with_license_code', { code: `GUESS-C-${i}` })), 422, PER_IP);
  });

  it('a success gives its place back: limit + 5 right logins in a row are never refused, and the failures still count', async () => {
    await setUp();
    await h.activeUser(app, 'dave');
    for (let i = 0; i < PER_IDENTITY + 5; i++) expect((await post('/auth/login', { credentials: { username: 'dave', password: PASSWORD } })).statusCode).toBe(200);
    for (let i = 0; i < PER_IDENTITY; i++) expect((await post('/auth/login', { credentials: { username: 'dave', password: `nope-${i}` } }, '198.51.100.9')).statusCode).toBe(401);
    expect((await post('/auth/login', { credentials: { username: 'dave', password: PASSWORD } }, '198.51.100.9')).statusCode).toBe(429);
  });

  it('a refused 429 and a request that ends before the check (shape, ban) take no place', async () => {
    await setUp();
    await h.activeUser(app, 'erin');
    await h.admin('PATCH', `/apps/${app.id}`, { rate_failures_per_identity: 2 });
    await h.ban(app, 'ip', '192.0.2.66');
    for (let i = 0; i < 20; i++) {
      expect((await post('/auth/login', { credentials: { username: 'erin', password: 'x'.repeat(5000) } })).statusCode).toBe(422);
      expect((await post('/auth/login', { credentials: { username: 'erin', password: `wrong-${i}` } }, '192.0.2.66')).statusCode).toBe(403);
    }
    expect((await post('/auth/login', { credentials: { username: 'erin', password: 'wrong-1' } })).statusCode).toBe(401);
    expect((await post('/auth/login', { credentials: { username: 'erin', password: PASSWORD } })).statusCode).toBe(200);
    expect((await post('/auth/login', { credentials: { username: 'erin', password: 'wrong-2' } })).statusCode).toBe(401);
    for (let i = 0; i < 5; i++) expect((await post('/auth/login', { credentials: { username: 'erin', password: PASSWORD } })).statusCode).toBe(429);
    h.clock.minutes(15);
    expect((await post('/auth/login', { credentials: { username: 'erin', password: PASSWORD } })).statusCode).toBe(200);
  });
}

describe(`parallel attempts on the store's counters (${STORE === 'sqlite' ? 'memory' : 'PostgreSQL'})`, () => {
  raceTests(() => ({}));
});

describe.skipIf(redisServerMissing)(`parallel attempts through Redis (a private redis-server)${redisServerMissing ? ' (redis-server is not installed)' : ''}`, () => {
  let redis: PrivateRedis;
  beforeAll(async () => {
    redis = await privateRedis();
  });
  afterAll(async () => redis?.stop());
  raceTests(() => ({ REDIS_URL: redis.url }));
});
