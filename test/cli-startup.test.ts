import { execFile, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { migrate } from '../src/store/migrate.js';
import { openDb } from '../src/store/open.js';
import { harness, STORE } from './helpers.js';

/**
 * Start-up of the local commands (serve, migrate, backup) as an operator meets
 * it: the built CLI as a child process, run from a directory of the test's
 * choosing. Nothing but `serve` (and `migrate --create`) creates a database;
 * every failure is one line naming the path or the masked URL, never a stack.
 */

const ROOT = resolve(import.meta.dirname, '..');
const MAIN = join(ROOT, 'dist/cli/main.js');
const STACK = /^\s+at /m;

/** Builds dist/ when any source is newer than dist/cli/main.js (tsc emits even on type errors elsewhere). */
function buildIfStale(): void {
  const newest = (dir: string): number =>
    Math.max(0, ...readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts')).map((f) => statSync(join(dir, f)).mtimeMs));
  if (existsSync(MAIN) && statSync(MAIN).mtimeMs >= newest(join(ROOT, 'src'))) return;
  const tsc = spawnSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: ROOT, encoding: 'utf8' });
  if (tsc.status !== 0) console.warn(`tsc -p tsconfig.build.json exited ${tsc.status}:\n${tsc.stdout}${tsc.stderr}`);
  if (!existsSync(MAIN)) throw new Error(`build produced no ${MAIN}`);
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** No setting of the test's own environment leaks in: each run says what it uses. */
function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, NO_COLOR: '1' };
  return { ...env, LOG_LEVEL: 'info', ...extra };
}

function run(args: string[], cwd: string, env: Record<string, string> = {}): Promise<Run> {
  return new Promise((done) => {
    execFile(process.execPath, [MAIN, ...args], { cwd, env: cleanEnv(env), encoding: 'utf8', timeout: 25_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : null) : 0;
      done({ code, stdout, stderr });
    });
  });
}

const lines = (text: string) => text.split('\n').filter((l) => l.trim() !== '');
/** What serve says on its way (where the database is, each retry); the rest of stderr is the failure. */
const progress = (l: string) => l.startsWith('tollgate: database ') || l.startsWith('tollgate: waiting for the database at ');

/** A failed start: non-zero, no stack anywhere, and exactly one line of failure on stderr, which is returned. */
function oneLineFailure(r: Run): string {
  expect(r.code, `${r.stdout}${r.stderr}`).not.toBe(0);
  expect(r.code).not.toBeNull();
  expect(`${r.stdout}${r.stderr}`).not.toMatch(STACK);
  const failure = lines(r.stderr).filter((l) => !progress(l));
  expect(failure, r.stderr).toHaveLength(1);
  expect(failure[0]).toMatch(/^tollgate: /);
  return failure[0]!;
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

/** A migrated, empty Tollgate database, made in-process (not by the CLI under test). */
async function makeDatabase(path: string): Promise<void> {
  const db = await openDb(`sqlite:${path}`);
  try {
    await migrate(db);
  } finally {
    await db.close();
  }
}

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-startup-'));
  dirs.push(dir);
  return dir;
}

