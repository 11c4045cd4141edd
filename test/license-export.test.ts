import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, expectError, harness, PASSWORD, type Harness, type TestApp } from './helpers.js';

/**
 * The licenses page of the dashboard: filters (used, note, creation time) shared by the list, its
 * total, the CSV export and the bulk delete of unused licenses; the export streamed page by page.
 */

const DAY = 86_400_000;

function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') cell += '"', i++;
      else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') row.push(cell), (cell = '');
    else if (c === '\r' && text[i + 1] === '\n') row.push(cell), rows.push(row), (row = []), (cell = ''), i++;
    else cell += c;
  }
  if (cell !== '' || row.length > 0) row.push(cell), rows.push(row);
  return rows;
}

/** ids of the list (every page) and of the export, and the list's total, for one query. */
async function both(h: Harness, app: TestApp, query: string): Promise<{ list: string[]; csv: string[]; total: number }> {
  const list: string[] = [];
  let cursor: string | null = null;
  let total = -1;
  do {
    const res = await h.admin('GET', `/apps/${app.id}/licenses?${query}&with_total=true&limit=500${cursor ? `&cursor=${cursor}` : ''}`);
    expect(res.statusCode, res.body).toBe(200);
    total = res.json().total;
    list.push(...res.json().items.map((l: { id: string }) => l.id));
    cursor = res.json().next_cursor;
  } while (cursor);
  const res = await h.admin('GET', `/apps/${app.id}/licenses/export.csv?${query}`);
  expect(res.statusCode, res.body).toBe(200);
  const rows = parseCsv(res.body);
  expect(rows[0]![0]).toBe('id');
  return { list: list.sort(), csv: rows.slice(1).map((r) => r[0]!).sort(), total };
}

describe('license filters: list, total and export agree', () => {
  let h: Harness;
  let app: TestApp;
  let other: TestApp;
  const ids: Record<string, string[]> = {};
  const create = async (key: string, body: Record<string, unknown>) => {
    const res = await h.admin('POST', `/apps/${app.id}/licenses`, { minutes: 60, ...body });
    expect(res.statusCode, res.body).toBe(201);
    ids[key] = res.json().licenses.map((l: { id: string }) => l.id);
    return res.json().licenses as { id: string; code: string }[];
  };

  beforeAll(async () => {
    h = await harness();
    app = await h.createApp({ name: 'A' });
    other = await h.createApp({ name: 'B' });
    await create('early', { count: 7, note: 'Black Friday 2025' }); // 2026-01-01
    h.clock.advance(DAY);
    const sale = await create('sale', { count: 5, note: 'spring SALE' }); // 2026-01-02
    h.clock.advance(DAY);
    await create('plain', { count: 4 }); // 2026-01-03, no note
    await h.admin('POST', `/apps/${other.id}/licenses`, { count: 3, minutes: 60, note: 'spring sale' });
    for (const [i, l] of sale.slice(0, 2).entries()) {
      await h.signUp(app, `buyer${i}`);
      expect((await h.client(app, 'POST', '/activate_license', { code: l.code, username: `buyer${i}`, password: PASSWORD })).statusCode).toBe(200);
    }
  });
  afterAll(async () => h.close());

  const expectIds = async (query: string, expected: string[]) => {
    const got = await both(h, app, query);
    expect(got.list, `list ?${query}`).toEqual([...expected].sort());
    expect(got.csv, `export ?${query}`).toEqual([...expected].sort());
    expect(got.total, `total ?${query}`).toBe(expected.length);
  };

  it('used=true|false', async () => {
    await expectIds('used=true', ids.sale!.slice(0, 2));
    await expectIds('used=false', [...ids.early!, ...ids.sale!.slice(2), ...ids.plain!]);
  });

  it('note: a substring of the note in any case, % and _ literal, never another app’s', async () => {
    await expectIds('note=sale', ids.sale!);
    await expectIds('note=FRIDAY%202025', ids.early!);
    await expectIds('note=%25', []);
    await expectIds('note=_', []);
    await expectIds('note=sale&used=false', ids.sale!.slice(2));
  });

  it('created_from (inclusive) and created_to (exclusive)', async () => {
    await expectIds('created_from=2026-01-02T00:00:00Z', [...ids.sale!, ...ids.plain!]);
    await expectIds('created_to=2026-01-02T00:00:00Z', ids.early!);
    await expectIds('created_from=2026-01-02T00:00:00Z&created_to=2026-01-03T00:00:00Z', ids.sale!);
    await expectIds('created_from=2026-01-02T00:00:00%2B01:00&created_to=2026-01-02T00:00:00.001Z', ids.sale!); // zones are honoured
    await expectIds('created_from=2030-01-01T00:00:00Z', []);
  });

  it('garbage filters are a 422 naming the parameter, on the list, the export and the bulk delete', async () => {
    for (const query of ['used=maybe', 'created_from=yesterday', 'created_to=2026-02-30T00:00:00Z', `note=${'x'.repeat(1001)}`, 'created_from=%00']) {
      for (const path of ['', '/export', '/export.csv']) {
        const res = await h.admin('GET', `/apps/${app.id}/licenses${path}?${query}`);
        expect(res.statusCode, `${path}?${query} ${res.body}`).toBe(422);
        expect(res.json().code).toBe('validation_error');
      }
    }
    for (const body of [{ created_from: 'soon' }, { note: 5 }, { used: true }, { note: 'x'.repeat(1001) }, []]) {
      expectError(await h.admin('POST', `/apps/${app.id}/licenses/delete_unused`, body), 422, 'validation_error');
    }
    expect((await h.admin('GET', `/apps/${app.id}/licenses?with_total=true`)).json().total).toBe(16); // nothing was deleted
  });
});

