import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildIfStale, hasScript, MAIN, ok, ROOT, shQuote } from './cli-process.js';
import { ADMIN_TOKEN, call, startNode, stopNode, type Node } from './cluster/nodes.js';
import { STORE } from './helpers.js';

/**
 * What the CLI tells an operator beyond the rows (issue 15): lists cut short
 * say so and how to get the rest, the audit table is readable, secrets are
 * said to be shown once, --version, --url without a scheme, and the local
 * recovery of a lost admin token. The built CLI as child processes against a
 * real server process on SQLite (the server is a process of its own: the
 * PostgreSQL run would add nothing).
 */

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function env(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
  for (const key of Object.keys(base)) if (key.startsWith('TOLLGATE_') || key === 'DATABASE_URL' || key.startsWith('npm_')) delete base[key];
  return { ...base, ...extra };
}

function run(args: string[], extra: Record<string, string> = {}, cwd = ROOT): Promise<Run> {
  return new Promise((done) => {
    execFile(process.execPath, [MAIN, ...args], { cwd, env: env(extra), encoding: 'utf8', timeout: 30_000, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : null) : 0;
      done({ code, stdout, stderr });
    });
  });
}

/** Under a pseudo-terminal (util-linux `script`), as an operator at a terminal sees it. */
function runInTerminal(args: string[]): Promise<Run> {
  const command = [process.execPath, MAIN, ...args].map(shQuote).join(' ');
  return new Promise((done) => {
    execFile('script', ['-qefc', `${command} >/dev/null`, '/dev/null'], { env: env(), encoding: 'utf8', timeout: 60_000, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      done({ code: err ? 1 : 0, stdout, stderr });
    });
  });
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

if (STORE !== 'sqlite') console.warn('test/cli-lists.test.ts skipped on this store: the CLI drives a server process of its own on SQLite, so a PostgreSQL run adds nothing');
if (!hasScript) console.warn('the progress-bar test is skipped: no util-linux `script` to give the CLI a terminal');

describe.skipIf(STORE !== 'sqlite')('tollgate CLI: lists, audit, secrets, --version, --url, local tokens', { timeout: 90_000 }, () => {
  let node: Node;
  let dir: string;
  let url: string;
  let appId: string;

  const cli = (...args: string[]) => run(['--url', url, '--token', ADMIN_TOKEN, ...args]);
  const json = async (...args: string[]): Promise<Any> => JSON.parse(ok(await cli(...args, '--json'), args.join(' ')).stdout);

  beforeAll(async () => {
    buildIfStale();
    dir = mkdtempSync(join(tmpdir(), 'tollgate-cli-lists-'));
    node = await startNode(`sqlite:${join(dir, 'tollgate.db')}`, { LOG_LEVEL: 'warn' });
    url = node.url;
    appId = (await json('apps', 'create', 'Lists')).id;
    ok(await cli('licenses', 'create', '--app', appId, '--count', '105', '--minutes', '60'), 'create 105 licenses');
  }, 60_000);

  afterAll(async () => {
    if (node) await stopNode(node);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  describe('lists say when more exist', () => {
    it('105 unused licenses: the default shows 100 and says so on stderr, with the cursor to the rest', async () => {
      const table = ok(await cli('licenses', 'list', '--app', appId, '--unused'), 'licenses list --unused');
      const rows = table.stdout.split('\n').filter((l) => /^│ [0-9a-f]{8}-/.test(l));
      expect(rows).toHaveLength(100);
      const notice = /^tollgate: 100 (of 105 shown|shown; more exist); --all to fetch all, or --cursor (\S+) for the next 100$/m.exec(table.stderr);
      expect(notice, table.stderr).not.toBeNull();

      // The same with --json: stdout stays the JSON array, the notice is on stderr.
      const asJson = ok(await cli('licenses', 'list', '--app', appId, '--unused', '--json'), 'licenses list --json');
      const first: Any[] = JSON.parse(asJson.stdout);
      expect(first).toHaveLength(100);
      expect(asJson.stderr).toMatch(/100 (of 105 shown|shown; more exist)/);

      // The cursor it printed gives exactly the rest, and that list is complete: nothing said.
      const rest = ok(await cli('licenses', 'list', '--app', appId, '--unused', '--json', '--cursor', notice![2]!), 'licenses list --cursor');
      const second: Any[] = JSON.parse(rest.stdout);
      expect(second).toHaveLength(5);
      expect(rest.stderr).toBe('');
      expect(new Set([...first, ...second].map((l) => l.id)).size).toBe(105);
    });

    it('--all fetches all 105 and says nothing more (no progress bar when stderr is not a terminal)', async () => {
      const all = ok(await cli('licenses', 'list', '--app', appId, '--unused', '--all', '--json'), 'licenses list --all');
      expect(JSON.parse(all.stdout)).toHaveLength(105);
      expect(all.stderr).toBe('');
      const limited = ok(await cli('licenses', 'list', '--app', appId, '--limit', '500', '--json'), 'licenses list --limit 500');
      expect(JSON.parse(limited.stdout)).toHaveLength(105);
      expect(limited.stderr).toBe('');
    });

    it('--limit smaller than a page: the notice names that many next', async () => {
      const r = ok(await cli('licenses', 'list', '--app', appId, '--limit', '7', '--json'), 'licenses list --limit 7');
      expect(JSON.parse(r.stdout)).toHaveLength(7);
      expect(r.stderr).toMatch(/^tollgate: 7 (of 105 shown|shown; more exist); --all to fetch all, or --cursor \S+ for the next 7\n$/);
    });

    it('every paged list command says it: apps, users, bans, tokens, audit', async () => {
      const headers = await appHeaders();
      const made = await Promise.all([
        cli('apps', 'create', 'Second'),
        ...['one', 'two'].map((name) => cli('tokens', 'create', name)),
        ...['198.51.100.1', '198.51.100.2'].map((value) => cli('bans', 'create', '--app', appId, '--type', 'ip', '--value', value)),
      ]);
      made.forEach((r, i) => ok(r, `setup #${i}`));
      for (const name of ['user1', 'user2']) {
        const res = await call(url, 'POST', '/sign_up', { body: { username: name, password: 'correct horse battery' }, headers });
        expect(res.status, JSON.stringify(res.body)).toBe(200);
      }
      const lists = [['apps', 'list'], ['users', 'list', '--app', appId], ['bans', 'list', '--app', appId], ['tokens', 'list'], ['audit']];
      const [cut, whole] = await Promise.all([Promise.all(lists.map((args) => cli(...args, '--limit', '1'))), Promise.all(lists.map((args) => cli(...args, '--all')))]);
      lists.forEach((args, i) => {
        const name = args.join(' ');
        expect(ok(cut[i]!, name).stderr, `${name} --limit 1`).toMatch(/^tollgate: 1 (of \d+ shown|shown; more exist); --all to fetch all, or --cursor \S+ for the next 1\n$/);
        expect(ok(whole[i]!, `${name} --all`).stderr, `${name} --all`).toBe('');
      });
    }, 90_000);

    it.skipIf(!hasScript)('--all on a terminal shows a progress bar on stderr for an export of more than one page (util-linux script gives the terminal)', async () => {
      const big = (await json('apps', 'create', 'Big')).id as string;
      ok(await cli('licenses', 'create', '--app', big, '--count', '600', '--minutes', '1'), 'create 600 licenses');
      const r = await runInTerminal(['--url', url, '--token', ADMIN_TOKEN, 'licenses', 'list', '--app', big, '--all', '--json']);
      // stdout went to /dev/null inside the terminal: what the terminal shows is stderr, the bar.
      expect(r.stdout).toMatch(/\d+\/600 licenses|\d+ licenses fetched/);
      expect(r.stdout).not.toContain('shown');
    });
  });

  async function appHeaders(): Promise<Record<string, string>> {
    const { api_key } = await json('apps', 'get', appId);
    const { api_secret } = await json('apps', 'rotate-secret', appId);
    return { 'x-api-key': api_key, 'x-api-secret': api_secret };
  }

  describe('audit table', () => {
    it('details are one line of key=value pairs, cut to a width; --json has them whole', async () => {
      ok(await cli('apps', 'update', appId, '--max-devices', '3', '--name', 'Lists renamed'), 'apps update');
      const table = ok(await cli('audit', '--action', 'app.update', '--limit', '1'), 'audit (table)');
      const lines = table.stdout.split('\n');
      expect(lines.length).toBeLessThan(10);
      const widest = Math.max(...lines.map((l) => l.length));
      expect(widest, table.stdout).toBeLessThan(260);
      expect(table.stdout).toMatch(/max_devices_per_user=\d+→3/);
      expect(table.stdout).not.toContain('{"before"');

      const created = ok(await cli('audit', '--action', 'app.create', '--app', appId, '--limit', '1'), 'audit app.create (table)');
      const row = created.stdout.split('\n').find((l) => l.includes('app.create'))!;
      const details = row.split('│').at(-2)!.trim();
      expect(details.length).toBeLessThanOrEqual(60);
      expect(details).toMatch(/^name=Lists /);
      expect(details.endsWith('…')).toBe(true);

      const whole = await json('audit', '--action', 'app.create', '--app', appId, '--limit', '1');
      expect(whole[0].details.after).toMatchObject({ name: 'Lists', max_devices_per_user: expect.any(Number), device_auth_enabled: false });
    });
  });

  describe('secrets are said to be shown once', () => {
    it('tokens create, apps create, apps rotate-secret: under the table, and on stderr with --json (stdout stays JSON)', async () => {
      const table = ok(await cli('tokens', 'create', 'ops'), 'tokens create');
      expect(table.stdout).toMatch(/tg_adm_/);
      expect(table.stdout).toContain('shown only once');
      const asJson = ok(await cli('tokens', 'create', 'ops2', '--json'), 'tokens create --json');
      expect(JSON.parse(asJson.stdout).token).toMatch(/^tg_adm_/);
      expect(asJson.stderr).toContain('shown only once');

      const created = ok(await cli('apps', 'create', 'Secret'), 'apps create');
      expect(created.stdout).toContain('shown only once');
      const createdJson = ok(await cli('apps', 'create', 'Secret 2', '--json'), 'apps create --json');
      expect(JSON.parse(createdJson.stdout).api_secret).toMatch(/^tg_sec_/);
      expect(createdJson.stderr).toContain('shown only once');

      const rotated = ok(await cli('apps', 'rotate-secret', appId), 'apps rotate-secret');
      expect(rotated.stdout).toMatch(/tg_sec_/);
      expect(rotated.stdout).toContain('shown only once');
      const rotatedJson = ok(await cli('apps', 'rotate-secret', appId, '--json'), 'apps rotate-secret --json');
      expect(JSON.parse(rotatedJson.stdout).api_secret).toMatch(/^tg_sec_/);
      expect(rotatedJson.stderr).toContain('shown only once');
    });
  });

  describe('--version and --url', () => {
    it('--version prints the package version', async () => {
      const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
      for (const flag of ['--version', '-V']) {
        const r = ok(await run([flag]), flag);
        expect(r.stdout.trim()).toBe(version);
      }
    });

    it('--url without a scheme means http://; a URL that is not one is one clear line', async () => {
      const bare = url.replace(/^http:\/\//, '');
      const viaFlag = ok(await run(['--url', bare, '--token', ADMIN_TOKEN, 'apps', 'list', '--json']), '--url host:port');
      expect(JSON.parse(viaFlag.stdout).length).toBeGreaterThan(0);
      const viaEnv = ok(await run(['apps', 'list', '--json'], { TOLLGATE_URL: bare, TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN }), 'TOLLGATE_URL host:port');
      expect(JSON.parse(viaEnv.stdout).length).toBeGreaterThan(0);

      for (const bad of ['http://[::1', 'ftp://127.0.0.1:21']) {
        const r = await run(['--url', bad, '--token', ADMIN_TOKEN, 'apps', 'list']);
        expect(r.code, bad).toBe(1);
        expect(r.stdout).toBe('');
        expect(r.stderr).toMatch(/^tollgate: --url \S+/);
        expect(r.stderr).not.toContain('Invalid URL');
        expect(r.stderr.trim().split('\n')).toHaveLength(1);
      }
    });
  });

  describe('tokens create --local', () => {
    it('writes a working admin token into the database, audited as local, with no server token at all', async () => {
      const db = `sqlite:${join(dir, 'tollgate.db')}`;
      const r = await run(['tokens', 'create', 'recovered', '--local'], { DATABASE_URL: db });
      ok(r, 'tokens create --local');
      const token = /export TOLLGATE_ADMIN_TOKEN=(tg_adm_\S+)/.exec(r.stdout)?.[1];
      expect(token, r.stdout).toBeDefined();
      expect(r.stdout).toContain('shown only once');
      // The running server accepts it at once.
      const listed = ok(await run(['--url', url, '--token', token!, 'tokens', 'list', '--json', '--all']), 'tokens list with the recovered token');
      expect(JSON.parse(listed.stdout).map((t: Any) => t.name)).toContain('recovered');
      const audit = await json('audit', '--action', 'admin_token.create', '--limit', '1');
      expect(audit[0].actor).toMatch(/^local:/);

      // --database-url implies --local; --json prints the token as JSON.
      const viaFlag = ok(await run(['tokens', 'create', 'recovered2', '--database-url', db, '--json']), 'tokens create --database-url --json');
      const created = JSON.parse(viaFlag.stdout);
      expect(created).toMatchObject({ name: 'recovered2' });
      expect(created.token).toMatch(/^tg_adm_/);
      expect(viaFlag.stderr).toContain('shown only once');
    });

    it('refuses a database that does not exist, creating nothing, and a name the API would refuse', async () => {
      const elsewhere = mkdtempSync(join(tmpdir(), 'tollgate-nowhere-'));
      try {
        // The default sqlite:./data/tollgate.db from a directory without one.
        const r = await run(['tokens', 'create', 'lost', '--local'], {}, elsewhere);
        expect(r.code).toBe(1);
        expect(r.stdout).toBe('');
        expect(r.stderr).toMatch(new RegExp(`^tollgate: no SQLite database at ${join(elsewhere, 'data', 'tollgate.db')}`));
        expect(existsSync(join(elsewhere, 'data'))).toBe(false);
      } finally {
        rmSync(elsewhere, { recursive: true, force: true });
      }
      const empty = await run(['tokens', 'create', '', '--local'], { DATABASE_URL: `sqlite:${join(dir, 'tollgate.db')}` });
      expect(empty.code).toBe(1);
      expect(empty.stderr).toMatch(/^tollgate: .*name/);
      expect(empty.stderr).not.toMatch(/\n\s+at /);
    });
  });
});
