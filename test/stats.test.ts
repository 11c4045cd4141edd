import Database from '../src/store/sqlite-driver.js';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import type { StatsView } from '../src/domain/admin/stats.js';
import { FLUSH_INTERVAL_MS, MAX_PENDING } from '../src/domain/stats.js';
import { expectError, harness, PASSWORD, STORE, type Harness, type TestApp } from './helpers.js';

/**
 * GET /admin/v1/apps/:app_id/stats and the counters behind it (src/domain/stats.ts): each event
 * is counted in memory where it happens and reaches the database only when the counters are
 * flushed (a timer every few seconds, and on close). The tests flush by hand.
 */

const HOUR = 3_600_000;

/** The answer's shape, as the route declares it. */
type Stats = StatsView;

async function stats(h: Harness, app: TestApp, query = ''): Promise<Stats> {
  const res = await h.admin('GET', `/apps/${app.id}/stats${query}`);
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as Stats;
}

async function sql(h: Harness, text: string, params: (string | number)[] = []): Promise<number> {
  const [row] = await h.tollgate.services.store.db.all<{ n: number | string }>(text, params);
  return Number(row?.n);
}

const login = (h: Harness, app: TestApp, credentials: object, extra: object = {}) => h.client(app, 'POST', '/auth/login', { credentials, ...extra });
const totals = (s: Stats) => s.series.reduce(
  (t, b) => ({ sign_ups: t.sign_ups + b.sign_ups, logins: t.logins + b.logins, activations: t.activations + b.activations, failed_logins: t.failed_logins + b.failed_logins }),
  { sign_ups: 0, logins: 0, activations: 0, failed_logins: 0 },
);

