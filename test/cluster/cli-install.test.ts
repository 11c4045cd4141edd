import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * The `tollgate` command as an operator gets it (issue 15): `npm pack` of a
 * copy of the checkout (its prepack builds from scratch), then
 * `npm install -g` of the tarball into a temporary prefix, then the installed
 * bin run from a directory that has nothing to do with the checkout: it
 * serves, prints its version, administers over HTTP, and recovers a token
 * locally. Slow (npm install compiles better-sqlite3 from the registry's
 * package), so it runs with the cluster tests, not in `npm test`.
 */

const ROOT = resolve(import.meta.dirname, '../..');
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const INSTALL_MS = 20 * 60_000;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Nothing of this test's own npm run (npm_config_*, npm_lifecycle_*) or Tollgate settings leaks into the children. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
  for (const key of Object.keys(env)) {
    if (/^(npm_|TOLLGATE_)/i.test(key) || ['DATABASE_URL', 'PORT', 'LOG_LEVEL', 'INIT_CWD'].includes(key)) delete env[key];
  }
  return { ...env, ...extra };
}

function sh(file: string, args: string[], cwd: string, extra: Record<string, string> = {}, timeout = 60_000): Promise<Run> {
  return new Promise((done) => {
    execFile(file, args, { cwd, env: cleanEnv(extra), encoding: 'utf8', timeout, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : null) : 0;
      done({ code, stdout, stderr });
    });
  });
}

function ok(r: Run, what: string): Run {
  expect(r.code, `${what}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`).toBe(0);
  return r;
}

async function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const srv = createServer();
    srv.once('error', fail);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => done(port));
    });
  });
}

/** What a fresh clone holds for building the package: not the tests, SDKs, benchmarks, builds or data. */
const LEFT_OUT = /^(\.git|node_modules|dist|data|test|sdk|bench|coverage|dashboard\/(dist|node_modules|test))(\/|$)|\.db(-wal|-shm)?$/;

