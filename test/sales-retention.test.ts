import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError, DEFAULTS, loadConfig } from '../src/config/index.js';
import { sweepIntegrationEvents } from '../src/domain/sales/retention.js';
import type { Repositories } from '../src/store/index.js';
import { harness, STORE, writableStore, type Harness, type TestApp } from './helpers.js';
import { connect, fixture, map, post, variant } from './sales-helpers.js';

/**
 * Retention of integration_events, the ids of received store events (docs/integrations.md): kept for
 * INTEGRATION_EVENT_RETENTION_DAYS (default 90) by the periodic sweep every node runs, then forgotten.
 */
const DAY = 24 * 3_600_000;

describe(`integration_events retention (${STORE})`, () => {
  let h: Harness;
  let app: TestApp;

  beforeEach(async () => {
    h = await harness({ env: { INTEGRATION_EVENT_RETENTION_DAYS: '10' } });
    app = await h.createApp();
  });
  afterEach(async () => h.close());

  const stored = async (eventId: string) => h.tollgate.services.store.sales.findEvent(app.id, 'stripe', eventId);

  it('forgets event ids older than the setting at the sweep, keeps younger ones, and an order is still granted once', async () => {
    await connect(h, app, 'stripe');
    await map(h, app, 'stripe', { product_key: 'plink_1PgaflB7WZ01zgkW2Wn4ZAnp', minutes: 60 });
    const sale = fixture('stripe', 'checkout.session.completed');
    const first = await post(h, 'stripe', app, sale);
    expect(first.json().outcome, first.body).toBe('granted');
    const saleId = first.json().event_id;
    h.clock.advance(5 * DAY);
    const later = variant('stripe', 'customer.subscription.deleted', (e) => { e.id = 'evt_later'; e.type = 'customer.updated'; });
    expect((await post(h, 'stripe', app, later)).json().outcome).toBe('ignored');

    // Day 9 after the sale: both kept.
    h.clock.advance(4 * DAY);
    await h.tollgate.outbox.sweep();
    expect(await stored(saleId)).toMatchObject({ outcome: 'granted' });
    expect(await stored('evt_later')).toMatchObject({ outcome: 'ignored' });

    // Past 10 days: the sale's id goes, the later one (5 days younger) stays.
    h.clock.advance(DAY + 60_000);
    await h.tollgate.outbox.sweep();
    expect(await stored(saleId)).toBeUndefined();
    expect(await stored('evt_later')).toMatchObject({ outcome: 'ignored' });

    // A store resending the forgotten sale grants nothing again: the order's own unique reference still holds.
    const again = await post(h, 'stripe', app, sale);
    expect(again.json()).toMatchObject({ outcome: 'duplicate', licenses_created: 0 });

    h.clock.advance(6 * DAY);
    await h.tollgate.outbox.sweep();
    expect(await stored('evt_later')).toBeUndefined();
  });

  it('a backlog larger than one batch is forgotten whole, one transaction per batch; younger ids stay', async () => {
    const other = await h.createApp();
    const store = writableStore(h.tollgate.services);
    const start = h.clock.ms;
    // 7 old ids over two apps and two stores, 2 younger than the retention.
    const old = Array.from({ length: 7 }, (_, i) => ({ appId: i % 2 === 0 ? app.id : other.id, provider: i % 3 === 0 ? 'paddle' as const : 'stripe' as const, eventId: `evt_old_${i}`, receivedAt: start + i * 60_000 }));
    const young = [0, 1].map((i) => ({ appId: app.id, provider: 'stripe' as const, eventId: `evt_young_${i}`, receivedAt: start + 5 * DAY + i }));
    for (const e of [...old, ...young]) {
      expect(await store.sales.claimEvent({ ...e, eventType: 'test.event', outcome: 'ignored', orderId: null })).toBe(true);
    }
    h.clock.advance(11 * DAY);
    const batches: number[] = [];
    const real = store.transaction.bind(store);
    store.transaction = <T>(fn: (tx: Repositories) => Promise<T>) => real((tx) => fn({
      ...tx,
      sales: { ...tx.sales, forgetEventsBefore: async (before: number, batch: number) => { const n = await tx.sales.forgetEventsBefore(before, batch); batches.push(n); return n; } },
    }));
    expect(await sweepIntegrationEvents(h.tollgate.services, 10 * DAY, 3)).toBe(7);
    expect(batches).toEqual([3, 3, 1]);
    for (const e of old) expect(await store.sales.findEvent(e.appId, e.provider, e.eventId), e.eventId).toBeUndefined();
    for (const e of young) expect(await store.sales.findEvent(e.appId, e.provider, e.eventId), e.eventId).toMatchObject({ outcome: 'ignored' });
    // An exact multiple of the batch ends with one empty batch.
    batches.length = 0;
    h.clock.advance(5 * DAY);
    expect(await sweepIntegrationEvents(h.tollgate.services, 10 * DAY, 2)).toBe(2);
    expect(batches).toEqual([2, 0]);
  });

  it('a renewal resent after its event id was forgotten extends nothing: each bill renews an order once, kept with the order', async () => {
    await connect(h, app, 'stripe');
    await map(h, app, 'stripe', { product_key: 'price_1MtHZ8LkdIwHu7ixzyRd6pY1', minutes: 30 * 1440 });
    const sold = await post(h, 'stripe', app, fixture('stripe', 'invoice.paid'));
    const orderId = sold.json().order_id;
    const licenseId = (await h.admin('GET', `/apps/${app.id}/orders/${orderId}`)).json().licenses[0].license_id;
    const minutes = async () => (await h.admin('GET', `/apps/${app.id}/licenses/${licenseId}`)).json().minutes;
    const renewal = (eventId: string, invoice: string) => variant('stripe', 'invoice.paid', (e) => {
      e.id = eventId; e.data.object.id = invoice; e.data.object.billing_reason = 'subscription_cycle';
    });
    h.clock.advance(29 * DAY);
    expect((await post(h, 'stripe', app, renewal('evt_cycle_1', 'in_cycle_1'))).json()).toMatchObject({ outcome: 'renewed', order_id: orderId });
    expect(await minutes()).toBe(60 * 1440);

    // Day 40: the renewal's event id is forgotten; Stripe's "resend" of it (same event, same invoice) is a duplicate still.
    h.clock.advance(11 * DAY);
    await h.tollgate.outbox.sweep();
    expect(await stored('evt_cycle_1')).toBeUndefined();
    const resent = await post(h, 'stripe', app, renewal('evt_cycle_1', 'in_cycle_1'));
    expect(resent.json(), resent.body).toMatchObject({ outcome: 'duplicate', order_id: orderId, licenses_created: 0 });
    // Another event about the same invoice (a second endpoint's copy, another event type) renews nothing either.
    expect((await post(h, 'stripe', app, renewal('evt_cycle_1_copy', 'in_cycle_1'))).json()).toMatchObject({ outcome: 'duplicate' });
    expect(await minutes()).toBe(60 * 1440);
    // The next bill renews.
    expect((await post(h, 'stripe', app, renewal('evt_cycle_2', 'in_cycle_2'))).json().outcome).toBe('renewed');
    expect(await minutes()).toBe(90 * 1440);
  });
});

describe('INTEGRATION_EVENT_RETENTION_DAYS', () => {
  it('defaults to 90 days and refuses less than 7 (the stores retry for 3 days) or more than 3650', () => {
    expect(DEFAULTS.integrationEventRetentionDays).toBe(90);
    expect(loadConfig({ INTEGRATION_EVENT_RETENTION_DAYS: '7' }).integrationEventRetentionDays).toBe(7);
    for (const bad of ['6', '0', '3651', '1.5', 'ninety']) {
      expect(() => loadConfig({ INTEGRATION_EVENT_RETENTION_DAYS: bad }), bad).toThrow(ConfigError);
    }
  });
});
