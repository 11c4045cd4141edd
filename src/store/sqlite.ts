import { existsSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import type { Db, Param, Queryable, Row } from './db.js';
import { StoreMissing, UniqueViolation } from './db.js';

type Statement = Database.Statement<unknown[], unknown>;

function bind(params: readonly Param[]): unknown[] {
  const out = new Array<unknown>(params.length);
  for (let i = 0; i < params.length; i++) {
    const p = params[i];
    out[i] = p === undefined ? null : typeof p === 'boolean' ? (p ? 1 : 0) : p;
  }
  return out;
}

function translate(err: unknown): unknown {
  if (err instanceof Error && 'code' in err && String(err.code).startsWith('SQLITE_CONSTRAINT_UNIQUE')) {
    return new UniqueViolation(err.message);
  }
  if (err instanceof Error && 'code' in err && err.code === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
    return new UniqueViolation(err.message);
  }
  return err;
}

/**
 * better-sqlite3 is synchronous and has one connection. A transaction spans
 * awaits, so while one is open every other query waits for it to end:
 * otherwise a concurrent request's write would land inside (and roll back
 * with) someone else's transaction.
 */
export class SqliteDb implements Db {
  readonly dialect = 'sqlite' as const;
  private readonly raw: Database.Database;
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
    if (path !== ':memory:') {
      if (mustExist && !existsSync(path)) throw new StoreMissing(path, `no SQLite database at ${path}`);
      if (!mustExist) mkdirSync(dirname(path), { recursive: true });
    }
    this.raw = new Database(path, { fileMustExist: mustExist });
    // 16 KiB pages for a new database (an existing one keeps its own): file content is stored in 256 KiB
    // chunks, read a page at a time; measured, a 100 MiB download went from 0.77 to 0.81-0.88 of the raw
    // file server (a chunk alone read 2x faster in one test, 1.1x in a later one). Writes pay for it:
    // a login's transaction takes ~60 us longer (docs/performance.md).
    this.raw.pragma('page_size = 16384');
    this.raw.pragma('journal_mode = WAL');
    this.raw.pragma(`synchronous = ${synchronous === 'full' ? 'FULL' : 'NORMAL'}`);
    this.raw.pragma('foreign_keys = ON');
    this.raw.pragma('busy_timeout = 5000');
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
    return this.exec(() => this.prep(sql).get(...bind(params)) as T | undefined);
  }

  async all<T = Row>(sql: string, params: readonly Param[] = []): Promise<T[]> {
    if (this.txOpen) await this.outsideTx();
    return this.exec(() => this.prep(sql).all(...bind(params)) as T[]);
  }

  async run(sql: string, params: readonly Param[] = []): Promise<number> {
    if (this.txOpen) await this.outsideTx();
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
      this.raw.exec('BEGIN IMMEDIATE');
      try {
        const result = await fn(this.direct);
        this.raw.exec('COMMIT');
        return result;
      } catch (err) {
        if (this.raw.inTransaction) this.raw.exec('ROLLBACK');
        throw err;
      }
    } finally {
      this.txOpen = false;
      release();
    }
  }

  async exclusive<T>(fn: () => Promise<T>): Promise<T> {
    return fn(); // one process owns the file
  }

  /** Online backup to `destination` (SQLite's backup API; the service keeps serving). */
  async backup(destination: string): Promise<void> {
    await this.raw.backup(destination);
  }

  async ping(): Promise<boolean> {
    try {
      this.raw.prepare('SELECT 1').get();
      return true;
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    await this.outsideTx();
    this.raw.close();
  }
}
