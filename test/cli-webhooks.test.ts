import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildIfStale, MAIN, ROOT } from './cli-process.js';
import { ADMIN_TOKEN, startNode, stopNode, type Node } from './cluster/nodes.js';
import { Receiver } from './webhook-receiver.js';

/** `tollgate webhooks …`: the built CLI against a real server process (SQLite) and a loopback receiver. */

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(args: string[]): Promise<Run> {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
  for (const key of Object.keys(env)) if (key.startsWith('TOLLGATE_') || key === 'DATABASE_URL' || key.startsWith('npm_')) delete env[key];
  return new Promise((done) => {
    execFile(process.execPath, [MAIN, ...args], { cwd: ROOT, env, encoding: 'utf8', timeout: 30_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : null) : 0;
      done({ code, stdout, stderr });
    });
  });
}

describe('tollgate webhooks', () => {
  let dir: string;
  let node: Node;
  let receiver: Receiver;
  const cli = (...args: string[]) => run(['--url', node.url, '--token', ADMIN_TOKEN, ...args]);
  const json = async (...args: string[]) => {
    const r = await cli(...args, '--json');
    expect(r.code, `${args.join(' ')}\n${r.stdout}\n${r.stderr}`).toBe(0);
    return JSON.parse(r.stdout);
  };

  beforeAll(async () => {
    buildIfStale();
    dir = mkdtempSync(join(tmpdir(), 'tollgate-cli-webhooks-'));
    node = await startNode(`sqlite:${join(dir, 'tollgate.db')}`, { WEBHOOK_ALLOW_HOSTS: '127.0.0.1' });
    receiver = await Receiver.start();
  });
  afterAll(async () => {
    await stopNode(node);
    await receiver.close();
    rmSync(dir, { recursive: true, force: true });
  });

  // About 20 CLI processes, each a Node start: seconds apiece on a loaded two-core machine.
  it('create (secret shown once), list, update, test, deliveries, replay, key, events, delete', { timeout: 120_000 }, async () => {
    const app = await json('apps', 'create', 'Hooks');
    const created = await cli('webhooks', 'create', receiver.url, '--app', app.id, '--events', 'user.created,webhook.test', '--description', 'CRM');
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toMatch(/whsec_/);
    expect(created.stderr + created.stdout).toMatch(/shown only once/);
    const [hook] = await json('webhooks', 'list', '--app', app.id);
    expect(hook).toMatchObject({ url: receiver.url, event_types: ['user.created', 'webhook.test'], description: 'CRM', enabled: true });
    // The global --url (the server) is not the endpoint's: only --new-url changes that.
    expect(await json('webhooks', 'update', hook.id, '--app', app.id, '--all-events')).toMatchObject({ event_types: null, url: receiver.url });
    const moved = await json('webhooks', 'update', hook.id, '--app', app.id, '--new-url', `${receiver.url}?moved=1`);
    expect(moved.url).toBe(`${receiver.url}?moved=1`);
    const test = await json('webhooks', 'test', hook.id, '--app', app.id);
    await receiver.count(1);
    let deliveries: { id: string; status: string }[] = [];
    for (let i = 0; i < 100 && deliveries[0]?.status !== 'delivered'; i++) {
      deliveries = await json('webhooks', 'deliveries', hook.id, '--app', app.id);
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(deliveries[0]).toMatchObject({ id: test.delivery_id, status: 'delivered' });
    const replayed = await cli('webhooks', 'replay', hook.id, '--app', app.id, '--delivery', test.delivery_id);
    expect(replayed.stdout, replayed.stderr).toMatch(/queued again/);
    await receiver.count(2);
    expect((await cli('webhooks', 'replay', hook.id, '--app', app.id)).code).not.toBe(0);
    expect((await json('webhooks', 'key', '--app', app.id)).public_key).toMatch(/^whpk_/);
    const events = await json('webhooks', 'events', '--app', app.id, '--type', 'webhook.test');
    expect(events.map((e: { id: string }) => e.id)).toEqual([test.event_id]);
    const rotated = await cli('webhooks', 'rotate-secret', hook.id, '--app', app.id);
    expect(rotated.stdout).toMatch(/whsec_/);
    expect((await cli('webhooks', 'delete', hook.id, '--app', app.id)).stdout).toMatch(/deleted webhook endpoint/);
    expect(await json('webhooks', 'list', '--app', app.id)).toEqual([]);
    // Service-wide ones without --app; an SSRF refusal is the API's 422, said plainly.
    const refused = await cli('webhooks', 'create', 'https://10.0.0.1/hook');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/private/);
    // A Discord URL's token is printed masked, as the API answers it, by create and by list.
    const token = 'discord-token-0123456789abcdefghijklmnop-wxyz';
    const discord = await cli('webhooks', 'create', receiver.url.replace(/\/hook$/, `/api/webhooks/42/${token}`), '--kind', 'discord');
    expect(discord.code, discord.stderr).toBe(0);
    const listed = await cli('webhooks', 'list');
    for (const out of [discord.stdout, listed.stdout]) {
      expect(out).toContain('/api/webhooks/42/****wxyz');
      expect(out).not.toContain(token);
    }
  });
});
