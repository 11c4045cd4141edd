import { randomUUID } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Repositories } from '../src/store/index.js';
import type { LicenseRecord } from '../src/store/records.js';
import { ADMIN_TOKEN, errorOf, harness, PASSWORD, type Harness, type TestApp, writableStore } from './helpers.js';

/**
 * Large lists (DECISIONS.md "Admin API": every list pages with ?limit= and
 * ?cursor=), the 10,000-license batch in one transaction, and the CSV export.
 */

const N = 2_500;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

function expectError(res: LightMyRequestResponse, status: number, code: string) {
  expect(res.statusCode, res.body).toBe(status);
  const body = errorOf(res);
  expect(body.code, res.body).toBe(code);
  return body;
}

/** Follows next_cursor until it is null; checks every page's size. */
async function walk<T extends { id: string }>(h: Harness, path: string, limit: number): Promise<T[]> {
  const sep = path.includes('?') ? '&' : '?';
  const out: T[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 10_000; pages++) {
    const res = await h.admin('GET', `${path}${sep}limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json() as { items: T[]; next_cursor: string | null };
    expect(body.items.length).toBeLessThanOrEqual(limit);
    out.push(...body.items);
    if (body.next_cursor === null) return out;
    expect(body.items.length, 'a page before the last is full').toBe(limit);
    cursor = body.next_cursor;
  }
  throw new Error('pagination did not end');
}

/** Each expected id exactly once, nothing else. */
function expectExactlyOnce(items: { id: string }[], expected: Iterable<string>): void {
  const want = new Set(expected);
  const ids = items.map((i) => i.id);
  const seen = new Set(ids);
  expect(seen.size, 'no item is returned twice').toBe(ids.length);
  expect(ids.length).toBe(want.size);
  for (const id of want) if (!seen.has(id)) throw new Error(`item ${id} was never returned`);
}

async function count(h: Harness, sql: string, params: (string | number)[] = []): Promise<number> {
  const [row] = await h.tollgate.services.store.db.all<{ n: number | string }>(sql, params);
  return Number(row?.n);
}

// ---------------------------------------------------------------------------------------------

describe('pagination over 2,500 items returns each exactly once', () => {
  let h: Harness;
  beforeEach(async () => {
    h = await harness();
  });
  afterEach(async () => h.close());

  it('licenses (2,500 created with count; all share one created_at)', async () => {
    const app = await h.createApp();
    const res = await h.admin('POST', `/apps/${app.id}/licenses`, { count: N, minutes: 60 });
    expect(res.statusCode).toBe(201);
    const ids = (res.json().licenses as { id: string }[]).map((l) => l.id);
    expect(new Set(ids).size).toBe(N);

    expectExactlyOnce(await walk(h, `/apps/${app.id}/licenses`, 500), ids);
    expectExactlyOnce(await walk(h, `/apps/${app.id}/licenses`, 37), ids);
    expectExactlyOnce(await walk(h, `/apps/${app.id}/licenses?used=false`, 500), ids);
    expect(await walk(h, `/apps/${app.id}/licenses?used=true`, 500)).toEqual([]);
  });

  it('licenses in several batches with different timestamps', async () => {
    const app = await h.createApp();
    const ids: string[] = [];
    for (const n of [1_000, 1, 999, 500]) {
      const res = await h.admin('POST', `/apps/${app.id}/licenses`, { count: n, minutes: 5 });
      expect(res.statusCode).toBe(201);
      ids.push(...(res.json().licenses as { id: string }[]).map((l) => l.id));
      h.clock.advance(1);
    }
    expect(ids).toHaveLength(N);
    expectExactlyOnce(await walk(h, `/apps/${app.id}/licenses`, 500), ids);
    expectExactlyOnce(await walk(h, `/apps/${app.id}/licenses`, 37), ids);
  });

  it('users (2,500 inserted through the store, many sharing a created_at)', async () => {
    const app = await h.createApp();
    const other = await h.createApp({ name: 'Other' });
    const ids: string[] = [];
    const base = h.clock.ms;
    await writableStore(h.tollgate.services).transaction(async (tx) => {
      for (let i = 0; i < N; i++) {
        const id = randomUUID();
        ids.push(id);
        const username = `user${String(i).padStart(5, '0')}`;
        await tx.users.insert({ id, appId: app.id, username, usernameKey: username, passwordHash: null, signupLicenseId: null, createdAt: base + Math.floor(i / 10) });
      }
      // A user of another app must never show up.
      await tx.users.insert({ id: randomUUID(), appId: other.id, username: 'intruder', usernameKey: 'intruder', passwordHash: null, signupLicenseId: null, createdAt: base });
    });

    expectExactlyOnce(await walk(h, `/apps/${app.id}/users`, 500), ids);
    expectExactlyOnce(await walk(h, `/apps/${app.id}/users`, 37), ids);
    // With a search: user012xx is 100 users.
    const matching = await walk<{ id: string; username: string }>(h, `/apps/${app.id}/users?q=user012`, 37);
    expectExactlyOnce(matching, ids.slice(1_200, 1_300));
    expect(matching.every((u) => u.username.startsWith('user012'))).toBe(true);
  });

  it('bans (2,500 inserted through the store)', async () => {
    const app = await h.createApp();
    const ids: string[] = [];
    const base = h.clock.ms;
    await writableStore(h.tollgate.services).transaction(async (tx) => {
      for (let i = 0; i < N; i++) {
        const id = randomUUID();
        ids.push(id);
        await tx.bans.insert({ id, appId: app.id, type: 'ip', value: `10.0.${Math.floor(i / 250)}.${i % 250}`, reason: null, expiresAt: null, createdAt: base + Math.floor(i / 7) });
      }
    });
    await h.ban(app, 'hardware_id', 'HW-VIA-API'); // and one through the API
    const all = await walk(h, `/apps/${app.id}/bans`, 500);
    expect(all).toHaveLength(N + 1);
    expectExactlyOnce(all.filter((b) => (b as unknown as { type: string }).type === 'ip'), ids);
    expectExactlyOnce((await walk(h, `/apps/${app.id}/bans`, 37)).filter((b) => (b as unknown as { type: string }).type === 'ip'), ids);
  });

  it('audit (2,500 entries, many sharing a timestamp), filtered and unfiltered', async () => {
    const ids: string[] = [];
    const appId = randomUUID();
    const base = h.clock.ms;
    await writableStore(h.tollgate.services).transaction(async (tx) => {
      for (let i = 0; i < N; i++) {
        const id = randomUUID();
        ids.push(id);
        await tx.admin.insertAudit({ id, at: base + Math.floor(i / 9), actor: 'test', action: 'variable.put', appId, targetId: `v${i}`, details: { i } });
      }
    });
    await h.createApp(); // one more entry, of another app

    const byApp = await walk<{ id: string; at: string }>(h, `/audit?app_id=${appId}`, 500);
    expectExactlyOnce(byApp, ids);
    for (let i = 1; i < byApp.length; i++) expect(Date.parse(byApp[i - 1]!.at)).toBeGreaterThanOrEqual(Date.parse(byApp[i]!.at));
    expectExactlyOnce(await walk(h, `/audit?app_id=${appId}`, 37), ids);
    const everything = await walk(h, '/audit', 37);
    expect(everything).toHaveLength(N + 1);
    expect(new Set(everything.map((e) => e.id)).size).toBe(N + 1);
  });
});

// ---------------------------------------------------------------------------------------------

describe('a batch of 10,000 licenses', () => {
  let h: Harness;
  beforeEach(async () => {
    h = await harness();
  });
  afterEach(async () => h.close());

  it('has no duplicate code, and every license shares one created_at (one transaction)', async () => {
    const app = await h.createApp();
    const res = await h.admin('POST', `/apps/${app.id}/licenses`, { count: 10_000, minutes: 30, note: 'big batch' });
    expect(res.statusCode).toBe(201);
    const licenses = res.json().licenses as { id: string; code: string; created_at: string }[];
    expect(licenses).toHaveLength(10_000);
    expect(new Set(licenses.map((l) => l.code)).size).toBe(10_000);
    expect(new Set(licenses.map((l) => l.id)).size).toBe(10_000);
    expect(new Set(licenses.map((l) => l.created_at))).toEqual(new Set([h.clock.iso()]));

    expect(await count(h, 'SELECT COUNT(*) AS n FROM licenses WHERE app_id = ?', [app.id])).toBe(10_000);
    expect(await count(h, 'SELECT COUNT(DISTINCT code) AS n FROM licenses WHERE app_id = ?', [app.id])).toBe(10_000);
    expect(await count(h, 'SELECT COUNT(DISTINCT created_at) AS n FROM licenses WHERE app_id = ?', [app.id])).toBe(1);
    // One audit entry for the batch.
    const audit = (await h.admin('GET', `/audit?action=licenses.create&app_id=${app.id}`)).json().items;
    expect(audit).toHaveLength(1);
    expect(audit[0].details.count).toBe(10_000);
  });

  it('count 10,001 is refused (422) and nothing is stored', async () => {
    const app = await h.createApp();
    await h.licenses(app, { count: 3 });
    const before = await count(h, 'SELECT COUNT(*) AS n FROM licenses');
    const res = await h.admin('POST', `/apps/${app.id}/licenses`, { count: 10_001, minutes: 30 });
    expectError(res, 422, 'validation_error');
    expect(errorOf(res).errors?.some((e) => e.field.startsWith('body.count') || e.field === 'body')).toBe(true);
    expect(await count(h, 'SELECT COUNT(*) AS n FROM licenses')).toBe(before);
    expect((await h.admin('GET', `/audit?action=licenses.create&app_id=${app.id}`)).json().items).toHaveLength(1);
  });

  it('all or nothing: a failure after 5,000 of 10,000 inserts stores none of them', async () => {
    const app = await h.createApp();
    await h.licenses(app, { count: 2 });
    const before = await count(h, 'SELECT COUNT(*) AS n FROM licenses');
    const store = writableStore(h.tollgate.services);
    const original = store.transaction;
    let inserted = 0;
    // Fault injection: the 5,001st insert of the batch fails (as a full disk or a lost connection would).
    store.transaction = <T>(fn: (tx: Repositories) => Promise<T>): Promise<T> =>
      original((tx) =>
        fn({
          ...tx,
          licenses: {
            ...tx.licenses,
            insert: async (l: LicenseRecord) => {
              if (++inserted > 5_000) throw new Error('injected failure');
              return tx.licenses.insert(l);
            },
          },
        }),
      );
    let res: LightMyRequestResponse;
    try {
      res = await h.admin('POST', `/apps/${app.id}/licenses`, { count: 10_000, minutes: 30 });
    } finally {
      store.transaction = original;
    }
    expect(inserted).toBe(5_001);
    expectError(res, 500, 'internal_error');
    expect(res.body).not.toContain('injected failure');
    expect(await count(h, 'SELECT COUNT(*) AS n FROM licenses')).toBe(before);
    expect((await h.admin('GET', `/audit?action=licenses.create&app_id=${app.id}`)).json().items).toHaveLength(1);
    // And the next batch works.
    expect((await h.admin('POST', `/apps/${app.id}/licenses`, { count: 10, minutes: 30 })).statusCode).toBe(201);
    expect(await count(h, 'SELECT COUNT(*) AS n FROM licenses')).toBe(before + 10);
  });
});

// ---------------------------------------------------------------------------------------------

/** RFC 4180: quoted cells, doubled quotes, CRLF line ends. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(cell);
      cell = '';
    } else if (c === '\r' && text[i + 1] === '\n') {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
      i++;
    } else cell += c;
  }
  if (cell !== '' || row.length > 0) {
    row.push(cell);
    rows.push(row);
  }
  return rows;
}

const COLUMNS = ['id', 'code', 'minutes', 'grants_lifetime_access', 'revokes_lifetime_access', 'note', 'expires_at', 'created_at', 'used_at', 'used_by_user_id'];

describe('CSV export GET /apps/:app/licenses/export', () => {
  let h: Harness;
  let app: TestApp;
  let bulk: { id: string; code: string }[];
  let promo: { id: string; code: string }[];
  const used = new Map<string, string>(); // license id → user id

  beforeAll(async () => {
    h = await harness();
    app = await h.createApp({ name: 'Exported' });
    const a = await h.admin('POST', `/apps/${app.id}/licenses`, { count: N - 10, minutes: 60, note: 'bulk' });
    bulk = a.json().licenses;
    h.clock.advance(1_000);
    const b = await h.admin('POST', `/apps/${app.id}/licenses`, { count: 10, lifetime: true, note: 'promo, "spring" 2026', expires_at: '2027-01-01T00:00:00Z' });
    promo = b.json().licenses;
    h.clock.advance(1_000);
    for (const [i, l] of promo.slice(0, 3).entries()) {
      const userId = await h.signUp(app, `buyer${i}`);
      const res = await h.client(app, 'POST', '/activate_license', { code: l.code, username: `buyer${i}`, password: PASSWORD });
      expect(res.statusCode, res.body).toBe(200);
      used.set(l.id, userId);
    }
  });
  afterAll(async () => h.close());

  const exportCsv = (query = '') => h.admin('GET', `/apps/${app.id}/licenses/export${query}`);

  it('streams every license (2,500 rows) plus the header, with the documented columns', async () => {
    const res = await exportCsv();
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/csv/);
    expect(String(res.headers['content-disposition'])).toMatch(/^attachment; filename="[^"]+\.csv"$/);
    expect(res.body.endsWith('\r\n')).toBe(true);
    const rows = parseCsv(res.body);
    expect(rows[0]).toEqual(COLUMNS);
    const data = rows.slice(1);
    expect(data).toHaveLength(N);
    for (const r of data) expect(r).toHaveLength(COLUMNS.length);
    expectExactlyOnce(data.map((r) => ({ id: r[0]! })), [...bulk, ...promo].map((l) => l.id));

    const byId = new Map(data.map((r) => [r[0]!, Object.fromEntries(COLUMNS.map((c, i) => [c, r[i]!]))]));
    const codeOf = new Map([...bulk, ...promo].map((l) => [l.id, l.code]));
    for (const [id, row] of byId) expect(row.code).toBe(codeOf.get(id));

    const plain = byId.get(bulk[0]!.id)!;
    expect(plain).toMatchObject({ minutes: '60', grants_lifetime_access: 'false', revokes_lifetime_access: 'false', note: 'bulk', expires_at: '', used_at: '', used_by_user_id: '' });
    expect(plain.created_at).toMatch(ISO);

    const usedRow = byId.get(promo[0]!.id)!;
    expect(usedRow).toMatchObject({ minutes: '', grants_lifetime_access: 'true', note: 'promo, "spring" 2026', expires_at: '2027-01-01T00:00:00.000Z', used_by_user_id: used.get(promo[0]!.id) });
    expect(usedRow.used_at).toMatch(ISO);

    // The CSV agrees with the JSON view of the same license.
    const json = (await h.admin('GET', `/apps/${app.id}/licenses/${promo[0]!.id}`)).json();
    for (const c of COLUMNS) expect(usedRow[c], c).toBe(json[c] === null ? '' : String(json[c]));
  });

  it('honours used= and q= (alone and together)', async () => {
    const ids = async (query: string) => parseCsv((await exportCsv(query)).body).slice(1).map((r) => r[0]!).sort();
    const usedIds = [...used.keys()].sort();
    expect(await ids('?used=true')).toEqual(usedIds);
    const unused = await ids('?used=false');
    expect(unused).toHaveLength(N - 3);
    expect(unused.some((id) => used.has(id))).toBe(false);
    expect(await ids('?q=promo')).toEqual(promo.map((l) => l.id).sort());
    expect(await ids('?q=PROMO')).toEqual(promo.map((l) => l.id).sort());
    expect(await ids('?used=false&q=promo')).toEqual(promo.slice(3).map((l) => l.id).sort());
    expect(await ids(`?q=${encodeURIComponent(bulk[123]!.code)}`)).toEqual([bulk[123]!.id]);
    expect(await ids('?q=no-such-thing')).toEqual([]);
    // An empty result is still a CSV with its header.
    const empty = await exportCsv('?q=no-such-thing');
    expect(empty.statusCode).toBe(200);
    expect(parseCsv(empty.body)).toEqual([COLUMNS]);
  });

  it('a bad used= → 422; an unknown app → 404 (JSON, not CSV); no admin token → 401', async () => {
    expectError(await exportCsv('?used=maybe'), 422, 'validation_error');
    const missing = await h.admin('GET', '/apps/00000000-0000-4000-8000-000000000000/licenses/export');
    expectError(missing, 404, 'not_found');
    expect(missing.headers['content-type']).toMatch(/^application\/json/);
    for (const headers of [{}, { authorization: 'Bearer wrong-admin-token-0000' }]) {
      const res = await h.inject({ method: 'GET', url: `/admin/v1/apps/${app.id}/licenses/export`, headers });
      expectError(res, 401, 'invalid_admin_token');
      expect(res.body).not.toContain(bulk[0]!.code);
    }
  });

  it('a note that starts with = + - @ is exported with a leading apostrophe (CSV injection guard)', async () => {
    const other = await h.createApp({ name: 'Injection' });
    const notes = ['=HYPERLINK("http://evil.example","click")', '=1+2', '+SUM(A1)', '-2+3', '@cmd', 'plain =not at start'];
    const noteById = new Map<string, string>();
    for (const note of notes) {
      const res = await h.admin('POST', `/apps/${other.id}/licenses`, { count: 1, minutes: 1, note });
      expect(res.statusCode, res.body).toBe(201);
      noteById.set(res.json().licenses[0].id, note);
    }
    const res = await h.admin('GET', `/apps/${other.id}/licenses/export`);
    expect(res.statusCode).toBe(200);
    const rows = parseCsv(res.body).slice(1);
    expect(rows).toHaveLength(notes.length);
    for (const r of rows) {
      const note = noteById.get(r[0]!)!;
      const cell = r[COLUMNS.indexOf('note')]!;
      if (/^[=+\-@]/.test(note)) expect(cell).toBe(`'${note}`);
      else expect(cell).toBe(note);
    }
    // No raw cell of the file starts with a formula character.
    for (const line of res.body.split('\r\n')) for (const raw of line.split(',')) expect(raw.replace(/^"/, '')).not.toMatch(/^[=+@]/);
    // The JSON view keeps the note as written.
    const listed = (await h.admin('GET', `/apps/${other.id}/licenses?q=HYPERLINK`)).json().items;
    expect(listed[0].note).toBe(notes[0]);
  });

  it('the export uses the admin token, not the app’s credentials', async () => {
    const res = await h.inject({ method: 'GET', url: `/admin/v1/apps/${app.id}/licenses/export`, headers: { ...app.headers } });
    expectError(res, 401, 'invalid_admin_token');
    expect((await h.inject({ method: 'GET', url: `/admin/v1/apps/${app.id}/licenses/export`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).statusCode).toBe(200);
  });
});
