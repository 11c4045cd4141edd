import { execFile } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import Database from '../src/store/sqlite-driver.js';
import { migrations } from '../src/store/migrations/index.js';
import { cleanEnv, inScratchSchema, MAIN, makeDatabase, oneLineFailure, readSqlite, run, tempDir, type Run } from './cli-process.js';
import { STORE } from './helpers.js';

/**
 * Issue 21, the local commands: an older release refuses a database a newer
 * one migrated (item 11, both stores), backups are owner-only whatever the
 * umask (item 12), and the wrong-directory line speaks of the current
 * directory only for a relative path (item 15).
 */

const KNOWN = Math.max(...migrations.map((m) => m.version));
const AHEAD = KNOWN + 3;

/** What a newer release leaves behind: a migration row this code has never heard of. */
const aheadRow = `INSERT INTO schema_migrations (version, name, applied_at) VALUES (${AHEAD}, 'from_a_newer_release', 0)`;

function refusesAhead(r: Run, where: string): void {
  const line = oneLineFailure(r);
  expect(line).toContain(where);
  expect(line).toMatch(new RegExp(`schema version ${AHEAD}\\b.*versions up to ${KNOWN}\\b`));
  expect(line).toMatch(/restore the backup taken before the upgrade/);
}

describe.skipIf(STORE !== 'sqlite')('local commands on SQLite (SQLite project only)', () => {
  it('item 11: migrate and serve refuse a database migrated by a newer release, in one line naming both versions', async () => {
    const cwd = tempDir();
    const db = join(cwd, 'tollgate.db');
    await makeDatabase(db);
    const raw = new Database(db);
    raw.exec(aheadRow);
    raw.close();
    refusesAhead(await run(['migrate', '--database-url', `sqlite:${db}`], cwd), db);
    refusesAhead(await run(['serve'], cwd, { DATABASE_URL: `sqlite:${db}`, PORT: '0', TOLLGATE_ADMIN_TOKEN: 'startup-admin-token-0123456789' }), db);
    // The local commands that write without migrating refuse it too; a backup (a copy, wanted before a restore) does not.
    refusesAhead(await run(['tokens', 'create', 'rescue', '--local', '--database-url', `sqlite:${db}`], cwd), db);
    refusesAhead(await run(['operators', 'list', '--database-url', `sqlite:${db}`], cwd), db);
    const backup = await run(['backup', '--database-url', `sqlite:${db}`, 'before-downgrade.db'], cwd);
    expect(backup.code, backup.stderr).toBe(0);
    expect(readSqlite<{ v: number }>(db, 'SELECT max(version) AS v FROM schema_migrations').v).toBe(AHEAD);
  });

  it('item 12: a backup is created 0600 under umask 022 (it holds the signing keys)', async () => {
    const cwd = tempDir();
    const db = join(cwd, 'tollgate.db');
    await makeDatabase(db);
    const r = await new Promise<Run>((done) => {
      execFile('sh', ['-c', 'umask 022 && exec "$0" "$@"', process.execPath, MAIN, 'backup', '--database-url', `sqlite:${db}`, 'copy.db'], { cwd, env: cleanEnv({}), encoding: 'utf8' }, (err, stdout, stderr) =>
        done({ code: err ? 1 : 0, stdout, stderr }),
      );
    });
    expect(r.code, r.stderr).toBe(0);
    expect((statSync(join(cwd, 'copy.db')).mode & 0o777).toString(8)).toBe('600');
    expect(readdirSync(cwd).sort()).toEqual(['copy.db', 'tollgate.db']);
  });

  it('item 15: "a relative path is resolved from …" only when the path was relative', async () => {
    const cwd = tempDir();
    const absolute = oneLineFailure(await run(['migrate', '--database-url', `sqlite:${join(cwd, 'nowhere.db')}`], cwd));
    expect(absolute).toContain(`no SQLite database at ${join(cwd, 'nowhere.db')}`);
    expect(absolute).not.toMatch(/relative path|current directory/);
    const relative = oneLineFailure(await run(['migrate', '--database-url', 'sqlite:./nowhere.db'], cwd));
    expect(relative).toContain(`a relative path is resolved from the current directory ${cwd}`);
  });
});

describe.skipIf(STORE !== 'postgres')('local commands on PostgreSQL (PostgreSQL project only)', () => {
  it('item 11: migrate and serve refuse a database migrated by a newer release, in one line naming both versions', async () => {
    await inScratchSchema('ahead', async (admin, url, schema) => {
      const created = await run(['migrate', '--create', '--database-url', url.toString()], tempDir());
      expect(created.code, created.stderr).toBe(0);
      await admin.query(aheadRow.replace('schema_migrations', `${schema}.schema_migrations`));
      const where = `${url.hostname}:${url.port || 5432}`;
      refusesAhead(await run(['migrate', '--database-url', url.toString()], tempDir()), where);
      refusesAhead(await run(['serve'], tempDir(), { DATABASE_URL: url.toString(), PORT: '0', TOLLGATE_ADMIN_TOKEN: 'startup-admin-token-0123456789' }), where);
      const versions = await admin.query(`SELECT max(version) AS v FROM ${schema}.schema_migrations`);
      expect(Number(versions.rows[0].v)).toBe(AHEAD);
    });
  });
});
