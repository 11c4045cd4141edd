import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { loadConfig } from '../src/config/index.js';
import { createTollgate, type Tollgate } from '../src/wiring.js';
import { ADMIN_TOKEN, STORE, fastHasher, harness, type Harness } from './helpers.js';
import { captureLog, until, type LogCapture } from './log-capture.js';
import { privatePostgres, privatePostgresMissing, type PrivatePostgres } from './private-postgres.js';

/**
 * Issue 15: "nothing says when Redis or PostgreSQL goes away or comes back".
 * PostgreSQL stopped under a node that serves no request at that moment: one
 * warning when it goes (learnt from the cache bus's connection), one info line
 * when it answers again, and nothing in between however long it lasts. The
 * cache bus lost alone (its backend terminated, the database still answering)
 * has its own pair of lines, and is no database outage. Redis's pair is proven
 * in redis-fallback.test.ts.
 */

const WARN = 40;
const INFO = 30;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

if (STORE === 'postgres' && privatePostgresMissing) console.warn(`\n!!! dependency-logs: the private PostgreSQL test is SKIPPED: ${privatePostgresMissing} !!!\n`);

describe.skipIf(STORE !== 'postgres' || privatePostgresMissing !== null)('PostgreSQL stopped and started under an idle node (a private server; PostgreSQL project only, root and the server binaries needed)', () => {
  let server: PrivatePostgres | undefined;
  let node: Tollgate | undefined;
  afterEach(async () => {
    await node?.close().catch(() => undefined);
    node = undefined;
    server?.remove();
    server = undefined;
  });

  it('one warning when it goes, with no request; one info line when it answers again; nothing in between', async () => {
    server = await privatePostgres();
    const log = captureLog();
    const config = loadConfig({ DATABASE_URL: server.url, TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN, LOG_LEVEL: 'info', ACCESS_LOG: 'off', RATE_LIMIT: 'off', PG_CONNECT_TIMEOUT_MS: '1000' });
    node = await createTollgate(config, { hasher: fastHasher, logStream: log.stream });
    await node.server.ready();
    const went = () => log.named('database unavailable');
    const back = () => log.named('database answers again');
    expect(went()).toEqual([]);

    server.stop();
    await until(() => went().length > 0);
    expect(went()).toHaveLength(1);
    expect(went()[0]!.level).toBe(WARN);
    expect(String(went()[0]!.cause)).toMatch(/^PostgreSQL at postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres: /);
    // A request refused meanwhile and a few probes: still the one warning, and nothing said it is back.
    expect((await node.server.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(503);
    await sleep(2500); // the point: probes go on for a while (PG_CONNECT_TIMEOUT_MS 1 s) and say nothing more
    expect(went()).toHaveLength(1);
    expect(back()).toEqual([]);

    server.start();
    await until(() => back().length > 0, 20_000);
    expect(back()).toHaveLength(1);
    expect(back()[0]!.level).toBe(INFO);
    expect((await node.server.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
    await sleep(1500); // the point: nothing more is said once it is back
    expect(went()).toHaveLength(1);
    expect(back()).toHaveLength(1);
    // The bus went with the database: its loss is the database's outage, not a line of its own.
    expect(log.lines.filter((l) => /cache bus/.test(l.msg))).toEqual([]);
  });
});

describe.skipIf(STORE !== 'postgres')('the cache bus lost alone (its backend terminated, the database answering; PostgreSQL project only: SQLite has no bus)', () => {
  let h: Harness | undefined;
  let admin: pg.Client | undefined;
  let schema = '';
  afterEach(async () => {
    await h?.close();
    h = undefined;
    await admin?.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin?.end();
    admin = undefined;
  });

  it('one warning, one info line when it listens again, and no database outage', async () => {
    schema = `d_${randomBytes(5).toString('hex')}`;
    const appName = `tollgate_bus_${schema}`;
    admin = new pg.Client({ connectionString: inject('pgUrl')! });
    await admin.connect();
    await admin.query(`CREATE SCHEMA ${schema}`);
    const url = new URL(inject('pgUrl')!);
    url.searchParams.set('options', `-c search_path=${schema}`);
    url.searchParams.set('application_name', appName);
    const log: LogCapture = captureLog();
    h = await harness({ env: { DATABASE_URL: url.toString(), LOG_LEVEL: 'info', ACCESS_LOG: 'off' }, logStream: log.stream });

    const killed = await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1 AND query LIKE 'LISTEN%'`, [appName]);
    expect(killed.rowCount).toBe(1);
    const lost = () => log.lines.filter((l) => /^cache bus lost/.test(l.msg));
    const again = () => log.lines.filter((l) => /^cache bus listening again/.test(l.msg));
    await until(() => again().length > 0);
    expect(lost()).toHaveLength(1);
    expect(lost()[0]!.level).toBe(WARN);
    expect(String(lost()[0]!.cause)).toMatch(/^PostgreSQL at /);
    expect(again()).toHaveLength(1);
    expect(again()[0]!.level).toBe(INFO);
    expect(log.named('database unavailable')).toEqual([]);
  });
});
