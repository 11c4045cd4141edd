import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { expectError, harness, type Harness, type TestApp } from './helpers.js';

/**
 * ?with_total=true on the paged admin lists (dashboard contract, /work/notes/DASHBOARD-API.md "Data"):
 * `total` is every row matching the same filters, counted by the database; without the parameter
 * the answer is exactly as before (no `total` key).
 */

async function sql(h: Harness, text: string, params: (string | number)[] = []): Promise<number> {
  const [row] = await h.tollgate.services.store.db.all<{ n: number | string }>(text, params);
  return Number(row?.n);
}

/** Reads every page and the total of the first; the total must equal what the pages hold. */
async function totalAndWalk(h: Harness, path: string): Promise<{ total: number; seen: number }> {
  const sep = path.includes('?') ? '&' : '?';
  let cursor: string | null = null;
  let seen = 0;
  let total = -1;
  for (let i = 0; i < 1000; i++) {
    const res = await h.admin('GET', `${path}${sep}with_total=true&limit=7${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json() as { items: unknown[]; next_cursor: string | null; total: number };
    expect(typeof body.total, `${path}: total on every page`).toBe('number');
    if (total === -1) total = body.total;
    expect(body.total).toBe(total);
    seen += body.items.length;
    if (body.next_cursor === null) return { total, seen };
    cursor = body.next_cursor;
  }
  throw new Error('pagination did not end');
}

describe('?with_total=true', () => {
  let h: Harness;
  let app: TestApp;
  let other: TestApp;
  beforeEach(async () => {
    h = await harness();
    app = await h.createApp({ name: 'A' });
    other = await h.createApp({ name: 'B' });
  });
  afterEach(async () => h.close());

  it('licenses: total equals the real count for each filter, never another app’s', async () => {
    await h.licenses(app, { count: 23, minutes: 60, note: 'Black Friday' });
    h.clock.minutes(10);
    await h.licenses(app, { count: 11, minutes: 60, note: 'press-1' });
    await h.licenses(other, { count: 5, minutes: 60, note: 'Black Friday' });
    for (const name of ['user1', 'user2', 'user3']) await h.activeUser(app, name); // each redeems one new license without a note
    const cases: [string, number][] = [
      ['', await sql(h, 'SELECT COUNT(*) AS n FROM licenses WHERE app_id = ?', [app.id])],
      ['?used=true', await sql(h, 'SELECT COUNT(*) AS n FROM licenses WHERE app_id = ? AND used_at IS NOT NULL', [app.id])],
      ['?used=false', await sql(h, 'SELECT COUNT(*) AS n FROM licenses WHERE app_id = ? AND used_at IS NULL', [app.id])],
      ['?note=friday', 23],
      ['?q=PRESS-1', 11], // no 1 in the code alphabet: only notes match,
      [`?created_to=${encodeURIComponent(new Date(h.clock.ms - 5 * 60_000).toISOString())}`, 23],
    ];
    expect(cases[0]![1]).toBe(37);
    expect(cases[1]![1]).toBe(3);
    for (const [query, expected] of cases) {
      const { total, seen } = await totalAndWalk(h, `/apps/${app.id}/licenses${query}`);
      expect(total, query).toBe(expected);
      expect(seen, query).toBe(expected);
    }
  });

  it('users: total with and without a search', async () => {
    for (const name of ['alice', 'Alicia', 'bob', 'carol']) await h.signUp(app, name);
    await h.signUp(other, 'alice');
    expect((await totalAndWalk(h, `/apps/${app.id}/users`)).total).toBe(4);
    expect(await totalAndWalk(h, `/apps/${app.id}/users?q=ALI`)).toEqual({ total: 2, seen: 2 });
    expect(await totalAndWalk(h, `/apps/${app.id}/users?q=nobody`)).toEqual({ total: 0, seen: 0 });
  });

  it('bans: total by type', async () => {
    for (let i = 1; i <= 9; i++) await h.ban(app, 'ip', `10.0.0.${i}`);
    await h.ban(app, 'hardware_id', 'hw-1');
    await h.ban(other, 'ip', '10.0.0.1');
    expect(await totalAndWalk(h, `/apps/${app.id}/bans`)).toEqual({ total: 10, seen: 10 });
    expect(await totalAndWalk(h, `/apps/${app.id}/bans?type=ip`)).toEqual({ total: 9, seen: 9 });
    expect(await totalAndWalk(h, `/apps/${app.id}/bans?type=user`)).toEqual({ total: 0, seen: 0 });
  });

  it('tokens: total counts revoked tokens too, as the list shows them', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) ids.push((await h.admin('POST', '/tokens', { name: `t${i}` })).json().id);
    expect((await h.admin('DELETE', `/tokens/${ids[0]}`)).statusCode).toBe(204);
    const real = await sql(h, 'SELECT COUNT(*) AS n FROM admin_tokens');
    expect(real).toBe(8);
    expect(await totalAndWalk(h, '/tokens')).toEqual({ total: real, seen: real });
  });

  it('audit: total for the same filters as the page', async () => {
    await h.licenses(app, { count: 1 });
    await h.ban(app, 'ip', '10.0.0.1');
    await h.ban(app, 'ip', '10.0.0.2');
    const all = await sql(h, 'SELECT COUNT(*) AS n FROM audit_log');
    expect(await totalAndWalk(h, '/audit')).toEqual({ total: all, seen: all });
    expect(await totalAndWalk(h, '/audit?action=ban.create')).toEqual({ total: 2, seen: 2 });
    expect(await totalAndWalk(h, `/audit?app_id=${app.id}`)).toEqual({ total: 4, seen: 4 }); // app.create + licenses + 2 bans
  });

  it('without it (or =false) the answer has no total, as before', async () => {
    await h.licenses(app, { count: 3 });
    for (const path of [`/apps/${app.id}/licenses`, `/apps/${app.id}/users`, `/apps/${app.id}/bans`, '/tokens', '/audit']) {
      for (const query of ['', '?with_total=false']) {
        const res = await h.admin('GET', path + query);
        expect(res.statusCode, res.body).toBe(200);
        expect(Object.keys(res.json()).sort(), path + query).toEqual(['items', 'next_cursor']);
      }
    }
  });

  it('garbage is a 422 naming the parameter', async () => {
    for (const path of [`/apps/${app.id}/licenses`, `/apps/${app.id}/users`, `/apps/${app.id}/bans`, '/tokens', '/audit']) {
      for (const value of ['yes', '', '2', 'TRUE&with_total=true']) {
        const res = await h.admin('GET', `${path}?with_total=${value}`);
        if (value === '') {
          // An empty value is the parameter left out: the schema's enum refuses it.
          expect(res.statusCode, `${path} ${value}`).toBe(422);
          continue;
        }
        const body = expectError(res, 422, 'validation_error');
        expect(JSON.stringify(body.errors), path).toContain('with_total');
      }
    }
  });
});
