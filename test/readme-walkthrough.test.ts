import { execFile } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAIN, ROOT } from './cli-process.js';
import { ADMIN_TOKEN, call, startNode, stopNode, type Node } from './cluster/nodes.js';
import { STORE } from './helpers.js';

/**
 * README's walk-through, pasted as a reader pastes it: the sh blocks of the
 * "Walk-through" section run by bash against a real server process, with the
 * two exported lines of a first start. A README that drifts from the API
 * fails here. SQLite only (the server is a process of its own); needs curl and jq.
 */

const README = readFileSync(join(ROOT, 'README.md'), 'utf8');

function walkThroughBlocks(): string[] {
  const start = README.indexOf('## Walk-through');
  const end = README.indexOf('\n## ', start + 1);
  const section = README.slice(start, end);
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

const missing = ['curl', 'jq'].filter((tool) => !readdirSync('/usr/bin').includes(tool));
if (STORE !== 'sqlite') console.warn('test/readme-walkthrough.test.ts skipped on this store: it drives a server process of its own on SQLite');
if (missing.length) console.warn(`README walk-through test skipped: ${missing.join(' and ')} not installed`);

function bash(script: string, cwd: string, env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  const clean: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, NO_COLOR: '1', ...env };
  return new Promise((done) => {
    execFile('bash', ['-euo', 'pipefail', '-c', script], { cwd, env: clean, encoding: 'utf8', timeout: 60_000 }, (err, stdout, stderr) => {
      done({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

describe.skipIf(STORE !== 'sqlite' || missing.length > 0)('README walk-through, run by bash against a real server', { timeout: 90_000 }, () => {
  let node: Node;
  let dir: string;
  let database: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tollgate-readme-'));
    database = `sqlite:${join(dir, 'tollgate.db')}`;
    node = await startNode(database, { LOG_LEVEL: 'warn' });
  }, 60_000);

  afterAll(async () => {
    if (node) await stopNode(node);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('the client steps work as written, and the device lock shows: a third device refused until a reset', async () => {
    const [steps] = walkThroughBlocks();
    expect(steps, 'the walk-through has its sh block').toBeDefined();
    const work = join(dir, 'work');
    mkdirSync(work);
    const r = await bash(steps!, work, { TOLLGATE_URL: node.url, TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN });
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
    const out = r.stdout;
    expect(out).toContain('{"logged_in":true}');
    expect(out).toContain('{"code":"device_limit"}');
    expect(out).toMatch(/^204$/m);
    expect(out).toMatch(/^hello from tollgate$/m);
    // Each JSON answer on its own line: none runs into the next output (issue 29, item 6).
    expect(out).not.toMatch(/[}\]][ \t]*[{[]|[}\]][^\s,}\]]/);
    for (const line of out.split('\n').filter((l) => l.startsWith('{"'))) expect(() => JSON.parse(line), line).not.toThrow();
    expect(out).toMatch(/"latest_version"/);
    expect(out).not.toMatch(/"code": ?"(?!device_limit)[a-z_]+"/);
    // Nothing secret was written where the reader stands: only the file uploaded.
    expect(readdirSync(work)).toEqual(['hello.txt']);
    // The app really has device authentication on, with the limit the text names.
    const apps = await call(node.url, 'GET', '/admin/v1/apps', { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(apps.body.items.find((a: { name: string }) => a.name === 'My App')).toMatchObject({ device_auth_enabled: true, max_devices_per_user: 2 });
  });

  it('the lost-token recovery line gives a token the server accepts', async () => {
    const recovery = walkThroughBlocks()[1];
    expect(recovery, 'the recovery block').toBeDefined();
    // `tollgate` on PATH, as after npm install -g.
    const bin = join(dir, 'bin');
    mkdirSync(bin);
    writeFileSync(join(bin, 'tollgate'), `#!/bin/sh\nexec "${process.execPath}" "${MAIN}" "$@"\n`);
    chmodSync(join(bin, 'tollgate'), 0o755);
    const r = await bash(recovery!, dir, { PATH: `${bin}:${process.env.PATH}`, DATABASE_URL: database });
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
    const token = /export TOLLGATE_ADMIN_TOKEN=(tg_adm_\S+)/.exec(r.stdout)?.[1];
    expect(token, r.stdout).toBeDefined();
    const res = await call(node.url, 'GET', '/admin/v1/tokens', { headers: { authorization: `Bearer ${token}` } });
    expect(res.status).toBe(200);
    expect(res.body.items.map((t: { name: string }) => t.name)).toContain('rescue');
  });
});
