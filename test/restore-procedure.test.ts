import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { MAIN, ROOT, cleanEnv, freePort, pgBase, run, tempDir } from './cli-process.js';
import { STORE } from './helpers.js';

/**
 * The backup and restore procedures of docs/deploy.md, run as written: each
 * shell block marked `tested by test/restore-procedure.test.ts: <name>` is
 * taken from the document and run with bash, its example paths pointed at a
 * temporary directory. The server is the built CLI on a real database; what
 * a restore must bring back is what an operator would look at: the apps the
 * admin API lists.
 */

const DOC = readFileSync(join(ROOT, 'docs/deploy.md'), 'utf8');
const ADMIN = 'restore-admin-token-0123456789';

/** The sh block after the marker, with its example paths replaced by this test's. */
function block(name: string, paths: { state?: string; backup: string }): string {
  const marker = `<!-- tested by test/restore-procedure.test.ts: ${name} -->`;
  const at = DOC.indexOf(marker);
  expect(at, `docs/deploy.md has no block ${name}`).toBeGreaterThan(-1);
  const m = /^```sh\n([\s\S]*?)^```/m.exec(DOC.slice(at + marker.length));
  expect(m, `no sh block after ${marker}`).not.toBeNull();
  let script = m![1]!.replace(/\/backups\/tollgate-(\$\(date \+%F\)|[\d-]+)\.(db|dump)/g, paths.backup);
  if (paths.state) script = script.replaceAll('/var/lib/tollgate', paths.state);
  expect(script, 'an example path is left').not.toMatch(/\/backups\/|\/var\/lib\//);
  return script;
}

function sh(script: string, env: Record<string, string>): { status: number | null; output: string } {
  const r = spawnSync('bash', ['-eu', '-o', 'pipefail', '-c', script], { env: { ...process.env, ...env }, encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

interface Server {
  port: number;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/** `tollgate serve` on the database, once /readyz answers. */
async function serve(databaseUrl: string, cwd: string): Promise<Server> {
  const port = await freePort();
  const child = spawn(process.execPath, [MAIN, 'serve'], {
    cwd,
    env: cleanEnv({ PORT: String(port), DATABASE_URL: databaseUrl, TOLLGATE_ADMIN_TOKEN: ADMIN, LOG_LEVEL: 'warn', DATABASE_WAIT_MS: '0' }),
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const deadline = Date.now() + 25_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`serve exited ${child.exitCode}: ${stderr}`);
    if (await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.ok, () => false)) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`serve did not become ready: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    port,
    stop: async (signal = 'SIGTERM') => {
      child.kill(signal);
      await exited;
    },
  };
}

async function createApp(s: Server, name: string): Promise<void> {
  const res = await fetch(`http://127.0.0.1:${s.port}/admin/v1/apps`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name }),
  });
  expect(res.status).toBe(201);
}

async function appNames(s: Server): Promise<string[]> {
  const res = await fetch(`http://127.0.0.1:${s.port}/admin/v1/apps`, { headers: { authorization: `Bearer ${ADMIN}` } });
  expect(res.status).toBe(200);
  return ((await res.json()) as { items: { name: string }[] }).items.map((a) => a.name).sort();
}

/** The apps a server on this database lists, started and stopped for the question. */
async function appsIn(databaseUrl: string, cwd: string): Promise<string[]> {
  const s = await serve(databaseUrl, cwd);
  try {
    return await appNames(s);
  } finally {
    await s.stop();
  }
}

if (STORE !== 'sqlite') console.warn('skipped here: the SQLite restore procedure runs in the sqlite project');
describe.skipIf(STORE !== 'sqlite')('SQLite: tollgate backup, then the documented restore (SQLite project only)', () => {
  it('brings back the backup, not the writes after it still in the old -wal file', async () => {
    const state = tempDir();
    const backup = join(tempDir(), 'backup.db');
    const url = `sqlite:${join(state, 'tollgate.db')}`;
    const s = await serve(url, state);
    await createApp(s, 'before the backup');
    const r = await run(['backup', backup, '--database-url', url], state);
    expect(r.code, r.stderr).toBe(0);
    await createApp(s, 'after the backup');
    // A crash: the last writes are in tollgate.db-wal, not yet in tollgate.db.
    await s.stop('SIGKILL');
    expect(existsSync(join(state, 'tollgate.db-wal'))).toBe(true);

    const restore = sh(block('sqlite-restore', { state, backup }), {});
    expect(restore.status, restore.output).toBe(0);
    expect(await appsIn(url, state)).toEqual(['before the backup']);
    // The old database is kept aside whole: with its -wal, it still has the writes after the backup.
    expect(await appsIn(`sqlite:${join(keptDirs(state)[0]!, 'tollgate.db')}`, state)).toEqual(['after the backup', 'before the backup']);
  }, 120_000);

  it('a second restore keeps the first one\'s copy whole too (the block pasted into a shell, which goes on after a failed line)', async () => {
    const state = tempDir();
    const backup = join(tempDir(), 'backup.db');
    const url = `sqlite:${join(state, 'tollgate.db')}`;
    let s = await serve(url, state);
    await createApp(s, 'one');
    expect((await run(['backup', backup, '--database-url', url], state)).code).toBe(0);
    await createApp(s, 'two');
    await s.stop('SIGKILL');
    const pasted = (script: string) => spawnSync('bash', ['-c', script], { encoding: 'utf8', timeout: 60_000 });
    expect(pasted(block('sqlite-restore', { state, backup })).status).toBe(0);
    // The restored database is used, then the operator practises the restore again.
    s = await serve(url, state);
    await createApp(s, 'three');
    await s.stop('SIGKILL');
    expect(pasted(block('sqlite-restore', { state, backup })).status).toBe(0);
    expect(await appsIn(url, state)).toEqual(['one']);
    const kept = keptDirs(state);
    expect(kept).toHaveLength(2);
    const held = await Promise.all(kept.map((dir) => appsIn(`sqlite:${join(dir, 'tollgate.db')}`, state)));
    expect(held.sort()).toEqual([
      ['one', 'three'],
      ['one', 'two'],
    ]);
  }, 180_000);
});

/** The directories the SQLite restore moved old databases into. */
function keptDirs(state: string): string[] {
  return readdirSync(state)
    .filter((name) => name.startsWith('before-restore'))
    .map((name) => join(state, name));
}

if (STORE !== 'postgres') console.warn('skipped here: the PostgreSQL backup and restore procedures run in the postgres project');
describe.skipIf(STORE !== 'postgres')('PostgreSQL: the documented pg_dump and pg_restore (PostgreSQL project only)', () => {
  const scratch: string[] = [];
  let admin: pg.Client | undefined;
  const server = () => new URL(pgBase());
  const urlOf = (db: string) => {
    const u = server();
    u.pathname = `/${db}`;
    return u.toString();
  };
  /** libpq's variables for the documented commands: the test's server, the given database. */
  const libpq = (db: string) => {
    const u = server();
    return { PGHOST: u.hostname, PGPORT: u.port || '5432', PGUSER: decodeURIComponent(u.username || 'postgres'), PGPASSWORD: decodeURIComponent(u.password), PGDATABASE: db };
  };
  const name = (what: string) => {
    const db = `tollgate_restore_${randomBytes(4).toString('hex')}_${what}`;
    scratch.push(db);
    return db;
  };
  async function adminClient(): Promise<pg.Client> {
    if (!admin) {
      admin = new pg.Client({ connectionString: pgBase() });
      await admin.connect();
    }
    return admin;
  }
  // Each DROP DATABASE waits for an immediate checkpoint, which flushes what the whole suite wrote: under a loaded
  // machine more than 180 s (issue 21.16). The tests are done by then, so the scratch databases are dropped by a
  // psql of their own, left running in the background, instead of holding the suite (or failing it) meanwhile.
  afterAll(async () => {
    await admin?.end();
    if (scratch.length === 0) return;
    const drops = scratch.flatMap((db) => ['-c', `DROP DATABASE IF EXISTS ${db} WITH (FORCE)`]);
    // On the maintenance database: this run's own is force-dropped when the run ends, which would cut psql off.
    const maintenance = new URL(pgBase());
    maintenance.pathname = '/postgres';
    const dropper = spawn('psql', ['-X', '-q', '-d', maintenance.toString(), ...drops], { detached: true, stdio: 'ignore' });
    dropper.on('error', () => undefined); // no psql here: the scratch databases stay, named tollgate_restore_*
    dropper.unref();
  });

  it('restores a dump taken while serving into a fresh database, and over the old one', async () => {
    const cwd = tempDir();
    const backup = join(tempDir(), 'tollgate.dump');
    const live = name('live');
    await (await adminClient()).query(`CREATE DATABASE ${live}`);

    const s = await serve(urlOf(live), cwd);
    await createApp(s, 'before the dump');
    const dump = sh(block('pg-backup', { backup }), libpq(live));
    expect(dump.status, dump.output).toBe(0);
    await createApp(s, 'after the dump');
    await s.stop();

    const fresh = name('fresh');
    const intoFresh = sh(block('pg-restore-fresh', { backup }), libpq(fresh));
    expect(intoFresh.status, intoFresh.output).toBe(0);
    expect(await appsIn(urlOf(fresh), cwd)).toEqual(['before the dump']);

    const over = sh(block('pg-restore-over', { backup }), libpq(live));
    expect(over.status, over.output).toBe(0);
    expect(await appsIn(urlOf(live), cwd)).toEqual(['before the dump']);

    // The old advice, `pg_restore --clean` without --if-exists, fails on an empty database.
    const empty = name('empty');
    await (await adminClient()).query(`CREATE DATABASE ${empty}`);
    const old = sh(`pg_restore --clean --no-owner --exit-on-error --single-transaction --dbname="$PGDATABASE" "${backup}"`, libpq(empty));
    expect(old.status).not.toBe(0);
    expect(old.output).toMatch(/does not exist/);
  }, 120_000);
});
