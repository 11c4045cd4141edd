import { spawn } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MAIN, ROOT, cleanEnv, freePort, hasJq, hasScript, shQuote, tempDir } from './cli-process.js';
import { STORE } from './helpers.js';
import { until } from './log-capture.js';

/**
 * Issue 29, item 1: the first start's admin token is never on stdout, the log
 * stream. `serve >out 2>err` (not a terminal): every stdout line is JSON, the
 * token is in neither stream but in ./tollgate-admin-token (mode 0600), which
 * one log line names; docs/deploy.md's jq commands run on that output. At a
 * terminal (script(1) gives the process one), the block goes to stderr, after
 * "Server listening" in both formats.
 */
/** `tollgate serve` through sh with the given redirections (or under script(1) for a terminal), until it answers. */
async function serve(dir: string, redirect: string, env: Record<string, string>, terminal = false) {
  const port = await freePort();
  const command = `exec ${shQuote(process.execPath)} ${shQuote(MAIN)} serve ${redirect}`;
  const [file, args] = terminal ? ['script', ['-qfec', command, '/dev/null']] as const : ['sh', ['-c', command]] as const;
  let seen = '';
  const child = spawn(file, [...args], {
    cwd: dir,
    env: cleanEnv({ PORT: String(port), DATABASE_URL: `sqlite:${join(dir, 'db.sqlite')}`, LOG_LEVEL: 'info', DATABASE_WAIT_MS: '0', ...env }),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d: Buffer) => (seen += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (seen += d.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline && child.exitCode === null && !(await fetch(`${base}/healthz`).then((r) => r.ok, () => false))) await new Promise((r) => setTimeout(r, 100));
  return {
    base, seen: () => seen,
    stop: async () => {
      // Under script(1) the signal must reach node itself: it is script's child, in its own session.
      if (terminal) execFileSync('pkill', ['-TERM', '-P', String(child.pid)]);
      else child.kill('SIGTERM');
      return exited;
    },
  };
}

describe.skipIf(STORE !== 'sqlite')('the first start keeps stdout pure log lines (SQLite project only: the store plays no part)', { timeout: 90_000 }, () => {
  it('serve >out 2>err: every stdout line is JSON, the token is in neither stream but in a 0600 file one log line names, and it works', async () => {
    const dir = tempDir();
    const node = await serve(dir, '>out.log 2>err.log', {});
    const file = join(dir, 'tollgate-admin-token');
    await until(() => existsSync(file), 10_000);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const token = /export TOLLGATE_ADMIN_TOKEN=(tg_adm_\S+)/.exec(readFileSync(file, 'utf8'))?.[1];
    expect(token).toBeDefined();
    const me = await fetch(`${node.base}/admin/v1/whoami`, { headers: { authorization: `Bearer ${token}` } });
    expect(me.status).toBe(200);
    expect((await fetch(`${node.base}/no/such/path?secret=x`)).status).toBe(404);
    expect(await node.stop()).toBe(0);

    const out = readFileSync(join(dir, 'out.log'), 'utf8');
    const err = readFileSync(join(dir, 'err.log'), 'utf8');
    const lines = out.split('\n').filter((l) => l !== '');
    expect(lines.length).toBeGreaterThanOrEqual(4);
    const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    for (const text of [out, err]) {
      expect(text).not.toContain(token!);
      expect(text).not.toContain('tg_adm_');
    }
    expect(parsed).toContainEqual(expect.objectContaining({ level: 40, event: 'first_admin_token', file: resolve(file) }));
    expect(parsed).toContainEqual(expect.objectContaining({ msg: 'request', route: '/admin/v1/whoami', status: 200 }));

    if (hasJq) {
      // docs/deploy.md's commands, on stdout alone and on a journal (stderr's lines beside the JSON, as journald keeps both).
      writeFileSync(join(dir, 'journal'), err + out);
      const deploy = readFileSync(join(ROOT, 'docs/deploy.md'), 'utf8');
      const commands = [...deploy.matchAll(/^journalctl -u tollgate -o cat \| (jq .*?)(?:\s{2,}#.*)?$/gm)].map((m) => m[1]!);
      expect(commands.length).toBeGreaterThanOrEqual(3);
      for (const command of commands) {
        const result = execFileSync('bash', ['-c', `${command} <journal`], { cwd: dir, encoding: 'utf8' });
        for (const l of result.split('\n').filter(Boolean)) expect(() => JSON.parse(l)).not.toThrow();
      }
      const errors = execFileSync('bash', ['-c', `jq -cR 'fromjson? | select(.msg=="request" and .status>=400)' <journal`], { cwd: dir, encoding: 'utf8' });
      expect(errors).toContain('"status":404');
      // Plain jq on stdout alone (the command, which aborted with rc 4 on the banner): every line parses.
      const requests = execFileSync('jq', ['-c', 'select(.msg=="request")', 'out.log'], { cwd: dir, encoding: 'utf8' });
      expect(requests).toContain('"route":"/admin/v1/whoami"');
    }
  });

  it.skipIf(!hasScript)('at a terminal: the block goes to stderr, after "Server listening", in JSON and in pretty; stdout redirected stays JSON', async () => {
    for (const format of ['json', 'pretty']) {
      const dir = tempDir();
      const node = await serve(dir, '', { LOG_FORMAT: format }, true);
      await until(() => node.seen().includes('shown only this once'), 15_000);
      expect(await node.stop()).toBe(0);
      const seen = node.seen();
      expect(seen.indexOf('Server listening'), seen).toBeGreaterThanOrEqual(0);
      expect(seen.indexOf('Server listening'), seen).toBeLessThan(seen.indexOf('First start: created an admin token'));
      expect(existsSync(join(dir, 'tollgate-admin-token'))).toBe(false);
    }
    const dir = tempDir();
    const node = await serve(dir, '>out.log', {}, true);
    await until(() => node.seen().includes('shown only this once'), 15_000);
    expect(await node.stop()).toBe(0);
    expect(node.seen()).toMatch(/export TOLLGATE_ADMIN_TOKEN=tg_adm_/);
    const out = readFileSync(join(dir, 'out.log'), 'utf8');
    expect(out).not.toContain('tg_adm_');
    for (const l of out.split('\n').filter(Boolean)) expect(() => JSON.parse(l)).not.toThrow();
  });
});
