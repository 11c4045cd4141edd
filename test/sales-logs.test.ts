import { afterEach, describe, expect, it } from 'vitest';
import { harness, type Harness } from './helpers.js';
import { captureLog, fields, type LogCapture } from './log-capture.js';
import { connect, deliver, fixture, map, post, SECRETS, signed } from './sales-helpers.js';

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
});
