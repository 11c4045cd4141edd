import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Param } from '../src/store/db.js';
import { harness, STORE, type Harness, writableStore } from './helpers.js';

/** The schema the migrations leave, on the store this project runs on (SQLite or PostgreSQL). */
describe('schema', () => {
  let h: Harness;
  beforeEach(async () => {
    h = await harness();
  });
  afterEach(() => h.close());

  const db = () => h.tollgate.services.store.db;

  async function indexesOf(table: string): Promise<string[]> {
    const rows = STORE === 'postgres'
      ? await db().all<{ name: string }>('SELECT indexname AS name FROM pg_indexes WHERE schemaname = current_schema() AND tablename = ?', [table])
      : await db().all<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ?", [table]);
    return rows.map((r) => r.name).sort();
  }

  it('every migration is recorded, in order', async () => {
    const rows = await db().all<{ version: number | string; name: string }>('SELECT version, name FROM schema_migrations ORDER BY version');
    // 10 was left unused when issue 22 needed none (docs/decisions.md); 11 the outbox, 12 sales in, 13 tiers, 14 seats,
    // 15 the end of the lease that holds a seat, 16 sale templates and the sale events' retention index.
    expect(rows.map((r) => Number(r.version))).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14, 15, 16]);
    expect(rows.at(-1)!.name).toBe('sale_templates');
  });

  it('sales: one row per delivered event id, one per store order; orders found by subscription and by payment', async () => {
    const indexes = await indexesOf('integration_orders');
    expect(indexes).toEqual(expect.arrayContaining(['integration_orders_subscription', 'integration_orders_payment']));
    const event = ['app', 'stripe', 'evt_1', 'checkout.session.completed', 'granted', null, 1] as Param[];
    await db().run("INSERT INTO apps (id, name, api_key, api_secret_hash, created_at, updated_at) VALUES ('app', 'A', 'k', 'h', 1, 1)");
    await db().run('INSERT INTO integration_events (app_id, provider, event_id, event_type, outcome, order_id, received_at) VALUES (?, ?, ?, ?, ?, ?, ?)', event);
    await expect(db().run('INSERT INTO integration_events (app_id, provider, event_id, event_type, outcome, order_id, received_at) VALUES (?, ?, ?, ?, ?, ?, ?)', event)).rejects.toThrow();
  });

  it('sessions keep one index by user: (user_id, created_at); the redundant (user_id) one is gone', async () => {
    const names = await indexesOf('sessions');
    expect(names).toContain('sessions_user_created');
    expect(names).not.toContain('sessions_user');
  });

  it.runIf(STORE === 'sqlite')('the lookups by user still search that index by user_id, never scan the table (SQLite project only: EXPLAIN QUERY PLAN is SQLite\'s)', async () => {
    const plans: [string, Param[]][] = [
      ['DELETE FROM sessions WHERE user_id = ?', ['u']],
      ['SELECT id FROM sessions WHERE user_id = ? AND expires_at > ? ORDER BY created_at', ['u', 1]],
      // sessions.trim, as src/store/repositories/sessions.ts runs it
      [
        `DELETE FROM sessions WHERE user_id = ? AND (expires_at <= ? OR id NOT IN (
           SELECT id FROM sessions WHERE user_id = ? ORDER BY created_at DESC, id DESC LIMIT ?))`,
        ['u', 1, 'u', 1],
      ],
    ];
    for (const [sql, params] of plans) {
      const rows = await db().all<{ detail: string }>(`EXPLAIN QUERY PLAN ${sql}`, params);
      const details = rows.map((r) => r.detail).filter((d) => /\bsessions\b/.test(d));
      expect(details.length, sql).toBeGreaterThan(0);
      for (const d of details) expect(d, sql).toMatch(/^SEARCH sessions USING (COVERING )?INDEX sessions_user_created \(user_id=\?/);
    }
  });

  it('logins, the per-user session cap and deleting a user\'s sessions still work without the dropped index', async () => {
    const app = await h.createApp();
    const capped = await h.admin('PATCH', `/apps/${app.id}`, { max_sessions_per_user: 1 });
    expect(capped.statusCode).toBe(200);
    const userId = await h.activeUser(app, 'indexed');
    const first = await h.login(app, 'indexed');
    h.clock.advance(1000);
    const second = await h.login(app, 'indexed');
    expect(first).not.toBe(second);
    // The cap of one ended the first session (sessions.trim); the second is the only one left.
    expect((await h.client(app, 'GET', '/app_context', undefined, { authorization: `Bearer ${first}` })).statusCode).toBe(401);
    expect((await h.client(app, 'GET', '/app_context', undefined, { authorization: `Bearer ${second}` })).statusCode).toBe(200);
    expect(await writableStore(h.tollgate.services).sessions.deleteForUser(userId)).toBe(1);
  });
});
