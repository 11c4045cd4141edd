import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Repositories } from '../src/store/index.js';
import { expectError, harness, PASSWORD, STORE, writableStore, type Harness, type TestApp } from './helpers.js';
import { connect, createTemplate, fixture, map, order as orderOf, post, sellStripe, STRIPE_PRICE as PRICE, stripeRenewal as renewal, variant } from './sales-helpers.js';

/**
 * A store sells tiers: a product mapping names a license template of its app, so each sold code is made from it
 * (duration, entitlements, device and seat limits), and a subscription's renewal extends what it lends as well
 * as the membership (docs/integrations.md). Every sale here is a Stripe event signed by the stripe package.
 */
const MINUTE = 60_000;
const DAY = 1440;

describe(`sales of license templates (${STORE})`, () => {
  let h: Harness;
  let app: TestApp;

  beforeEach(async () => {
    h = await harness();
    app = await h.createApp();
    await connect(h, app, 'stripe');
  });
  afterEach(async () => h.close());

  const template = (body: Record<string, unknown>, appId = app.id) => createTemplate(h, appId, body);
  const order = (orderId: string) => orderOf(h, app, orderId);
  const license = async (id: string) => (await h.admin('GET', `/apps/${app.id}/licenses/${id}`)).json();
  const user = async (id: string) => (await h.admin('GET', `/apps/${app.id}/users/${id}`)).json();

  async function sell(): Promise<{ orderId: string; licenseIds: string[]; codes: string[] }> {
    const o = await sellStripe(h, app);
    return { orderId: o.id, licenseIds: o.licenses.map((l: any) => l.license_id), codes: o.licenses.map((l: any) => l.code) };
  }
  async function redeem(code: string, username: string): Promise<string> {
    const id = await h.signUp(app, username);
    const res = await h.client(app, 'POST', '/activate_license', { code, username, password: PASSWORD });
    expect(res.statusCode, res.body).toBe(200);
    return id;
  }

  it('a sale reads the templates of the mappings its lines matched, not of every mapping of the app', async () => {
    const sold = await template({ name: 'Sold', minutes: 30 * DAY, entitlements: ['pro'] });
    await map(h, app, 'stripe', { product_key: PRICE, template_id: sold.id });
    const others = [];
    for (let i = 0; i < 5; i++) {
      const t = await template({ name: `Other ${i}`, minutes: 60 });
      await map(h, app, 'stripe', { product_key: `price_other_${i}`, template_id: t.id });
      others.push(t.id);
    }
    // Which templates the sale's transaction reads.
    const read: string[] = [];
    const store = writableStore(h.tollgate.services);
    const real = store.transaction.bind(store);
    store.transaction = <T>(fn: (tx: Repositories) => Promise<T>) => real((tx) => fn({
      ...tx,
      templates: { ...tx.templates, findById: async (appId: string, id: string) => { read.push(id); return tx.templates.findById(appId, id); } },
    }));
    const { licenseIds } = await sell();
    expect(read).toEqual([sold.id]);
    expect(await license(licenseIds[0]!)).toMatchObject({ template_id: sold.id, entitlements: ['pro'] });
  });

  it('a mapping names a template: the sold license carries its duration, entitlements, device and seat limits', async () => {
    const t = await template({ name: 'Pro monthly', minutes: 30 * DAY, entitlements: ['pro', 'export'], max_devices: 3, max_seats: 2, heartbeat_seconds: 120 });
    const mapping = await h.admin('POST', `/apps/${app.id}/integrations/stripe/products`, { product_key: PRICE, template_id: t.id, codes_per_unit: 2 });
    expect(mapping.statusCode, mapping.body).toBe(201);
    expect(mapping.json()).toMatchObject({ product_key: PRICE, template_id: t.id, minutes: null, lifetime: false, codes_per_unit: 2 });
    expect((await h.admin('GET', `/apps/${app.id}/integrations/stripe/products`)).json().items[0]).toMatchObject({ template_id: t.id });

    const { licenseIds, codes } = await sell();
    expect(codes).toHaveLength(2);
    for (const id of licenseIds) {
      expect(await license(id)).toMatchObject({
        template_id: t.id, minutes: 30 * DAY, grants_lifetime_access: false, entitlements: ['export', 'pro'], max_devices: 3, max_seats: 2, heartbeat_seconds: 120,
      });
    }
    const userId = await redeem(codes[0]!, 'pro-buyer');
    expect((await user(userId)).membership).toMatchObject({ is_active: true, active_until: h.clock.iso(30 * DAY * MINUTE), entitlements: ['export', 'pro'] });
  });

  it('a refund of one renewal\'s bill takes its period back from what the template lends too, never before now', async () => {
    const t = await template({ name: 'Pro monthly', minutes: 30 * DAY, entitlements: ['pro'], max_devices: 3 });
    await map(h, app, 'stripe', { product_key: PRICE, template_id: t.id });
    const { orderId, codes } = await sell();
    const userId = await redeem(codes[0]!, 'refunder');
    const start = h.clock.ms;
    h.clock.advance(29 * DAY * MINUTE);
    expect((await post(h, 'stripe', app, renewal(1))).json()).toMatchObject({ outcome: 'renewed', order_id: orderId });
    expect((await user(userId)).entitlement_grants).toEqual([expect.objectContaining({ code: 'pro', until: new Date(start + 60 * DAY * MINUTE).toISOString() })]);
    const refund = variant('stripe', 'charge.refunded', (e) => {
      e.id = 'evt_refund_renewal_1'; e.created = Math.floor(h.clock.ms / 1000);
      e.data.object.id = 'ch_renewal_1'; e.data.object.payment_intent = 'pi_renewal_1'; e.data.object.invoice = 'in_renewal_1';
    });
    expect((await post(h, 'stripe', app, refund)).json()).toMatchObject({ outcome: 'renewal_refunded', order_id: orderId });
    const after = await user(userId);
    expect(after.membership).toMatchObject({ active_until: new Date(start + 30 * DAY * MINUTE).toISOString(), entitlements: ['pro'] });
    expect(after.entitlement_grants).toEqual([expect.objectContaining({ code: 'pro', live: true, until: new Date(start + 30 * DAY * MINUTE).toISOString() })]);
  });

  it('a renewal extends the membership and what the template lends by its duration: the entitlements outlive the first period', async () => {
    const t = await template({ name: 'Pro monthly', minutes: 30 * DAY, entitlements: ['pro'], max_devices: 3 });
    await map(h, app, 'stripe', { product_key: PRICE, template_id: t.id });
    const { orderId, codes } = await sell();
    const userId = await redeem(codes[0]!, 'subscriber');
    const start = h.clock.ms;

    h.clock.advance(29 * DAY * MINUTE);
    expect((await post(h, 'stripe', app, renewal(1))).json()).toMatchObject({ outcome: 'renewed', order_id: orderId });
    expect((await order(orderId)).licenses[0]).toMatchObject({ renewal_minutes: 30 * DAY, state: 'issued' });
    // Day 31: past the first period, inside the renewed one.
    h.clock.advance(2 * DAY * MINUTE);
    const detail = await user(userId);
    expect(detail.membership).toMatchObject({ is_active: true, active_until: new Date(start + 60 * DAY * MINUTE).toISOString(), entitlements: ['pro'] });
    expect(detail.entitlement_grants).toEqual([expect.objectContaining({ code: 'pro', live: true, until: new Date(start + 60 * DAY * MINUTE).toISOString() })]);

    // A refund takes back both periods, and what the template lent ends now.
    const refund = variant('stripe', 'charge.refunded', (e) => { e.data.object.payment_intent = 'pi_3MtHbFLkdIwHu7ix0W5Bs8hH'; e.data.object.invoice = 'in_1MtHbELkdIwHu7ixl4OzzPMv'; });
    const refunded = await post(h, 'stripe', app, refund);
    expect(refunded.json(), refunded.body).toMatchObject({ outcome: 'refunded', order_id: orderId });
    const after = await user(userId);
    expect(after.membership).toMatchObject({ is_active: false, entitlements: [] });
    expect(after.entitlement_grants).toEqual([expect.objectContaining({ code: 'pro', live: false, until: h.clock.iso() })]);
  });

  it('on a lifetime membership a renewal stacks what the template lends on its own end (holdingEnd), early or late', async () => {
    const t = await template({ name: 'Pro monthly', minutes: 30 * DAY, entitlements: ['pro'] });
    await map(h, app, 'stripe', { product_key: PRICE, template_id: t.id });
    const { codes } = await sell();
    const userId = await h.signUp(app, 'lifer');
    const own = await h.admin('PATCH', `/apps/${app.id}/users/${userId}`, { lifetime: true });
    expect(own.statusCode, own.body).toBe(200);
    const res = await h.client(app, 'POST', '/activate_license', { code: codes[0], username: 'lifer', password: PASSWORD });
    expect(res.statusCode, res.body).toBe(200);
    const start = h.clock.ms;
    const until = async () => (await user(userId)).entitlement_grants.map((g: any) => g.until);
    expect(await until()).toEqual([new Date(start + 30 * DAY * MINUTE).toISOString()]);
    // Day 10: an early renewal adds its period after the paid one, not from now.
    h.clock.advance(10 * DAY * MINUTE);
    expect((await post(h, 'stripe', app, renewal(1))).json().outcome).toBe('renewed');
    expect(await until()).toEqual([new Date(start + 60 * DAY * MINUTE).toISOString()]);
    // Day 70, the holding run out: the next period counts from now.
    h.clock.advance(60 * DAY * MINUTE);
    expect((await post(h, 'stripe', app, renewal(2))).json().outcome).toBe('renewed');
    expect(await until()).toEqual([new Date(start + 100 * DAY * MINUTE).toISOString()]);
    expect((await user(userId)).membership).toMatchObject({ is_lifetime: true, entitlements: ['pro'] });
  });

  it('a lifetime template is not extended by a renewal; a cancellation revokes the lifetime and what it lends', async () => {
    const t = await template({ name: 'Forever', lifetime: true, entitlements: ['pro'] });
    await map(h, app, 'stripe', { product_key: PRICE, template_id: t.id });
    const { orderId, licenseIds, codes } = await sell();
    expect(await license(licenseIds[0]!)).toMatchObject({ template_id: t.id, minutes: null, grants_lifetime_access: true, entitlements: ['pro'] });
    expect((await post(h, 'stripe', app, fixture('stripe', 'invoice.paid'))).json().outcome).toBe('duplicate');
    const userId = await redeem(codes[0]!, 'lifer');
    h.clock.advance(30 * DAY * MINUTE);
    const renewed = await post(h, 'stripe', app, renewal(1));
    expect(renewed.json()).toMatchObject({ outcome: 'renewed', order_id: orderId });
    expect((await order(orderId)).licenses[0]).toMatchObject({ renewal_minutes: 0, minutes: null, lifetime: true });
    expect((await user(userId)).membership).toMatchObject({ is_lifetime: true, active_until: null, entitlements: ['pro'] });
    expect((await post(h, 'stripe', app, fixture('stripe', 'customer.subscription.deleted'))).json().outcome).toBe('cancelled');
    const after = await user(userId);
    expect(after.membership).toMatchObject({ is_lifetime: false, is_active: false, entitlements: [] });
    expect(after.entitlement_grants).toEqual([expect.objectContaining({ code: 'pro', live: false, until: h.clock.iso() })]);
  });

  it('refuses an unknown template, another app’s template, and a template with minutes or lifetime (422 in the error shape); PATCH switches a mapping to a template and back', async () => {
    const other = await h.createApp({ name: 'Other app' });
    const theirs = await template({ name: 'Theirs', minutes: 60 }, other.id);
    const ours = await template({ name: 'Ours', minutes: 60 });
    const products = `/apps/${app.id}/integrations/stripe/products`;
    for (const body of [
      { product_key: PRICE, template_id: '00000000-0000-4000-8000-000000000000' },
      { product_key: PRICE, template_id: theirs.id },
      { product_key: PRICE, template_id: ours.id, minutes: 60 },
      { product_key: PRICE, template_id: ours.id, lifetime: true },
      { product_key: PRICE, template_id: 'not-a-uuid' },
    ]) {
      const body422 = expectError(await h.admin('POST', products, body), 422, 'validation_error');
      expect(body422.detail, JSON.stringify(body)).toBeTruthy();
    }
    expect((await h.admin('GET', products)).json().items).toEqual([]);

    const id = await map(h, app, 'stripe', { product_key: PRICE, minutes: 60 });
    expectError(await h.admin('PATCH', `${products}/${id}`, { template_id: theirs.id }), 422, 'validation_error');
    const toTemplate = await h.admin('PATCH', `${products}/${id}`, { template_id: ours.id });
    expect(toTemplate.json(), toTemplate.body).toMatchObject({ template_id: ours.id, minutes: null, lifetime: false });
    expect((await h.admin('PATCH', `${products}/${id}`, { codes_per_unit: 3 })).json()).toMatchObject({ template_id: ours.id, codes_per_unit: 3 });
    const back = await h.admin('PATCH', `${products}/${id}`, { minutes: 120 });
    expect(back.json(), back.body).toMatchObject({ template_id: null, minutes: 120, lifetime: false });
  });

  it('a template a store sells cannot be deleted (409) until its mapping is changed', async () => {
    const t = await template({ name: 'Pro', minutes: 60 });
    const id = await map(h, app, 'stripe', { product_key: PRICE, template_id: t.id });
    const refused = expectError(await h.admin('DELETE', `/apps/${app.id}/templates/${t.id}`), 409, 'conflict');
    expect(refused.detail).toContain(PRICE);
    await h.admin('PATCH', `/apps/${app.id}/integrations/stripe/products/${id}`, { lifetime: true });
    expect((await h.admin('DELETE', `/apps/${app.id}/templates/${t.id}`)).statusCode).toBe(204);
  });
});
