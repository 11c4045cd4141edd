import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, ok, run, runInTerminal, tempDir } from './cli-process.js';
import { ADMIN_TOKEN, call, startNode, stopNode, type Node } from './cluster/nodes.js';
import { PASSWORD, STORE } from './helpers.js';

/**
 * Issue 21, the CLI against a running server: tables fit the terminal
 * (item 10), `--app` anywhere on the line (item 13), a blocked port said in
 * a sentence (item 15), lease settings refused by name (item 4). The built
 * CLI as child processes against a server process on SQLite (the store plays
 * no part in what the CLI prints).
 */

const WIDTH = 100;

const widest = (text: string) => Math.max(0, ...text.split('\n').map((l) => [...l].length));

describe.skipIf(STORE !== 'sqlite')('tollgate CLI on a terminal (SQLite project only)', { timeout: 120_000 }, () => {
  let node: Node;
  let appId: string;
  let cwd: string;
  const args = (...rest: string[]) => ['--url', node.url, '--token', ADMIN_TOKEN, ...rest];
  const cli = (...rest: string[]) => run(args(...rest), cwd);
  const json = async (...rest: string[]) => JSON.parse(ok(await cli(...rest, '--json'), rest.join(' ')).stdout);
  const terminal = (...rest: string[]) => runInTerminal(args(...rest), cwd, { COLUMNS: String(WIDTH) });

  beforeAll(async () => {
    cwd = tempDir();
    node = await startNode(`sqlite:${join(cwd, 'tollgate.db')}`);
    const app = await json('apps', 'create', 'A licensed application with a rather long name');
    appId = app.id;
    const signUp = await call(node.url, 'POST', '/sign_up', {
      body: { username: 'a-customer-with-a-long-user-name@example.com', password: PASSWORD },
      headers: { 'x-api-key': app.api_key, 'x-api-secret': app.api_secret },
    });
    expect(signUp.status, JSON.stringify(signUp.body)).toBe(200);
    ok(await cli('apps', 'update', appId, '--max-devices', '3', '--registration', 'closed'), 'apps update');
    ok(await cli('licenses', 'create', '--app', appId, '--count', '3', '--minutes', '60', '--note', 'for the customer who asked on the phone twice'), 'licenses create');
    ok(await cli('bans', 'create', '--app', appId, '--type', 'ip', '--value', '198.51.100.7', '--reason', 'a long reason written by a careful operator for the record'), 'bans create');
    ok(await cli('vars', 'set', '--app', appId, 'motd', 'x'.repeat(300)), 'vars set');
    ok(await cli('tokens', 'create', 'a token for the nightly export job on the backup host'), 'tokens create');
  }, 90_000);

  afterAll(async () => {
    if (node) await stopNode(node);
  });

  describe('item 10: tables fit the terminal width', () => {
    const tables = [['audit'], ['apps', 'list'], ['licenses', 'list'], ['users', 'list'], ['bans', 'list'], ['tokens', 'list'], ['vars', 'list'], ['vars', 'get', 'motd'], ['apps', 'get']];
    for (const table of tables) {
      it(`${table.join(' ')} at COLUMNS=${WIDTH}: no line wider than the terminal`, async () => {
        const rest = table[1] === 'get' && table[0] === 'apps' ? [...table, appId] : [...table, ...(['audit', 'apps', 'tokens'].includes(table[0]!) ? [] : ['--app', appId])];
        const r = ok(await terminal(...rest), rest.join(' '));
        expect(r.stdout).toMatch(/[┌│]/);
        expect(widest(r.stdout), r.stdout).toBeLessThanOrEqual(WIDTH);
      });
    }

    it('what does not fit is said on stderr; the most important columns stay and free text is cut', async () => {
      const audit = ok(await terminal('audit'), 'audit');
      const head = audit.stdout.split('\n').find((l) => l.includes(' at '))!;
      for (const column of ['at', 'action', 'details']) expect(head).toMatch(new RegExp(`│ ${column}\\s`));
      expect(audit.stderr).toMatch(/^tollgate: left out to fit 100 columns: .*app_id/m);
      expect(audit.stdout).toContain('…');

      const licenses = ok(await terminal('licenses', 'list', '--app', appId), 'licenses list');
      const codes = (await json('licenses', 'list', '--app', appId)).map((l: { code: string }) => l.code);
      for (const code of codes) expect(licenses.stdout).toContain(code);
    });

    it('the whole value of a single object wraps rather than being cut', async () => {
      const r = ok(await terminal('vars', 'get', '--app', appId, 'motd'), 'vars get');
      expect(r.stdout.match(/x/g)?.length).toBe(300);
    });

    it('piped (not a terminal): whole tables, as before; --json unchanged on a terminal', async () => {
      const piped = ok(await run(args('audit'), cwd, { COLUMNS: String(WIDTH) }), 'audit piped');
      expect(widest(piped.stdout)).toBeGreaterThan(WIDTH);
      expect(piped.stdout).toContain('target_id');
      const fromTerminal = ok(await terminal('audit', '--json'), 'audit --json');
      expect(JSON.parse(fromTerminal.stdout)).toEqual(await json('audit'));
    });
  });

  describe('item 13: --app anywhere on the line, like --url, --token and --json', () => {
    it('before the command, between command and sub-command, after it: the same answer', async () => {
      const after = await json('licenses', 'list', '--app', appId);
      expect(after).toHaveLength(3);
      for (const line of [
        ['--app', appId, 'licenses', 'list', '--json'],
        ['licenses', '--app', appId, 'list', '--json'],
        ['--json', '--app', appId, 'licenses', 'list'],
      ]) {
        expect(JSON.parse(ok(await cli(...line), line.join(' ')).stdout), line.join(' ')).toEqual(after);
      }
      const ban = JSON.parse(ok(await cli('--app', appId, 'bans', 'list', '--json'), 'bans list').stdout);
      expect(ban[0]).toMatchObject({ value: '198.51.100.7' });
      const audit = JSON.parse(ok(await cli('--app', appId, 'audit', '--action', 'ban.create', '--json'), 'audit --app first').stdout);
      expect(audit).toHaveLength(1);
    });

    it('the help of a sub-command lists it', async () => {
      expect(ok(await run(['licenses', 'list', '--help'], cwd), 'help').stdout).toMatch(/--app <app_id>/);
    });
  });

  describe('item 15: --url to a port fetch refuses', () => {
    it('http://127.0.0.1:6000: one sentence naming the port, not a bare "bad port"', async () => {
      const r = await run(['apps', 'list', '--url', 'http://127.0.0.1:6000', '--token', 'x'.repeat(20)], ROOT);
      expect(r.code).toBe(1);
      const failure = r.stderr.trim().split('\n');
      expect(failure).toHaveLength(1);
      expect(failure[0]).not.toMatch(/: bad port$/);
      expect(failure[0]).toMatch(/^tollgate: cannot reach http:\/\/127\.0\.0\.1:6000\/: port 6000 is one .* refuses/);
    });
  });

  describe('item 4: lease settings whose renewal would fall after the lease ends', () => {
    it('apps create and apps update refuse them, naming both settings', async () => {
      const created = await cli('apps', 'create', 'Short grace', '--offline-grace-seconds', '8');
      expect(created.code).toBe(1);
      expect(created.stderr).toMatch(/^tollgate: 422: .*lease_renew_seconds \(3600\).*offline_grace_seconds \(8\)/);
      const updated = await cli('apps', 'update', appId, '--offline-grace-seconds', '7200', '--lease-renew-seconds', '7201');
      expect(updated.code).toBe(1);
      expect(updated.stderr).toContain('body.lease_renew_seconds');
      expect(updated.stderr).toContain('body.offline_grace_seconds');
      expect(await json('apps', 'get', appId)).toMatchObject({ offline_grace_seconds: 0, lease_renew_seconds: 3600 });
    });
  });
});
