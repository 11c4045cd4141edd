import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { buildIfStale } from '../setup/build.js';
import { admin, call, startNode, stopNode, type Node } from './nodes.js';

/**
 * Two server processes on one PostgreSQL database receive the same Stripe event at once (a store's
 * retry racing its original, or two load-balanced deliveries): the event id's unique key grants once.
 */
const pgUrl = inject('pgUrl');
const SECRET = 'whsec_cluster_sales_0123456789abcdef';

describe.skipIf(!pgUrl)('sales in: two nodes, one event', () => {
  let nodes: Node[] = [];
  let appId: string;

  beforeAll(async () => {
    buildIfStale();
    nodes = await Promise.all([0, 1].map(() => startNode(pgUrl!, { PG_POOL_SIZE: '4' })));
    appId = (await admin(nodes[0]!.url, 'POST', '/apps', { name: 'Shop on two nodes' })).body.id;
    expect((await admin(nodes[0]!.url, 'PUT', `/apps/${appId}/integrations/stripe`, { signing_secret: SECRET })).status).toBe(200);
    expect((await admin(nodes[1]!.url, 'POST', `/apps/${appId}/integrations/stripe/products`, { product_key: 'plink_1PgaflB7WZ01zgkW2Wn4ZAnp', minutes: 60, codes_per_unit: 3 })).status).toBe(201);
  }, 60_000);

  afterAll(async () => {
    await Promise.all(nodes.map((n) => stopNode(n)));
  });

  it('20 identical deliveries split over two processes: one grants 3 codes, 19 are duplicates', async () => {
    const body = readFileSync(join(import.meta.dirname, '..', 'fixtures', 'sales', 'stripe', 'checkout.session.completed.json'), 'utf8');
    const signature = Stripe.webhooks.generateTestHeaderString({ payload: body, secret: SECRET, timestamp: Math.floor(Date.now() / 1000) });
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) =>
      fetch(`${nodes[i % 2]!.url}/integrations/stripe/${appId}`, { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': signature }, body })
        .then(async (r) => ({ status: r.status, body: (await r.json()) as { outcome: string } }))));
    for (const a of answers) expect(a.status, JSON.stringify(a.body)).toBe(200);
    expect(answers.filter((a) => a.body.outcome === 'granted')).toHaveLength(1);
    expect(answers.filter((a) => a.body.outcome === 'duplicate')).toHaveLength(19);
    const licenses = await call(nodes[0]!.url, 'GET', `/admin/v1/apps/${appId}/licenses?limit=100`, { headers: { authorization: `Bearer cluster-admin-token-0123456789` } });
    expect(licenses.body.items).toHaveLength(3);
    const orders = await admin(nodes[1]!.url, 'GET', `/apps/${appId}/orders`);
    expect(orders.body.items).toHaveLength(1);
  });
});
