import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError, DEFAULTS, loadConfig } from '../src/config/index.js';
import { harness, type Harness, type TestApp } from './helpers.js';
import { connect, fixture, map, post, variant } from './sales-helpers.js';

/**
 * Retention of integration_events, the ids of received store events (docs/integrations.md): kept for
 * INTEGRATION_EVENT_RETENTION_DAYS (default 90) by the periodic sweep every node runs, then forgotten.
 */
const DAY = 24 * 3_600_000;

describe('integration_events retention', () => {
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
