import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { admin, call, startNode, stopNode, type Node } from './nodes.js';

/**
 * kill -9 in the middle of a sign-up and activation load: after a restart,
 * every write whose 2xx the client received is there. On SQLite (WAL,
 * synchronous=FULL) and on PostgreSQL.
 */
const pgUrl = inject('pgUrl');
const dir = mkdtempSync(join(tmpdir(), 'tollgate-durability-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function pgSchemaUrl(): Promise<string> {
  const schema = `d_${randomBytes(5).toString('hex')}`;
  const client = new pg.Client({ connectionString: pgUrl! });
  await client.connect();
  await client.query(`CREATE SCHEMA ${schema}`);
  await client.end();
  const url = new URL(pgUrl!);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return url.toString();
}

const stores: { name: string; url: () => Promise<string>; skip: boolean }[] = [
  { name: 'SQLite', url: async () => `sqlite:${join(dir, 'crash.db')}`, skip: false },
  { name: 'PostgreSQL', url: pgSchemaUrl, skip: !pgUrl },
];

describe.each(stores)('durability on $name', ({ url, skip }) => {
  it.skipIf(skip)('kill -9 during sign-ups and activations loses no acknowledged write, and the node restarts with no manual step', async () => {
    const databaseUrl = await url();
    let node: Node = await startNode(databaseUrl);
    const app = await admin(node.url, 'POST', '/apps', { name: 'Crash test' });
    const headers = { 'x-api-key': app.body.api_key, 'x-api-secret': app.body.api_secret };
    const licenses = await admin(node.url, 'POST', `/apps/${app.body.id}/licenses`, { count: 2000, minutes: 60 });
    const codes: string[] = licenses.body.licenses.map((l: { code: string }) => l.code);

    const signedUp: { username: string; id: string }[] = [];
    const activated: { username: string; code: string }[] = [];
    let next = 0;
    let killed = false;
    const worker = async () => {
      while (!killed) {
        const n = next++;
        const username = `crash_${n}`;
        try {
          const signed = await call(node.url, 'POST', '/sign_up', { body: { username, password: 'durable password' }, headers });
          if (signed.status === 200) signedUp.push({ username, id: signed.body.id });
          const code = codes[n]!;
          const act = await call(node.url, 'POST', '/activate_license', { body: { code, username, password: 'durable password' }, headers });
          if (act.status === 200) activated.push({ username, code });
        } catch {
          return; // the server died under us: this write was never acknowledged
        }
      }
    };
    const workers = Array.from({ length: 8 }, worker);
    await new Promise((r) => setTimeout(r, 1500));
    killed = true;
    await stopNode(node, 'SIGKILL');
    await Promise.all(workers);
    expect(signedUp.length).toBeGreaterThan(5);

    node = await startNode(databaseUrl);
    try {
      for (const { username, id } of signedUp) {
        const found = await admin(node.url, 'GET', `/apps/${app.body.id}/users?q=${username}`);
        expect(found.body.items.map((u: { id: string }) => u.id), `acknowledged sign-up ${username} lost`).toContain(id);
      }
      for (const { username, code } of activated) {
        const list = await admin(node.url, 'GET', `/apps/${app.body.id}/licenses?q=${code}&used=true`);
        expect(list.body.items, `acknowledged activation of ${code} lost`).toHaveLength(1);
        const ctx = await call(node.url, 'GET', '/app_context', { headers: { ...headers, 'x-api-username': username, 'x-api-password': 'durable password' } });
        expect(ctx.status).toBe(200);
        expect(ctx.body.user.membership.is_active).toBe(true);
      }
    } finally {
      await stopNode(node);
    }
  });
});
