import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildIfStale, MAIN, ROOT } from './cli-process.js';
import { ADMIN_TOKEN, startNode, stopNode, type Node } from './cluster/nodes.js';
import { STORE } from './helpers.js';

/**
 * `tollgate integrations …` and `tollgate orders …` as an operator runs them: the built CLI against a
 * real server process on SQLite. The signing secret goes in on standard input, never on the command line.
 */
interface Run { code: number | null; stdout: string; stderr: string }

function run(args: string[], input?: string): Promise<Run> {
  return new Promise((done) => {
    const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
    for (const key of Object.keys(env)) if (key.startsWith('TOLLGATE_') || key === 'DATABASE_URL') delete env[key];
    const child = execFile(process.execPath, [MAIN, ...args], { cwd: ROOT, env, encoding: 'utf8', timeout: 30_000 }, (err, stdout, stderr) => {
      done({ code: err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0, stdout, stderr });
    });
    child.stdin!.end(input ?? '');
  });
}

const SECRET = 'whsec_cli_0123456789abcdef0123';

describe.skipIf(STORE !== 'sqlite')('tollgate integrations and orders (CLI)', { timeout: 90_000 }, () => {
  let node: Node;
  let dir: string;
  let appId: string;
  const cli = (args: string[], input?: string) => run(['--url', node.url, '--token', ADMIN_TOKEN, ...args], input);
  const json = async (args: string[], input?: string) => {
    const r = await cli([...args, '--json'], input);
    expect(r.code, `${args.join(' ')}\n${r.stdout}\n${r.stderr}`).toBe(0);
    return JSON.parse(r.stdout);
  };

  beforeAll(async () => {
    buildIfStale();
    dir = mkdtempSync(join(tmpdir(), 'tollgate-sales-cli-'));
    node = await startNode(`sqlite:${join(dir, 'tollgate.db')}`, { LOG_LEVEL: 'warn' });
    appId = (await json(['apps', 'create', 'Shop'])).id;
  }, 60_000);

  afterAll(async () => {
    if (node) await stopNode(node);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('sets the secret from stdin (masked afterwards), maps a product, and lists the order a sale made', async () => {
    const set = await json(['integrations', 'set', 'stripe', '--app', appId], `${SECRET}\n`);
    expect(set).toMatchObject({ provider: 'stripe', enabled: true, secret_hint: '…0123', webhook_path: `/integrations/stripe/${appId}` });
    const listed = await cli(['integrations', 'list', '--app', appId]);
    expect(listed.stdout).toContain('stripe');
    expect(listed.stdout).not.toContain(SECRET);
    const mapping = await json(['integrations', 'products', 'add', 'stripe', 'plink_1PgaflB7WZ01zgkW2Wn4ZAnp', '--minutes', '43200', '--codes', '2', '--app', appId]);
    expect(mapping).toMatchObject({ product_key: 'plink_1PgaflB7WZ01zgkW2Wn4ZAnp', minutes: 43200, codes_per_unit: 2, lifetime: false });
    expect(await json(['integrations', 'products', 'list', 'stripe', '--app', appId])).toHaveLength(1);

    const body = readFileSync(join(ROOT, 'test', 'fixtures', 'sales', 'stripe', 'checkout.session.completed.json'), 'utf8');
    const signature = Stripe.webhooks.generateTestHeaderString({ payload: body, secret: SECRET, timestamp: Math.floor(Date.now() / 1000) });
    const sale = await fetch(`${node.url}/integrations/stripe/${appId}`, { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': signature }, body });
    expect(sale.status).toBe(200);

    const orders = await json(['orders', 'list', '--app', appId]);
    expect(orders).toHaveLength(1);
    expect(orders[0]).toMatchObject({ provider: 'stripe', buyer_email: 'jenny.rosen@example.com', status: 'active' });
    const order = await json(['orders', 'get', orders[0].id, '--app', appId]);
    expect(order.licenses).toHaveLength(2);

    const disabled = await json(['integrations', 'disable', 'stripe', '--app', appId]);
    expect(disabled.enabled).toBe(false);
    expect((await json(['integrations', 'products', 'update', 'stripe', mapping.id, '--lifetime', '--app', appId])).lifetime).toBe(true);
    expect((await cli(['integrations', 'products', 'delete', 'stripe', mapping.id, '--app', appId])).code).toBe(0);
    expect((await cli(['integrations', 'delete', 'stripe', '--app', appId])).code).toBe(0);
    expect(await json(['integrations', 'list', '--app', appId])).toEqual([]);
  });

  it('maps a product to a license template by its name, shows it in the list, and switches back to minutes', async () => {
    await json(['integrations', 'set', 'paddle', '--app', appId], 'pdl_ntfset_cli_secret_0123\n');
    const t = await json(['templates', 'create', '--app', appId, '--name', 'Pro yearly', '--minutes', '525600', '--entitlements', 'pro']);
    const mapping = await json(['integrations', 'products', 'add', 'paddle', 'pri_cli_pro', '--template', 'Pro yearly', '--app', appId]);
    expect(mapping).toMatchObject({ product_key: 'pri_cli_pro', template_id: t.id, minutes: null, lifetime: false });
    const table = await cli(['integrations', 'products', 'list', 'paddle', '--app', appId]);
    expect(table.stdout).toContain('template_id');
    expect(table.stdout).toContain(t.id);
    const unknown = await cli(['integrations', 'products', 'add', 'paddle', 'pri_cli_other', '--template', 'No such tier', '--app', appId]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/no template named "No such tier"/);
    const both = await cli(['integrations', 'products', 'add', 'paddle', 'pri_cli_other', '--template', t.id, '--minutes', '5', '--app', appId]);
    expect(both.code).toBe(1);
    expect(both.stderr).toMatch(/template_id/);
    expect(await json(['integrations', 'products', 'update', 'paddle', mapping.id, '--minutes', '60', '--app', appId])).toMatchObject({ template_id: null, minutes: 60 });
    expect((await cli(['integrations', 'delete', 'paddle', '--app', appId])).code).toBe(0);
  });

  it('refuses an empty secret and an unknown store, with a one-line reason', async () => {
    const empty = await cli(['integrations', 'set', 'stripe', '--app', appId], '');
    expect(empty.code).toBe(1);
    expect(empty.stderr).toMatch(/^tollgate: standard input was empty/);
    const unknown = await cli(['integrations', 'set', 'gumroad', '--app', appId], 'secret-secret\n');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/unknown store gumroad/);
  });
});
