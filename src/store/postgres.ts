import { createHash } from 'node:crypto';
import pg from 'pg';
import type { Db, MessageBus, Param, PoolStats, Queryable, Row, TransactionOptions } from './db.js';
import { StoreMissing, StoreUnavailable } from './db.js';
import { Liveness, type ProbeResult } from './pg-liveness.js';
import { connectionBroken, mapError, maskedUrl } from './postgres-errors.js';

export interface PostgresOptions {
  url: string;
  /** Connections per node. */
  poolSize: number;
  /** Milliseconds before the server cancels a statement (0: no limit). */
  statementTimeoutMs: number;
  /** Milliseconds to open a connection, and to wait for a free pooled one. */
  connectTimeoutMs: number;
  /** Milliseconds the client waits for any answer to a query before it gives up on the connection. */
  queryTimeoutMs: number;
  /** TLS: false, or verify the server's certificate (true), or encrypt without verifying ('no-verify'). */
  ssl: boolean | 'no-verify';
}

const INT8 = 20;
const NUMERIC = 1700;
/** Timestamps are epoch milliseconds in BIGINT: well inside Number's exact range, so parse int8 as a number. */
const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === INT8 || oid === NUMERIC) return (value: string) => Number(value);
    return pg.types.getTypeParser(oid, format as 'text');
  },
};

/** `?` placeholders become `$1…$n` (our SQL has no `?` inside string literals). */
const translated = new Map<string, string>();
function translate(sql: string): string {
  let out = translated.get(sql);
  if (out === undefined) {
    let n = 0;
    out = sql.replace(/\?/g, () => `$${++n}`);
    translated.set(sql, out);
  }
  return out;
}

function bind(params: readonly Param[]): unknown[] {
  return params.map((p) => (p === undefined ? null : typeof p === 'boolean' ? (p ? 1 : 0) : p));
}

function queryable(exec: (text: string, values: unknown[]) => Promise<pg.QueryResult>): Queryable {
  const run = (sql: string, params: readonly Param[]) => exec(translate(sql), bind(params));
  return {
    one: async <T = Row>(sql: string, params: readonly Param[] = []) => (await run(sql, params)).rows[0] as T | undefined,
    all: async <T = Row>(sql: string, params: readonly Param[] = []) => (await run(sql, params)).rows as T[],
    run: async (sql: string, params: readonly Param[] = []) => (await run(sql, params)).rowCount ?? 0,
  };
}

/** A pooled client while we hold it. */
interface Held {
  client: pg.PoolClient;
  /** Why the connection failed, once it has: it is then destroyed on release. */
  lost(): Error | undefined;
  lose(err: unknown): void;
  /**
   * One statement; a failure is mapped to the store's errors, and marks the connection lost if it is. `readTimeoutMs`
   * replaces the client-side query timeout (PG_QUERY_TIMEOUT_MS) for this statement alone.
   */
  statement(text: string, values?: unknown[], readTimeoutMs?: number): Promise<pg.QueryResult>;
}

/** Arbitrary constant: the advisory lock that serialises migrations across nodes starting at once. */
export const MIGRATION_LOCK = 727_172_001;

/**
 * setTimeout's longest delay (about 24.8 days), as a client-side query timeout that never ends a wait in practice:
 * pg reads 0 as "the connection's own", and a longer delay fires at once.
 */
const NO_READ_TIMEOUT_MS = 2 ** 31 - 1;

/**
 * A node must outlive any loss of its connections (a restart, a failover, pg_terminate_backend):
 * every client is held with an 'error' listener, since pg emits 'error' on a client whose socket
 * dies and an EventEmitter with no listener throws it, ending the process. A client that failed is
 * released as broken, so the pool opens a fresh one on the next request instead of handing it out.
 */
export class PostgresDb implements Db {
  readonly dialect = 'postgres' as const;
  readonly pool: pg.Pool;
  /** The URL without its password, for messages. */
  readonly location: string;
  private readonly q: Queryable;
  private listener: pg.Client | null = null;
  private readonly handlers = new Map<string, (payload: string) => void>();
  /** Clients whose connection failed, and why. */
  private readonly failed = new WeakMap<pg.ClientBase, Error>();
  /** Tells a frozen server from a slow statement, and fails what waits on the former at once (pg-liveness.ts). */
  private readonly liveness: Liveness;

