import { resolve } from 'node:path';
import type { Db } from './db.js';
import { SqliteDb } from './sqlite.js';

/** Opens the database a DATABASE_URL names. PostgreSQL arrives behind the same Db interface. */
export async function openDb(url: string): Promise<Db> {
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length);
    return new SqliteDb(path === ':memory:' ? path : resolve(path));
  }
  throw new Error(`unsupported DATABASE_URL scheme: ${url.split(':')[0]}`);
}
