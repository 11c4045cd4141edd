import pg from 'pg';
import type { Db, MessageBus, Param, Queryable, Row } from './db.js';
import { UniqueViolation, UnstorableValue } from './db.js';

export interface PostgresOptions {
  url: string;
  /** Connections per node. */
  poolSize: number;
  /** Milliseconds before the server cancels a statement (0: no limit). */
  statementTimeoutMs: number;
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

/** 22021 character_not_in_repertoire, 22P05 untranslatable_character: e.g. a NUL in a text value. */
const UNSTORABLE = new Set(['22021', '22P05']);

function mapError(err: unknown): unknown {
  const code = err && typeof err === 'object' && 'code' in err ? String((err as { code: unknown }).code) : '';
  if (code === '23505') return new UniqueViolation((err as { constraint?: string }).constraint ?? 'unique');
  if (UNSTORABLE.has(code)) return new UnstorableValue((err as Error).message);
  return err;
}

function queryable(run: (text: string, values: unknown[]) => Promise<pg.QueryResult>): Queryable {
  const exec = async (sql: string, params: readonly Param[]) => {
    try {
      return await run(translate(sql), bind(params));
    } catch (err) {
      throw mapError(err);
    }
  };
  return {
    one: async <T = Row>(sql: string, params: readonly Param[] = []) => (await exec(sql, params)).rows[0] as T | undefined,
    all: async <T = Row>(sql: string, params: readonly Param[] = []) => (await exec(sql, params)).rows as T[],
    run: async (sql: string, params: readonly Param[] = []) => (await exec(sql, params)).rowCount ?? 0,
  };
}

/** Arbitrary constant: the advisory lock that serialises migrations across nodes starting at once. */
const MIGRATION_LOCK = 727_172_001;

export class PostgresDb implements Db {
  readonly dialect = 'postgres' as const;
  readonly pool: pg.Pool;
  private readonly q: Queryable;
  private listener: pg.Client | null = null;
  private readonly handlers = new Map<string, (payload: string) => void>();

  constructor(readonly options: PostgresOptions) {
    this.pool = new pg.Pool({
      connectionString: options.url,
      max: options.poolSize,
      types,
      ...(options.statementTimeoutMs > 0 && { statement_timeout: options.statementTimeoutMs }),
      ...(options.ssl && { ssl: options.ssl === 'no-verify' ? { rejectUnauthorized: false } : true }),
    });
    // An idle client's error (server restart, network) must not crash the process; the pool replaces it.
    this.pool.on('error', () => undefined);
    this.q = queryable((text, values) => this.pool.query(text, values));
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
    await this.pool.query(sql);
  }

  async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    let broken = false;
    try {
      await client.query('BEGIN');
      const result = await fn(queryable((text, values) => client.query(text, values)));
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {
        broken = true;
      });
      throw err;
    } finally {
      client.release(broken);
    }
  }

  /** Runs `fn` while holding the migration advisory lock (other nodes wait, then find nothing to do). */
  async exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
      try {
        return await fn();
      } finally {
        await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
      }
    } finally {
      client.release();
    }
  }

  readonly bus: MessageBus = {
    subscribe: (channel, handler) => this.subscribe(channel, handler),
    publish: (channel, payload) => this.notify(channel, payload),
    onGap: (handler) => {
      this.onListenerLost = handler;
    },
  };

  /** LISTEN on a dedicated connection; reconnects if it drops. */
  private async subscribe(channel: string, handler: (payload: string) => void): Promise<void> {
    this.handlers.set(channel, handler);
    if (!this.listener) await this.connectListener();
    else await this.listener.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
  }

  private async connectListener(): Promise<void> {
    const client = new pg.Client({
      connectionString: this.options.url,
      ...(this.options.ssl && { ssl: this.options.ssl === 'no-verify' ? { rejectUnauthorized: false } : true }),
    });
    client.on('notification', (msg) => {
      this.handlers.get(msg.channel)?.(msg.payload ?? '');
    });
    // An error or a clean close alike: notifications may have been missed, so drop caches and reconnect.
    const lost = () => {
      if (this.listener !== client) return;
      this.listener = null;
      void client.end().catch(() => undefined);
      this.onListenerLost?.();
      this.scheduleReconnect();
    };
    client.on('error', lost);
    client.on('end', lost);
    await client.connect();
    for (const channel of this.handlers.keys()) await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
    this.listener = client;
  }

  private scheduleReconnect(): void {
    setTimeout(() => {
      this.connectListener().then(
        () => this.onListenerLost?.(), // anything published while we were away is unknown: drop caches again
        () => this.scheduleReconnect(),
      );
    }, 500).unref();
  }

  /** Called when the LISTEN connection drops: notifications may have been missed, so caches must be dropped. */
  private onListenerLost: (() => void) | undefined;

  private async notify(channel: string, payload: string): Promise<void> {
    await this.pool.query('SELECT pg_notify($1, $2)', [channel, payload]);
  }

  async ping(): Promise<boolean> {
    try {
      await this.pool.query('SELECT 1');
      return true;
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    const listener = this.listener;
    this.listener = null;
    await listener?.end().catch(() => undefined);
    await this.pool.end();
  }
}