  constructor(readonly options: PostgresOptions) {
    this.location = maskedUrl(options.url);
    this.pool = new pg.Pool({
      ...this.clientConfig(),
      max: options.poolSize,
      types,
      // Also bounds the wait for a free pooled client (pg-pool uses it for both), so a saturated or
      // frozen database answers 503 instead of queueing requests forever.
      connectionTimeoutMillis: options.connectTimeoutMs,
      // Client-side: a frozen server (SIGSTOP, a dead network path) never answers, and the server's
      // statement_timeout cannot fire. The connection is then destroyed (connectionBroken).
      query_timeout: options.queryTimeoutMs,
      ...(options.statementTimeoutMs > 0 && { statement_timeout: options.statementTimeoutMs }),
    });
    // An idle client's error (server restart, network): the pool has already removed it; nothing to do.
    this.pool.on('error', () => undefined);
    // Every client gets an 'error' listener for its whole life, from the moment the pool made it. pg
    // emits 'error' on a client whose connection dies, and an emitter with no listener throws, ending
    // the process. Listening only while a request holds the client is not enough: pg-pool takes its
    // own listener off when it hands a client out, and a FATAL read in the same chunk as the end of
    // the connection's start-up arrives before the request has the client.
    this.pool.on('connect', (client) => {
      client.on('error', (err) => this.lose(client, err));
    });
    this.q = queryable((text, values) => this.withClient((held) => held.statement(text, values)));
    this.liveness = new Liveness((timeoutMs) => this.probe(timeoutMs), this.location);
  }

  /**
   * Whether PostgreSQL answers at all: SELECT 1 on an idle pooled connection (no connection more than the pool's),
   * or, when the pool has none idle (full of slow statements), on a connection of its own, closed after.
   */
  private async probe(timeoutMs: number): Promise<ProbeResult> {
    if (this.closed) return 'alive';
    let pooled: pg.PoolClient | undefined;
    let own: pg.Client | undefined;
    const asked = (async () => {
      if (this.pool.idleCount > 0) {
        pooled = await this.pool.connect();
        await pooled.query('SELECT 1');
        return;
      }
      own = new pg.Client({ ...this.clientConfig(), connectionTimeoutMillis: timeoutMs, query_timeout: timeoutMs });
      own.on('error', () => undefined);
      await own.connect();
      await own.query('SELECT 1');
    })();
    const outcome = await within(asked, timeoutMs);
    // A pooled connection that did not answer is destroyed, like any connection found frozen.
    void asked.finally(() => pooled?.release(outcome === 'answered' ? undefined : new Error('no answer to the probe'))).catch(() => undefined);
    if (own) void own.end().catch(() => undefined);
    if (outcome === 'answered') return 'alive';
    // An error the server sent (too many connections, a login refused, a shutdown) is an answer: not frozen, and
    // the requests fail by themselves. No answer at all (a timeout, ours or pg's) is what a frozen server gives.
    return outcome === 'silent' || timedOut(outcome.error) ? 'silent' : 'alive';
  }

  /** What the pool's clients and the LISTEN client share. */
  private clientConfig(): pg.ClientConfig {
    const { url, ssl, connectTimeoutMs } = this.options;
    return {
      connectionString: url,
      connectionTimeoutMillis: connectTimeoutMs,
      // TCP keepalive: a connection whose peer vanished (a failover, a cut network) fails instead of idling forever.
      keepAlive: true,
      // pg_stat_activity names us unless the URL or PGAPPNAME says otherwise.
      fallback_application_name: 'tollgate',
      ...(ssl && { ssl: ssl === 'no-verify' ? { rejectUnauthorized: false } : true }),
    };
  }

  private fail(err: unknown): unknown {
    return mapError(err, this.location);
  }

  /** Marks a client's connection as failed (the first reason wins): it is destroyed on release. */
  private lose(client: pg.ClientBase, err: unknown): void {
    if (!this.failed.has(client)) this.failed.set(client, err instanceof Error ? err : new Error(String(err)));
  }

  /** A pooled client whose connection has not failed; one that died before we used it is swapped. */
  private async checkout(): Promise<pg.PoolClient> {
    for (let attempt = 1; ; attempt++) {
      let client: pg.PoolClient;
      try {
        // A checkout abandoned for a frozen server gives its client back whenever it comes.
        client = await this.liveness.guard(() => this.pool.connect(), (late) => late?.release(), () => false);
      } catch (err) {
        if (this.closed) throw err; // used after close(): a bug, not an outage
        // Whatever stops a connection (refused, TLS, a timeout, a login refused) means the database cannot serve.
        const mapped = this.fail(err);
        throw mapped instanceof StoreUnavailable || mapped instanceof StoreMissing
          ? mapped
          : new StoreUnavailable(`PostgreSQL at ${this.location}: ${(err as Error).message}`, { cause: err });
      }
      const failure = this.failed.get(client);
      if (!failure) return client;
      client.release(failure); // nothing ran on it yet: destroy it and take another
      if (attempt === 3) throw this.fail(failure);
    }
  }