describe('CSV content', () => {
  let h: Harness;
  beforeEach(async () => {
    h = await harness();
  });
  afterEach(async () => h.close());

  it('quotes commas, quotes and line breaks (RFC 4180), and defuses notes a spreadsheet would run as formulas', async () => {
    const app = await h.createApp();
    const notes = ['plain', 'a, b', 'say "hi"', 'two\r\nlines', 'lf\nonly', '=HYPERLINK("http://evil","x")', '+1+2', '-2+3', '@SUM(A1)', '\tTAB', 'ok = fine', 'é ü 日本'];
    for (const note of notes) await h.licenses(app, { note });
    const res = await h.admin('GET', `/apps/${app.id}/licenses/export.csv`);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(res.headers['content-disposition']).toBe(`attachment; filename="licenses-${app.id}.csv"`);
    const rows = parseCsv(res.body);
    const header = rows[0]!;
    expect(header).toEqual(['id', 'code', 'minutes', 'grants_lifetime_access', 'revokes_lifetime_access', 'note', 'expires_at', 'created_at', 'used_at', 'used_by_user_id']);
    expect(rows.slice(1).every((r) => r.length === header.length)).toBe(true);
    const exported = rows.slice(1).map((r) => r[header.indexOf('note')]!);
    const expected = notes.map((n) => (/^[=+\-@\t]/.test(n) ? `'${n}` : n));
    expect(exported.sort()).toEqual(expected.sort());
    // The two routes answer the same bytes.
    expect((await h.admin('GET', `/apps/${app.id}/licenses/export`)).body).toBe(res.body);
  });
});