describe('activity stats', () => {
  let h: Harness;
  let app: TestApp;
  beforeEach(async () => {
    h = await harness();
    h.tollgate.services.stats.stop(); // these tests flush by hand: a timer flush would blur what they check
    app = await h.createApp({ name: 'A' });
  });
  afterEach(async () => h.close());

  /** 3 sign-ups (one by license code), 2 activations, 2 logins, 3 failed logins (one a ban hit) in the first hour; 1 login in the next. */
  async function activity(): Promise<{ userBan: string }> {
    await h.signUp(app, 'alice');
    await h.activeUser(app, 'bob', PASSWORD, undefined, { minutes: 1_000_000 });
    const [code] = await h.licenses(app, { minutes: 1_000_000 });
    expect((await h.client(app, 'POST', '/sign_up_with_license_code', { code })).statusCode).toBe(200);
    await h.login(app, 'bob');
    expect((await login(h, app, { code })).statusCode).toBe(200);
    expect((await login(h, app, { username: 'bob', password: 'wrong password' })).statusCode).toBe(401);
    expect((await login(h, app, { username: 'nobody', password: PASSWORD })).statusCode).toBe(401);
    const carol = await h.activeUser(app, 'carol', PASSWORD, undefined, { minutes: 1_000_000 }); // sign-up 4, activation 3
    const userBan = await h.ban(app, 'user', carol);
    expectError(await login(h, app, { username: 'carol', password: PASSWORD }), 403, 'banned');
    // A malformed login is no attempt: not counted.
    expect((await login(h, app, { username: 'x' })).statusCode).toBe(422);
    h.clock.advance(HOUR);
    await h.login(app, 'bob');
    return { userBan };
  }

  it('counts each event where it happens, per hour, and writes nothing until the flush', async () => {
    const { userBan } = await activity();
    // Nothing on the request's path: the table is empty until the counters are flushed.
    expect(await sql(h, 'SELECT COUNT(*) AS n FROM activity_stats')).toBe(0);
    expect(await sql(h, 'SELECT COUNT(*) AS n FROM ban_hit_stats')).toBe(0);
    expect(totals(await stats(h, app))).toEqual({ sign_ups: 0, logins: 0, activations: 0, failed_logins: 0 });

    await h.tollgate.services.stats.flush();
    await h.licenses(app, { count: 2 }); // never used: the overview's unused count
    const s = await stats(h, app);
    expect(s.bucket).toBe('hour');
    expect(s.series).toHaveLength(24); // zero-filled: every hour of the default day
    expect(s.to).toBe('2026-01-01T02:00:00.000Z');
    expect(s.from).toBe('2025-12-31T02:00:00.000Z');
    const byHour = Object.fromEntries(s.series.filter((b) => b.sign_ups + b.logins + b.activations + b.failed_logins > 0).map((b) => [b.at, b]));
    expect(byHour).toEqual({
      '2026-01-01T00:00:00.000Z': { at: '2026-01-01T00:00:00.000Z', sign_ups: 4, logins: 2, activations: 3, failed_logins: 3, trials: 0 },
      '2026-01-01T01:00:00.000Z': { at: '2026-01-01T01:00:00.000Z', sign_ups: 0, logins: 1, activations: 0, failed_logins: 0, trials: 0 },
    });
    expect(s.top_ban_hits).toEqual([{ ban_id: userBan, type: 'user', value: expect.any(String), hits: 1 }]);
    // Counts of now, as the database has them.
    expect(s.active_memberships).toBe(3); // bob, carol and the license user (1,000,000 minutes each); alice never activated
    expect(s.licenses).toEqual({
      used: await sql(h, 'SELECT COUNT(*) AS n FROM licenses WHERE app_id = ? AND used_at IS NOT NULL', [app.id]),
      unused: await sql(h, 'SELECT COUNT(*) AS n FROM licenses WHERE app_id = ? AND used_at IS NULL', [app.id]),
    });
    expect(s.licenses).toEqual({ used: 3, unused: 2 });

    // By day: the same events in one UTC day, 30 days by default.
    const d = await stats(h, app, '?bucket=day');
    expect(d.series).toHaveLength(30);
    expect(d.series.at(-1)).toEqual({ at: '2026-01-01T00:00:00.000Z', sign_ups: 4, logins: 3, activations: 3, failed_logins: 3, trials: 0 });
    expect(totals(d)).toEqual({ sign_ups: 4, logins: 3, activations: 3, failed_logins: 3 });
  });

  it('flushes add up (as two nodes would), and from/to select the buckets', async () => {
    await activity();
    await h.tollgate.services.stats.flush();
    await h.login(app, 'bob');
    await h.login(app, 'bob');
    await h.tollgate.services.stats.flush();
    const s = await stats(h, app, '?from=2026-01-01T01:30:00Z&to=2026-01-01T01:45:00Z');
    expect(s.series).toEqual([{ at: '2026-01-01T01:00:00.000Z', sign_ups: 0, logins: 3, activations: 0, failed_logins: 0, trials: 0 }]);
    expect(s.top_ban_hits).toEqual([]); // the ban was hit in the hour before
    expect((await stats(h, app, '?from=2025-12-31T00:00:00Z&to=2026-01-01T00:00:00Z')).series.every((b) => b.logins === 0)).toBe(true);
  });

  it('ban hits: per ban, the narrowest of overlapping IP ranges, another app never counted', async () => {
    const other = await h.createApp({ name: 'B' });
    const wide = await h.ban(other, 'ip', '127.0.0.0/8');
    const narrow = await h.ban(other, 'ip', '127.0.0.1');
    const device = await h.ban(other, 'hardware_id', 'hw-banned');
    await h.ban(app, 'ip', '10.0.0.0/8'); // never hit
    for (let i = 0; i < 3; i++) expectError(await h.client(other, 'POST', '/sign_up', { username: `u${i}xx`, password: PASSWORD }), 403, 'banned');
    expect((await h.client(app, 'POST', '/sign_up', { username: 'fine', password: PASSWORD })).statusCode).toBe(200);
    const res = await h.inject({ method: 'POST', url: '/sign_up', headers: other.headers, payload: { username: 'elsewhere', password: PASSWORD, hardware_id: 'hw-banned' }, remoteAddress: '198.51.100.7' });
    expectError(res, 403, 'banned');
    await h.tollgate.services.stats.flush();

    const s = await stats(h, other);
    expect(s.top_ban_hits).toEqual([
      { ban_id: narrow, type: 'ip', value: '127.0.0.1', hits: 3 },
      { ban_id: device, type: 'hardware_id', value: 'hw-banned', hits: 1 },
    ]);
    expect(s.top_ban_hits.map((b) => b.ban_id)).not.toContain(wide);
    expect(totals(s).sign_ups).toBe(0);
    const a = await stats(h, app);
    expect(a.top_ban_hits).toEqual([]);
    expect(totals(a).sign_ups).toBe(1);

    // A deleted ban leaves the list; a deleted app's pending counts do not break the next flush.
    expect((await h.admin('DELETE', `/apps/${other.id}/bans/${narrow}`)).statusCode).toBe(204);
    expect((await stats(h, other)).top_ban_hits.map((b) => b.ban_id)).toEqual([device]);
    expectError(await h.client(other, 'POST', '/sign_up', { username: 'again', password: PASSWORD }), 403, 'banned');
    expect((await h.admin('DELETE', `/apps/${other.id}?confirm=B`)).statusCode).toBe(204);
    await h.login(app, 'fine').catch(() => undefined); // no membership: a failed login of app A
    await h.tollgate.services.stats.flush();
    expect(h.tollgate.services.stats.pending()).toBe(0);
    expect(totals(await stats(h, app)).failed_logins).toBe(1);
  });

  it('200 refused logins at once are 200 failed logins; flushes called at once add them once', async () => {
    await h.signUp(app, 'alice');
    const answers = await Promise.all(Array.from({ length: 200 }, () => login(h, app, { username: 'alice', password: 'wrong password' })));
    expect(answers.every((r) => r.statusCode === 401)).toBe(true);
    await Promise.all(Array.from({ length: 10 }, () => h.tollgate.services.stats.flush()));
    await h.tollgate.services.stats.flush();
    expect(totals(await stats(h, app))).toEqual({ sign_ups: 1, logins: 0, activations: 0, failed_logins: 200 });
  });

  it('garbage query parameters are 4xx, never 500', async () => {
    const base = `/apps/${app.id}/stats`;
    for (const query of ['?bucket=week', '?bucket=', '?from=yesterday', '?to=2026-13-01T00:00:00Z', '?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z',
      '?from=2025-01-01T00:00:00Z&to=2026-01-01T00:00:00Z', '?bucket=day&from=2020-01-01T00:00:00Z&to=2026-01-01T00:00:00Z', '?from=%00']) {
      const res = await h.admin('GET', base + query);
      expect(res.statusCode, `${query}: ${res.body}`).toBe(422);
      expect(res.json().code).toBe('validation_error');
    }
    expectError(await h.admin('GET', '/apps/00000000-0000-4000-8000-000000000000/stats'), 404, 'not_found');
    expectError(await h.admin('GET', '/apps/not-a-uuid/stats'), 422, 'validation_error');
    expect((await h.inject({ method: 'GET', url: `/admin/v1${base}` })).statusCode).toBe(401);
  });

  it('pending counts stay bounded while the store refuses them', async () => {
    const counted = h.tollgate.services.stats;
    await h.tollgate.services.store.db.run('ALTER TABLE activity_stats RENAME TO activity_stats_away');
    try {
      // One entry per (app, hour): more hours than the bound.
      for (let i = 0; i < MAX_PENDING + 500; i++) counted.count(app.id, 'logins', Date.UTC(2026, 0, 1) + i * HOUR);
      expect(counted.pending()).toBe(MAX_PENDING);
      await expect(counted.flush()).rejects.toThrow();
      expect(counted.pending()).toBe(MAX_PENDING);
    } finally {
      await h.tollgate.services.store.db.run('ALTER TABLE activity_stats_away RENAME TO activity_stats');
    }
    await counted.flush();
    expect(counted.pending()).toBe(0);
    expect(await sql(h, 'SELECT SUM(logins) AS n FROM activity_stats WHERE app_id = ?', [app.id])).toBe(MAX_PENDING);
  });
});

