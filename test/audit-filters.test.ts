import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { expectError, harness, type Harness } from './helpers.js';

/** The audit page of the dashboard: filter by actor, action and time (from/to), with the total. */

interface Entry { actor: string; action: string; at: string }

describe('GET /audit filters', () => {
  let h: Harness;
  beforeEach(async () => {
    h = await harness();
  });
  afterEach(async () => h.close());

  const audit = async (query: string) => {
    const res = await h.admin('GET', `/audit?with_total=true&limit=500&${query}`);
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json() as { items: Entry[]; total: number };
    expect(body.total, query).toBe(body.items.length);
    return body.items;
  };

  it('actor (from the start, any case), action, from (inclusive) and to (exclusive), combined', async () => {
    const created = await h.admin('POST', '/tokens', { name: 'ci-bot' });
    expect(created.statusCode, created.body).toBe(201);
    const ci = { authorization: `Bearer ${created.json().token}` };
    const app = await h.createApp({ name: 'A' }); // 00:00, by the environment's token
    h.clock.minutes(10);
    for (let i = 0; i < 3; i++) {
      const res = await h.inject({ method: 'POST', url: `/admin/v1/apps/${app.id}/bans`, headers: ci, payload: { type: 'ip', value: `10.0.0.${i}` } });
      expect(res.statusCode, res.body).toBe(201);
    }
    h.clock.minutes(10);
    await h.licenses(app, { count: 2 }); // 00:20, the environment's token

    const ciEntries = await audit('actor=TOKEN:CI-BOT');
    expect(ciEntries).toHaveLength(3);
    expect(ciEntries.every((e) => e.actor.startsWith('token:ci-bot') && e.action === 'ban.create')).toBe(true);
    expect(await audit('actor=token:ci')).toHaveLength(3); // a prefix
    expect(await audit('actor=ci-bot')).toHaveLength(0); // from the start only
    expect(await audit('actor=env:')).toHaveLength(3); // token create, app create, licenses
    expect(await audit('actor=%25')).toHaveLength(0); // % is literal

    expect((await audit('action=ban.create')).map((e) => e.actor.split(' ')[0])).toEqual(['token:ci-bot', 'token:ci-bot', 'token:ci-bot']);
    expect(await audit('action=ban')).toHaveLength(0); // actions match whole

    expect((await audit('from=2026-01-01T00:10:00Z')).map((e) => e.action)).toEqual(['licenses.create', 'ban.create', 'ban.create', 'ban.create']);
    expect((await audit('to=2026-01-01T00:10:00Z')).map((e) => e.action).sort()).toEqual(['admin_token.create', 'app.create']);
    expect(await audit('from=2026-01-01T00:10:00Z&to=2026-01-01T00:20:00Z&actor=token:ci-bot&action=ban.create')).toHaveLength(3);
    expect(await audit('from=2026-01-01T00:10:00Z&to=2026-01-01T00:20:00Z&actor=env')).toHaveLength(0);
    // The older names still work.
    expect(await audit('since=2026-01-01T00:20:00Z')).toHaveLength(1);
    expect(await audit('until=2026-01-01T00:10:00Z')).toHaveLength(2);
  });

  it('actor folds accented letters the same way on both stores (SQLite\'s LOWER folds ASCII only)', async () => {
    const created = await h.admin('POST', '/tokens', { name: 'Équipe' });
    expect(created.statusCode, created.body).toBe(201);
    const team = { authorization: `Bearer ${created.json().token}` };
    const app = await h.createApp({ name: 'A' });
    const res = await h.inject({ method: 'POST', url: `/admin/v1/apps/${app.id}/bans`, headers: team, payload: { type: 'ip', value: '10.0.0.1' } });
    expect(res.statusCode, res.body).toBe(201);
    for (const query of ['actor=token:%C3%A9quipe', 'actor=TOKEN:%C3%89QUIPE']) {
      expect((await audit(query)).map((e) => e.action), query).toEqual(['ban.create']);
    }
  });

  it('garbage is a 422 naming the parameter', async () => {
    for (const [query, field] of [
      ['from=yesterday', 'querystring.from'], ['to=2026-02-30T00:00:00Z', 'querystring.to'], ['from=2026-01-01T00:00:00Z&since=2026-01-01T00:00:00Z', 'querystring.from'],
      ['to=2026-01-01T00:00:00Z&until=2026-01-01T00:00:00Z', 'querystring.to'], [`actor=${'a'.repeat(201)}`, 'querystring.actor'], ['actor=a%00', 'querystring.actor'],
      ['with_total=yes', 'querystring.with_total'],
    ] as const) {
      const body = expectError(await h.admin('GET', `/audit?${query}`), 422, 'validation_error');
      expect(body.errors!.map((e) => e.field), query).toContain(field);
    }
  });
});
