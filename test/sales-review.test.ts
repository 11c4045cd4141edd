import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { harness, PASSWORD, type Harness, type TestApp } from './helpers.js';
import { connect, fixture, licenseCount, map, orders, post, STRIPE_PRICE, stripeRenewal, variant } from './sales-helpers.js';

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

describe('a refund takes back the sale\'s own lifetime only', () => {
  let h: Harness;
  let app: TestApp;

  beforeEach(async () => {
    h = await harness();
    app = await h.createApp();
    await connect(h, app, 'stripe');
    await map(h, app, 'stripe', { product_key: 'plink_1PgaflB7WZ01zgkW2Wn4ZAnp', lifetime: true });
  });
  afterEach(async () => h.close());

  async function redeem(code: string, userId: string, username: string): Promise<void> {
    const res = await h.client(app, 'POST', '/activate_license', { code, username, password: PASSWORD });
    expect(res.statusCode, res.body).toBe(200);
  }
  const membership = async (userId: string) => (await h.admin('GET', `/apps/${app.id}/users/${userId}`)).json().membership;
  let soldOrder = '';
  async function soldCode(): Promise<string> {
    const res = await post(h, 'stripe', app, fixture('stripe', 'checkout.session.completed'));
    expect(res.json().outcome, res.body).toBe('granted');
    soldOrder = res.json().order_id;
    return (await h.admin('GET', `/apps/${app.id}/orders/${soldOrder}`)).json().licenses[0].code;
  }
  /** The sale is refunded, and its own license is taken back (whatever the user keeps from elsewhere). */
  const refund = async () => {
    const res = await post(h, 'stripe', app, fixture('stripe', 'charge.refunded'));
    expect(res.json(), res.body).toMatchObject({ outcome: 'refunded' });
    expect((await h.admin('GET', `/apps/${app.id}/orders/${soldOrder}`)).json().licenses[0]).toMatchObject({ state: 'revoked' });
  };
  async function operatorLicense(): Promise<string> {
    const res = await h.admin('POST', `/apps/${app.id}/licenses`, { count: 1, lifetime: true });
    expect(res.statusCode, res.body).toBe(201);
    return res.json().licenses[0].code;
  }

  it('an operator-issued lifetime license redeemed before the sold one keeps the user lifetime', async () => {
    const before = await h.signUp(app, 'before');
    await redeem(await operatorLicense(), before, 'before');
    await redeem(await soldCode(), before, 'before');
    await refund();
    expect(await membership(before)).toMatchObject({ is_lifetime: true, is_active: true });
  });

  it('a lifetime license redeemed after the sold one keeps the user lifetime; the sale alone is taken back', async () => {
    const user = await h.signUp(app, 'after');
    await redeem(await soldCode(), user, 'after');
    await redeem(await operatorLicense(), user, 'after');
    await refund();
    expect(await membership(user)).toMatchObject({ is_lifetime: true });
  });

  it('the operator\'s lifetime grant keeps the user lifetime; one revoked since does not', async () => {
    const user = await h.signUp(app, 'granted');
    expect((await h.admin('PATCH', `/apps/${app.id}/users/${user}`, { lifetime: true })).statusCode).toBe(200);
    await redeem(await soldCode(), user, 'granted');
    await refund();
    expect(await membership(user)).toMatchObject({ is_lifetime: true });

    // Granted, then revoked by the operator: the sold code is then the only source, and its refund takes it.
    const other = await h.signUp(app, 'revoked');
    expect((await h.admin('PATCH', `/apps/${app.id}/users/${other}`, { lifetime: true })).statusCode).toBe(200);
    expect((await h.admin('PATCH', `/apps/${app.id}/users/${other}`, { lifetime: false })).statusCode).toBe(200);
    const res = await post(h, 'stripe', app, variant('stripe', 'checkout.session.completed', (e) => { e.id = 'evt_second'; e.data.object.id = 'cs_second'; e.data.object.payment_intent = 'pi_second'; }));
    expect(res.json().outcome, res.body).toBe('granted');
    await redeem((await h.admin('GET', `/apps/${app.id}/orders/${res.json().order_id}`)).json().licenses[0].code, other, 'revoked');
    expect(await membership(other)).toMatchObject({ is_lifetime: true });
    const second = await post(h, 'stripe', app, variant('stripe', 'charge.refunded', (e) => { e.id = 'evt_second_refund'; e.data.object.id = 'ch_second'; e.data.object.payment_intent = 'pi_second'; }));
    expect(second.json(), second.body).toMatchObject({ outcome: 'refunded' });
    expect(await membership(other)).toMatchObject({ is_lifetime: false });
  });

  it('with no other source the refund revokes the lifetime, as before', async () => {
    const user = await h.signUp(app, 'only');
    await redeem(await soldCode(), user, 'only');
    expect(await membership(user)).toMatchObject({ is_lifetime: true });
    await refund();
    expect(await membership(user)).toMatchObject({ is_lifetime: false });
  });
});

