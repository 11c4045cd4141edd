import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Param } from '../src/store/db.js';
import { harness, PASSWORD, STORE, type Harness, type TestApp } from './helpers.js';

/**
 * The dashboard's lists, totals and overview must stay usable at 100,000 users and licenses: each
 * query they run on the per-app tables searches an index by app, never scans a table, and the
 * pages come out of the index in order (no sort of the whole app). The queries are the ones the
 * endpoints really run, captured from the store; each is explained on this store. PostgreSQL
 * plans a small table with a sequential scan and a sort whatever its indexes, so there the check is
 * made with enable_seqscan and enable_sort off: a Seq Scan or a Sort left in the plan means no index
 * could serve the query or give its order.
 */

const PER_APP_TABLES = ['licenses', 'users', 'bans', 'activations', 'activity_stats', 'ban_hit_stats'];

describe(`query plans of the dashboard's queries (${STORE})`, () => {
  let h: Harness;
  let app: TestApp;
  const captured = new Map<string, Param[]>();

  beforeAll(async () => {
    h = await harness();
    app = await h.createApp();
    const codes = await h.licenses(app, { count: 5, note: 'sale' });
    await h.signUp(app, 'alice');
    await h.signUp(app, 'bob');
    await h.client(app, 'POST', '/activate_license', { code: codes[0], username: 'alice', password: PASSWORD });
    await h.ban(app, 'ip', '10.0.0.1');
    await h.tollgate.services.stats.flush();
    const db = h.tollgate.services.store.db;
    const record = (sql: string, params: readonly Param[] = []) => {
      if (/^\s*(SELECT|WITH)\b/i.test(sql) && PER_APP_TABLES.some((t) => new RegExp(`\\b${t}\\b`).test(sql))) captured.set(sql, [...params]);
    };
    const { all, one } = db;
    db.all = ((sql: string, params?: readonly Param[]) => (record(sql, params), all.call(db, sql, params))) as typeof db.all;
    db.one = ((sql: string, params?: readonly Param[]) => (record(sql, params), one.call(db, sql, params))) as typeof db.one;
    const base = `/apps/${app.id}`;
    for (const url of [
      `${base}/licenses?with_total=true`, `${base}/licenses?with_total=true&used=false`, `${base}/licenses?with_total=true&used=true&created_from=2026-01-01T00:00:00Z`,
      `${base}/licenses?with_total=true&note=sale`, `${base}/users?with_total=true`, `${base}/users?with_total=true&q=ali`, `${base}/bans?with_total=true&type=ip`,
      `${base}/stats`, `${base}/stats?bucket=day`, `/audit?with_total=true&app_id=${app.id}`,
    ]) {
      const res = await h.admin('GET', url);
      expect(res.statusCode, `${url}: ${res.body}`).toBe(200);
    }
    // The second page of each list (its cursor condition).
    for (const list of ['licenses', 'users']) {
      const first = await h.admin('GET', `${base}/${list}?limit=1`);
      expect((await h.admin('GET', `${base}/${list}?limit=1&cursor=${first.json().next_cursor}`)).statusCode).toBe(200);
    }
    db.all = all;
    db.one = one;
    // What deleting a license cascades to (activations.license_id): each deleted license looks its activations up.
    captured.set('SELECT id FROM activations WHERE license_id = ?', ['x']);
  });
  afterAll(async () => h.close());

  async function plan(sql: string, params: Param[]): Promise<string[]> {
    const db = h.tollgate.services.store.db;
    if (STORE === 'sqlite') return (await db.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${sql}`, params)).map((r) => r.detail);
    return db.transaction(async (tx) => {
      await tx.run('SET LOCAL enable_seqscan = off');
      await tx.run('SET LOCAL enable_sort = off');
      return (await tx.all<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`, params)).map((r) => r['QUERY PLAN']);
    });
  }

  it('captured the queries of every endpoint', () => {
    expect(captured.size).toBeGreaterThanOrEqual(14);
  });

  it('every query on a per-app table searches an index; the lists need no sort', async () => {
    const bad: string[] = [];
    for (const [sql, params] of captured) {
      const lines = await plan(sql, params);
      const text = lines.join(' | ');
      const scans = STORE === 'sqlite'
        ? lines.filter((l) => PER_APP_TABLES.some((t) => new RegExp(`^SCAN ${t}\\b`).test(l)))
        : lines.filter((l) => /Seq Scan/.test(l));
      const sorted = /ORDER BY created_at|ORDER BY u\.created_at/.test(sql) && (STORE === 'sqlite' ? /USE TEMP B-TREE FOR ORDER BY/.test(text) : /\bSort\b/.test(text));
      if (scans.length || sorted) bad.push(`${sql.replace(/\s+/g, ' ').slice(0, 160)}\n    ${text}`);
    }
    expect(bad, bad.join('\n')).toEqual([]);
  });
});
