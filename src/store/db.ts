/**
 * The dialect-neutral query layer every repository is written against.
 * SQL uses `?` placeholders; each dialect adapts them. Booleans are stored as
 * 0/1 integers and timestamps as integer milliseconds, in every dialect.
 */
export type Param = string | number | boolean | null | Buffer | undefined;
export type Row = Record<string, unknown>;

export interface Queryable {
  /** First row, or undefined. Also for `INSERT … RETURNING`. */
  one<T = Row>(sql: string, params?: readonly Param[]): Promise<T | undefined>;
  all<T = Row>(sql: string, params?: readonly Param[]): Promise<T[]>;
  /** A statement that returns no rows; resolves to the number of rows changed. */
  run(sql: string, params?: readonly Param[]): Promise<number>;
}

export type Dialect = 'sqlite' | 'postgres';

export interface TransactionOptions {
  oneStatement?: boolean;
}

export interface Db extends Queryable {
  readonly dialect: Dialect;
  /**
   * Runs `fn` in one transaction: committed if it resolves, rolled back if it throws. `oneStatement`: `fn` runs
   * exactly one statement, which is atomic by itself; PostgreSQL then sends it without BEGIN and COMMIT (two
   * round trips fewer) and refuses a second statement (a bug, never run). SQLite runs it as any transaction.
   */
  transaction<T>(fn: (tx: Queryable) => Promise<T>, options?: TransactionOptions): Promise<T>;
  /** Runs a multi-statement script with no parameters (migrations only). */
  script(sql: string): Promise<void>;
  /** Runs `fn` holding a lock shared by every node on this database (migrations at start). */
  exclusive<T>(fn: () => Promise<T>): Promise<T>;
  /**
   * Cross-node messages (PostgreSQL LISTEN/NOTIFY). Absent where one process
   * owns the database (SQLite), since there is nobody else to tell.
   */
  readonly bus?: MessageBus;
  /** Whether the database answers (readiness). */
  ping(): Promise<boolean>;
  /** A pooled database's connections now (PostgreSQL), for the metrics; absent where there is no pool (SQLite). */
  poolStats?(): PoolStats;
  close(): Promise<void>;
}

export interface PoolStats {
  total: number;
  idle: number;
  /** Requests waiting for a free connection. */
  waiting: number;
}

/** Thrown by a dialect when the database cannot hold a value (PostgreSQL text cannot contain NUL). */
export class UnstorableValue extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnstorableValue';
  }
}

/**
 * Thrown by a dialect when the database cannot serve now: unreachable, a
 * dropped connection, a timeout, out of space. The client may retry (503
 * service_unavailable, never 500). Usually nothing was committed, but a
 * connection lost during COMMIT (or while its answer was on the way) may
 * have committed: a retry must find the write (unique keys, conditional
 * updates), never apply it twice.
 */
export class StoreUnavailable extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreUnavailable';
  }
}

/** Thrown when opening a database that must already exist (every command but `serve`) and does not. */
export class StoreMissing extends Error {
  constructor(readonly location: string, message = `no database at ${location}`) {
    super(message);
    this.name = 'StoreMissing';
  }
}

/**
 * The database was migrated by a newer release than this one: its schema has
 * versions this code does not know, and code older than its schema may read
 * or write it wrongly. Refused, never run (a downgrade is a restore of the
 * backup taken before the upgrade).
 */
export class SchemaAhead extends Error {
  constructor(readonly found: number, readonly known: number) {
    super(`the database has schema version ${found}, newer than this release knows (up to ${known})`);
    this.name = 'SchemaAhead';
  }
}

/** Thrown by a dialect when a unique constraint rejects a write. */
export class UniqueViolation extends Error {
  constructor(readonly constraint: string) {
    super(`unique constraint: ${constraint}`);
    this.name = 'UniqueViolation';
  }
}

/**
 * Thrown by a dialect when a foreign key rejects a write: a row names one that a concurrent transaction
 * deleted, or a delete would leave rows naming it (a reference without ON DELETE, migration 16's mappings).
 */
export class ForeignKeyViolation extends Error {
  constructor(readonly detail: string) {
    super(`foreign key constraint: ${detail}`);
    this.name = 'ForeignKeyViolation';
  }
}

export interface MessageBus {
  subscribe(channel: string, handler: (payload: string) => void): Promise<void>;
  publish(channel: string, payload: string): Promise<void>;
  /** Called when delivery may have had a gap (the listening connection dropped). */
  onGap(handler: () => void): void;
  /** Called when the listening connection drops (with why) and when it is listening again. */
  onConnection(handler: (up: boolean, cause?: string) => void): void;
}
