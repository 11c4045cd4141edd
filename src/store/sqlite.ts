import { existsSync, mkdirSync } from 'node:fs';
import { statfs } from 'node:fs/promises';
import { dirname } from 'node:path';
import Database, { type Connection, type Statement } from './sqlite-driver.js';
import type { Db, Param, Queryable, Row } from './db.js';
import { ForeignKeyViolation, StoreMissing, StoreUnavailable, UniqueViolation } from './db.js';
import { SQLITE_FOLD } from './fold.js';

function bind(params: readonly Param[]): unknown[] {
  const out = new Array<unknown>(params.length);
  for (let i = 0; i < params.length; i++) {
    const p = params[i];
    out[i] = p === undefined ? null : typeof p === 'boolean' ? (p ? 1 : 0) : p;
  }
  return out;
}

/**
 * Result codes that say the storage cannot serve now, not that the request is wrong: out of space
 * (SQLITE_FULL), an I/O error of the disk (SQLITE_IOERR_*), the file locked past the busy timeout
 * (SQLITE_BUSY*, SQLITE_LOCKED*), a file that cannot be opened now (SQLITE_CANTOPEN*: e.g. the WAL
 * after the directory lost its permissions), a read-only remount (SQLITE_READONLY*), out of memory.
 */
const UNAVAILABLE = /^SQLITE_(FULL|IOERR|BUSY|LOCKED|CANTOPEN|READONLY|NOMEM|PROTOCOL)/;

function codeOf(err: unknown): string {
  return err instanceof Error && 'code' in err ? String(err.code) : '';
}

function translate(err: unknown): unknown {
  const code = codeOf(err);
  if (code.startsWith('SQLITE_CONSTRAINT_UNIQUE') || code === 'SQLITE_CONSTRAINT_PRIMARYKEY') return new UniqueViolation((err as Error).message);
  if (code === 'SQLITE_CONSTRAINT_FOREIGNKEY') return new ForeignKeyViolation((err as Error).message);
  if (UNAVAILABLE.test(code)) return new StoreUnavailable(`SQLite: ${(err as Error).message} (${code})`, { cause: err });
  return err;
}

/**
 * Below this much free space on the database's file system, /readyz says 503: writes are failing or
 * about to (a write appends 16 KiB pages to the WAL, and a checkpoint grows the database file).
 */
export const MIN_FREE_BYTES = 1024 * 1024;

/**
 * Why a start cannot open the file, in one line naming the path: locked by another process is
 * StoreUnavailable (it may be released); anything else (a parent that is a file, no permission, a
 * file that is not a database) is StoreMissing, since it will not fix itself.
 */
function cannotOpen(path: string, err: unknown): Error {
  const code = codeOf(err);
  const reason = `${(err as Error).message}${code ? ` (${code})` : ''}`;
  if (/^SQLITE_(BUSY|LOCKED)/.test(code)) return new StoreUnavailable(`SQLite database at ${path} is locked: ${reason}`, { cause: err });
  return new StoreMissing(path, `cannot open the SQLite database at ${path}: ${reason}`);
}

/**
 * better-sqlite3 is synchronous and has one connection. A transaction spans
 * awaits, so while one is open every other query waits for it to end:
 * otherwise a concurrent request's write would land inside (and roll back
 * with) someone else's transaction.
 */
export class SqliteDb implements Db {
  readonly dialect = 'sqlite' as const;
  private readonly raw: Connection;
  private readonly path: string;
  private readonly statements = new Map<string, Statement>();
  private txTail: Promise<void> = Promise.resolve();
  private txOpen = false;
  private readonly direct: Queryable;

  /**
   * `synchronous`: NORMAL (default) keeps every committed transaction through
   * a process crash (kill -9: the WAL is in the OS's hands), FULL also through
   * a power cut, at an fsync per commit that holds the event loop.
   *
   * `mustExist`: refuse to create the file (every command but `serve`: a backup or migration run from
   * the wrong directory must not report success on a new empty database).
   */
  constructor(path: string, synchronous: 'normal' | 'full' = 'normal', mustExist = false) {
    if (path !== ':memory:' && mustExist && !existsSync(path)) throw new StoreMissing(path, `no SQLite database at ${path}`);
    this.path = path;
    try {
      if (path !== ':memory:' && !mustExist) mkdirSync(dirname(path), { recursive: true });
      this.raw = new Database(path, { fileMustExist: mustExist });
    } catch (err) {
      throw cannotOpen(path, err);
    }
    try {
      // 16 KiB pages for a new database (an existing one keeps its own): file content is stored in 256 KiB
      // chunks, read a page at a time; measured, a 100 MiB download went from 0.77 to 0.81-0.88 of the raw
      // file server (a chunk alone read 2x faster in one test, 1.1x in a later one). Writes pay for it:
      // a login's transaction takes ~60 us longer (docs/performance.md).
      this.raw.pragma('page_size = 16384');
      this.raw.pragma('journal_mode = WAL');
      this.raw.pragma(`synchronous = ${synchronous === 'full' ? 'FULL' : 'NORMAL'}`);
      this.raw.pragma('foreign_keys = ON');
      this.raw.pragma('busy_timeout = 5000');
      // SQLite's LOWER folds ASCII only; PostgreSQL's folds É to é. The repositories' any-case filters use this on SQLite
      // (src/store/fold.ts), so `note=été` finds and `delete_unused {note}` deletes the same licenses on both stores.
      this.raw.function(SQLITE_FOLD, { deterministic: true }, (text: unknown) => (typeof text === 'string' ? text.toLowerCase() : text));
    } catch (err) {
      this.raw.close();
      throw cannotOpen(path, err);
    }
    const self = this;
    this.direct = {
      one: async <T>(sql: string, params: readonly Param[] = []) => self.exec(() => self.prep(sql).get(...bind(params)) as T | undefined),
      all: async <T>(sql: string, params: readonly Param[] = []) => self.exec(() => self.prep(sql).all(...bind(params)) as T[]),
      run: async (sql: string, params: readonly Param[] = []) => self.exec(() => self.prep(sql).run(...bind(params)).changes),
    };
  }

