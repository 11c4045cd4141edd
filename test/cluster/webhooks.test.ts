import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { Receiver } from '../webhook-receiver.js';
import { admin, call, startNode, stopNode, within, type Node } from './nodes.js';

/**
 * Two real server processes on one PostgreSQL database: the node that claimed a delivery is killed
 * (SIGKILL) while the receiver hangs on its request, and the other node delivers it once the claim
 * lapses, with the same webhook-id. Nothing is lost.
 */
const pgUrl = inject('pgUrl');
const nodes: Node[] = [];
let receiver: Receiver | undefined;
afterAll(async () => {
  // A node killed in the test has a signalCode and no exitCode: stopNode would wait for an exit already past.
  for (const n of nodes) if (n.process.exitCode === null && n.process.signalCode === null) await stopNode(n, 'SIGKILL');
  await receiver?.close();
});

async function pgSchemaUrl(): Promise<string> {
  const schema = `w_${randomBytes(5).toString('hex')}`;
  const client = new pg.Client({ connectionString: pgUrl! });
  await client.connect();
  await client.query(`CREATE SCHEMA ${schema}`);
  await client.end();
  const url = new URL(pgUrl!);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return url.toString();
}

describe('webhook delivery across nodes', () => {
  it.skipIf(!pgUrl)('a node killed mid-delivery loses nothing: another node delivers it, same webhook-id', async () => {
    const databaseUrl = await pgSchemaUrl();
    const env = { WEBHOOK_ALLOW_HOSTS: '127.0.0.1', WEBHOOK_TIMEOUT_MS: '10000' };
    receiver = await Receiver.start();
    receiver.respond = (n) => (n === 1 ? 'hang' : { status: 200 });
    const a = await startNode(databaseUrl, env);
    nodes.push(a);
    const app = await admin(a.url, 'POST', '/apps', { name: 'Webhooks' });
    const hook = await admin(a.url, 'POST', `/apps/${app.body.id}/webhooks`, { url: receiver.url, event_types: ['user.created'] });
    expect(hook.status, JSON.stringify(hook.body)).toBe(201);
    const headers = { 'x-api-key': app.body.api_key, 'x-api-secret': app.body.api_secret };
    const signed = await call(a.url, 'POST', '/sign_up', { body: { username: 'alice', password: 'a long password' }, headers });
    expect(signed.status).toBe(200);
    await receiver.count(1); // node A is mid-delivery: the receiver holds its request
    const b = await startNode(databaseUrl, env);
    nodes.push(b);
    await stopNode(a, 'SIGKILL');
    await receiver.count(2, 40_000);
    const [first, second] = receiver.received;
    expect(second!.headers['webhook-id']).toBe(first!.headers['webhook-id']);
    const deliveries = async () => (await admin(b.url, 'GET', `/apps/${app.body.id}/webhooks/${hook.body.id}/deliveries`)).body.items;
    await within(10_000, async () => (await deliveries())[0]?.status === 'delivered');
    const [d] = await deliveries();
    // The killed node's attempt was never recorded; the one that succeeded was.
    expect(d.attempt_log.map((x: { status: number | null }) => x.status)).toEqual([200]);
    expect(receiver.received).toHaveLength(2);
  });

  it.skipIf(!pgUrl)('two nodes share the work: each delivery goes once', async () => {
    const databaseUrl = await pgSchemaUrl();
    const env = { WEBHOOK_ALLOW_HOSTS: '127.0.0.1' };
    const r = await Receiver.start();
    try {
      const a = await startNode(databaseUrl, env);
      const b = await startNode(databaseUrl, env);
      nodes.push(a, b);
      const app = await admin(a.url, 'POST', '/apps', { name: 'Shared' });
      expect((await admin(a.url, 'POST', `/apps/${app.body.id}/webhooks`, { url: r.url, event_types: ['license.created'] })).status).toBe(201);
      await Promise.all(Array.from({ length: 40 }, (_, i) => admin(i % 2 ? a.url : b.url, 'POST', `/apps/${app.body.id}/licenses`, { count: 1, minutes: 5 })));
      await r.count(40, 20_000);
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const ids = r.received.map((x) => x.headers['webhook-id']);
      expect(new Set(ids).size).toBe(40);
      expect(ids).toHaveLength(40);
    } finally {
      await r.close();
    }
  });
});
