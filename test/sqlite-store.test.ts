import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database, { type Connection } from '../src/store/sqlite-driver.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteDb } from '../src/store/sqlite.js';

/** How the embedded store opens its file (settings that are decisions of docs/decisions.md). */
describe('SQLite store file', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'tollgate-sqlite-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const pragma = (db: SqliteDb, name: string) => (db as unknown as { raw: Connection }).raw.pragma(name, { simple: true });

  it('a new database: 16 KiB pages, WAL, synchronous NORMAL, foreign keys on', async () => {
    const db = new SqliteDb(join(dir, 'new.db'));
    try {
      expect(pragma(db, 'page_size')).toBe(16384);
      expect(pragma(db, 'journal_mode')).toBe('wal');
      expect(pragma(db, 'synchronous')).toBe(1); // NORMAL
      expect(pragma(db, 'foreign_keys')).toBe(1);
    } finally {
      await db.close();
    }
  });

  it('an existing database keeps its page size (and its data)', async () => {
    const path = join(dir, 'old.db');
    const old = new Database(path);
    old.pragma('page_size = 4096');
    old.exec("CREATE TABLE t (v TEXT); INSERT INTO t VALUES ('kept')");
    old.close();
    const db = new SqliteDb(path);
    try {
      expect(pragma(db, 'page_size')).toBe(4096);
      expect(await db.one<{ v: string }>('SELECT v FROM t')).toEqual({ v: 'kept' });
    } finally {
      await db.close();
    }
  });
});