  /**
   * Holds one pooled client for `fn`. A client that failed (its 'error', or a statement that broke
   * it) goes back to the pool as broken: pg-pool then destroys it rather than hand it out again.
   */
  private async withClient<T>(fn: (held: Held) => Promise<T>): Promise<T> {
    const client = await this.checkout();
    const held: Held = {
      client,
      lost: () => this.failed.get(client),
      lose: (err) => this.lose(client, err),
      statement: async (text, values, readTimeoutMs) => {
        // pg's query config takes `query_timeout` (its typings omit it); the plain form stays on every other path.
        const query = () =>
          readTimeoutMs === undefined ? client.query(text, values) : client.query({ text, values, query_timeout: readTimeoutMs } as pg.QueryConfig);
        try {
          return await this.liveness.guard(query, () => undefined, serverAnswered);
        } catch (err) {
          // Abandoned on a frozen server: the connection is destroyed on release, whatever it was doing.
          if (connectionBroken(err) || this.liveness.frozen) this.lose(client, err);
          throw this.fail(err);
        }
      },
    };
    try {
      return await fn(held);
    } finally {
      client.release(this.failed.get(client));
    }
  }

  one<T = Row>(sql: string, params?: readonly Param[]): Promise<T | undefined> {
    return this.q.one<T>(sql, params);
  }
  all<T = Row>(sql: string, params?: readonly Param[]): Promise<T[]> {
    return this.q.all<T>(sql, params);
  }
  run(sql: string, params?: readonly Param[]): Promise<number> {
    return this.q.run(sql, params);
  }

  async script(sql: string): Promise<void> {
    await this.withClient((held) => held.statement(sql));
  }

  async transaction<T>(fn: (tx: Queryable) => Promise<T>, options?: TransactionOptions): Promise<T> {
    if (options?.oneStatement) {
      // One statement is its own transaction (autocommit): no BEGIN, no COMMIT. A second would not be atomic
      // with the first, so it is refused before it runs.
      return this.withClient(async (held) => {
        let ran = 0;
        return fn(queryable((text, values) => {
          if (ran++ > 0) return Promise.reject(new Error('a one-statement transaction ran a second statement'));
          return held.statement(text, values);
        }));
      });
    }
    return this.withClient(async (held) => {
      await held.statement('BEGIN');
      try {
        const result = await fn(queryable(held.statement));
        // A COMMIT lost with its connection may or may not have happened: the client gets 503, and a
        // retry finds the write if it did (username_taken, license_used), never a double write.
        await held.statement('COMMIT');
        return result;
      } catch (err) {
        // On a lost connection the server has rolled back already; a ROLLBACK would only queue behind
        // a query that is still running. A connection that cannot roll back is not reused.
        if (!held.lost()) await held.statement('ROLLBACK').catch(held.lose);
        throw err;
      }
    });
  }

