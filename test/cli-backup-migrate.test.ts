import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import Database from '../src/store/sqlite-driver.js';
import { describe, expect, it } from 'vitest';
import { harness, STORE } from './helpers.js';
import { inScratchSchema, makeDatabase, oneLineFailure, run, tempDir } from './cli-process.js';

/**
 * `tollgate backup` and `tollgate migrate` never create a database (only
 * `migrate --create`, for a first install): run from the wrong directory,
 * with a typo in the URL or against something that is not a Tollgate
 * database, they fail with one line naming the resolved path or URL and
 * leave nothing behind. A backup says what it copied.
 */

describe.skipIf(STORE !== 'sqlite')('backup and migrate on SQLite never create a database (SQLite project only)', () => {
  it('run from a directory without a database: one line naming the resolved path, and nothing created', async () => {
    const cwd = tempDir();
    for (const args of [['backup', 'copy.db'], ['migrate']]) {
      const line = oneLineFailure(await run(args, cwd));
      expect(line).toContain(`no SQLite database at ${join(cwd, 'data/tollgate.db')}`);
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
      expect(line).toContain(`no SQLite database at ${resolve(cwd, args.find((a) => a.startsWith('sqlite:'))!.slice('sqlite:'.length))}`);
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

describe.skipIf(STORE !== 'postgres')('migrate on PostgreSQL (PostgreSQL project only)', () => {
  it('migrate refuses an empty database (no Tollgate tables) unless --create', async () => {
    await inScratchSchema('startup', async (admin, url, schema) => {
      const line = oneLineFailure(await run(['migrate', '--database-url', url.toString()], tempDir()));
      expect(line).toMatch(/is not a Tollgate database.*--create/);
      const tables = () => admin.query('SELECT 1 FROM information_schema.tables WHERE table_schema = $1', [schema]).then((r) => r.rowCount);
      expect(await tables()).toBe(0);
      const created = await run(['migrate', '--create', '--database-url', url.toString()], tempDir());
      expect(created.code, created.stderr).toBe(0);
      expect(await tables()).toBeGreaterThan(0);
    });
  });
});