beforeAll(buildIfStale);
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(STORE !== 'sqlite')('backup and migrate on SQLite never create a database', () => {
  it('run from a directory without a database: one line naming the resolved path, and nothing created', async () => {
    const cwd = tempDir();
    for (const args of [['backup', 'copy.db'], ['migrate']]) {
      const line = oneLineFailure(await run(args, cwd));
      expect(line).toContain(join(cwd, 'data/tollgate.db'));
      expect(readdirSync(cwd), args.join(' ')).toEqual([]);
    }
  });

  it('a typo in --database-url: one line naming the resolved path, and nothing created', async () => {
    const cwd = tempDir();
    const real = join(cwd, 'tollgate.db');
    await makeDatabase(real);
    for (const args of [
      ['backup', '--database-url', 'sqlite:./tolgate.db', 'copy.db'],
      ['migrate', '--database-url', 'sqlite:./tolgate.db'],
      ['migrate', '--database-url', 'sqlite:./typo/tollgate.db'],
    ]) {
      const line = oneLineFailure(await run(args, cwd));
      expect(line).toContain(resolve(cwd, args.find((a) => a.startsWith('sqlite:'))!.slice('sqlite:'.length)));
      expect(readdirSync(cwd).sort(), args.join(' ')).toEqual(['tollgate.db']);
    }
  });

  it('a file that is not a Tollgate database (empty, or no tables) is refused, not migrated or backed up', async () => {
    const cwd = tempDir();
    writeFileSync(join(cwd, 'empty.db'), '');
    new Database(join(cwd, 'other.db')).exec('CREATE TABLE notes (x TEXT)').close();
    for (const file of ['empty.db', 'other.db']) {
      for (const args of [['migrate', '--database-url', `sqlite:${file}`], ['backup', '--database-url', `sqlite:${file}`, 'copy.db']]) {
        expect(oneLineFailure(await run(args, cwd))).toContain(`${join(cwd, file)} is not a Tollgate database`);
      }
    }
    expect(statSync(join(cwd, 'empty.db')).size).toBe(0);
    expect(existsSync(join(cwd, 'copy.db'))).toBe(false);
  });

  it('migrate --create is the first install: it creates the file and applies every migration', async () => {
    const cwd = tempDir();
    const r = await run(['migrate', '--create', '--database-url', 'sqlite:./new/tollgate.db'], cwd);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(join(cwd, 'new/tollgate.db'));
    const again = await run(['migrate', '--database-url', 'sqlite:./new/tollgate.db'], cwd);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/up to date/);
  });

  it('a backup of a real database copies it and says what it copied', async () => {
    const h = await harness();
    const app = await h.createApp({ name: 'Backed up' });
    await h.signUp(app, 'alice');
    await h.signUp(app, 'bob');
    const cwd = tempDir();
    // While the service has it open, as backups are meant to run.
    const r = await run(['backup', '--database-url', `sqlite:${h.dbPath}`, 'copy.db'], cwd).finally(() => h.close());
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(h.dbPath);
    expect(r.stdout).toContain(join(cwd, 'copy.db'));
    expect(r.stdout).toMatch(/\b1 app\b/);
    expect(r.stdout).toMatch(/\b2 users\b/);
    expect(readdirSync(cwd)).toEqual(['copy.db']); // no partial file left beside it
    const copy = new Database(join(cwd, 'copy.db'), { readonly: true });
    try {
      expect(copy.prepare('SELECT username FROM users ORDER BY username').all()).toEqual([{ username: 'alice' }, { username: 'bob' }]);
    } finally {
      copy.close();
    }
  });

  it('a backup never overwrites a file and never creates a directory', async () => {
    const cwd = tempDir();
    const db = join(cwd, 'tollgate.db');
    await makeDatabase(db);
    writeFileSync(join(cwd, 'old.db'), 'yesterday');
    expect(oneLineFailure(await run(['backup', '--database-url', `sqlite:${db}`, 'old.db'], cwd))).toContain(`${join(cwd, 'old.db')} already exists`);
    expect(statSync(join(cwd, 'old.db')).size).toBe('yesterday'.length);
    expect(oneLineFailure(await run(['backup', '--database-url', `sqlite:${db}`, 'missing/copy.db'], cwd))).toContain(join(cwd, 'missing'));
    expect(existsSync(join(cwd, 'missing'))).toBe(false);
  });
});

