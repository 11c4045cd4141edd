import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, startNode, stopNode, type Node } from './cluster/nodes.js';

/**
 * `tollgate templates …` and `licenses create --template` (issue 24), the built CLI against a
 * server process on a temporary SQLite file (dist/ is built by the suite's global set-up).
 */
const MAIN = join(resolve(import.meta.dirname, '..'), 'dist/cli/main.js');

function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
  for (const key of Object.keys(env)) if (key.startsWith('TOLLGATE_')) delete env[key];
  return new Promise((done) => {
    execFile(process.execPath, [MAIN, ...args], { env, encoding: 'utf8', timeout: 20_000 }, (err, stdout, stderr) => {
      done({ code: err ? ((err as { code?: number }).code ?? null) : 0, stdout, stderr });
    });
  });
}

describe('tollgate templates', () => {
  let dir: string;
  let node: Node;
  let appId: string;
  const cli = async (...args: string[]) => {
    const r = await run(['--url', node.url, '--token', ADMIN_TOKEN, ...args]);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    return r.stdout;
  };
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tollgate-cli-templates-'));
    node = await startNode(`sqlite:${join(dir, 'tollgate.db')}`, { LOG_LEVEL: 'warn' });
    appId = JSON.parse(await cli('apps', 'create', 'CLI app', '--json')).id;
  }, 60_000);
  afterAll(async () => {
    await stopNode(node);
    rmSync(dir, { recursive: true, force: true });
  });

  it('creates, lists, changes and applies a template, and makes licenses from it by name', async () => {
    const created = JSON.parse(await cli('templates', 'create', '--app', appId, '--name', 'Pro', '--minutes', '60', '--entitlements', 'pro,export-pdf', '--max-devices', '2', '--json'));
    expect(created).toMatchObject({ name: 'Pro', minutes: 60, entitlements: ['export-pdf', 'pro'], max_devices: 2, max_seats: null });
    const listed = JSON.parse(await cli('templates', 'list', '--app', appId, '--json'));
    expect(listed.map((t: { id: string }) => t.id)).toEqual([created.id]);
    const licenses = JSON.parse(await cli('licenses', 'create', '--app', appId, '--template', 'Pro', '--count', '2', '--json'));
    expect(licenses.licenses ?? licenses).toHaveLength(2);
    const changed = JSON.parse(await cli('templates', 'update', created.id, '--app', appId, '--max-seats', '3', '--max-devices', 'none', '--json'));
    expect(changed).toMatchObject({ max_seats: 3, max_devices: null });
    const applied = JSON.parse(await cli('templates', 'apply', created.id, '--app', appId, '--json'));
    expect(applied).toEqual({ unused_licenses: 2, used_licenses: 0, users: 0 });
    const missing = await run(['--url', node.url, '--token', ADMIN_TOKEN, 'licenses', 'create', '--app', appId, '--template', 'Nope']);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain('no template named');
    await cli('templates', 'delete', created.id, '--app', appId);
    expect(JSON.parse(await cli('templates', 'list', '--app', appId, '--json'))).toEqual([]);
  });

  it('grants and revokes an entitlement, lists users by it, and lists and resets trials', async () => {
    const app = JSON.parse(await cli('apps', 'create', 'Trial app', '--json'));
    const patched = await fetch(`${node.url}/admin/v1/apps/${app.id}`, {
      method: 'PATCH', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify({ trial_minutes: 30 }),
    });
    expect(patched.status).toBe(200);
    const trial = await fetch(`${node.url}/trial`, {
      method: 'POST', headers: { 'x-api-key': app.api_key, 'x-api-secret': app.api_secret, 'content-type': 'application/json' }, body: JSON.stringify({ hardware_id: 'hw-cli' }),
    });
    const user = (await trial.json()).user;
    expect(JSON.parse(await cli('users', 'grant', user.id, '--app', app.id, '--code', 'pro', '--json'))).toMatchObject({ code: 'pro', until: null });
    expect(JSON.parse(await cli('users', 'list', '--app', app.id, '--entitlement', 'pro', '--json')).map((u: { id: string }) => u.id)).toEqual([user.id]);
    expect(JSON.parse(await cli('users', 'list', '--app', app.id, '--trial', '--json')).map((u: { id: string }) => u.id)).toEqual([user.id]);
    expect(JSON.parse(await cli('users', 'revoke-entitlement', user.id, 'pro', '--app', app.id, '--json'))).toEqual({ ended: 1 });
    const trials = JSON.parse(await cli('trials', 'list', '--app', app.id, '--hardware-id', 'hw-cli', '--json'));
    expect(trials.map((t: { user_id: string; status: string }) => [t.user_id, t.status])).toEqual([[user.id, 'running']]);
    await cli('trials', 'reset', trials[0].id, '--app', app.id);
    expect(JSON.parse(await cli('trials', 'list', '--app', app.id, '--json'))).toEqual([]);
  });
});
