import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import lightMyRequest, { type DispatchFunc, type InjectOptions as LightMyRequestOptions } from 'light-my-request';
import pg from 'pg';
import { expect, inject } from 'vitest';
import { loadConfig } from '../src/config/index.js';
import { argon2Hasher } from '../src/domain/password.js';
import type { Services } from '../src/domain/services.js';
import type { Store } from '../src/store/index.js';
import { createTollgate, type Tollgate } from '../src/wiring.js';

export const ADMIN_TOKEN = 'test-admin-token-0123456789';

/** Real argon2id at small parameters: the same code path as production, fast enough for hundreds of sign-ups. */
export const fastHasher = argon2Hasher({ memoryCost: 1024, timeCost: 1, parallelism: 1 });

/** A clock the test moves by hand. */
export class TestClock {
  constructor(public ms: number = Date.parse('2026-01-01T00:00:00.000Z')) {}
  readonly now = (): number => this.ms;
  advance(ms: number): void {
    this.ms += ms;
  }
  minutes(n: number): void {
    this.advance(n * 60_000);
  }
  iso(offsetMs = 0): string {
    return new Date(this.ms + offsetMs).toISOString();
  }
}

export interface AppSettings {
  name?: string;
  device_auth_enabled?: boolean;
  anonymous_access_allowed?: boolean;
  max_devices_per_user?: number;
  session_ttl_seconds?: number;
  password_min_length?: number;
  registration_open?: boolean;
}

export interface TestApp {
  id: string;
  name: string;
  apiKey: string;
  apiSecret: string;
  /** The application headers of SPEC 5.1. */
  headers: Record<string, string>;
}

export interface Harness {
  tollgate: Tollgate;
  clock: TestClock;
  dbPath: string;
  /** The harness's own database (a SQLite file, or a PostgreSQL schema): a test starts a second node on it. */
  databaseUrl: string;
  inject(opts: InjectOptions): Promise<LightMyRequestResponse>;
  /** An admin API call with the admin token. */
  admin(method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, payload?: unknown): Promise<LightMyRequestResponse>;
  /** A client API call with the app's headers (plus any extra headers). */
  client(app: TestApp, method: 'GET' | 'POST', url: string, payload?: unknown, headers?: Record<string, string>): Promise<LightMyRequestResponse>;
  createApp(settings?: AppSettings): Promise<TestApp>;
  /** Creates licenses and returns their codes. */
  licenses(app: TestApp, body?: Record<string, unknown>): Promise<string[]>;
  /** Creates one license and returns its id and code. */
  license(app: TestApp, body?: Record<string, unknown>): Promise<{ id: string; code: string }>;
  /** Signs a user up with a password; returns the user id. */
  signUp(app: TestApp, username: string, password?: string, hardwareId?: string): Promise<string>;
  /** Signs up and activates a 60-minute (or the given) license, so the membership is active. */
  activeUser(app: TestApp, username: string, password?: string, hardwareId?: string, license?: Record<string, unknown>): Promise<string>;
  login(app: TestApp, username: string, password?: string, hardwareId?: string): Promise<string>;
  ban(app: TestApp, type: string, value: string, extra?: Record<string, unknown>): Promise<string>;
  close(): Promise<void>;
}

export const PASSWORD = 'correct horse battery';

/** Which store this test project runs on (vitest.config.ts sets TEST_STORE per project). */
export const STORE = process.env.TEST_STORE === 'postgres' ? 'postgres' : 'sqlite';

/**
 * A database of its own for one harness: a SQLite file in a temporary
 * directory, or a schema of this run's PostgreSQL database. Creating and
 * migrating a schema per harness was most of a PostgreSQL harness's cost, so
 * a finished harness's schema is emptied (TRUNCATE, identities restarted) and
 * left in `harness_pool` for the next one, which finds it migrated. A schema
 * whose structure a test changed (a trigger, a dropped column: its catalog
 * fingerprint differs from the one taken when it was made) is dropped instead,
 * as is one that cannot be emptied within a few seconds.
 */