/** Runs serve until it has printed its start-up lines and answers /readyz, then stops it. */
async function serveUntilReady(cwd: string, env: Record<string, string>): Promise<{ stderr: string; code: number | null }> {
  const port = await freePort();
  const child = spawn(process.execPath, [MAIN, 'serve'], { cwd, env: cleanEnv({ PORT: String(port), TOLLGATE_ADMIN_TOKEN: 'startup-admin-token-0123456789', ...env }), stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  try {
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline && child.exitCode === null) {
      const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then((res) => res.status === 200, () => false);
      if (ok) break;
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    child.kill('SIGTERM');
  }
  return { stderr, code: await exited };
}

describe.skipIf(STORE !== 'sqlite')('serve on SQLite', () => {
  it('prints the resolved database location at start', async () => {
    const cwd = tempDir();
    const { stderr, code } = await serveUntilReady(cwd, {});
    expect(code).toBe(0);
    expect(lines(stderr)).toContain(`tollgate: database ${join(cwd, 'data/tollgate.db')} (SQLite, new file)`);
  });

  it('a path under a regular file: one line naming it', async () => {
    const cwd = tempDir();
    writeFileSync(join(cwd, 'plain'), 'not a directory');
    const line = oneLineFailure(await run(['serve', '--port', '0', '--database-url', 'sqlite:./plain/tollgate.db'], cwd));
    expect(line).toContain(join(cwd, 'plain/tollgate.db'));
    expect(line).toContain(`${join(cwd, 'plain')} is a file`);
  });

  // Root writes anywhere: the unwritable directory is seen by running the CLI as `nobody`.
  const asNobody = process.getuid?.() === 0 && spawnSync('runuser', ['-u', 'nobody', '--', 'true']).status === 0;
  if (!asNobody) console.warn('cli-startup: not root or no runuser: the unwritable-directory test is SKIPPED');
  it.skipIf(!asNobody)('a directory this user may not write to: one line naming the path', async () => {
    const cwd = tempDir();
    const r = await new Promise<Run>((done) => {
      execFile('runuser', ['-u', 'nobody', '--', process.execPath, MAIN, 'serve', '--port', '0', '--database-url', `sqlite:${join(cwd, 'tollgate.db')}`], { cwd: '/', env: cleanEnv({}), encoding: 'utf8', timeout: 25_000 }, (err, stdout, stderr) =>
        done({ code: err ? ((err as { code?: unknown }).code as number) : 0, stdout, stderr }),
      );
    });
    const line = oneLineFailure(r);
    expect(line).toContain(join(cwd, 'tollgate.db'));
    expect(line).toMatch(/may write to it/);
    expect(readdirSync(cwd)).toEqual([]);
  });

  it('a port in use: one line naming it', async () => {
    const cwd = tempDir();
    const busy: Server = createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
    const port = (busy.address() as { port: number }).port;
    try {
      const line = oneLineFailure(await run(['serve', '--port', String(port), '--database-url', 'sqlite:./tollgate.db'], cwd));
      expect(line).toContain(`127.0.0.1:${port}`);
      expect(line).toMatch(/EADDRINUSE/);
    } finally {
      await new Promise((r) => busy.close(r));
    }
  });

  it('anything unexpected is one line too; LOG_LEVEL=debug adds the stack', async () => {
    const cwd = tempDir();
    // Migration 1 cannot apply: a table it creates is already there, although no migration is recorded.
    new Database(join(cwd, 'odd.db'))
      .exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL); CREATE TABLE apps (x TEXT)')
      .close();
    const args = ['serve', '--port', '0', '--database-url', 'sqlite:./odd.db'];
    expect(oneLineFailure(await run(args, cwd))).toMatch(/migration 1 .*failed.*LOG_LEVEL=debug/);
    const debug = await run(args, cwd, { LOG_LEVEL: 'debug' });
    expect(debug.code).not.toBe(0);
    expect(debug.stderr).toMatch(STACK);
  });
});

describe.skipIf(STORE !== 'postgres')('serve and migrate on PostgreSQL', () => {
  const base = () => {
    const url = inject('pgUrl');
    if (!url) throw new Error('PostgreSQL is not reachable (this test should have been skipped)');
    return url;
  };

  it('nothing listening: each retry logged, then one line after the bound, the password never shown', async () => {
    const port = await freePort();
    const url = `postgres://tollgate:hunter2@127.0.0.1:${port}/tollgate`;
    const r = await run(['serve', '--port', '0', '--database-url', url], tempDir(), { DATABASE_WAIT_MS: '1500' });
    const line = oneLineFailure(r);
    expect(line).toContain(`postgres://tollgate:***@127.0.0.1:${port}/tollgate`);
    expect(line).toMatch(/does not answer/);
    const retries = lines(r.stderr).filter((l) => l.startsWith('tollgate: waiting for the database at '));
    expect(retries.length).toBeGreaterThanOrEqual(1);
    expect(retries[0]).toMatch(/ECONNREFUSED.*\(attempt 1\)$/);
    expect(`${r.stdout}${r.stderr}`).not.toContain('hunter2');
    const migrate = await run(['migrate', '--database-url', url], tempDir(), { DATABASE_WAIT_MS: '0' });
    expect(oneLineFailure(migrate)).toMatch(/does not answer/);
  });

  it('a server that accepts and never answers (frozen): one line once the bound has passed', async () => {
    const sockets = new Set<import('node:net').Socket>();
    const frozen = createServer((socket) => sockets.add(socket));
    await new Promise<void>((r) => frozen.listen(0, '127.0.0.1', r));
    const port = (frozen.address() as { port: number }).port;
    try {
      const r = await run(['serve', '--port', '0', '--database-url', `postgres://tollgate@127.0.0.1:${port}/tollgate`], tempDir(), { DATABASE_WAIT_MS: '1500' });
      expect(oneLineFailure(r)).toMatch(new RegExp(`127\\.0\\.0\\.1:${port}/tollgate .*(did not answer|does not answer)`));
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((r) => frozen.close(r));
    }
  });

  it('a database that does not exist: one line naming it, for serve and migrate; nothing created', async () => {
    const url = new URL(base());
    url.pathname = `/tollgate_missing_${randomBytes(6).toString('hex')}`;
    for (const args of [['serve', '--port', '0', '--database-url', url.toString()], ['migrate', '--database-url', url.toString()]]) {
      const line = oneLineFailure(await run(args, tempDir()));
      expect(line).toContain(`no PostgreSQL database at ${url.toString()}`);
    }
    const admin = new pg.Client({ connectionString: base() });
    await admin.connect();
    try {
      const found = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [url.pathname.slice(1)]);
      expect(found.rowCount).toBe(0);
    } finally {
      await admin.end();
    }
  });

  it('migrate refuses an empty database (no Tollgate tables) unless --create', async () => {
    const schema = `startup_${randomBytes(6).toString('hex')}`;
    const admin = new pg.Client({ connectionString: base() });
    await admin.connect();
    try {
      await admin.query(`CREATE SCHEMA ${schema}`);
      const url = new URL(base());
      url.searchParams.set('options', `-c search_path=${schema}`);
      const line = oneLineFailure(await run(['migrate', '--database-url', url.toString()], tempDir()));
      expect(line).toMatch(/is not a Tollgate database.*--create/);
      const tables = () => admin.query('SELECT 1 FROM information_schema.tables WHERE table_schema = $1', [schema]).then((r) => r.rowCount);
      expect(await tables()).toBe(0);
      const created = await run(['migrate', '--create', '--database-url', url.toString()], tempDir());
      expect(created.code, created.stderr).toBe(0);
      expect(await tables()).toBeGreaterThan(0);
    } finally {
      await admin.query(`DROP SCHEMA ${schema} CASCADE`);
      await admin.end();
    }
  });

  it('serve prints the database URL with the password masked', async () => {
    const url = new URL(base());
    url.password = 'not-needed-trust-auth';
    const schema = `startup_${randomBytes(6).toString('hex')}`;
    const admin = new pg.Client({ connectionString: base() });
    await admin.connect();
    try {
      await admin.query(`CREATE SCHEMA ${schema}`);
      url.searchParams.set('options', `-c search_path=${schema}`);
      const { stderr, code } = await serveUntilReady(tempDir(), { DATABASE_URL: url.toString() });
      expect(code).toBe(0);
      const masked = new URL(url);
      masked.password = '***';
      expect(lines(stderr)).toContain(`tollgate: database ${masked.toString()} (PostgreSQL)`);
      expect(stderr).not.toContain('not-needed-trust-auth');
    } finally {
      await admin.query(`DROP SCHEMA ${schema} CASCADE`);
      await admin.end();
    }
  });
});
