import { execFile, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, expect, inject } from 'vitest';
import { migrate } from '../src/store/migrate.js';
import { openDb } from '../src/store/open.js';
import Database from '../src/store/sqlite-driver.js';
import { buildIfStale } from './setup/build.js';

export { buildIfStale };

/**
 * The built CLI run as a child process, as an operator runs it, for the
 * start-up tests of the local commands (serve, migrate, backup). Importing
 * this module builds dist/ if it is stale and removes the temporary
 * directories after the file's tests.
 */

export const ROOT = resolve(import.meta.dirname, '..');
export const MAIN = join(ROOT, 'dist/cli/main.js');
export const STACK = /^\s+at /m;

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A run that must have succeeded; the message shows both streams when it did not. */
export function ok(r: Run, what: string): Run {
  expect(r.code, `${what}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`).toBe(0);
  return r;
}

/** One word for sh: single-quoted, a quote inside as '\''. */
export const shQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** util-linux `script`, which gives a command a terminal; tests that need one skip without it. */
export const hasScript = existsSync('/usr/bin/script') || existsSync('/bin/script');

/** jq, which docs/deploy.md's log commands use. */
export const hasJq = (() => {
  try {
    execFileSync('jq', ['--version']);
    return true;
  } catch {
    return false;
  }
})();

/** No setting of the test's own environment leaks in: each run says what it uses. */
export function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, NO_COLOR: '1' };
  return { ...env, LOG_LEVEL: 'info', ...extra };
}

export function run(args: string[], cwd: string, env: Record<string, string> = {}): Promise<Run> {
  return new Promise((done) => {
    execFile(process.execPath, [MAIN, ...args], { cwd, env: cleanEnv(env), encoding: 'utf8', timeout: 25_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : null) : 0;
      done({ code, stdout, stderr });
    });
  });
}

/**
 * The CLI with stdout on a pseudo-terminal (util-linux `script`), as an
 * operator at a terminal sees it; stderr goes to its own file so that stdout
 * is only what the terminal shows of the table.
 */
export function runInTerminal(args: string[], cwd: string, env: Record<string, string> = {}): Promise<Run> {
  const errFile = join(tempDir(), 'stderr');
  const command = `${[process.execPath, MAIN, ...args].map(shQuote).join(' ')} 2>${shQuote(errFile)}`;
  return new Promise((done) => {
    execFile('script', ['-qec', command, '/dev/null'], { cwd, env: cleanEnv(env), encoding: 'utf8', timeout: 25_000 }, (err, stdout) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : null) : 0;
      done({ code, stdout: stdout.replace(/\r\n/g, '\n'), stderr: existsSync(errFile) ? readFileSync(errFile, 'utf8') : '' });
    });
  });
}

export const lines = (text: string) => text.split('\n').filter((l) => l.trim() !== '');
/** What serve says on its way (where the database is, each retry); the rest of stderr is the failure. */
export const progress = (l: string) => l.startsWith('tollgate: database ') || l.startsWith('tollgate: waiting for the database at ');

/** A failed start: non-zero, no stack anywhere, and exactly one line of failure on stderr, which is returned. */
export function oneLineFailure(r: Run): string {
  expect(r.code, `${r.stdout}${r.stderr}`).not.toBe(0);
  expect(r.code).not.toBeNull();
  expect(`${r.stdout}${r.stderr}`).not.toMatch(STACK);
  const failure = lines(r.stderr).filter((l) => !progress(l));
  expect(failure, r.stderr).toHaveLength(1);
  expect(failure[0]).toMatch(/^tollgate: /);
  return failure[0]!;
}

export async function freePort(): Promise<number> {
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
export async function makeDatabase(path: string): Promise<void> {
  const db = await openDb(`sqlite:${path}`);
  try {
    await migrate(db);
  } finally {
    await db.close();
  }
}

const dirs: string[] = [];
export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-startup-'));
  dirs.push(dir);
  return dir;
}

/** Runs serve until it has printed its start-up lines and answers /readyz, then stops it. */
export async function serveUntilReady(cwd: string, env: Record<string, string>): Promise<{ stderr: string; code: number | null }> {
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

beforeAll(buildIfStale);
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** This run's PostgreSQL database (the postgres project skips every test when there is none). */
export function pgBase(): string {
  const url = inject('pgUrl');
  if (!url) throw new Error('PostgreSQL is not reachable (this test should have been skipped)');
  return url;
}

/**
 * A new, empty schema of this run's PostgreSQL database, and the URL whose
 * search_path puts a CLI run in it; dropped with everything in it afterwards.
 */
export async function inScratchSchema(prefix: string, fn: (admin: pg.Client, url: URL, schema: string) => Promise<void>): Promise<void> {
  const schema = `${prefix}_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: pgBase() });
  await admin.connect();
  try {
    await admin.query(`CREATE SCHEMA ${schema}`);
    const url = new URL(pgBase());
    url.searchParams.set('options', `-c search_path=${schema}`);
    await fn(admin, url, schema);
  } finally {
    await admin.query(`DROP SCHEMA ${schema} CASCADE`);
    await admin.end();
  }
}

/** One value read from a SQLite file opened read-only (the CLI under test wrote it). */
export function readSqlite<T>(path: string, sql: string): T {
  const db = new Database(path, { readonly: true });
  try {
    return db.prepare(sql).get() as T;
  } finally {
    db.close();
  }
}
