import { resolve } from 'node:path';
import type { Db } from './db.js';
import { PostgresDb } from './postgres.js';
import { SqliteDb } from './sqlite.js';

export interface OpenOptions {
  pgPoolSize?: number;
  pgStatementTimeoutMs?: number;
  pgConnectTimeoutMs?: number;
  pgQueryTimeoutMs?: number;
  pgSsl?: 'off' | 'on' | 'no-verify';
  sqliteSynchronous?: 'normal' | 'full';
  /** Refuse to create a database that does not exist (StoreMissing): every command but `serve`. */
  mustExist?: boolean;
}

/**
 * Opens the database a DATABASE_URL names: `sqlite:<path>` or `postgres://…`. A database that
 * cannot be reached or used is one of the store's errors, whose message names the path or the URL
 * (password masked): StoreUnavailable (may come up: retry) or StoreMissing (will not: fix the setting).
 */
export async function openDb(url: string, opts: OpenOptions = {}): Promise<Db> {
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length);
    return new SqliteDb(path === ':memory:' ? path : resolve(path), opts.sqliteSynchronous, opts.mustExist);
  }
  if (/^postgres(ql)?:\/\//.test(url)) {
    const ssl = opts.pgSsl === 'on' ? true : opts.pgSsl === 'no-verify' ? 'no-verify' : false;
    const db = new PostgresDb({
      url,
      poolSize: opts.pgPoolSize ?? 10,
      statementTimeoutMs: opts.pgStatementTimeoutMs ?? 10_000,
      connectTimeoutMs: opts.pgConnectTimeoutMs ?? 5_000,
      queryTimeoutMs: opts.pgQueryTimeoutMs ?? 15_000,
      ssl,
    });
    try {
      // Connect now, so a refused connection or a missing database is reported by the open, in one line.
      await db.one('SELECT 1');
    } catch (err) {
      await db.close().catch(() => undefined);
      throw err;
    }
    return db;
  }
  throw new Error(`unsupported DATABASE_URL scheme: ${url.split(':')[0]}`);
}

/** How long a cached value may be served at most: one process owns SQLite; PostgreSQL nodes also rely on NOTIFY. */
export function cacheTtlFor(db: Db): number {
  return db.dialect === 'postgres' ? 1000 : Infinity;
}
