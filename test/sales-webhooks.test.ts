import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { expectError, harness, PASSWORD, type Harness, type TestApp } from './helpers.js';
import {
  connect, deliver, fixture, licenseCount, map, ORDER_SAMPLE, orders, post, SECRETS, signed, SOLD, variant, type Provider,
} from './sales-helpers.js';

/**
 * POST /integrations/{provider}/{app_id} through the real server, on SQLite and PostgreSQL, with each
 * store's documented sample payloads signed by each store's scheme (test/sales-signers.test.ts proves the
 * signers are the stores' own).
 */
const PROVIDERS: Provider[] = ['stripe', 'paddle', 'lemonsqueezy'];

describe.each(PROVIDERS)('sales in: %s', (provider) => {
  let h: Harness;
  let app: TestApp;
  const sample = () => fixture(provider, ORDER_SAMPLE[provider]);

  beforeEach(async () => {
    h = await harness();
    app = await h.createApp();
    await connect(h, app, provider);
    await map(h, app, provider, { product_key: SOLD[provider], minutes: 1440, codes_per_unit: 2 });
  });
  afterEach(async () => h.close());

  it('a paid order creates the mapped licenses and records the order; a code it made is redeemable', async () => {
    const res = await post(h, provider, app, sample());
    expect(res.statusCode, res.body).toBe(200);
    const answer = res.json();
    expect(answer).toMatchObject({ received: true, outcome: 'granted', licenses_created: 2 });
    expect(res.body).not.toMatch(/[A-Z2-9]{5}-[A-Z2-9]{5}-/); // never the codes
    const [order, ...more] = await orders(h, app);
    expect(more).toEqual([]);
    expect(order).toMatchObject({ id: answer.order_id, provider, status: 'active' });
    const expected = {
      stripe: { order_ref: 'cs_test_a1Ae3LyYt5E8l1UVQFJbNqTMyDw6TZWFp8hNNxBlqzBpHmHXR1k7m6LaAh', buyer_email: 'jenny.rosen@example.com', payment_ref: 'pi_3MtwBwLkdIwHu7ix28a3tqPa' },
      paddle: { order_ref: 'txn_01hv8wptq8987qeep44cyrewp9', buyer_email: null, subscription_ref: 'sub_01hv8x29kz0t586xy6zn1a62ny', customer_ref: 'ctm_01hv6y1jedq4p1n0yqn5ba3ky4' },
      lemonsqueezy: { order_ref: '1', buyer_email: 'gernser@yahoo.com', customer_ref: '1' },
    }[provider];
    expect(order).toMatchObject(expected);
    const detail = (await h.admin('GET', `/apps/${app.id}/orders/${order.id}`)).json();
    expect(detail.licenses).toHaveLength(2);
    expect(detail.licenses.every((l: { minutes: number; state: string }) => l.minutes === 1440 && l.state === 'issued')).toBe(true);
    // The buyer redeems one: a full day of membership.
    const userId = await h.signUp(app, 'buyer');
    const activated = await h.client(app, 'POST', '/activate_license', { code: detail.licenses[0].code, username: 'buyer', password: PASSWORD });
    expect(activated.statusCode, activated.body).toBe(200);
    const user = (await h.admin('GET', `/apps/${app.id}/users/${userId}`)).json();
    expect(user.membership.active_until).toBe(h.clock.iso(1440 * 60_000));
  });

  it('a redelivered event is 200 duplicate and grants nothing twice', async () => {
    const body = sample();
    const first = await post(h, provider, app, body);
    expect(first.json().outcome).toBe('granted');
    h.clock.advance(2000);
    const again = await post(h, provider, app, body);
    expect(again.statusCode, again.body).toBe(200);
    expect(again.json()).toMatchObject({ outcome: 'duplicate', order_id: first.json().order_id, licenses_created: 0 });
    expect(await licenseCount(h, app)).toBe(2);
    expect(await orders(h, app)).toHaveLength(1);
  });

  it('20 identical deliveries at once: one grants, 19 are duplicates, two licenses in all', async () => {
    const body = sample();
    const headers = signed(provider, body, SECRETS[provider], h.clock.ms);
    const answers = await Promise.all(Array.from({ length: 20 }, () => deliver(h, provider, app.id, body, headers)));
    for (const r of answers) expect(r.statusCode, r.body).toBe(200);
    const outcomes = answers.map((r) => r.json().outcome).sort();
    expect(outcomes.filter((o) => o === 'granted')).toHaveLength(1);
    expect(outcomes.filter((o) => o === 'duplicate')).toHaveLength(19);
    expect(await licenseCount(h, app)).toBe(2);
    expect(await orders(h, app)).toHaveLength(1);
  });

  it('unsigned, mis-signed, wrong-secret, re-serialised and (where timed) stale deliveries are 401 and change nothing', async () => {
    const body = sample();
    const header = Object.keys(signed(provider, body, SECRETS[provider], h.clock.ms))[0]!;
    const refusals = [
      await deliver(h, provider, app.id, body, {}),
      await deliver(h, provider, app.id, body, { [header]: 'garbage' }),
      await deliver(h, provider, app.id, body, signed(provider, body, 'another-secret-entirely', h.clock.ms)),
      // Signed over the sample's bytes, sent re-serialised: the raw body is what is verified.
      await deliver(h, provider, app.id, Buffer.from(JSON.stringify(JSON.parse(body.toString('utf8')))), signed(provider, body, SECRETS[provider], h.clock.ms)),
      // Another app's id with this app's valid signature: that app has no such integration.
      await deliver(h, provider, (await h.createApp({ name: 'Other' })).id, body, signed(provider, body, SECRETS[provider], h.clock.ms)),
    ];
    if (provider !== 'lemonsqueezy') {
      refusals.push(await deliver(h, provider, app.id, body, signed(provider, body, SECRETS[provider], h.clock.ms - (provider === 'stripe' ? 301_000 : 6_000))));
      refusals.push(await deliver(h, provider, app.id, body, signed(provider, body, SECRETS[provider], h.clock.ms + (provider === 'stripe' ? 301_000 : 6_000))));
    }
    for (const r of refusals) expectError(r, 401, 'invalid_signature');
    expect(await licenseCount(h, app)).toBe(0);
    expect(await orders(h, app)).toEqual([]);
    // And the genuine delivery still grants afterwards: nothing was claimed by the refused ones.
    expect((await post(h, provider, app, body)).json().outcome).toBe('granted');
  });

  it('the raw bytes are verified whatever the Content-Type says (or without one)', async () => {
    const body = sample();
    const headers = signed(provider, body, SECRETS[provider], h.clock.ms);
    const plain = await h.inject({ method: 'POST', url: `/integrations/${provider}/${app.id}`, headers: { ...headers, 'content-type': 'text/plain' }, payload: body });
    expect(plain.json().outcome, plain.body).toBe('granted');
    const none = await h.inject({ method: 'POST', url: `/integrations/${provider}/${app.id}`, headers, payload: body });
    expect(none.statusCode, none.body).toBe(200);
    expect(none.json().outcome).toBe('duplicate');
  });

  it('a disabled integration refuses (401); enabled again, it grants', async () => {
    expect((await h.admin('PATCH', `/apps/${app.id}/integrations/${provider}`, { enabled: false })).statusCode).toBe(200);
    expectError(await post(h, provider, app, sample()), 401, 'invalid_signature');
    expect((await h.admin('PATCH', `/apps/${app.id}/integrations/${provider}`, { enabled: true })).statusCode).toBe(200);
    expect((await post(h, provider, app, sample())).json().outcome).toBe('granted');
  });

  it('garbage JSON, or JSON without what the store sends, with a valid signature: 422 in the error shape, nothing stored', async () => {
    for (const bytes of ['{"id": "evt_1", "type": ', 'not json at all', '[1, 2, 3]', '{"unexpected": true}', '']) {
      const body = Buffer.from(bytes);
      const r = await deliver(h, provider, app.id, body, signed(provider, body, SECRETS[provider], h.clock.ms));
      expectError(r, 422, 'validation_error');
    }
    expect(await licenseCount(h, app)).toBe(0);
    expect(await orders(h, app)).toEqual([]);
    // Nothing was recorded either: the real event is still new.
    expect((await post(h, provider, app, sample())).json().outcome).toBe('granted');
  });

  it('an unknown product is 200 unknown_product and grants nothing; once mapped, the store’s resend grants it once', async () => {
    const other = await h.createApp({ name: 'Unmapped' });
    await connect(h, other, provider);
    const body = sample();
    const first = await post(h, provider, other, body);
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json()).toMatchObject({ outcome: 'unknown_product', licenses_created: 0 });
    expect(await licenseCount(h, other)).toBe(0);
    await map(h, other, provider, { product_key: SOLD[provider], lifetime: true });
    const resent = await post(h, provider, other, body);
    expect(resent.json()).toMatchObject({ outcome: 'granted', licenses_created: 1 });
    expect((await post(h, provider, other, body)).json().outcome).toBe('duplicate');
    expect(await licenseCount(h, other)).toBe(1);
  });

  it('the sale is in the audit log, by the store, without the codes', async () => {
    await post(h, provider, app, sample());
    const audit = (await h.admin('GET', `/audit?app_id=${app.id}`)).json().items as { actor: string; action: string; details: object }[];
    const sale = audit.find((e) => e.action === 'sale.apply');
    expect(sale).toMatchObject({ actor: `integration:${provider}`, details: { provider, outcome: 'granted', licenses: 2 } });
    expect(JSON.stringify(sale)).not.toMatch(/[A-Z2-9]{5}-[A-Z2-9]{5}-/);
    expect(audit.map((e) => e.action)).toEqual(expect.arrayContaining(['integration.set', 'integration.product_create']));
  });
});
