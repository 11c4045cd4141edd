import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { harness, PASSWORD, STORE, type Harness, type TestApp } from './helpers.js';
import { connect, createTemplate, map, post, SOLD, variant } from './sales-helpers.js';

/**
 * A refund takes back exactly what its sale granted (docs/decisions.md, "A refund of a lifetime license takes
 * back that sale only"): of two lifetime sales to one buyer, refunding one ends that sale's entitlements and
 * keeps the lifetime and the entitlements the other sale (or an operator's license) granted.
 */
describe(`a refund of one lifetime sale among several (${STORE})`, () => {
  let h: Harness;
  let app: TestApp;

  beforeEach(async () => {
    h = await harness();
    app = await h.createApp();
    await connect(h, app, 'stripe');
    const t = await createTemplate(h, app.id, { name: 'Forever', lifetime: true, entitlements: ['pro'] });
    await map(h, app, 'stripe', { product_key: SOLD.stripe, template_id: t.id });
  });
  afterEach(async () => h.close());

  /** The n-th one-off checkout of the lifetime product: its own event, session and payment. */
  async function sell(n: number): Promise<{ orderId: string; code: string; licenseId: string }> {
    const body = variant('stripe', 'checkout.session.completed', (e) => {
      e.id = `evt_sale_${n}`; e.data.object.id = `cs_test_sale_${n}`; e.data.object.payment_intent = `pi_sale_${n}`;
    });
    const res = await post(h, 'stripe', app, body);
    expect(res.json(), res.body).toMatchObject({ outcome: 'granted', licenses_created: 1 });
    const o = (await h.admin('GET', `/apps/${app.id}/orders/${res.json().order_id}`)).json();
    return { orderId: o.id, code: o.licenses[0].code, licenseId: o.licenses[0].license_id };
  }
  const refund = (n: number) => variant('stripe', 'charge.refunded', (e) => {
    e.id = `evt_refund_${n}`; e.data.object.id = `ch_sale_${n}`; e.data.object.payment_intent = `pi_sale_${n}`;
  });
  async function redeem(code: string): Promise<void> {
    const res = await h.client(app, 'POST', '/activate_license', { code, username: 'buyer', password: PASSWORD });
    expect(res.statusCode, res.body).toBe(200);
  }
  const user = async (id: string) => (await h.admin('GET', `/apps/${app.id}/users/${id}`)).json();
  /** Which licenses' grants of `pro` are live. */
  const liveGrants = async (id: string) =>
    (await user(id)).entitlement_grants.filter((g: any) => g.live).map((g: any) => g.license_id).sort();

  it('two sales, one refunded: the lifetime and the other sale’s entitlements stay; refunding the other too ends both', async () => {
    const userId = await h.signUp(app, 'buyer');
    const a = await sell(1);
    const b = await sell(2);
    await redeem(a.code);
    await redeem(b.code);
    expect(await liveGrants(userId)).toEqual([a.licenseId, b.licenseId].sort());

    const first = await post(h, 'stripe', app, refund(1));
    expect(first.json(), first.body).toMatchObject({ outcome: 'refunded', order_id: a.orderId });
    // Before: the refund of sale 1 took the lifetime sale 2 had granted too, leaving sale 2's entitlements on an inactive user.
    expect((await user(userId)).membership).toMatchObject({ is_lifetime: true, is_active: true, entitlements: ['pro'] });
    expect(await liveGrants(userId)).toEqual([b.licenseId]);

    const second = await post(h, 'stripe', app, refund(2));
    expect(second.json(), second.body).toMatchObject({ outcome: 'refunded', order_id: b.orderId });
    expect((await user(userId)).membership).toMatchObject({ is_lifetime: false, is_active: false });
    expect(await liveGrants(userId)).toEqual([]);
  });

  it('a lifetime license the operator handed out is not the refunded sale’s to take back', async () => {
    const userId = await h.signUp(app, 'buyer');
    const own = await h.admin('POST', `/apps/${app.id}/licenses`, { count: 1, lifetime: true });
    expect(own.statusCode, own.body).toBe(201);
    await redeem(own.json().licenses[0].code);
    const sale = await sell(1);
    await redeem(sale.code);
    expect((await post(h, 'stripe', app, refund(1))).json()).toMatchObject({ outcome: 'refunded', order_id: sale.orderId });
    expect((await user(userId)).membership).toMatchObject({ is_lifetime: true, is_active: true, entitlements: [] });
    expect(await liveGrants(userId)).toEqual([]);
  });

  it('the only lifetime sale refunded still revokes the lifetime and its entitlements', async () => {
    const userId = await h.signUp(app, 'buyer');
    const sale = await sell(1);
    await redeem(sale.code);
    expect((await post(h, 'stripe', app, refund(1))).json()).toMatchObject({ outcome: 'refunded' });
    expect((await user(userId)).membership).toMatchObject({ is_lifetime: false, is_active: false });
    expect(await liveGrants(userId)).toEqual([]);
  });
});