  /**
   * Runs `fn` while holding the migration advisory lock (other nodes wait, then find nothing to do). The wait
   * is as long as the other node's migration, which can outlast one statement's timeout: it runs without one
   * (SET LOCAL, in a transaction of its own; the session's lock outlives the transaction), nor a lock timeout, nor
   * the client-side query timeout, which would cut it a few seconds later (a frozen server is still caught: Liveness).
   */
  async exclusive<T>(fn: () => Promise<T>): Promise<T> {
    return this.withClient(async (held) => {
      await held.statement('BEGIN');
      try {
        await held.statement('SET LOCAL statement_timeout = 0');
        await held.statement('SET LOCAL lock_timeout = 0'); // a role's or database's default would cut the wait too
        await held.statement('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK], NO_READ_TIMEOUT_MS);
        await held.statement('COMMIT');
      } catch (err) {
        // The session may hold the lock (granted, then the COMMIT failed), and ROLLBACK does not release a session
        // lock: the connection is destroyed instead, which ends the transaction and the lock with it.
        held.lose(err);
        throw err;
      }
      try {
        return await fn();
      } finally {
        // The lock ends with its session: if the connection is gone, so is the lock.
        if (!held.lost()) await held.statement('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
      }
    });
  }

  readonly bus: MessageBus = {
    subscribe: (channel, handler) => this.subscribe(channel, handler),
    publish: (channel, payload) => this.notify(channel, payload),
    onGap: (handler) => {
      this.onListenerLost = handler;
    },
    onConnection: (handler) => {
      this.onListenerChange = handler;
    },
  };

  /**
   * The bus's channels are the schema's: a notice sent by a node whose tables are in schema S reaches only nodes
   * on S. Two deployments in one database (staging and production in their own schemas; the test harnesses) would
   * otherwise drop each other's caches. The default schema, public, keeps the plain names, as before.
   */
  private scope: Promise<string> | undefined;

  private scoped(channel: string): Promise<string> {
    this.scope ??= this.one<{ s: string | null }>('SELECT current_schema() AS s').then(
      (row) => (row?.s == null || row.s === 'public' ? '' : `_${createHash('sha256').update(row.s).digest('hex').slice(0, 12)}`),
      (err: unknown) => {
        this.scope = undefined; // asked again next time: the database may be back
        throw err;
      },
    );
    return this.scope.then((suffix) => channel + suffix);
  }

  /** LISTEN on a dedicated connection; reconnects if it drops. */
  private async subscribe(name: string, handler: (payload: string) => void): Promise<void> {
    let channel: string;
    try {
      channel = await this.scoped(name);
    } catch (err) {
      throw this.fail(err);
    }
    this.handlers.set(channel, handler);
    if (this.reconnecting) return; // the reconnection LISTENs on every channel
    try {
      if (!this.listener) await this.connectListener();
      else await this.listener.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
    } catch (err) {
      throw this.fail(err);
    }
  }

  private async connectListener(): Promise<void> {
    // Bounded like the pool's clients: a reconnection to a frozen server must fail and be retried, not hang.
    const client = new pg.Client({ ...this.clientConfig(), query_timeout: this.options.queryTimeoutMs });
    client.on('notification', (msg) => {
      this.handlers.get(msg.channel)?.(msg.payload ?? '');
    });
    // An error or a clean close alike: notifications may have been missed, so drop caches and reconnect.
    // Before it is the listener, an error is the connect's or a LISTEN's, which reject below.
    const lost = (err?: Error) => {
      if (this.listener !== client) return;
      this.listener = null;
      void client.end().catch(() => undefined);
      this.onListenerLost?.();
      this.onListenerChange?.(false, `PostgreSQL at ${this.location}: ${err?.message ?? 'the connection closed'}`);
      this.scheduleReconnect();
    };
    client.on('error', lost);
    client.on('end', lost);
    try {
      await client.connect();
      for (const channel of this.handlers.keys()) await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
    } catch (err) {
      await client.end().catch(() => undefined);
      throw err;
    }
    this.listener = client;
  }

  private reconnecting = false;
  private closed = false;

  private scheduleReconnect(): void {
    if (this.closed) return;
    this.reconnecting = true;
    setTimeout(() => {
      if (this.closed) return;
      this.connectListener().then(
        () => {
          this.reconnecting = false;
          this.onListenerLost?.(); // anything published while we were away is unknown: drop caches again
          this.onListenerChange?.(true);
        },
        () => this.scheduleReconnect(),
      );
    }, 500).unref();
  }

  /** Called when the LISTEN connection drops: notifications may have been missed, so caches must be dropped. */
  private onListenerLost: (() => void) | undefined;
  /** Told when the LISTEN connection drops and when it is back (the outage log, src/http/outage.ts). */
  private onListenerChange: ((up: boolean, cause?: string) => void) | undefined;

  private async notify(name: string, payload: string): Promise<void> {
    await this.run('SELECT pg_notify(?, ?)', [await this.scoped(name), payload]);
  }

  /** Readiness. Bounded by the pool's connect timeout and the query timeout; /readyz adds its own shorter bound. */
  async ping(): Promise<boolean> {
    try {
      await this.one('SELECT 1');
      return true;
    } catch {
      return false;
    }
  }

  poolStats(): PoolStats {
    return { total: this.pool.totalCount, idle: this.pool.idleCount, waiting: this.pool.waitingCount };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.liveness.stop();
    const listener = this.listener;
    this.listener = null;
    await listener?.end().catch(() => undefined);
    await this.pool.end();
  }
}

/** An error that came from the server (it has a SQLSTATE): proof that it answers, unlike a socket or timeout error. */
const serverAnswered = (err: unknown): boolean => err instanceof pg.DatabaseError;

const timedOut = (err: unknown): boolean => err instanceof Error && /timeout/i.test(err.message);

/**
 * `op`'s outcome, or 'silent' when none came within `ms`. Judged in the check
 * phase (setImmediate), after the event loop has read its sockets: on a busy
 * node the timer can come due while the answer already waits in the socket.
 */
function within(op: Promise<unknown>, ms: number): Promise<'answered' | 'silent' | { error: unknown }> {
  return new Promise((resolve) => {
    let settled = false;
    const settle = (v: 'answered' | 'silent' | { error: unknown }) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(v);
    };
    const timer = setTimeout(() => setImmediate(() => settle('silent')), ms);
    op.then(() => settle('answered'), (error: unknown) => settle({ error }));
  });
}
