import { resolve } from 'node:path';
import type { Db } from './db.js';
import { PostgresDb } from './postgres.js';
import { SqliteDb } from './sqlite.js';

export interface OpenOptions {
  pgPoolSize?: number;
  pgStatementTimeoutMs?: number;
  pgSsl?: 'off' | 'on' | 'no-verify';
  sqliteSynchronous?: 'normal' | 'full';
  /** Refuse to create a database that does not exist (StoreMissing): every command but `serve`. */
  mustExist?: boolean;
}

/** Opens the database a DATABASE_URL names: `sqlite:<path>` or `postgres://…`. */
export async function openDb(url: string, opts: OpenOptions = {}): Promise<Db> {
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length);
    return new SqliteDb(path === ':memory:' ? path : resolve(path), opts.sqliteSynchronous, opts.mustExist);
  }
  if (/^postgres(ql)?:\/\//.test(url)) {
    const ssl = opts.pgSsl === 'on' ? true : opts.pgSsl === 'no-verify' ? 'no-verify' : false;
    return new PostgresDb({ url, poolSize: opts.pgPoolSize ?? 10, statementTimeoutMs: opts.pgStatementTimeoutMs ?? 10_000, ssl });
  }
  throw new Error(`unsupported DATABASE_URL scheme: ${url.split(':')[0]}`);
}

/** How long a cached value may be served at most: one process owns SQLite; PostgreSQL nodes also rely on NOTIFY. */
export function cacheTtlFor(db: Db): number {
  return db.dialect === 'postgres' ? 1000 : Infinity;
}
