import type { Dialect } from './db.js';

/** The application-defined function src/store/sqlite.ts registers on every SQLite connection: JS toLowerCase. */
export const SQLITE_FOLD = 'tollgate_lower';

/**
 * An SQL expression that lower-cases `column` the way PostgreSQL's LOWER does
 * (É to é as well as E to e): LOWER there, SQLITE_FOLD on SQLite, whose LOWER
 * folds ASCII only. Any-case filters compare it with a JS-lower-cased value,
 * so both stores find, count and delete the same rows (licenses' note and search, the audit's actor).
 */
export function foldCase(dialect: Dialect, column: string): string {
  return dialect === 'sqlite' ? `${SQLITE_FOLD}(${column})` : `LOWER(${column})`;
}
