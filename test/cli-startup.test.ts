import { execFile, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import Database from '../src/store/sqlite-driver.js';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { STORE } from './helpers.js';
import { cleanEnv, freePort, lines, MAIN, oneLineFailure, pgBase, run, serveUntilReady, STACK, tempDir, type Run } from './cli-process.js';

/**
 * `tollgate serve` at start, run as a child process: it says which database
 * it uses (the absolute SQLite path, or the URL with the password masked),
 * waits a bounded time for a database that does not answer, logging each
 * retry, and ends every failed start with one line and a non-zero exit,
 * never a stack trace.
 */

describe.skipIf(STORE !== 'sqlite')('serve on SQLite (SQLite project only)', () => {
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
  it.skipIf(!asNobody)(`a directory this user may not write to: one line naming the path${asNobody ? '' : ' (needs root and runuser)'}`, async () => {
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

describe.skipIf(STORE !== 'postgres')('serve on PostgreSQL (PostgreSQL project only)', () => {
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
    const sockets = new Set<Socket>();
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

  it('a refused login: one line at once, not waited on', async () => {
    // A stand-in server that answers every start-up message as PostgreSQL does a wrong password.
    const fields = Buffer.from('SFATAL\0C28P01\0Mpassword authentication failed for user "tollgate"\0\0');
    const header = Buffer.alloc(5);
    header.write('E', 0);
    header.writeInt32BE(fields.length + 4, 1);
    const refusing = createServer((socket) => socket.once('data', () => socket.end(Buffer.concat([header, fields]))));
    await new Promise<void>((r) => refusing.listen(0, '127.0.0.1', r));
    const port = (refusing.address() as { port: number }).port;
    try {
      const r = await run(['serve', '--port', '0', '--database-url', `postgres://tollgate:wrong@127.0.0.1:${port}/tollgate`], tempDir(), { DATABASE_WAIT_MS: '20000' });
      expect(oneLineFailure(r)).toMatch(/refused the login: password authentication failed/);
      expect(r.stderr).not.toMatch(/waiting for the database/);
    } finally {
      await new Promise((r) => refusing.close(r));
    }
  });

  it('a database that does not exist: one line naming it, for serve and migrate; nothing created', async () => {
    const url = new URL(pgBase());
    url.pathname = `/tollgate_missing_${randomBytes(6).toString('hex')}`;
    for (const args of [['serve', '--port', '0', '--database-url', url.toString()], ['migrate', '--database-url', url.toString()]]) {
      const line = oneLineFailure(await run(args, tempDir()));
      expect(line).toContain(`no PostgreSQL database at ${url.toString()}`);
    }
    const admin = new pg.Client({ connectionString: pgBase() });
    await admin.connect();
    try {
      const found = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [url.pathname.slice(1)]);
      expect(found.rowCount).toBe(0);
    } finally {
      await admin.end();
    }
  });

  it('serve prints the database URL with the password masked', async () => {
    const url = new URL(pgBase());
    url.password = 'not-needed-trust-auth';
    const schema = `startup_${randomBytes(6).toString('hex')}`;
    const admin = new pg.Client({ connectionString: pgBase() });
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