async function freshDatabase(dir: string): Promise<{ url: string; ready: () => Promise<void>; drop: () => Promise<void> }> {
  if (STORE === 'sqlite') return { url: `sqlite:${join(dir, 'tollgate.db')}`, ready: async () => undefined, drop: async () => undefined };
  const base = inject('pgUrl');
  if (!base) throw new Error('PostgreSQL is not reachable (this test should have been skipped)');
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  // No pool when the run's database was made without one (test/setup/postgres-global.ts): a schema per harness, dropped after.
  const pooled = (await admin.query("SELECT to_regclass('public.harness_pool') IS NOT NULL AS yes")).rows[0].yes === true;
  const taken = pooled
    ? await admin.query<{ name: string; fingerprint: string }>(
        'UPDATE harness_pool SET in_use = true WHERE name = (SELECT name FROM harness_pool WHERE NOT in_use LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING name, fingerprint',
      )
    : { rows: [] };
  let schema = taken.rows[0]?.name;
  let fingerprint = taken.rows[0]?.fingerprint ?? null;
  if (!schema) {
    schema = `h_${randomBytes(6).toString('hex')}`;
    await admin.query(`CREATE SCHEMA ${schema}`);
  }
  const url = new URL(base);
  url.searchParams.set('options', `-c search_path=${schema}`);
  const name = schema;
  return {
    url: url.toString(),
    // A new schema, once createTollgate migrated it: its fingerprint, to compare at the end.
    ready: async () => {
      if (pooled) fingerprint ??= await schemaFingerprint(admin, name);
    },
    drop: async () => {
      try {
        await recycle();
      } finally {
        await admin.end();
      }
    },
  };

  async function recycle(): Promise<void> {
    try {
      if (fingerprint !== null && (await schemaFingerprint(admin, name)) === fingerprint) {
        const tables = await admin.query<{ t: string }>(
          "SELECT quote_ident(tablename) AS t FROM pg_tables WHERE schemaname = $1 AND tablename <> 'schema_migrations'",
          [name],
        );
        await admin.query("SET lock_timeout = '5s'");
        if (tables.rows.length > 0) await admin.query(`TRUNCATE ${tables.rows.map((r) => `${name}.${r.t}`).join(', ')} RESTART IDENTITY CASCADE`);
        await admin.query('INSERT INTO harness_pool (name, fingerprint, in_use) VALUES ($1, $2, false) ON CONFLICT (name) DO UPDATE SET in_use = false', [name, fingerprint]);
        return;
      }
    } catch {
      // Not reusable (locked, or changed under the test): dropped below, as a schema always was.
    }
    await admin.query("SET lock_timeout = '0'");
    if (pooled) await admin.query('DELETE FROM harness_pool WHERE name = $1', [name]);
    await admin.query(`DROP SCHEMA ${name} CASCADE`);
  }
}

/**
 * A PostgreSQL database of its own on the run's server, dropped by `drop`. For a test that holds the migration
 * lock itself (pg-migration-lock): that lock is an advisory lock scoped to its database, and in the run's database
 * every other file's node would wait on it. Anything else takes a schema (harness, or a schema of its own), which
 * costs no DROP DATABASE on a server the whole run keeps busy. Named after the run's database: the run's teardown
 * (test/setup/postgres-global.ts) drops any that a failed or timed-out `afterEach` left.
 */