/**
 * The store refuses the flush (another process holds the lock past the timeout): nothing is lost,
 * the counts wait in memory and arrive with the next flush once the store is back.
 */
describe('a flush while the store is down', () => {
  let h: Harness;
  afterEach(async () => h.close());

  it.runIf(STORE === 'sqlite')('SQLite locked by another process: kept, then written once the lock is gone (SQLite project only)', async () => {
    h = await harness();
    h.tollgate.services.stats.stop();
    const app = await h.createApp();
    await h.activeUser(app, 'bob', PASSWORD, undefined, { minutes: 1_000_000 });
    await h.login(app, 'bob');
    const other = new Database(h.dbPath);
    try {
      other.exec('BEGIN IMMEDIATE');
      await expect(h.tollgate.services.stats.flush()).rejects.toThrow();
      // Counted meanwhile: a refused login writes nothing, so it does not wait for the lock.
      expect((await login(h, app, { username: 'bob', password: 'wrong password' })).statusCode).toBe(401);
    } finally {
      if (other.inTransaction) other.exec('ROLLBACK');
      other.close();
    }
    expect(await sql(h, 'SELECT COUNT(*) AS n FROM activity_stats')).toBe(0);
    await h.tollgate.services.stats.flush();
    expect(totals(await stats(h, app))).toEqual({ sign_ups: 1, logins: 1, activations: 1, failed_logins: 1 });
  }, 30_000);

  it.runIf(STORE === 'postgres')('PostgreSQL table locked past the statement timeout: kept, then written once the lock is gone (PostgreSQL project only)', async () => {
    h = await harness({ env: { PG_STATEMENT_TIMEOUT_MS: '300' } });
    h.tollgate.services.stats.stop();
    const app = await h.createApp();
    await h.activeUser(app, 'bob', PASSWORD, undefined, { minutes: 1_000_000 });
    await h.login(app, 'bob');
    const schema = (await h.tollgate.services.store.db.all<{ schema: string }>('SELECT current_schema() AS schema'))[0]!.schema;
    const locker = new pg.Client({ connectionString: inject('pgUrl')! });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query(`LOCK TABLE ${schema}.activity_stats IN ACCESS EXCLUSIVE MODE`);
      await expect(h.tollgate.services.stats.flush()).rejects.toThrow();
      expect((await login(h, app, { username: 'bob', password: 'wrong password' })).statusCode).toBe(401);
    } finally {
      await locker.query('ROLLBACK').catch(() => undefined);
      await locker.end();
    }
    expect(await sql(h, 'SELECT COUNT(*) AS n FROM activity_stats')).toBe(0);
    await h.tollgate.services.stats.flush();
    expect(totals(await stats(h, app))).toEqual({ sign_ups: 1, logins: 1, activations: 1, failed_logins: 1 });
  });
});

