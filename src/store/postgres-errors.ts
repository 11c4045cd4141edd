import pg from 'pg';
import { ForeignKeyViolation, StoreMissing, StoreUnavailable, UniqueViolation, UnstorableValue } from './db.js';

export { maskedUrl } from './masked-url.js';

/**
 * How the PostgreSQL driver's failures become the store's errors: a request that met a database
 * which cannot serve now is answered 503 (StoreUnavailable) and may be retried; a URL naming no
 * database is StoreMissing; a unique violation and an unstorable value keep their own meaning.
 */

/** 22021 character_not_in_repertoire, 22P05 untranslatable_character: e.g. a NUL in a text value. */
const UNSTORABLE = new Set(['22021', '22P05']);

/**
 * SQLSTATEs that say "the database cannot serve now", not "this request is wrong": 57P01-57P03 admin
 * shutdown, crash shutdown, cannot_connect_now (a restart); 57P04 database dropped; 57014 statement
 * timeout or cancel; 55P03 lock timeout; 40001/40P01 serialization failure and deadlock (a retry
 * succeeds). Whole classes: 08 connection exception, 53 insufficient resources (53100 disk full, 53200
 * out of memory, 53300 too many connections), 28 a refused login (a rotated password).
 */
const UNAVAILABLE_STATES = new Set(['57P01', '57P02', '57P03', '57P04', '57014', '55P03', '40001', '40P01']);
const UNAVAILABLE_CLASSES = new Set(['08', '53', '28']);
/** Socket and name-resolution failures of Node: the server cannot be reached, or the connection broke. */
const UNAVAILABLE_ERRNOS = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'EHOSTDOWN', 'ENETUNREACH', 'ENETDOWN', 'ENOTFOUND', 'EAI_AGAIN', 'ENOENT',
]);
/**
 * pg and pg-pool raise these as plain Errors with no code: a dropped socket, our client-side query
 * timeout, the pool's wait for a connection, a client that already failed. (A pool used after close()
 * is a bug, and stays a 500.)
 */
const UNAVAILABLE_MESSAGES = /^(Connection terminated|Query read timeout|timeout exceeded when trying to connect|timeout expired|Client has encountered a connection error|Client was closed)/;

function codeOf(err: unknown): string {
  return err && typeof err === 'object' && 'code' in err ? String((err as { code: unknown }).code) : '';
}

/** Whether `err` means the database cannot serve now (so the client may retry), rather than a bug or bad input. */
export function isUnavailable(err: unknown): boolean {
  const code = codeOf(err);
  if (UNAVAILABLE_STATES.has(code) || UNAVAILABLE_CLASSES.has(code.slice(0, 2)) || UNAVAILABLE_ERRNOS.has(code)) return true;
  return err instanceof Error && UNAVAILABLE_MESSAGES.test(err.message);
}

/**
 * Whether the connection that raised `err` can be trusted with another query. An error the server
 * sent for one statement (a unique violation, a statement timeout) leaves it usable; anything else
 * (a socket error, our query timeout with the query still running, a FATAL) means destroy it.
 */
export function connectionBroken(err: unknown): boolean {
  if (!(err instanceof pg.DatabaseError)) return true;
  return err.severity === 'FATAL' || err.severity === 'PANIC';
}

export function mapError(err: unknown, location: string): unknown {
  if (err instanceof StoreUnavailable || err instanceof StoreMissing) return err;
  const code = codeOf(err);
  if (code === '23505') return new UniqueViolation((err as { constraint?: string }).constraint ?? 'unique');
  // 23503 foreign_key_violation.
  if (code === '23503') return new ForeignKeyViolation((err as { constraint?: string }).constraint ?? 'foreign key');
  if (UNSTORABLE.has(code)) return new UnstorableValue((err as Error).message);
  // 3D000 invalid_catalog_name: the URL names a database that does not exist; retrying will not help.
  if (code === '3D000') return new StoreMissing(location, `no PostgreSQL database at ${location}: ${(err as Error).message}`);
  if (isUnavailable(err)) return new StoreUnavailable(`PostgreSQL at ${location}: ${(err as Error).message}`, { cause: err });
  return err;
}