describe('a revocation that arrives before its purchase waits for it', () => {
  let h: Harness;
  let app: TestApp;

  beforeEach(async () => {
    h = await harness();
    app = await h.createApp();
  });
  afterEach(async () => h.close());

  /**
   * Delivers as a store does: a refund answered 409 (its order not there yet) comes again, here once the sale's own
   * delivery has been answered (a store's retry comes later still); any other answer is final.
   */
  async function refundAfter(sale: Promise<{ statusCode: number }>, body: Buffer): Promise<{ outcome: string; early: boolean }> {
    const first = await post(h, 'stripe', app, body);
    await sale;
    if (first.statusCode === 200) return { outcome: first.json().outcome, early: false };
    expect(first.statusCode, first.body).toBe(409);
    expect(first.json()).toMatchObject({ code: 'conflict' });
    const again = await post(h, 'stripe', app, body);
    expect(again.statusCode, again.body).toBe(200);
    return { outcome: again.json().outcome, early: true };
  }

  it('a refund or cancellation before its order is 409 and stores nothing; redelivered after the order, it revokes', async () => {
    await connect(h, app, 'stripe');
    await map(h, app, 'stripe', { product_key: 'plink_1PgaflB7WZ01zgkW2Wn4ZAnp', minutes: 1440 });
    await map(h, app, 'stripe', { product_key: 'price_1MtHZ8LkdIwHu7ixzyRd6pY1', minutes: 1440 });
    const early = await post(h, 'stripe', app, fixture('stripe', 'charge.refunded'));
    expect(early.statusCode, early.body).toBe(409);
    expect(await h.tollgate.services.store.db.all('SELECT event_id FROM integration_events')).toEqual([]);
    const cancel = await post(h, 'stripe', app, fixture('stripe', 'customer.subscription.deleted'));
    expect(cancel.statusCode, cancel.body).toBe(409);
    // Undated (no store sends one so): taken as new, not as a refund of something never sold.
    const undated = await post(h, 'stripe', app, variant('stripe', 'charge.refunded', (e) => { delete e.created; }));
    expect(undated.statusCode, undated.body).toBe(409);
    // A day and more later, it is about an order Tollgate never granted: acknowledged.
    h.clock.advance(24 * 60 * 60_000 + 1);
    expect((await post(h, 'stripe', app, fixture('stripe', 'charge.refunded'))).json()).toMatchObject({ outcome: 'unknown_order' });
    expect((await post(h, 'stripe', app, fixture('stripe', 'checkout.session.completed'))).json().outcome).toBe('granted');
    expect((await post(h, 'stripe', app, fixture('stripe', 'invoice.paid'))).json().outcome).toBe('granted');
    expect((await post(h, 'stripe', app, variant('stripe', 'charge.refunded', (e) => { e.id = 'evt_refund_late'; }))).json().outcome).toBe('refunded');
    expect((await post(h, 'stripe', app, fixture('stripe', 'customer.subscription.deleted'))).json().outcome).toBe('cancelled');
    expect(await licenseCount(h, app)).toBe(0);
  });

  it('20 purchase and refund pairs delivered at once all end refunded once the refunds are redelivered', async () => {
    await connect(h, app, 'stripe');
    await map(h, app, 'stripe', { product_key: 'plink_1PgaflB7WZ01zgkW2Wn4ZAnp', minutes: 1440 });
    const pairs = Array.from({ length: 20 }, (_, i) => ({
      sale: variant('stripe', 'checkout.session.completed', (e) => { e.id = `evt_sale_${i}`; e.data.object.id = `cs_${i}`; e.data.object.payment_intent = `pi_${i}`; }),
      refund: variant('stripe', 'charge.refunded', (e) => { e.id = `evt_refund_${i}`; e.data.object.id = `ch_${i}`; e.data.object.payment_intent = `pi_${i}`; }),
    }));
    const results = await Promise.all(pairs.map(async (p) => {
      const sale = post(h, 'stripe', app, p.sale);
      const refund = await refundAfter(sale, p.refund);
      expect((await sale).json().outcome).toBe('granted');
      return refund;
    }));
    expect(results.map((r) => r.outcome)).toEqual(Array(20).fill('refunded'));
    const all = await orders(h, app);
    expect(all).toHaveLength(20);
    expect(all.every((o) => o.status === 'refunded')).toBe(true);
    expect(await licenseCount(h, app)).toBe(0);
  });

  it('Paddle and Lemon Squeezy refunds before their orders are 409 too', async () => {
    await connect(h, app, 'paddle');
    await connect(h, app, 'lemonsqueezy');
    await map(h, app, 'paddle', { product_key: 'pri_01gsz8x8sawmvhz1pv30nge1ke', minutes: 1440 });
    await map(h, app, 'lemonsqueezy', { product_key: '1', minutes: 1440 });
    expect((await post(h, 'paddle', app, fixture('paddle', 'adjustment.updated'))).statusCode).toBe(409);
    const lemonRefund = variant('lemonsqueezy', 'order_refunded', (e) => { e.data.attributes.updated_at = h.clock.iso(); });
    expect((await post(h, 'lemonsqueezy', app, lemonRefund)).statusCode).toBe(409);
    expect((await post(h, 'paddle', app, fixture('paddle', 'transaction.completed'))).json().outcome).toBe('granted');
    expect((await post(h, 'lemonsqueezy', app, fixture('lemonsqueezy', 'order_created'))).json().outcome).toBe('granted');
    expect((await post(h, 'paddle', app, fixture('paddle', 'adjustment.updated'))).json().outcome).toBe('refunded');
    expect((await post(h, 'lemonsqueezy', app, lemonRefund)).json().outcome).toBe('refunded');
    expect(await licenseCount(h, app)).toBe(0);
  });
});

