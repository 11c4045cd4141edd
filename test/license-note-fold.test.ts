import { afterEach, describe, expect, it } from 'vitest';
import { harness, type Harness, type TestApp } from './helpers.js';

/**
 * The licenses' any-case filters fold letters beyond ASCII the same on both
 * stores: SQLite's own LOWER folds only A-Z, so `note=été` missed "ÉTÉ promo"
 * there while PostgreSQL found it, and delete_unused deleted different sets.
 */

let h: Harness;
afterEach(async () => h?.close());

const total = async (app: TestApp, query: string) => (await h.admin('GET', `/apps/${app.id}/licenses?with_total=true&${query}`)).json().total as number;

describe('accented notes, any case', () => {
  it('note= and q= find "ÉTÉ promo" from été and "été" from ÉTÉ; delete_unused {note} deletes exactly those', async () => {
    h = await harness();
    const app = await h.createApp({ name: 'Fold' });
    for (const [note, count] of [['ÉTÉ promo', 2], ['été promo', 1], ['Été Ölçü', 1], ['Summer', 3]] as const) {
      expect((await h.admin('POST', `/apps/${app.id}/licenses`, { count, minutes: 60, note })).statusCode).toBe(201);
    }
    expect(await total(app, `note=${encodeURIComponent('été')}`)).toBe(4);
    expect(await total(app, `note=${encodeURIComponent('ÉTÉ PROMO')}`)).toBe(3);
    expect(await total(app, `note=${encodeURIComponent('ölçü')}`)).toBe(1);
    expect(await total(app, `q=${encodeURIComponent('été')}`)).toBe(4);
    expect(await total(app, 'note=summer')).toBe(3);

    const res = await h.admin('POST', `/apps/${app.id}/licenses/delete_unused`, { note: 'été' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ deleted: 4 });
    const left = (await h.admin('GET', `/apps/${app.id}/licenses?limit=100`)).json().items.map((l: { note: string }) => l.note);
    expect(left).toEqual(['Summer', 'Summer', 'Summer']);
  });
});
