import { afterEach, describe, expect, it } from 'vitest';
import { harness, type Harness } from './helpers.js';
import { captureLog, fields, type LogCapture } from './log-capture.js';
import { connect, deliver, fixture, map, post, SECRETS, signed, variant } from './sales-helpers.js';

/**
 * The lines an operator follows for sales (docs/deploy.md): each applied event at info, an unmapped product at
 * warn with the ids to map, each refused delivery with why; never the secret, a signature or a code.
 */
describe('sale log lines', () => {
  let h: Harness | undefined;
  let log: LogCapture;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it('sale (info), unknown product (warn) and a refusal with its reason; no secret, signature or code in any line', async () => {
    log = captureLog();
    h = await harness({ env: { LOG_LEVEL: 'info', ACCESS_LOG: 'off' }, logStream: log.stream });
    const app = await h.createApp();
    await connect(h, app, 'stripe');
    const body = fixture('stripe', 'checkout.session.completed');
    await post(h, 'stripe', app, body);
    await map(h, app, 'stripe', { product_key: 'plink_1PgaflB7WZ01zgkW2Wn4ZAnp', minutes: 60 });
    const granted = await post(h, 'stripe', app, body);
    const headers = signed('stripe', body, 'not-the-secret', h.clock.ms);
    await deliver(h, 'stripe', app.id, body, headers);
    const lines = log.lines.map(fields);
    const sales = lines.filter((l) => l.event === 'sale' || l.event === 'sale_refused');
    expect(sales).toEqual([
      expect.objectContaining({ level: 40, event: 'sale', outcome: 'unknown_product', provider: 'stripe', unmapped: [['plink_1PgaflB7WZ01zgkW2Wn4ZAnp']] }),
      expect.objectContaining({ level: 30, event: 'sale', outcome: 'granted', orderId: granted.json().order_id, eventId: 'evt_1PgafnB7WZ01zgkWk0Jn9E4P' }),
      expect.objectContaining({ level: 30, event: 'sale_refused', reason: 'mismatch', provider: 'stripe', appId: app.id }),
    ]);
    const all = log.text();
    expect(all).toContain('sale_refused');
    expect(all).not.toContain(SECRETS.stripe);
    expect(all).not.toContain(headers['stripe-signature']!.split('v1=')[1]);
    expect(all).not.toMatch(/[A-Z2-9]{5}-[A-Z2-9]{5}-[A-Z2-9]{5}/);
  });

  it('a partial refund of a renewal’s invoice is recorded against its order at info; one of no known order, or naming no charge, is acknowledged and ignored at info', async () => {
    log = captureLog();
    h = await harness({ env: { LOG_LEVEL: 'info', ACCESS_LOG: 'off' }, logStream: log.stream });
    const app = await h.createApp();
    await connect(h, app, 'stripe');
    await map(h, app, 'stripe', { product_key: 'price_1MtHZ8LkdIwHu7ixzyRd6pY1', minutes: 30 * 1440 });
    const orderId = (await post(h, 'stripe', app, fixture('stripe', 'invoice.paid'))).json().order_id;
    const renewal = variant('stripe', 'invoice.paid', (e) => { e.id = 'evt_cycle'; e.data.object.id = 'in_cycle'; e.data.object.billing_reason = 'subscription_cycle'; });
    expect((await post(h, 'stripe', app, renewal)).json().outcome).toBe('renewed');
    // The renewal's own charge, partly refunded: its invoice is the cycle's, its payment intent one no order holds.
    const partial = (id: string, invoice: string | null, change: (o: any) => void = () => undefined) => variant('stripe', 'charge.refunded', (e) => {
      e.id = id; e.data.object.refunded = false; e.data.object.amount_refunded = 300; e.data.object.invoice = invoice;
      e.data.object.payment_intent = `pi_${id}`; change(e.data.object);
    });
    const ofRenewal = await post(h, 'stripe', app, partial('evt_part_cycle', 'in_cycle'));
    expect(ofRenewal.statusCode).toBe(200);
    expect(ofRenewal.json()).toMatchObject({ outcome: 'partially_refunded', order_id: orderId });
    const unknown = await post(h, 'stripe', app, partial('evt_part_unknown', 'in_elsewhere'));
    expect(unknown.json()).toMatchObject({ outcome: 'ignored', order_id: null });
    const nameless = await post(h, 'stripe', app, partial('evt_part_nameless', null, (o) => { delete o.id; delete o.payment_intent; }));
    expect(nameless.statusCode, nameless.body).toBe(200);
    expect(nameless.json()).toMatchObject({ outcome: 'ignored' });
    // A full refund naming no order is still the operator's to look at (warn), once it is over a day old (409 before).
    h.clock.advance(24 * 60 * 60_000 + 1);
    const full = await post(h, 'stripe', app, partial('evt_full_unknown', 'in_elsewhere', (o) => { o.refunded = true; }));
    expect(full.json()).toMatchObject({ outcome: 'unknown_order' });

    const lines = log.lines.map(fields).filter((l) => l.event === 'sale' && String(l.eventId).match(/^evt_(part|full)_/));
    expect(lines).toEqual([
      expect.objectContaining({ level: 30, outcome: 'partially_refunded', orderId, eventId: 'evt_part_cycle' }),
      expect.objectContaining({ level: 30, outcome: 'ignored', eventId: 'evt_part_unknown', reason: 'partial refund of no order Tollgate knows' }),
      expect.objectContaining({ level: 30, outcome: 'ignored', eventId: 'evt_part_nameless', reason: 'partial refund naming no charge' }),
      expect.objectContaining({ level: 40, outcome: 'unknown_order', eventId: 'evt_full_unknown' }),
    ]);
  });
});