describe('a full refund of a renewal\'s bill takes back that renewal\'s period', () => {
  let h: Harness;
  let app: TestApp;
  const MINUTE = 60_000;
  const DAY = 1440;

  beforeEach(async () => {
    h = await harness();
    app = await h.createApp();
  });
  afterEach(async () => h.close());

  const membership = async (userId: string) => (await h.admin('GET', `/apps/${app.id}/users/${userId}`)).json().membership;
  const codeMinutes = async (code: string) => (await h.admin('GET', `/apps/${app.id}/licenses?q=${code}`)).json().items[0].minutes;

  it('Stripe: charge.refunded of the renewal invoice shortens the redeemer and the unredeemed code by one period, once; the order stays active', async () => {
    await connect(h, app, 'stripe');
    await map(h, app, 'stripe', { product_key: STRIPE_PRICE, minutes: 30 * DAY, codes_per_unit: 2 });
    const sold = await post(h, 'stripe', app, fixture('stripe', 'invoice.paid'));
    const orderId = sold.json().order_id;
    const codes = (await h.admin('GET', `/apps/${app.id}/orders/${orderId}`)).json().licenses.map((l: { code: string }) => l.code);
    const userId = await h.signUp(app, 'subscriber');
    expect((await h.client(app, 'POST', '/activate_license', { code: codes[0], username: 'subscriber', password: PASSWORD })).statusCode).toBe(200);
    const start = h.clock.ms;
    h.clock.advance(29 * DAY * MINUTE);
    expect((await post(h, 'stripe', app, stripeRenewal(1))).json().outcome).toBe('renewed');
    expect((await membership(userId)).active_until).toBe(new Date(start + 60 * DAY * MINUTE).toISOString());
    expect(await codeMinutes(codes[1])).toBe(60 * DAY);

    const refund = (id: string) => variant('stripe', 'charge.refunded', (e) => {
      e.id = id; e.created = Math.floor(h.clock.ms / 1000); e.data.object.id = 'ch_renewal_1'; e.data.object.payment_intent = 'pi_renewal_1'; e.data.object.invoice = 'in_renewal_1';
    });
    const res = await post(h, 'stripe', app, refund('evt_refund_renewal'));
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ outcome: 'renewal_refunded', order_id: orderId });
    expect((await membership(userId)).active_until).toBe(new Date(start + 30 * DAY * MINUTE).toISOString());
    expect(await codeMinutes(codes[1])).toBe(30 * DAY);
    // Another event about the same bill (a dispute after the refund) takes nothing more.
    expect((await post(h, 'stripe', app, refund('evt_refund_renewal_again'))).json()).toMatchObject({ outcome: 'duplicate', order_id: orderId });
    expect((await membership(userId)).active_until).toBe(new Date(start + 30 * DAY * MINUTE).toISOString());
    const detail = (await h.admin('GET', `/apps/${app.id}/orders/${orderId}`)).json();
    expect(detail.status).toBe('active');
    // The next renewal still extends; a full refund of the first bill takes what remains (the first period and that renewal).
    expect((await post(h, 'stripe', app, stripeRenewal(2))).json().outcome).toBe('renewed');
    expect((await membership(userId)).active_until).toBe(new Date(start + 60 * DAY * MINUTE).toISOString());
    const whole = variant('stripe', 'charge.refunded', (e) => { e.id = 'evt_refund_all'; e.data.object.payment_intent = 'pi_3MtHbFLkdIwHu7ix0W5Bs8hH'; e.created = Math.floor(h.clock.ms / 1000); });
    expect((await post(h, 'stripe', app, whole)).json()).toMatchObject({ outcome: 'refunded', order_id: orderId });
    expect(await membership(userId)).toMatchObject({ is_active: false, active_until: new Date(h.clock.ms).toISOString() });
  });

  it('Paddle: a full refund or a chargeback adjustment of the renewal transaction shortens the redeemer by one period', async () => {
    await connect(h, app, 'paddle');
    await map(h, app, 'paddle', { product_key: 'pri_01gsz8x8sawmvhz1pv30nge1ke', minutes: 30 * DAY });
    const sold = await post(h, 'paddle', app, fixture('paddle', 'transaction.completed'));
    const orderId = sold.json().order_id;
    const code = (await h.admin('GET', `/apps/${app.id}/orders/${orderId}`)).json().licenses[0].code;
    const userId = await h.signUp(app, 'payer');
    expect((await h.client(app, 'POST', '/activate_license', { code, username: 'payer', password: PASSWORD })).statusCode).toBe(200);
    const start = h.clock.ms;
    for (const n of [1, 2]) {
      const recurring = variant('paddle', 'transaction.completed', (e) => { e.event_id = `evt_recurring_${n}`; e.data.id = `txn_renewal_${n}`; e.data.origin = 'subscription_recurring'; });
      expect((await post(h, 'paddle', app, recurring)).json()).toMatchObject({ outcome: 'renewed', order_id: orderId });
    }
    expect((await membership(userId)).active_until).toBe(new Date(start + 90 * DAY * MINUTE).toISOString());
    const refund = variant('paddle', 'adjustment.updated', (e) => { e.event_id = 'evt_adj_renewal_1'; e.data.transaction_id = 'txn_renewal_1'; });
    expect((await post(h, 'paddle', app, refund)).json()).toMatchObject({ outcome: 'renewal_refunded', order_id: orderId });
    expect((await membership(userId)).active_until).toBe(new Date(start + 60 * DAY * MINUTE).toISOString());
    const chargeback = variant('paddle', 'adjustment.updated', (e) => { e.event_id = 'evt_adj_renewal_2'; e.event_type = 'adjustment.created'; e.data.action = 'chargeback'; e.data.transaction_id = 'txn_renewal_2'; });
    expect((await post(h, 'paddle', app, chargeback)).json()).toMatchObject({ outcome: 'renewal_refunded', order_id: orderId });
    expect((await membership(userId)).active_until).toBe(new Date(start + 30 * DAY * MINUTE).toISOString());
    expect((await h.admin('GET', `/apps/${app.id}/orders/${orderId}`)).json().status).toBe('active');
  });
});