/** The server's own timer writes the counts every few seconds (FLUSH_INTERVAL_MS), with nobody flushing by hand. */
describe('the flush timer', () => {
  it('writes the counts by itself', async () => {
    const h = await harness();
    try {
      const app = await h.createApp();
      await h.signUp(app, 'alice');
      const deadline = Date.now() + FLUSH_INTERVAL_MS * 4;
      let written = 0;
      while (Date.now() < deadline && written === 0) {
        await new Promise((r) => setTimeout(r, 250));
        written = await sql(h, 'SELECT COUNT(*) AS n FROM activity_stats WHERE app_id = ?', [app.id]);
      }
      expect(written).toBe(1);
      expect(totals(await stats(h, app)).sign_ups).toBe(1);
    } finally {
      await h.close();
    }
  });
});

/** Closing the server writes what is still counted, before the database closes. */
describe('shutdown', () => {
  it('the last counts are written on close', async () => {
    const h = await harness();
    h.tollgate.services.stats.stop(); // only the close may write them
    const app = await h.createApp();
    await h.activeUser(app, 'bob', PASSWORD, undefined, { minutes: 1_000_000 });
    await h.login(app, 'bob');
    const appId = app.id;
    let read: () => Promise<number>;
    let done: () => Promise<void>;
    if (STORE === 'sqlite') {
      read = async () => {
        const db = new Database(h.dbPath, { readonly: true });
        try {
          return Number((db.prepare('SELECT SUM(sign_ups + logins + activations) AS n FROM activity_stats WHERE app_id = ?').get(appId) as { n: number }).n);
        } finally {
          db.close();
        }
      };
      done = async () => undefined;
    } else {
      const schema = (await h.tollgate.services.store.db.all<{ schema: string }>('SELECT current_schema() AS schema'))[0]!.schema;
      const client = new pg.Client({ connectionString: inject('pgUrl')! });
      await client.connect();
      read = async () => Number((await client.query(`SELECT SUM(sign_ups + logins + activations) AS n FROM ${schema}.activity_stats WHERE app_id = $1`, [appId])).rows[0].n);
      done = () => client.end();
    }
    try {
      expect(h.tollgate.services.stats.pending()).toBeGreaterThan(0);
      await h.tollgate.close();
      expect(await read()).toBe(3); // sign-up, activation, login
    } finally {
      await done();
      await h.close().catch(() => undefined);
    }
  });
});