  private prep(sql: string): Statement {
    let stmt = this.statements.get(sql);
    if (!stmt) {
      stmt = this.raw.prepare(sql);
      this.statements.set(sql, stmt);
    }
    return stmt;
  }

  private exec<T>(fn: () => T): T {
    try {
      return fn();
    } catch (err) {
      throw translate(err);
    }
  }

  private async outsideTx(): Promise<void> {
    while (this.txOpen) await this.txTail;
  }

  async one<T = Row>(sql: string, params: readonly Param[] = []): Promise<T | undefined> {
    if (this.txOpen) await this.outsideTx();
    this.settle();
    return this.exec(() => this.prep(sql).get(...bind(params)) as T | undefined);
  }

  async all<T = Row>(sql: string, params: readonly Param[] = []): Promise<T[]> {
    if (this.txOpen) await this.outsideTx();
    this.settle();
    return this.exec(() => this.prep(sql).all(...bind(params)) as T[]);
  }

  async run(sql: string, params: readonly Param[] = []): Promise<number> {
    if (this.txOpen) await this.outsideTx();
    this.settle();
    return this.exec(() => this.prep(sql).run(...bind(params)).changes);
  }

  /** Runs a multi-statement script (migrations). */
  async script(sql: string): Promise<void> {
    await this.outsideTx();
    this.raw.exec(sql);
  }

  async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    const previous = this.txTail;
    let release!: () => void;
    this.txTail = new Promise<void>((resolve) => (release = resolve));
    await previous;
    await this.outsideTx();
    this.txOpen = true;
    try {
      this.settle();
      this.exec(() => this.raw.exec('BEGIN IMMEDIATE'));
      try {
        const result = await fn(this.direct);
        this.exec(() => this.raw.exec('COMMIT'));
        return result;
      } catch (err) {
        // A failed COMMIT (SQLITE_FULL, SQLITE_BUSY) may leave the transaction open; end it here, so
        // the next request starts clean instead of meeting "cannot start a transaction within a transaction".
        this.settle(false);
        throw err;
      }
    } finally {
      this.txOpen = false;
      release();
    }
  }

  /**
   * Rolls back a transaction nobody owns any more (one whose ROLLBACK failed earlier). Without this,
   * later single statements would run inside it: answered as done, and lost with it.
   */
  private settle(strict = true): void {
    if (!this.raw.inTransaction) return;
    try {
      this.raw.exec('ROLLBACK');
    } catch (err) {
      if (strict) throw new StoreUnavailable(`SQLite: cannot roll back an unfinished transaction: ${(err as Error).message}`, { cause: err });
    }
  }

  async exclusive<T>(fn: () => Promise<T>): Promise<T> {
    return fn(); // one process owns the file
  }

  /** Online backup to `destination` (SQLite's backup API; the service keeps serving). */
  async backup(destination: string): Promise<void> {
    await this.raw.backup(destination);
  }

  /**
   * Readiness: the file can be read, and its file system has room for writes. A full disk makes every
   * write fail while reads still work; /readyz says so (503) until space is freed, and then recovers
   * by itself, since it looks at the free space rather than waiting for a write to succeed (a load
   * balancer that took the node out would never send that write).
   */
  async ping(): Promise<boolean> {
    try {
      this.prep('SELECT count(*) FROM sqlite_master').get();
    } catch {
      return false;
    }
    return this.path === ':memory:' || (await this.freeBytes()) >= MIN_FREE_BYTES;
  }

  /** Free bytes where the database lives; root may also use the blocks reserved for it (ext4's 5 %). */
  private async freeBytes(): Promise<number> {
    try {
      const fs = await statfs(dirname(this.path));
      return (process.getuid?.() === 0 ? fs.bfree : fs.bavail) * fs.bsize;
    } catch {
      return 0; // the directory is gone or unreadable: no write can succeed either
    }
  }

  async close(): Promise<void> {
    await this.outsideTx();
    this.raw.close();
  }
}