describe('a free trial\'s $0 first bill grants the trial, not the paid period', () => {
  let h: Harness;
  let app: TestApp;
  const MINUTE = 60_000;
  const DAY = 1440;
  const YEAR = 365 * DAY;

  beforeEach(async () => {
    h = await harness();
    app = await h.createApp();
  });
  afterEach(async () => h.close());

  const membership = async (userId: string) => (await h.admin('GET', `/apps/${app.id}/users/${userId}`)).json().membership;
  async function redeemFirst(orderId: string, username: string): Promise<string> {
    const code = (await h.admin('GET', `/apps/${app.id}/orders/${orderId}`)).json().licenses[0].code;
    const userId = await h.signUp(app, username);
    const res = await h.client(app, 'POST', '/activate_license', { code, username, password: PASSWORD });
    expect(res.statusCode, res.body).toBe(200);
    return userId;
  }

  /** Stripe's first invoice of a subscription with a 7-day trial: paid, of nothing, its line's period the trial. */
  const stripeTrial = (sub: string) => variant('stripe', 'invoice.paid', (e) => {
    e.id = `evt_trial_${sub}`; const o = e.data.object; o.id = `in_trial_${sub}`; o.subscription = sub; o.payment_intent = null;
    o.amount_paid = 0; o.amount_due = 0; o.total = 0; o.subtotal = 0;
    for (const l of o.lines.data) { l.amount = 0; l.period = { start: Math.floor(h.clock.ms / 1000), end: Math.floor(h.clock.ms / 1000) + 7 * 86_400 }; }
  });

  it('Stripe: the trial invoice grants 7 days, a cancellation in the trial keeps nothing more; the first paid invoice renews a year from the trial end', async () => {
    await connect(h, app, 'stripe');
    await map(h, app, 'stripe', { product_key: STRIPE_PRICE, minutes: YEAR });
    const start = h.clock.ms;
    const trial = await post(h, 'stripe', app, stripeTrial('sub_cancelled'));
    expect(trial.json(), trial.body).toMatchObject({ outcome: 'granted', licenses_created: 1 });
    const quitter = await redeemFirst(trial.json().order_id, 'quitter');
    expect((await membership(quitter)).active_until).toBe(new Date(start + 7 * DAY * MINUTE).toISOString());
    h.clock.advance(2 * DAY * MINUTE);
    const cancel = variant('stripe', 'customer.subscription.deleted', (e) => { e.id = 'evt_cancel_trial'; e.created = Math.floor(h.clock.ms / 1000); e.data.object.id = 'sub_cancelled'; });
    expect((await post(h, 'stripe', app, cancel)).json().outcome).toBe('cancelled');
    expect((await membership(quitter)).active_until).toBe(new Date(start + 7 * DAY * MINUTE).toISOString());

    const kept = await post(h, 'stripe', app, stripeTrial('sub_kept'));
    const keeper = await redeemFirst(kept.json().order_id, 'keeper');
    const trialEnd = h.clock.ms + 7 * DAY * MINUTE;
    expect((await membership(keeper)).active_until).toBe(new Date(trialEnd).toISOString());
    h.clock.advance(7 * DAY * MINUTE);
    const paid = variant('stripe', 'invoice.paid', (e) => { e.id = 'evt_first_paid'; e.data.object.id = 'in_first_paid'; e.data.object.subscription = 'sub_kept'; e.data.object.billing_reason = 'subscription_cycle'; });
    expect((await post(h, 'stripe', app, paid)).json().outcome).toBe('renewed');
    expect((await membership(keeper)).active_until).toBe(new Date(trialEnd + YEAR * MINUTE).toISOString());
  });

  it('Stripe: an unredeemed trial code holds the trial only, and gains the year at the first paid invoice', async () => {
    await connect(h, app, 'stripe');
    await map(h, app, 'stripe', { product_key: STRIPE_PRICE, minutes: YEAR });
    const trial = await post(h, 'stripe', app, stripeTrial('sub_unredeemed'));
    const code = (await h.admin('GET', `/apps/${app.id}/orders/${trial.json().order_id}`)).json().licenses[0].code;
    const minutes = async () => (await h.admin('GET', `/apps/${app.id}/licenses?q=${code}`)).json().items[0].minutes;
    expect(await minutes()).toBe(7 * DAY);
    const paid = variant('stripe', 'invoice.paid', (e) => { e.id = 'evt_paid_unredeemed'; e.data.object.id = 'in_paid_unredeemed'; e.data.object.subscription = 'sub_unredeemed'; e.data.object.billing_reason = 'subscription_cycle'; });
    expect((await post(h, 'stripe', app, paid)).json().outcome).toBe('renewed');
    expect(await minutes()).toBe(7 * DAY + YEAR);
  });

  it('Paddle: a transaction of nothing for a trialing subscription grants its billing period (the trial), then a recurring one renews', async () => {
    await connect(h, app, 'paddle');
    await map(h, app, 'paddle', { product_key: 'pri_01gsz8x8sawmvhz1pv30nge1ke', minutes: YEAR });
    const trialEnd = h.clock.ms + 14 * DAY * MINUTE;
    const trial = variant('paddle', 'transaction.completed', (e) => {
      const d = e.data;
      for (const k of Object.keys(d.details.totals)) if (k !== 'currency_code') d.details.totals[k] = '0';
      d.billing_period = { starts_at: h.clock.iso(), ends_at: new Date(trialEnd).toISOString() };
      for (const item of d.items) item.price.trial_period = { interval: 'day', frequency: 14 };
    });
    const res = await post(h, 'paddle', app, trial);
    expect(res.json(), res.body).toMatchObject({ outcome: 'granted' });
    const userId = await redeemFirst(res.json().order_id, 'trialist');
    expect((await membership(userId)).active_until).toBe(new Date(trialEnd).toISOString());
    const cancel = variant('paddle', 'subscription.canceled', (e) => { e.event_id = 'evt_cancel_trial'; });
    expect((await post(h, 'paddle', app, cancel)).json().outcome).toBe('cancelled');
    expect((await membership(userId)).active_until).toBe(new Date(trialEnd).toISOString());

    // Without billing_period, the items' trial_period from the transaction's billed_at counts.
    const other = variant('paddle', 'transaction.completed', (e) => {
      const d = e.data; e.event_id = 'evt_trial_2'; d.id = 'txn_trial_2'; d.subscription_id = 'sub_trial_2';
      for (const k of Object.keys(d.details.totals)) if (k !== 'currency_code') d.details.totals[k] = '0';
      delete d.billing_period; d.billed_at = h.clock.iso();
      for (const item of d.items) item.price.trial_period = { interval: 'week', frequency: 1 };
    });
    const second = await post(h, 'paddle', app, other);
    const code = (await h.admin('GET', `/apps/${app.id}/orders/${second.json().order_id}`)).json().licenses[0].code;
    expect((await h.admin('GET', `/apps/${app.id}/licenses?q=${code}`)).json().items[0].minutes).toBe(7 * DAY);
    const recurring = variant('paddle', 'transaction.completed', (e) => { e.event_id = 'evt_recurring_trial_2'; e.data.id = 'txn_recurring_2'; e.data.subscription_id = 'sub_trial_2'; e.data.origin = 'subscription_recurring'; });
    expect((await post(h, 'paddle', app, recurring)).json().outcome).toBe('renewed');
    expect((await h.admin('GET', `/apps/${app.id}/licenses?q=${code}`)).json().items[0].minutes).toBe(7 * DAY + YEAR);
  });
});
