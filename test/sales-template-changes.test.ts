import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ForeignKeyViolation } from '../src/store/db.js';
import { expectError, harness, PASSWORD, STORE, writableStore, type Harness, type TestApp } from './helpers.js';
import { connect, createTemplate, map, order as orderOf, post, sellStripe, STRIPE_PRICE as PRICE, stripeRenewal as renewal, variant } from './sales-helpers.js';

/**
 * A template a store sells, changed after the sale (review of the sales integration, docs/decisions.md "Sold codes
 * follow an applied template", "A mapping's template cannot be deleted under it", "Sold codes have no redeem window"):
 * an applied template's new duration is what an order's refund takes back and its renewals add; deleting a template
 * while a mapping is created naming it never leaves a mapping that grants nothing, nor a 500.
 */
const MINUTE = 60_000;
const DAY = 1440;

describe(`sold licenses after their template changes (${STORE})`, () => {
  let h: Harness;
  let app: TestApp;

  beforeEach(async () => {
    h = await harness();
    app = await h.createApp();
    await connect(h, app, 'stripe');
  });
  afterEach(async () => h.close());

  const template = (body: Record<string, unknown>) => createTemplate(h, app.id, body);
  const order = (orderId: string) => orderOf(h, app, orderId);
  const membership = async (id: string) => (await h.admin('GET', `/apps/${app.id}/users/${id}`)).json().membership;
  const refund = () => variant('stripe', 'charge.refunded', (e) => {
    e.data.object.payment_intent = 'pi_3MtHbFLkdIwHu7ix0W5Bs8hH';
    e.data.object.invoice = 'in_1MtHbELkdIwHu7ixl4OzzPMv';
  });

  async function sell(): Promise<{ orderId: string; code: string; licenseId: string }> {
    const o = await sellStripe(h, app);
    return { orderId: o.id, code: o.licenses[0].code, licenseId: o.licenses[0].license_id };
  }
  async function change(id: string, body: Record<string, unknown>): Promise<void> {
    const patched = await h.admin('PATCH', `/apps/${app.id}/templates/${id}`, body);
    expect(patched.statusCode, patched.body).toBe(200);
    const applied = await h.admin('POST', `/apps/${app.id}/templates/${id}/apply`);
    expect(applied.statusCode, applied.body).toBe(200);
  }
  async function redeem(code: string, username: string, userId?: string): Promise<string> {
    const id = userId ?? (await h.signUp(app, username));
    const res = await h.client(app, 'POST', '/activate_license', { code, username, password: PASSWORD });
    expect(res.statusCode, res.body).toBe(200);
    return id;
  }

  it('an applied longer duration: the order grants it, renewals add it, and a full refund takes all of it back', async () => {
    const t = await template({ name: 'Pro', minutes: 30 * DAY });
    await map(h, app, 'stripe', { product_key: PRICE, template_id: t.id });
    const { orderId, code } = await sell();
    await change(t.id, { minutes: 365 * DAY });
    expect((await order(orderId)).licenses[0]).toMatchObject({ minutes: 365 * DAY, lifetime: false, renewal_minutes: 0 });

    const userId = await redeem(code, 'buyer');
    expect(await membership(userId)).toMatchObject({ is_active: true, active_until: h.clock.iso(365 * DAY * MINUTE) });
    expect((await post(h, 'stripe', app, renewal(1))).json().outcome).toBe('renewed');
    expect((await order(orderId)).licenses[0]).toMatchObject({ minutes: 365 * DAY, renewal_minutes: 365 * DAY });

    const r = await post(h, 'stripe', app, refund());
    expect(r.json(), r.body).toMatchObject({ outcome: 'refunded', order_id: orderId });
    // Before: the order took back 30 days of the 730 it had granted, and the refunded buyer kept most of two years.
    expect(await membership(userId)).toMatchObject({ is_active: false, active_until: h.clock.iso() });
  });

  it('renewals a code gained unredeemed: kept by an apply, granted at redemption, and taken back by a full refund', async () => {
    const t = await template({ name: 'Pro', minutes: 30 * DAY });
    await map(h, app, 'stripe', { product_key: PRICE, template_id: t.id });
    const { orderId, code, licenseId } = await sell();
    expect((await post(h, 'stripe', app, renewal(1))).json().outcome).toBe('renewed');
    expect((await order(orderId)).licenses[0]).toMatchObject({ minutes: 30 * DAY, renewal_minutes: 30 * DAY });
    await change(t.id, { minutes: 365 * DAY });
    // The new duration, plus the period the buyer already paid for.
    expect((await h.admin('GET', `/apps/${app.id}/licenses/${licenseId}`)).json()).toMatchObject({ minutes: 395 * DAY });
    expect((await order(orderId)).licenses[0]).toMatchObject({ minutes: 365 * DAY, renewal_minutes: 30 * DAY });
    const userId = await redeem(code, 'patient');
    expect(await membership(userId)).toMatchObject({ active_until: h.clock.iso(395 * DAY * MINUTE) });
    const r = await post(h, 'stripe', app, refund());
    expect(r.json(), r.body).toMatchObject({ outcome: 'refunded' });
    expect(await membership(userId)).toMatchObject({ is_active: false, active_until: h.clock.iso() });
  });

  it('a license redeemed before the apply keeps what it was sold with: the refund takes that', async () => {
    const t = await template({ name: 'Pro', minutes: 30 * DAY });
    await map(h, app, 'stripe', { product_key: PRICE, template_id: t.id });
    const { orderId, code } = await sell();
    const userId = await redeem(code, 'early');
    await change(t.id, { minutes: 365 * DAY });
    expect((await order(orderId)).licenses[0]).toMatchObject({ minutes: 30 * DAY });
    expect((await post(h, 'stripe', app, refund())).json().outcome).toBe('refunded');
    expect(await membership(userId)).toMatchObject({ is_active: false });
  });

  it('an applied lifetime: a full refund revokes the lifetime the sold code granted', async () => {
    const t = await template({ name: 'Pro', minutes: 30 * DAY });
    await map(h, app, 'stripe', { product_key: PRICE, template_id: t.id });
    const { orderId, code } = await sell();
    await change(t.id, { lifetime: true });
    expect((await order(orderId)).licenses[0]).toMatchObject({ minutes: null, lifetime: true });
    const userId = await redeem(code, 'lifer');
    expect(await membership(userId)).toMatchObject({ is_lifetime: true });
    expect((await post(h, 'stripe', app, refund())).json()).toMatchObject({ outcome: 'refunded' });
    expect(await membership(userId)).toMatchObject({ is_lifetime: false, is_active: false });
  });

  it('an applied change from lifetime to minutes: a refund takes minutes, never a lifetime the buyer holds from elsewhere', async () => {
    const t = await template({ name: 'Forever', lifetime: true });
    await map(h, app, 'stripe', { product_key: PRICE, template_id: t.id });
    const { orderId, code } = await sell();
    await change(t.id, { minutes: 30 * DAY });
    expect((await order(orderId)).licenses[0]).toMatchObject({ minutes: 30 * DAY, lifetime: false });
    // The buyer's lifetime comes from an operator's license, not from this order.
    const userId = await h.signUp(app, 'holder');
    const own = await h.admin('POST', `/apps/${app.id}/licenses`, { count: 1, lifetime: true });
    expect(own.statusCode, own.body).toBe(201);
    await redeem(own.json().licenses[0].code, 'holder', userId);
    await redeem(code, 'holder', userId);
    expect((await post(h, 'stripe', app, refund())).json()).toMatchObject({ outcome: 'refunded' });
    expect(await membership(userId)).toMatchObject({ is_lifetime: true });
  });

  it('a sold code ignores the template’s redeem window: redeemable after it, and renewals extend a living code', async () => {
    const t = await template({ name: 'Pro', minutes: 30 * DAY, redeem_within_minutes: 60 });
    await map(h, app, 'stripe', { product_key: PRICE, template_id: t.id });
    const { code, licenseId } = await sell();
    expect((await h.admin('GET', `/apps/${app.id}/licenses/${licenseId}`)).json()).toMatchObject({ expires_at: null, template_id: t.id });
    h.clock.advance(2 * 60 * MINUTE);
    expect((await post(h, 'stripe', app, renewal(1))).json().outcome).toBe('renewed');
    const userId = await redeem(code, 'late');
    expect(await membership(userId)).toMatchObject({ is_active: true, active_until: h.clock.iso(60 * DAY * MINUTE) });
    // An operator's license from the same template keeps the window.
    const handed = await h.admin('POST', `/apps/${app.id}/licenses`, { count: 1, template_id: t.id });
    expect(handed.statusCode, handed.body).toBe(201);
    expect(handed.json().licenses[0]).toMatchObject({ expires_at: h.clock.iso(60 * MINUTE) });
  });

  it('a template deleted while a mapping naming it is created: never a 500, never a mapping that grants nothing', async () => {
    const products = `/apps/${app.id}/integrations/stripe/products`;
    const outcomes = new Set<string>();
    for (let i = 0; i < 40; i++) {
      const t = await template({ name: `T${i}`, minutes: 60 });
      const [m, d] = await Promise.all([
        h.admin('POST', products, { product_key: `price_${i}`, template_id: t.id }),
        h.admin('DELETE', `/apps/${app.id}/templates/${t.id}`),
      ]);
      const pair = `${m.statusCode}/${d.statusCode}`;
      // The mapping first (the delete sees it: 409), or the delete first (the mapping finds no template: 422).
      expect(['201/409', '422/204'], `${pair} ${m.body} ${d.body}`).toContain(pair);
      if (m.statusCode === 422) expectError(m, 422, 'validation_error');
      if (d.statusCode === 409) expectError(d, 409, 'conflict');
      outcomes.add(pair);
    }
    const items = (await h.admin('GET', products)).json().items;
    for (const m of items) {
      expect(m.template_id, JSON.stringify(m)).not.toBeNull();
      expect((await h.admin('GET', `/apps/${app.id}/templates/${m.template_id}`)).statusCode).toBe(200);
    }
    console.log(`template delete vs mapping create (${STORE}): ${[...outcomes].join(', ')}`);
  });

  it('the mapping’s foreign key refuses deleting its template under the domain’s check; the app still deletes with both', async () => {
    const t = await template({ name: 'Pro', minutes: 60 });
    await map(h, app, 'stripe', { product_key: PRICE, template_id: t.id });
    const store = writableStore(h.tollgate.services);
    await expect(store.transaction((tx) => tx.templates.delete(app.id, t.id))).rejects.toBeInstanceOf(ForeignKeyViolation);
    expect((await h.admin('GET', `/apps/${app.id}/templates/${t.id}`)).statusCode).toBe(200);
    const gone = await h.admin('DELETE', `/apps/${app.id}?confirm=${encodeURIComponent(app.name)}`);
    expect(gone.statusCode, gone.body).toBe(204);
  });
});
