import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { redeem as redeemClaimed } from '../src/domain/licenses.js';
import { write } from '../src/domain/unit-of-work.js';
import { harness, PASSWORD, STORE, type Harness, type TestApp } from './helpers.js';
import { connect, fixture, licenseCount, map, post, variant, type Provider } from './sales-helpers.js';

/**
 * What happens after the sale (docs/decisions.md, issue 23 "Sales in"): renewals extend, a cancellation
 * ends what was not yet redeemed, a refund takes back everything, and each change emits its events.
 */
interface StoredEvent { type: string; data: string }
const events = async (h: Harness): Promise<{ type: string; data: any }[]> =>
  (await h.tollgate.services.store.db.all<StoredEvent>('SELECT type, data FROM events ORDER BY occurred_at, id')).map((e) => ({ type: e.type, data: JSON.parse(e.data) }));

const MINUTE = 60_000;
const DAY = 1440;

describe('sales lifecycle', () => {
  let h: Harness;
  let app: TestApp;

  beforeEach(async () => {
    h = await harness();
    app = await h.createApp();
  });
  afterEach(async () => h.close());

  async function redeem(code: string, username: string): Promise<string> {
    const id = await h.signUp(app, username);
    const res = await h.client(app, 'POST', '/activate_license', { code, username, password: PASSWORD });
    expect(res.statusCode, res.body).toBe(200);
    return id;
  }
  const membership = async (userId: string) => (await h.admin('GET', `/apps/${app.id}/users/${userId}`)).json().membership;
  const order = async (orderId: string) => (await h.admin('GET', `/apps/${app.id}/orders/${orderId}`)).json();

  async function sell(provider: Provider, body: Buffer): Promise<{ orderId: string; codes: string[] }> {
    const res = await post(h, provider, app, body);
    expect(res.json().outcome, res.body).toBe('granted');
    const o = await order(res.json().order_id);
    return { orderId: o.id, codes: o.licenses.map((l: { code: string }) => l.code) };
  }

  it('license.created carries the buyer email, the order id and the codes, once per sale', async () => {
    await connect(h, app, 'stripe');
    await map(h, app, 'stripe', { product_key: 'plink_1PgaflB7WZ01zgkW2Wn4ZAnp', minutes: DAY, codes_per_unit: 2 });
    const { orderId, codes } = await sell('stripe', fixture('stripe', 'checkout.session.completed'));
    await post(h, 'stripe', app, fixture('stripe', 'checkout.session.completed'));
    const created = (await events(h)).filter((e) => e.type === 'license.created');
    expect(created).toHaveLength(1);
    expect(created[0]!.data).toMatchObject({ count: 2, email: 'jenny.rosen@example.com', order_id: orderId, provider: 'stripe', order_ref: 'cs_test_a1Ae3LyYt5E8l1UVQFJbNqTMyDw6TZWFp8hNNxBlqzBpHmHXR1k7m6LaAh' });
    expect(created[0]!.data.licenses.map((l: { code: string }) => l.code).sort()).toEqual([...codes].sort());
  });

  it('Stripe subscription: invoice.paid grants, subscription_cycle extends the code or its redeemer, deletion ends the unredeemed code and keeps paid time', async () => {
    await connect(h, app, 'stripe');
    await map(h, app, 'stripe', { product_key: 'price_1MtHZ8LkdIwHu7ixzyRd6pY1', minutes: 30 * DAY, codes_per_unit: 2 });
    // The subscription's checkout is granted by its invoice, not twice.
    const checkout = variant('stripe', 'checkout.session.completed', (e) => {
      e.id = 'evt_checkout_sub'; e.data.object.mode = 'subscription'; e.data.object.subscription = 'sub_1MtHbELkdIwHu7ixRguFNUcz';
    });
    expect((await post(h, 'stripe', app, checkout)).json().outcome).toBe('ignored');
    const { orderId, codes } = await sell('stripe', fixture('stripe', 'invoice.paid'));
    expect(codes).toHaveLength(2);
    const userId = await redeem(codes[0]!, 'subscriber');
    const start = h.clock.ms;
    expect((await membership(userId)).active_until).toBe(new Date(start + 30 * DAY * MINUTE).toISOString());

    h.clock.advance(29 * DAY * MINUTE);
    const renewal = variant('stripe', 'invoice.paid', (e) => {
      e.id = 'evt_renewal_1'; e.data.object.id = 'in_renewal_1'; e.data.object.billing_reason = 'subscription_cycle';
    });
    const renewed = await post(h, 'stripe', app, renewal);
    expect(renewed.json()).toMatchObject({ outcome: 'renewed', order_id: orderId });
    // The redeemer's membership gained 30 days; the unredeemed code now holds 60.
    expect((await membership(userId)).active_until).toBe(new Date(start + 60 * DAY * MINUTE).toISOString());
    const detail = await order(orderId);
    const byCode = Object.fromEntries(detail.licenses.map((l: { code: string }) => [l.code, l]));
    expect(byCode[codes[0]!]).toMatchObject({ renewal_minutes: 30 * DAY, state: 'issued' });
    const unredeemed = (await h.admin('GET', `/apps/${app.id}/licenses?q=${codes[1]}`)).json().items[0];
    expect(unredeemed.minutes).toBe(60 * DAY);
    // A redelivered renewal extends nothing again.
    expect((await post(h, 'stripe', app, renewal)).json().outcome).toBe('duplicate');
    expect((await membership(userId)).active_until).toBe(new Date(start + 60 * DAY * MINUTE).toISOString());
    const types = (await events(h)).map((e) => e.type);
    expect(types.filter((t) => t === 'license.extended')).toHaveLength(1);

    const deleted = await post(h, 'stripe', app, fixture('stripe', 'customer.subscription.deleted'));
    expect(deleted.json()).toMatchObject({ outcome: 'cancelled', order_id: orderId });
    // Cancellation: the unredeemed code is gone, the redeemer keeps the time paid for.
    expect(await licenseCount(h, app)).toBe(1);
    expect((await membership(userId)).active_until).toBe(new Date(start + 60 * DAY * MINUTE).toISOString());
    expect((await order(orderId)).status).toBe('cancelled');
    const revoked = (await events(h)).filter((e) => e.type === 'license.revoked');
    expect(revoked).toHaveLength(1);
    expect(revoked[0]!.data).toMatchObject({ order_id: orderId, reason: 'cancellation', deleted: true, user_id: null });
    expect(revoked[0]!.data.license.code).toBeUndefined();
    // A renewal after the end extends nothing.
    const late = variant('stripe', 'invoice.paid', (e) => { e.id = 'evt_renewal_2'; e.data.object.id = 'in_renewal_2'; e.data.object.billing_reason = 'subscription_cycle'; });
    expect((await post(h, 'stripe', app, late)).json().outcome).toBe('already_ended');
  });

  it('Stripe invoices of API versions from 2025-03-31 (parent.subscription_details, pricing.price_details) grant and renew the same', async () => {
    await connect(h, app, 'stripe');
    await map(h, app, 'stripe', { product_key: 'prod_NeZwCXRnVEHyfl', minutes: DAY });
    const basil = (id: string, invoice: string, reason: string) => variant('stripe', 'invoice.paid', (e) => {
      e.id = id;
      const o = e.data.object;
      o.id = invoice;
      o.billing_reason = reason;
      delete o.subscription;
      delete o.payment_intent;
      delete o.charge;
      o.parent = { type: 'subscription_details', subscription_details: { subscription: 'sub_basil', metadata: {} }, quote_details: null };
      for (const line of o.lines.data) {
        line.pricing = { type: 'price_details', price_details: { price: line.price.id, product: line.price.product }, unit_amount_decimal: '999' };
        delete line.price;
      }
    });
    const sold = await post(h, 'stripe', app, basil('evt_basil_1', 'in_basil_1', 'subscription_create'));
    expect(sold.json()).toMatchObject({ outcome: 'granted', licenses_created: 1 });
    expect((await order(sold.json().order_id)).subscription_ref).toBe('sub_basil');
    expect((await post(h, 'stripe', app, basil('evt_basil_2', 'in_basil_2', 'subscription_cycle'))).json()).toMatchObject({ outcome: 'renewed', order_id: sold.json().order_id });
    const [license] = (await order(sold.json().order_id)).licenses;
    expect((await h.admin('GET', `/apps/${app.id}/licenses/${license.license_id}`)).json().minutes).toBe(2 * DAY);
  });

  it('a renewal between a redemption’s read of the code and its claim is not lost: the claim applies what the code holds then', async () => {
    await connect(h, app, 'stripe');
    await map(h, app, 'stripe', { product_key: 'price_1MtHZ8LkdIwHu7ixzyRd6pY1', minutes: DAY });
    const { codes } = await sell('stripe', fixture('stripe', 'invoice.paid'));
    const userId = await h.signUp(app, 'racer');
    const s = h.tollgate.services;
    // The redemption has read the code (1 day) …
    const stale = (await s.store.licenses.findByCode(app.id, codes[0]!))!;
    // … the renewal adds a day to it …
    const renewal = variant('stripe', 'invoice.paid', (e) => { e.id = 'evt_race'; e.data.object.id = 'in_race'; e.data.object.billing_reason = 'subscription_cycle'; });
    expect((await post(h, 'stripe', app, renewal)).json().outcome).toBe('renewed');
    // … and the redemption claims it with what it read.
    const record = (await s.store.apps.findById(app.id))!;
    await write(s, ({ tx }) => redeemClaimed(tx, { app: record, ip: '127.0.0.1', now: h.clock.ms }, userId, stale));
    expect((await membership(userId)).active_until).toBe(h.clock.iso(2 * DAY * MINUTE));
  });

  it('Stripe refund (charge.refunded, full): the redeemed code’s minutes are taken back, the unredeemed one deleted; a partial refund changes nothing', async () => {
    await connect(h, app, 'stripe');
    await map(h, app, 'stripe', { product_key: 'plink_1PgaflB7WZ01zgkW2Wn4ZAnp', minutes: 10 * DAY, codes_per_unit: 2 });
    const { orderId, codes } = await sell('stripe', fixture('stripe', 'checkout.session.completed'));
    // Earlier time from elsewhere: 1 day, redeemed before the sale's code.
    const userId = await h.activeUser(app, 'buyer', PASSWORD, undefined, { minutes: DAY });
    const activated = await h.client(app, 'POST', '/activate_license', { code: codes[0], username: 'buyer', password: PASSWORD });
    expect(activated.statusCode).toBe(200);
    const before = h.clock.ms;
    expect((await membership(userId)).active_until).toBe(new Date(before + 11 * DAY * MINUTE).toISOString());
    const partial = variant('stripe', 'charge.refunded', (e) => { e.id = 'evt_partial'; e.data.object.refunded = false; e.data.object.amount_refunded = 100; });
    expect((await post(h, 'stripe', app, partial)).json()).toMatchObject({ outcome: 'partially_refunded', order_id: orderId });
    h.clock.advance(DAY * MINUTE);
    const refund = await post(h, 'stripe', app, fixture('stripe', 'charge.refunded'));
    expect(refund.json()).toMatchObject({ outcome: 'refunded', order_id: orderId });
    // 11 days from the start, 10 taken back: 1 day from the start, which is now: the membership has just ended.
    expect((await membership(userId))).toMatchObject({ is_active: false, active_until: new Date(before + DAY * MINUTE).toISOString() });
    expect(await licenseCount(h, app)).toBe(2); // the other app license and the redeemed sale code stay as history
    expect((await order(orderId)).licenses.every((l: { state: string }) => l.state === 'revoked')).toBe(true);
    const types = (await events(h)).map((e) => e.type);
    expect(types.filter((t) => t === 'license.revoked')).toHaveLength(2);
    expect((await post(h, 'stripe', app, fixture('stripe', 'charge.refunded'))).json().outcome).toBe('duplicate');
  });

  it('Paddle: transaction.completed grants, a subscription_recurring transaction renews, an approved full refund adjustment takes back a lifetime grant', async () => {
    await connect(h, app, 'paddle');
    await map(h, app, 'paddle', { product_key: 'pro_01gsz4t5hdjse780zja8vvr7jg', lifetime: true });
    const { orderId, codes } = await sell('paddle', fixture('paddle', 'transaction.completed'));
    expect(codes).toHaveLength(1);
    const userId = await redeem(codes[0]!, 'lifer');
    expect((await membership(userId)).is_lifetime).toBe(true);
    const recurring = variant('paddle', 'transaction.completed', (e) => { e.event_id = 'evt_01hvrenewal000000000000000'; e.data.id = 'txn_renewal'; e.data.origin = 'subscription_recurring'; });
    expect((await post(h, 'paddle', app, recurring)).json()).toMatchObject({ outcome: 'renewed', order_id: orderId });
    const pending = variant('paddle', 'adjustment.updated', (e) => { e.event_id = 'evt_01hvpending00000000000000'; e.event_type = 'adjustment.created'; e.data.status = 'pending_approval'; });
    expect((await post(h, 'paddle', app, pending)).json().outcome).toBe('ignored');
    expect((await membership(userId)).is_lifetime).toBe(true);
    // A partial refund adjustment is recorded against the order and takes nothing back.
    const partial = variant('paddle', 'adjustment.updated', (e) => { e.event_id = 'evt_01hvpartial00000000000000'; e.data.type = 'partial'; e.data.totals.total = '500'; });
    expect((await post(h, 'paddle', app, partial)).json()).toMatchObject({ outcome: 'partially_refunded', order_id: orderId });
    expect((await membership(userId)).is_lifetime).toBe(true);
    expect((await post(h, 'paddle', app, fixture('paddle', 'adjustment.updated'))).json()).toMatchObject({ outcome: 'refunded', order_id: orderId });
    expect(await membership(userId)).toMatchObject({ is_lifetime: false, is_active: false });
  });

  it('Paddle: subscription.canceled revokes a redeemed lifetime grant (it was bound to the subscription)', async () => {
    await connect(h, app, 'paddle');
    await map(h, app, 'paddle', { product_key: 'pri_01gsz8x8sawmvhz1pv30nge1ke', lifetime: true });
    const { codes } = await sell('paddle', fixture('paddle', 'transaction.completed'));
    const userId = await redeem(codes[0]!, 'lifer');
    expect((await post(h, 'paddle', app, fixture('paddle', 'subscription.canceled'))).json().outcome).toBe('cancelled');
    expect((await membership(userId)).is_lifetime).toBe(false);
    expect((await post(h, 'paddle', app, fixture('paddle', 'subscription.canceled'))).json().outcome).toBe('duplicate');
  });

  it('Lemon Squeezy: subscription_created before its order is 409 (the store retries) and then links; a renewal extends; order_refunded takes back', async () => {
    await connect(h, app, 'lemonsqueezy');
    await map(h, app, 'lemonsqueezy', { product_key: '1', minutes: 30 * DAY });
    const early = await post(h, 'lemonsqueezy', app, fixture('lemonsqueezy', 'subscription_created'));
    expect(early.statusCode, early.body).toBe(409);
    expect(early.json().code).toBe('conflict');
    const { orderId, codes } = await sell('lemonsqueezy', fixture('lemonsqueezy', 'order_created'));
    expect((await post(h, 'lemonsqueezy', app, fixture('lemonsqueezy', 'subscription_created'))).json()).toMatchObject({ outcome: 'linked', order_id: orderId });
    const userId = await redeem(codes[0]!, 'lemon');
    const start = h.clock.ms;
    expect((await post(h, 'lemonsqueezy', app, fixture('lemonsqueezy', 'subscription_payment_success'))).json()).toMatchObject({ outcome: 'renewed', order_id: orderId });
    expect((await membership(userId)).active_until).toBe(new Date(start + 60 * DAY * MINUTE).toISOString());
    const initial = variant('lemonsqueezy', 'subscription_payment_success', (e) => { e.data.id = '1'; e.data.attributes.billing_reason = 'initial'; });
    expect((await post(h, 'lemonsqueezy', app, initial)).json().outcome).toBe('ignored');
    // Cancelled: the redeemer keeps the time; refunded afterwards: both periods are taken back.
    expect((await post(h, 'lemonsqueezy', app, fixture('lemonsqueezy', 'subscription_cancelled'))).json().outcome).toBe('cancelled');
    expect((await membership(userId)).active_until).toBe(new Date(start + 60 * DAY * MINUTE).toISOString());
    expect((await post(h, 'lemonsqueezy', app, fixture('lemonsqueezy', 'order_refunded'))).json().outcome).toBe('refunded');
    expect((await membership(userId))).toMatchObject({ is_active: false, active_until: new Date(start).toISOString() });
  });

  it('Lemon Squeezy: a partial refund is recorded and revokes nothing; the later full refund of the same order revokes', async () => {
    await connect(h, app, 'lemonsqueezy');
    await map(h, app, 'lemonsqueezy', { product_key: '1', minutes: 30 * DAY, codes_per_unit: 2 });
    const { orderId, codes } = await sell('lemonsqueezy', fixture('lemonsqueezy', 'order_created'));
    const userId = await redeem(codes[0]!, 'lemon');
    const start = h.clock.ms;
    // Lemon Squeezy's order_refunded for a partial refund: the same order, status partial_refund, refunded false.
    const partial = variant('lemonsqueezy', 'order_refunded', (e) => {
      Object.assign(e.data.attributes, { status: 'partial_refund', status_formatted: 'Partial refund', refunded: false, refunded_amount: 500 });
    });
    expect((await post(h, 'lemonsqueezy', app, partial)).json()).toMatchObject({ outcome: 'partially_refunded', order_id: orderId });
    expect((await post(h, 'lemonsqueezy', app, partial)).json()).toMatchObject({ outcome: 'duplicate', order_id: orderId });
    expect((await membership(userId)).active_until).toBe(new Date(start + 30 * DAY * MINUTE).toISOString());
    expect((await order(orderId))).toMatchObject({ status: 'active' });
    expect((await order(orderId)).licenses.every((l: { state: string }) => l.state === 'issued')).toBe(true);
    expect(await licenseCount(h, app)).toBe(2);
    const audit = (await h.admin('GET', `/audit?action=sale.apply&limit=50`)).json().items;
    expect(audit.find((e: any) => e.details.outcome === 'partially_refunded')).toMatchObject({ target_id: orderId, details: { provider: 'lemonsqueezy', refunded_amount: 500 } });
    // The full refund: the same order and event name, status refunded. Not a duplicate of the partial one.
    h.clock.advance(DAY * MINUTE);
    const full = await post(h, 'lemonsqueezy', app, fixture('lemonsqueezy', 'order_refunded'));
    expect(full.json()).toMatchObject({ outcome: 'refunded', order_id: orderId });
    expect(await membership(userId)).toMatchObject({ is_active: false, active_until: new Date(start + DAY * MINUTE).toISOString() });
    expect((await order(orderId)).licenses.every((l: { state: string }) => l.state === 'revoked')).toBe(true);
    expect(await licenseCount(h, app)).toBe(1); // the unredeemed code is deleted
    expect((await post(h, 'lemonsqueezy', app, fixture('lemonsqueezy', 'order_refunded'))).json().outcome).toBe('duplicate');
  });

  it('unknown orders and subscriptions are acknowledged (200) and change nothing', async () => {
    for (const provider of ['stripe', 'paddle', 'lemonsqueezy'] as const) await connect(h, app, provider);
    // A revocation of an order not seen is 409 for its first day (the purchase may be on its way), then acknowledged.
    expect((await post(h, 'stripe', app, fixture('stripe', 'charge.refunded'))).statusCode).toBe(409);
    h.clock.advance(24 * 60 * MINUTE + 1);
    expect((await post(h, 'stripe', app, fixture('stripe', 'charge.refunded'))).json().outcome).toBe('unknown_order');
    expect((await post(h, 'stripe', app, fixture('stripe', 'customer.subscription.deleted'))).json().outcome).toBe('unknown_subscription');
    expect((await post(h, 'paddle', app, fixture('paddle', 'adjustment.updated'))).json().outcome).toBe('unknown_order');
    expect((await post(h, 'lemonsqueezy', app, fixture('lemonsqueezy', 'subscription_payment_success'))).json().outcome).toBe('unknown_subscription');
    expect(await licenseCount(h, app)).toBe(0);
  });

  it(`20 refunds of one order at once take the time back once (${STORE})`, async () => {
    await connect(h, app, 'stripe');
    await map(h, app, 'stripe', { product_key: 'plink_1PgaflB7WZ01zgkW2Wn4ZAnp', minutes: 10 * DAY });
    const { codes } = await sell('stripe', fixture('stripe', 'checkout.session.completed'));
    const userId = await h.activeUser(app, 'buyer', PASSWORD, undefined, { minutes: 20 * DAY });
    await h.client(app, 'POST', '/activate_license', { code: codes[0], username: 'buyer', password: PASSWORD });
    const start = h.clock.ms;
    // Twenty different refund events of the same order (a store retrying under new ids): only one takes anything back.
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) =>
      post(h, 'stripe', app, variant('stripe', 'charge.refunded', (e) => { e.id = `evt_refund_${i}`; }))));
    const outcomes = answers.map((r) => r.json().outcome);
    expect(outcomes.filter((o) => o === 'refunded')).toHaveLength(1);
    expect(outcomes.filter((o) => o === 'already_ended')).toHaveLength(19);
    expect((await membership(userId)).active_until).toBe(new Date(start + 20 * DAY * MINUTE).toISOString());
  });
});