export async function ownPostgresDatabase(): Promise<{ url: URL; drop: () => Promise<void> }> {
  const base = inject('pgUrl');
  if (!base) throw new Error('PostgreSQL is not reachable (this test should have been skipped)');
  const name = `${new URL(base).pathname.slice(1)}_own_${randomBytes(6).toString('hex')}`;
  const run = async (sql: string) => {
    const admin = new pg.Client({ connectionString: base });
    await admin.connect();
    try {
      await admin.query(sql);
    } finally {
      await admin.end();
    }
  };
  await run(`CREATE DATABASE ${name}`);
  const url = new URL(base);
  url.pathname = `/${name}`;
  return { url, drop: () => run(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

/** The structure of a schema (relations, columns and defaults, constraints, indexes, triggers, functions), hashed. */
async function schemaFingerprint(admin: pg.Client, schema: string): Promise<string> {
  const { rows } = await admin.query<{ f: string }>(
    `SELECT md5(coalesce(string_agg(x, ',' ORDER BY x), '')) AS f FROM (
       SELECT c.relname::text || ':' || c.relkind::text FROM pg_class c WHERE c.relnamespace = $1::regnamespace
       UNION ALL
       SELECT c.relname::text || '.' || a.attname::text || ':' || a.atttypid::text || ':' || a.attnotnull::text || ':' || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
         FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
         WHERE c.relnamespace = $1::regnamespace AND a.attnum > 0 AND NOT a.attisdropped
       UNION ALL SELECT conname::text || ':' || pg_get_constraintdef(oid) FROM pg_constraint WHERE connamespace = $1::regnamespace
       UNION ALL SELECT t.tgname::text FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid WHERE c.relnamespace = $1::regnamespace
       UNION ALL SELECT p.proname::text FROM pg_proc p WHERE p.pronamespace = $1::regnamespace
     ) s(x)`,
    [schema],
  );
  return rows[0]!.f;
}

/** A fresh Tollgate on its own database, driven in-process; no state is shared between harnesses. */
export async function harness(options: { clock?: TestClock; env?: Record<string, string>; logStream?: NodeJS.WritableStream; fastPath?: boolean } = {}): Promise<Harness> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-test-'));
  const dbPath = join(dir, 'tollgate.db');
  // A test that brings its own database (its URL in env) gets nothing of the run's: no pooled schema to take, check
  // and give back in the run's database, which a loaded run can hold up past the hook's timeout.
  const own = options.env?.DATABASE_URL;
  const database = own === undefined ? await freshDatabase(dir) : { url: own, ready: async () => undefined, drop: async () => undefined };
  const clock = options.clock ?? new TestClock();
  // Rate limits are off unless a test turns them on: most tests make many failed attempts from one address on purpose.
  const config = loadConfig({ DATABASE_URL: database.url, TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN, LOG_LEVEL: 'silent', RATE_LIMIT: 'off', ...options.env });
  const tollgate = await createTollgate(config, { clock: clock.now, hasher: fastHasher, reuseCompiledSchemas: true, ...(options.logStream && { logStream: options.logStream }), ...(options.fastPath === false && { fastPath: false }) });
  await tollgate.server.ready();
  await database.ready();

  // Through the server's own request handler, as a socket's request arrives: GET /app_context meets the fast path
  // (src/http/fast-path.ts) first, as in production. Fastify's inject would start at its router and skip it.
  const dispatch = tollgate.server.server.listeners('request')[0] as DispatchFunc;
  const inject = (opts: InjectOptions) => lightMyRequest(dispatch, opts as LightMyRequestOptions) as Promise<LightMyRequestResponse>;
  const h: Harness = {
    tollgate,
    clock,
    dbPath,
    databaseUrl: database.url,
    inject,
    // Through h.inject, so a test can wrap it (test/openapi-answers.test.ts records every answer).
    admin: (method, url, payload) =>
      h.inject({ method, url: `/admin/v1${url}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, ...(payload !== undefined && { payload: payload as object }) }),
    client: (app, method, url, payload, headers = {}) =>
      h.inject({ method, url, headers: { ...app.headers, ...headers }, ...(payload !== undefined && { payload: payload as object }) }),
    async createApp(settings = {}) {
      const res = await h.admin('POST', '/apps', { name: 'Test app', ...settings });
      if (res.statusCode !== 201) throw new Error(`createApp: ${res.statusCode} ${res.body}`);
      const body = res.json();
      return { id: body.id, name: body.name, apiKey: body.api_key, apiSecret: body.api_secret, headers: { 'x-api-key': body.api_key, 'x-api-secret': body.api_secret } };
    },
    async licenses(app, body = {}) {
      const res = await h.admin('POST', `/apps/${app.id}/licenses`, { count: 1, minutes: 60, ...body });
      if (res.statusCode !== 201) throw new Error(`licenses: ${res.statusCode} ${res.body}`);
      return res.json().licenses.map((l: { code: string }) => l.code);
    },
    async license(app, body = { minutes: 60 }) {
      const res = await h.admin('POST', `/apps/${app.id}/licenses`, { count: 1, ...body });
      if (res.statusCode !== 201) throw new Error(`license: ${res.statusCode} ${res.body}`);
      const { id, code } = res.json().licenses[0];
      return { id, code };
    },
    async signUp(app, username, password = PASSWORD, hardwareId) {
      const res = await h.client(app, 'POST', '/sign_up', { username, password, ...(hardwareId !== undefined && { hardware_id: hardwareId }) });
      if (res.statusCode !== 200) throw new Error(`signUp: ${res.statusCode} ${res.body}`);
      return res.json().id;
    },
    async activeUser(app, username, password = PASSWORD, hardwareId, license = {}) {
      const id = await h.signUp(app, username, password, hardwareId);
      const [code] = await h.licenses(app, license);
      const res = await h.client(app, 'POST', '/activate_license', { code, username, password, ...(hardwareId !== undefined && { hardware_id: hardwareId }) });
      if (res.statusCode !== 200) throw new Error(`activate: ${res.statusCode} ${res.body}`);
      return id;
    },
    async login(app, username, password = PASSWORD, hardwareId) {
      const res = await h.client(app, 'POST', '/auth/login', { credentials: { username, password }, ...(hardwareId !== undefined && { hardware_id: hardwareId }) });
      if (res.statusCode !== 200) throw new Error(`login: ${res.statusCode} ${res.body}`);
      return res.json().session_token;
    },
    async ban(app, type, value, extra = {}) {
      const res = await h.admin('POST', `/apps/${app.id}/bans`, { type, value, ...extra });
      if (res.statusCode !== 201) throw new Error(`ban: ${res.statusCode} ${res.body}`);
      return res.json().id;
    },
    async close() {
      await tollgate.close();
      await database.drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return h;
}

const ECHO_CHANNEL = 'tollgate_test_echo';
/** Per bus: the probes waited for, and the subscription (made once; a failed one is tried again by the next call). */
const echoes = new WeakMap<object, { waiting: Map<string, () => void>; subscribed: Promise<void> }>();

/**
 * Resolves once this harness's node has heard every change notice published before the call. On PostgreSQL a node
 * hears notices over LISTEN, later than the write that sent them (its own too, which it now skips: caches.ts): a
 * test that warms a cache after another node's write can see the late notice drop it again. Notices reach a
 * listener in commit order, so hearing a probe sent now means every earlier one has been heard. At once on SQLite
 * (one node, no bus).
 */
export async function noticesHeard(h: Harness): Promise<void> {
  const bus = h.tollgate.services.store.db.bus;
  if (!bus) return;
  let echo = echoes.get(bus);
  if (!echo) {
    const waiting = new Map<string, () => void>();
    const subscribed = bus.subscribe(ECHO_CHANNEL, (probe) => waiting.get(probe)?.());
    echo = { waiting, subscribed };
    echoes.set(bus, echo);
    subscribed.catch(() => echoes.delete(bus));
  }
  await echo.subscribed;
  const probe = randomBytes(8).toString('hex');
  let timer: NodeJS.Timeout | undefined;
  const heard = new Promise<void>((resolve, reject) => {
    timer = setTimeout(() => reject(new Error('noticesHeard: the probe was not heard back within 5 s')), 5000);
    echo.waiting.set(probe, resolve);
  });
  try {
    await bus.publish(ECHO_CHANNEL, probe);
    await heard;
  } finally {
    clearTimeout(timer); // after a failed publish too: the probe's promise then stays pending, never rejected unhandled
    echo.waiting.delete(probe);
  }
}

/** Asserts the error shape of DECISIONS.md and returns the body. */
export function errorOf(res: LightMyRequestResponse): { detail: string; code: string; errors?: { field: string; message: string }[] } {
  const body = res.json();
  if (typeof body.detail !== 'string' || typeof body.code !== 'string') throw new Error(`not an error body: ${res.body}`);
  return body;
}

/** The answer is this error: its status, its code, and (a 422) the fields it names. */
export function expectError(res: LightMyRequestResponse, status: number, code: string): ReturnType<typeof errorOf> {
  expect(res.statusCode, res.body).toBe(status);
  const body = errorOf(res);
  expect(body.code, res.body).toBe(code);
  if (status === 422) expect(body.errors?.length, res.body).toBeGreaterThan(0);
  return body;
}

/**
 * The store behind these services, writable. The domain holds it read-only (only the unit of work writes,
 * src/domain/unit-of-work.ts); it is the same object, so a test that sets rows up or wraps its transactions
 * here acts on what the server uses.
 */
export const writableStore = (services: Services): Store => services.store as Store;
