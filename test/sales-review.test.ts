import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { harness, type Harness, type TestApp } from './helpers.js';
import { connect, licenseCount, map, orders, post, variant } from './sales-helpers.js';

/** Gaps an attacker's review of the sales webhooks found (docs/decisions.md, "Sales: a review's gaps"). */
describe('a Lemon Squeezy event key is bounded alike on both stores', () => {
  let h: Harness;
  let app: TestApp;

  beforeEach(async () => {
    h = await harness();
    app = await h.createApp();
    await connect(h, app, 'lemonsqueezy');
    await map(h, app, 'lemonsqueezy', { product_key: '1', minutes: 60, codes_per_unit: 1 });
  });
  afterEach(async () => h.close());

  const stored = async (): Promise<string[]> =>
    (await h.tollgate.services.store.db.all<{ event_id: string }>('SELECT event_id FROM integration_events')).map((r) => r.event_id);

  it('a data.type or status with NUL, a lone surrogate or over 255 characters is 422, stores nothing', async () => {
    const bad: [string, (e: any) => void, string][] = [
      ['nul type', (e) => { e.data.type = 'ord\u0000ers'; }, 'body.data.type'],
      ['long type', (e) => { e.data.type = 'x'.repeat(400_000); }, 'body.data.type'],
      ['object type', (e) => { e.data.type = { a: 1 }; }, 'body.data.type'],
      ['surrogate id', (e) => { e.data.id = '\ud800abc'; }, 'body.data.id'],
    ];
    for (const [name, change, field] of bad) {
      const res = await post(h, 'lemonsqueezy', app, variant('lemonsqueezy', 'order_created', change));
      expect(res.statusCode, `${name}: ${res.body}`).toBe(422);
      expect(res.json(), name).toMatchObject({ code: 'validation_error', errors: [{ field }] });
    }
    for (const status of ['refun\u0000ded', 'r'.repeat(10_000)]) {
      const res = await post(h, 'lemonsqueezy', app, variant('lemonsqueezy', 'order_refunded', (e) => { e.data.attributes.status = status; }));
      expect(res.statusCode, res.body).toBe(422);
      expect(res.json()).toMatchObject({ code: 'validation_error', errors: [{ field: 'body.data.attributes.status' }] });
    }
    expect(await stored()).toEqual([]);
    expect(await licenseCount(h, app)).toBe(0);
  });

  it('a key longer than 255 characters of valid parts is kept by its digest, and a redelivery is a duplicate', async () => {
    const body = variant('lemonsqueezy', 'order_created', (e) => { e.meta.event_name = 'order_created'; e.data.type = 't'.repeat(200); e.data.id = '9'.repeat(200); });
    const first = await post(h, 'lemonsqueezy', app, body);
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json()).toMatchObject({ outcome: 'granted', event_id: expect.stringMatching(/^sha256:[0-9a-f]{64}$/) });
    expect((await post(h, 'lemonsqueezy', app, body)).json()).toMatchObject({ outcome: 'duplicate', event_id: first.json().event_id });
    expect(await stored()).toEqual([first.json().event_id]);
    expect(await orders(h, app)).toHaveLength(1);
  });
});