describe('the packed tollgate, installed with npm install -g into a temporary prefix', { timeout: 120_000 }, () => {
  let tmp: string;
  let tarball: string;
  let bin: string;
  let elsewhere: string;
  let server: ChildProcess | undefined;

  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'tollgate-install-'));
    const pkg = join(tmp, 'checkout');
    cpSync(ROOT, pkg, { recursive: true, filter: (src) => !LEFT_OUT.test(relative(ROOT, src)) });
    // The build tools (tsc, vite) of the checkout; the copy's prepack builds its own dist from its own sources.
    symlinkSync(join(ROOT, 'node_modules'), join(pkg, 'node_modules'));
    ok(await sh('npm', ['pack', '--pack-destination', tmp], pkg, {}, 10 * 60_000), 'npm pack');
    tarball = join(tmp, readdirSync(tmp).find((f) => f.endsWith('.tgz'))!);
    const prefix = join(tmp, 'prefix');
    ok(await sh('npm', ['install', '-g', '--prefix', prefix, '--allow-scripts=better-sqlite3', tarball], tmp, {}, INSTALL_MS), 'npm install -g');
    bin = join(prefix, 'bin', 'tollgate');
    elsewhere = join(tmp, 'somewhere', 'else');
    mkdirSync(elsewhere, { recursive: true });
  }, INSTALL_MS + 11 * 60_000);

  afterAll(async () => {
    if (server && server.exitCode === null) {
      const exited = new Promise((r) => server!.once('exit', r));
      server.kill('SIGTERM');
      await exited;
    }
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it('the tarball holds the compiled code, its migrations and the dashboard, not sources or source maps', async () => {
    const listing = ok(await sh('tar', ['tzf', tarball], tmp), 'tar tzf').stdout.split('\n').filter(Boolean);
    expect(listing).toContain('package/dist/cli/main.js');
    expect(listing).toContain('package/package.json');
    expect(listing.some((f) => /^package\/dist\/store\/migrations\/0001_\w+\.js$/.test(f)), 'compiled migrations').toBe(true);
    expect(listing, 'the dashboard built by prepack').toContain('package/dashboard/dist/index.html');
    expect(listing.filter((f) => f.endsWith('.map') || f.endsWith('.ts') || f.startsWith('package/src/') || f.startsWith('package/test/'))).toEqual([]);
  });

  it('the bin runs from anywhere (its shebang, no node in front): --version is the package version', async () => {
    expect(existsSync(bin), bin).toBe(true);
    expect(ok(await sh(bin, ['--version'], elsewhere), 'tollgate --version').stdout.trim()).toBe(VERSION);
  });

  it('serves from another directory (data under it), is administered over HTTP, and recovers a token locally', async () => {
    const port = await freePort();
    const child = spawn(bin, ['serve'], { cwd: elsewhere, env: cleanEnv({ PORT: String(port), LOG_LEVEL: 'warn' }), stdio: ['ignore', 'pipe', 'pipe'] });
    server = child;
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const base = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + 60_000;
    // Not at a terminal: the first start's block is in ./tollgate-admin-token (mode 0600), never on stdout.
    const saved = join(elsewhere, 'tollgate-admin-token');
    while (Date.now() < deadline && child.exitCode === null && !(existsSync(saved) && /export TOLLGATE_ADMIN_TOKEN=/.test(readFileSync(saved, 'utf8')))) {
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(stderr).toContain(`tollgate: database ${join(elsewhere, 'data', 'tollgate.db')} (SQLite, new file)`);
    // The first start names the command as installed: `tollgate`, not `npx tollgate` (which would ask the registry for another package).
    const block = readFileSync(saved, 'utf8');
    const token = /export TOLLGATE_ADMIN_TOKEN=(\S+)/.exec(block)?.[1];
    expect(token, `${block}\n${stderr}`).toBeDefined();
    expect(stdout).not.toContain(token!);
    expect(block).toMatch(/^ {2}tollgate apps create/m);
    expect(block).not.toContain('npx');
    // The file is written before the server listens (so a start that then fails cannot lose the token): wait until
    // it answers, as an operator would, instead of racing it (it lost that race with both cores loaded, issue 21.16).
    while (Date.now() < deadline && child.exitCode === null && !(await fetch(`${base}/healthz`).then((r) => r.ok, () => false))) {
      await new Promise((r) => setTimeout(r, 200));
    }

    // Administered by the installed CLI, --url without a scheme.
    const created = JSON.parse(ok(await sh(bin, ['--url', `127.0.0.1:${port}`, '--token', token!, 'apps', 'create', 'Installed', '--json'], elsewhere), 'apps create').stdout);
    expect(created.api_secret).toMatch(/^tg_sec_/);
    const listed = JSON.parse(ok(await sh(bin, ['apps', 'list', '--json'], elsewhere, { TOLLGATE_URL: base, TOLLGATE_ADMIN_TOKEN: token! }), 'apps list').stdout);
    expect(listed.map((a: { name: string }) => a.name)).toEqual(['Installed']);

    // The dashboard's assets are found in the installed package, not in the current directory.
    const dashboard = await fetch(`${base}/dashboard/`);
    expect(dashboard.status).toBe(200);
    expect(dashboard.headers.get('content-type')).toMatch(/text\/html/);

    // Lost the token: a new one written into the same database (./data of this directory), accepted at once.
    const rescue = ok(await sh(bin, ['tokens', 'create', 'rescue', '--local'], elsewhere), 'tokens create --local');
    const rescued = /export TOLLGATE_ADMIN_TOKEN=(tg_adm_\S+)/.exec(rescue.stdout)?.[1];
    expect(rescued, rescue.stdout).toBeDefined();
    ok(await sh(bin, ['--url', base, '--token', rescued!, 'tokens', 'list'], elsewhere), 'tokens list with the rescued token');
  });
});
