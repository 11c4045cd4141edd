import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config/index.js';
import { createTollgate, type Tollgate } from '../src/wiring.js';
import { UNSEALED_WARNING } from '../src/http/routes/meta.js';
import { ADMIN_TOKEN, fastHasher, PASSWORD, STORE, TestClock } from './helpers.js';
import { privateRedis, redisServerMissing, type PrivateRedis } from './private-redis.js';

/**
 * Issue 11, finding 5: Redis is an optional accelerator. Killed, refused or
 * frozen, each node counts on its own (never a 500, never a hang), logs one
 * warning when it goes and one line when it is back, and the nodes share
 * their counts again after. Two nodes on one SQLite file share nothing but
 * Redis, which isolates what is proven (the store is irrelevant: SQLite only).
 */
interface Node {
  t: Tollgate;
  lines: { level: number; msg: string }[];
  inject(opts: InjectOptions): Promise<LightMyRequestResponse>;
}

const WARN = 40;
const INFO = 30;
const WENT = /redis unreachable/;
const BACK = /redis is back/;

describe.skipIf(redisServerMissing || STORE !== 'sqlite')('Redis down, frozen and back (a private redis-server)', () => {
  let redis: PrivateRedis;
  let dir: string;
  const nodes: Node[] = [];
  const clock = new TestClock();

  beforeEach(async () => {
    redis = await privateRedis();
    dir = mkdtempSync(join(tmpdir(), 'tollgate-redis-'));
  });
  afterEach(async () => {
    for (const n of nodes.splice(0)) await n.t.close().catch(() => undefined);
    await redis.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  async function node(): Promise<Node> {
    const stream = new PassThrough();
    const lines: Node['lines'] = [];
    let partial = '';
    stream.on('data', (d: Buffer) => {
      const parts = (partial + d.toString()).split('\n');
      partial = parts.pop()!;
      for (const p of parts) if (p.trim()) lines.push(JSON.parse(p));
    });
    const config = loadConfig({
      DATABASE_URL: `sqlite:${join(dir, 'db.sqlite')}`, TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN, LOG_LEVEL: 'info', RATE_LIMIT: 'on', REDIS_URL: redis.url,
    });
    const t = await createTollgate(config, { clock: clock.now, hasher: fastHasher, logStream: stream });
    const n: Node = { t, lines, inject: (opts) => t.server.inject(opts) };
    nodes.push(n);
    return n;
  }

  async function appOn(n: Node): Promise<Record<string, string>> {
    const res = await n.inject({ method: 'POST', url: '/admin/v1/apps', headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: { name: 'redis' } });
    expect(res.statusCode, res.body).toBe(201);
    return { 'x-api-key': res.json().api_key, 'x-api-secret': res.json().api_secret };
  }

  const login = (n: Node, app: Record<string, string>, username: string, password: string, ip = '198.51.100.1') =>
    n.inject({ method: 'POST', url: '/auth/login', headers: app, payload: { credentials: { username, password } }, remoteAddress: ip });

  /** One request of each rate-limited kind; none may be a 500. */
  async function everyCountedRoute(n: Node, app: Record<string, string>, i: number): Promise<number[]> {
    const ip = `192.0.2.${i % 250}`;
    const answers = await Promise.all([
      login(n, app, `user${i % 4}`, `wrong-${i}`, ip),
      n.inject({ method: 'GET', url: '/app_context', headers: { ...app, 'x-api-username': `user${i % 4}`, 'x-api-password': `wrong-${i}` }, remoteAddress: ip }),
      n.inject({ method: 'POST', url: '/activate_license', headers: app, payload: { code: `NOPE-${i}`, username: 'someone', password: 'wrong-pw' }, remoteAddress: ip }),
      n.inject({ method: 'POST', url: '/sign_up_with_license_code', headers: app, payload: { code: `NOPE-${i}` }, remoteAddress: ip }),
      n.inject({ method: 'POST', url: '/sign_up', headers: app, payload: { username: `new${i}`, password: PASSWORD }, remoteAddress: ip }),
    ]);
    return answers.map((r) => r.statusCode);
  }

  async function until(what: () => boolean): Promise<void> {
    for (let i = 0; i < 150 && !what(); i++) await new Promise((r) => setTimeout(r, 100));
    expect(what()).toBe(true);
  }

  const count = (n: Node, level: number, re: RegExp) => n.lines.filter((l) => l.level === level && re.test(l.msg)).length;
  const limits = (n: Node) => n.t.services.limits;

  it('killed during a stream of requests: every answer is the usual one or 429, one warning; restarted: one line, counts shared again', async () => {
    const a = await node();
    const app = await appOn(a);
    const b = await node();
    expect(limits(a).status()).toBe('shared');

    const statuses: number[] = [];
    for (let i = 0; i < 30; i++) {
      if (i === 10) {
        // Killed while a batch is in flight.
        const inFlight = Promise.all(Array.from({ length: 10 }, (_, j) => everyCountedRoute(a, app, 100 + j)));
        await redis.kill();
        statuses.push(...(await inFlight).flat());
      }
      statuses.push(...(await everyCountedRoute(a, app, i)));
    }
    expect(new Set(statuses)).toEqual(new Set(statuses.filter((s) => [200, 401, 422, 429].includes(s))));
    expect(statuses).not.toContain(500);
    expect(limits(a).status()).toBe('local');
    expect(count(a, WARN, WENT)).toBe(1);
    // The optional accelerator being away takes no node out of a load balancer.
    const ready = await a.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(200);
    expect(ready.json()).toEqual({ status: 'ok', rate_limits: 'local', signing_key_seal: 'off', warnings: [UNSEALED_WARNING] });
    // The node still limits, on its own.
    // One address: failures count per (username, address).
    for (let i = 0; i < 10; i++) await login(a, app, 'mallory', `wrong-${i}`, '203.0.113.77');
    expect((await login(a, app, 'mallory', 'wrong-x', '203.0.113.77')).statusCode).toBe(429);

    await redis.start();
    await until(() => limits(a).status() === 'shared' && limits(b).status() === 'shared');
    expect((await a.inject({ method: 'GET', url: '/readyz' })).json()).toEqual({ status: 'ok', rate_limits: 'shared', signing_key_seal: 'off', warnings: [UNSEALED_WARNING] });
    expect(count(a, INFO, BACK)).toBe(1);
    expect(count(a, WARN, WENT)).toBe(1);
    // Shared again: failures on one node limit the other.
    for (let i = 0; i < 10; i++) expect((await login(b, app, 'trent', `wrong-${i}`, '203.0.113.78')).statusCode).toBe(401);
    expect((await login(a, app, 'trent', 'wrong-x', '203.0.113.78')).statusCode).toBe(429);
  });

  it('frozen (accepts connections, never answers): requests fall back instead of hanging; thawed: shared again', async () => {
    const a = await node();
    const app = await appOn(a);
    expect(limits(a).status()).toBe('shared');
    redis.freeze();
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) statuses.push(...(await everyCountedRoute(a, app, i)));
    statuses.push(...(await Promise.all(Array.from({ length: 20 }, (_, j) => everyCountedRoute(a, app, 50 + j)))).flat());
    expect(statuses).not.toContain(500);
    expect(statuses.every((s) => [200, 401, 422, 429].includes(s))).toBe(true);
    expect(limits(a).status()).toBe('local');
    expect(count(a, WARN, WENT)).toBe(1);

    redis.thaw();
    await until(() => limits(a).status() === 'shared');
    expect(count(a, INFO, BACK)).toBe(1);
    expect(count(a, WARN, WENT)).toBe(1);
  });

  it('unreachable at start: the node starts, counts on its own, says so once, and shares once Redis is up', async () => {
    await redis.kill();
    const a = await node();
    const app = await appOn(a);
    for (let i = 0; i < 3; i++) expect(await everyCountedRoute(a, app, i)).not.toContain(500);
    expect(limits(a).status()).toBe('local');
    expect(count(a, WARN, WENT)).toBe(1);
    await redis.start();
    await until(() => limits(a).status() === 'shared');
    expect(count(a, INFO, BACK)).toBe(1);
  });
});

describe('REDIS_TIMEOUT_MS', () => {
  it('defaults to 50 ms; a bad value stops the start naming the setting', () => {
    expect(loadConfig({}).redisTimeoutMs).toBe(50);
    expect(loadConfig({ REDIS_TIMEOUT_MS: '80' }).redisTimeoutMs).toBe(80);
    for (const bad of ['0', '-5', 'abc', '10001', '1.5']) {
      expect(() => loadConfig({ REDIS_TIMEOUT_MS: bad })).toThrow(ConfigError);
      expect(() => loadConfig({ REDIS_TIMEOUT_MS: bad })).toThrow(/REDIS_TIMEOUT_MS/);
    }
  });
});