describe('CSV export of 25,000 licenses over a real socket', () => {
  let h: Harness;
  let app: TestApp;
  const COUNT = 25_000;
  // ~25 MB of CSV: more than the kernel's socket buffers can take in, so the server must wait for the reader.
  const FILLER = 'x'.repeat(1000);
  beforeAll(async () => {
    h = await harness();
    app = await h.createApp();
    // Inserted by SQL in one statement: the 10,000-per-request batch API would take minutes here.
    await h.tollgate.services.store.db.run(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${COUNT})
       INSERT INTO licenses (id, app_id, code, minutes, grants_lifetime_access, revokes_lifetime_access, note, expires_at, created_at, used_at, used_by_user_id)
       SELECT 'bulk-' || i, ?, 'CODE-' || i, 60, 0, 0, 'note, "' || i || '" ' || ?, NULL, CAST(? AS BIGINT) + i, NULL, NULL FROM n`,
      [app.id, FILLER, h.clock.ms],
    );
    await h.tollgate.server.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(async () => h.close());

  it('is chunked, reads the table a page at a time while sending (a row added after the headers is in it), each row once', async () => {
    const { port } = h.tollgate.server.server.address() as AddressInfo;
    const late = { id: 'late-row', code: 'LATE-CODE' };
    const chunks: number[] = [];
    let added = false;
    const body = await new Promise<{ headers: Record<string, unknown>; text: string }>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path: `/admin/v1/apps/${app.id}/licenses/export.csv`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }, (res) => {
        const parts: Buffer[] = [];
        res.pause();
        // The answer has begun and the server has read at most its first pages: add a row that sorts last.
        h.tollgate.services.store.db.run(
          `INSERT INTO licenses (id, app_id, code, minutes, grants_lifetime_access, revokes_lifetime_access, note, expires_at, created_at, used_at, used_by_user_id)
           VALUES (?, ?, ?, 60, 0, 0, NULL, NULL, ?, NULL, NULL)`,
          [late.id, app.id, late.code, h.clock.ms + 10 * DAY],
        ).then(() => {
          added = true;
          res.resume();
        }, reject);
        res.on('data', (c: Buffer) => {
          chunks.push(c.length);
          parts.push(c);
        });
        res.on('end', () => resolve({ headers: res.headers, text: Buffer.concat(parts).toString('utf8') }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end();
    });
    expect(added).toBe(true);
    expect(body.headers['transfer-encoding']).toBe('chunked');
    expect(body.headers['content-length']).toBeUndefined();
    expect(chunks.length).toBeGreaterThan(10);
    // No line breaks inside these rows: split instead of parsing 25 MB a character at a time.
    const lines = body.text.split('\r\n');
    expect(lines.pop()).toBe('');
    const ids = lines.slice(1).map((line) => line.slice(0, line.indexOf(',')));
    expect(ids).toHaveLength(COUNT + 1);
    expect(new Set(ids).size).toBe(COUNT + 1);
    expect(ids.at(-1)).toBe(late.id); // read from the table after the answer began: the export was not built up front
    expect(parseCsv(lines.slice(0, 2).join('\r\n'))[1]![5]).toBe(`note, "1" ${FILLER}`);
  });
});

describe('POST /apps/:app_id/licenses/delete_unused', () => {
  let h: Harness;
  let app: TestApp;
  beforeEach(async () => {
    h = await harness();
    app = await h.createApp({ name: 'A' });
  });
  afterEach(async () => h.close());

  const total = async (a: TestApp, query = '') => (await h.admin('GET', `/apps/${a.id}/licenses?with_total=true${query}`)).json().total as number;

  it('deletes exactly the unused licenses the same filters list, keeps used ones and other apps’, and is audited', async () => {
    const other = await h.createApp({ name: 'B' });
    await h.licenses(other, { count: 4, note: 'sale' });
    const sale = (await h.admin('POST', `/apps/${app.id}/licenses`, { count: 6, minutes: 60, note: 'Spring sale' })).json().licenses;
    await h.licenses(app, { count: 3, note: 'press' });
    await h.signUp(app, 'buyer');
    expect((await h.client(app, 'POST', '/activate_license', { code: sale[0].code, username: 'buyer', password: PASSWORD })).statusCode).toBe(200);

    const listed = await total(app, '&used=false&note=SALE');
    expect(listed).toBe(5);
    const res = await h.admin('POST', `/apps/${app.id}/licenses/delete_unused`, { note: 'SALE' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ deleted: listed });
    expect(await total(app, '&note=sale')).toBe(1); // the used one stays
    expect(await total(app, '&note=press')).toBe(3);
    expect(await total(other)).toBe(4);

    const audit = (await h.admin('GET', `/audit?action=licenses.delete_unused&app_id=${app.id}`)).json().items;
    expect(audit).toHaveLength(1);
    expect(audit[0].details).toEqual({ deleted: 5, note: 'SALE', created_from: null, created_to: null });

    // No filter: every unused license of the app.
    expect((await h.admin('POST', `/apps/${app.id}/licenses/delete_unused`, {})).json()).toEqual({ deleted: 3 });
    expect(await total(app)).toBe(1);
    expect(await total(other)).toBe(4);
    // Again: nothing left to delete.
    expect((await h.inject({ method: 'POST', url: `/admin/v1/apps/${app.id}/licenses/delete_unused`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json()).toEqual({ deleted: 0 });
  });

  it('by creation time', async () => {
    await h.licenses(app, { count: 2 });
    h.clock.advance(DAY);
    await h.licenses(app, { count: 3 });
    const res = await h.admin('POST', `/apps/${app.id}/licenses/delete_unused`, { created_to: '2026-01-01T12:00:00Z' });
    expect(res.json()).toEqual({ deleted: 2 });
    expect(await total(app)).toBe(3);
    expect((await h.admin('POST', `/apps/${app.id}/licenses/delete_unused`, { created_from: '2026-01-02T00:00:00Z', created_to: '2026-01-03T00:00:00Z' })).json()).toEqual({ deleted: 3 });
  });

  it('an unknown app is a 404; a used license can never be deleted by it, even racing a redemption', async () => {
    expectError(await h.admin('POST', '/apps/00000000-0000-4000-8000-000000000000/licenses/delete_unused', {}), 404, 'not_found');
    const codes = await h.licenses(app, { count: 20 });
    for (let i = 0; i < 20; i++) await h.signUp(app, `racer${i}`);
    const answers = await Promise.all([
      ...codes.map((code, i) => h.client(app, 'POST', '/activate_license', { code, username: `racer${i}`, password: PASSWORD })),
      h.admin('POST', `/apps/${app.id}/licenses/delete_unused`, {}),
    ]);
    const activated = answers.slice(0, 20).filter((r) => r.statusCode === 200).length;
    const deleted = answers[20]!.json().deleted as number;
    expect(activated + deleted).toBe(20);
    expect(await total(app, '&used=true')).toBe(activated);
    expect(await total(app)).toBe(activated);
  });
});
