import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MAIN, cleanEnv, freePort, tempDir } from './cli-process.js';
import { STORE } from './helpers.js';
import { until } from './log-capture.js';

/**
 * `tollgate serve` as an operator runs it: the log on stdout. JSON lines are
 * buffered (src/http/log-output.ts), so these prove that a quiet server's line
 * still comes out while it runs, and that nothing buffered is lost when it
 * stops; and that LOG_FORMAT=pretty prints text.
 */
describe.skipIf(STORE !== 'sqlite')('the log on stdout of tollgate serve (SQLite project only: the store plays no part)', () => {
  let child: ChildProcess | undefined;
  afterEach(() => {
    if (child && child.exitCode === null) child.kill('SIGKILL');
    child = undefined;
  });

  async function serve(env: Record<string, string>): Promise<{ base: string; out: () => string; exited: Promise<number | null> }> {
    const dir = tempDir();
    const port = await freePort();
    let out = '';
    child = spawn(process.execPath, [MAIN, 'serve'], {
      cwd: dir,
      env: cleanEnv({ PORT: String(port), DATABASE_URL: `sqlite:${join(dir, 'db.sqlite')}`, TOLLGATE_ADMIN_TOKEN: 'log-output-admin-token-0123', LOG_LEVEL: 'info', ...env }),
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => child!.once('exit', (code) => resolve(code)));
    const base = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline && !(await fetch(`${base}/healthz`).then((r) => r.ok, () => false))) await new Promise((r) => setTimeout(r, 100));
    return { base, out: () => out, exited };
  }

  it('JSON: a single request\'s line reaches stdout while the server idles; the shutdown line is written before it exits', async () => {
    const { base, out, exited } = await serve({});
    expect((await fetch(`${base}/no/such/path`)).status).toBe(404);
    // Far from the 4 KiB that would flush it at once: only the periodic flush lets it out.
    await until(() => out().includes('"route":"unmatched"'), 10_000);
    const line = out().split('\n').find((l) => l.includes('"route":"unmatched"'));
    expect(line, out()).toBeDefined();
    expect(JSON.parse(line!)).toMatchObject({ level: 30, msg: 'request', method: 'GET', route: 'unmatched', status: 404, code: 'not_found' });
    expect(child!.exitCode).toBeNull();

    child!.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(out()).toContain('"msg":"shutting down: finishing in-flight requests"');
    for (const l of out().split('\n').filter(Boolean)) expect(() => JSON.parse(l)).not.toThrow();
  });

  it('LOG_FORMAT=pretty: text lines, no JSON', async () => {
    const { base, out, exited } = await serve({ LOG_FORMAT: 'pretty' });
    await fetch(`${base}/healthz`);
    await until(() => out().includes('route=/healthz'), 10_000);
    child!.kill('SIGTERM');
    await exited;
    const lines = out().split('\n').filter(Boolean);
    expect(lines.length).toBeGreaterThanOrEqual(3);
    for (const l of lines) expect(l).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z (INFO|WARN) {1,2}\S/);
    expect(lines).toContainEqual(expect.stringMatching(/ INFO {2}request reqId=req-[0-9a-z]+ method=GET route=\/healthz status=200 ms=[\d.]+ ip=127\.0\.0\.1$/));
  });
});
