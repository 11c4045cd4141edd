import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import pg from 'pg';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { StoreOutage } from '../src/http/outage.js';
import { StoreUnavailable } from '../src/store/db.js';
import { maskedUrl } from '../src/store/postgres-errors.js';
import { ADMIN_TOKEN, STORE, harness, type Harness } from './helpers.js';
import { waitFor } from './wait.js';

/**
 * What an operator reads while the database is away: lines on its changes of state, not one per
 * refused request (466 warnings and 150 readiness errors in 40 s on one node, before), and never the
 * database password, however the URL gives it.
 */

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The server's log lines, parsed, as they are written. */
function capture(): { stream: Writable; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  let partial = '';
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      const text = partial + chunk.toString();
      const parts = text.split('\n');
      partial = parts.pop()!;
      for (const line of parts) if (line.trim()) lines.push(JSON.parse(line));
      done();
    },
  });
  return { stream, lines };
}

describe('maskedUrl', () => {
  it.each([
    ['postgres://u:Sup3rSecret@db/tg', 'postgres://u:***@db/tg'],
    ['postgres://postgres@127.0.0.1:55432/tg?password=Sup3rSecret', 'postgres://postgres@127.0.0.1:55432/tg?password=***'],
    ['postgresql://u@db/tg?sslmode=require&sslpassword=Sup3rSecret&application_name=x', 'postgresql://u@db/tg?sslmode=require&sslpassword=***&application_name=x'],
    ['postgres://u:Sup3rSecret@db/tg?PASSWORD=Sup3rSecret', 'postgres://u:***@db/tg?PASSWORD=***'],
  ])('%s is printed as %s', (url, printed) => {
    expect(maskedUrl(url)).toBe(printed);
  });

  it('a URL that does not parse still loses its password, in the user part and in a query parameter', () => {
    const printed = maskedUrl('postgres://u:Sup3rSecret@[bad/tg?password=Sup3rSecret&x=1');
    expect(printed).not.toContain('Sup3rSecret');
    expect(printed).toContain('x=1');
  });
});

describe.skipIf(STORE !== 'postgres')('PostgreSQL password given as a query parameter (PostgreSQL project only)', () => {
  let h: Harness | undefined;
  let admin: pg.Client | undefined;
  let schema = '';
  afterEach(async () => {
    await h?.close();
    h = undefined;
    await admin?.query('ROLLBACK').catch(() => undefined);
    await admin?.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin?.end();
    admin = undefined;
  });

  it('a 503 logs the database URL with ?password=*** , never the password', async () => {
    schema = `m_${randomBytes(5).toString('hex')}`;
    admin = new pg.Client({ connectionString: inject('pgUrl')! });
    await admin.connect();
    await admin.query(`CREATE SCHEMA ${schema}`);
    const url = new URL(inject('pgUrl')!);
    url.searchParams.set('options', `-c search_path=${schema}`);
    url.searchParams.set('password', 'Sup3rSecret'); // trust authentication: accepted and unused
    const log = capture();
    h = await harness({ env: { DATABASE_URL: url.toString(), LOG_LEVEL: 'warn', PG_STATEMENT_TIMEOUT_MS: '300' }, logStream: log.stream });
    // The admin list waits on the table lock until the statement timeout: a 503 whose cause names the URL.
    await admin.query('BEGIN');
    await admin.query(`LOCK TABLE ${schema}.apps IN ACCESS EXCLUSIVE MODE`);
    const res = await h.admin('GET', '/apps');
    await admin.query('ROLLBACK');
    expect(res.statusCode, res.body).toBe(503);
    const warn = log.lines.find((l) => l.msg === 'database unavailable');
    expect(warn, JSON.stringify(log.lines)).toBeDefined();
    expect(String(warn!.cause)).toContain('password=***');
    expect(JSON.stringify(log.lines)).not.toContain('Sup3rSecret');
  });
});

describe('a database that refuses every request', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it('200 requests (admin API and /readyz) write one warning, not 200; when it answers again, one info line with the count', async () => {
    const log = capture();
    h = await harness({ env: { LOG_LEVEL: 'info', ACCESS_LOG: 'off' }, logStream: log.stream }); // the outage's own lines, not one per request
    const db = h.tollgate.services.store.db as unknown as Record<'one' | 'all' | 'run' | 'transaction' | 'ping', (...args: unknown[]) => Promise<unknown>>;
    let down = true;
    for (const method of ['one', 'all', 'run', 'transaction'] as const) {
      const real = db[method]!.bind(db);
      db[method] = (...args: unknown[]) => (down ? Promise.reject(new StoreUnavailable('SQLite: disk I/O error (SQLITE_IOERR)')) : real(...args));
    }
    const ping = db.ping!.bind(db);
    db.ping = () => (down ? Promise.resolve(false) : ping());
    const before = log.lines.length;
    const statuses: number[] = [];
    for (let batch = 0; batch < 10; batch++) {
      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => h!.inject(i % 4 === 0 ? { method: 'GET', url: '/readyz' } : { method: 'GET', url: '/admin/v1/apps', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })));
      statuses.push(...answers.map((a) => a.statusCode));
    }
    expect(new Set(statuses)).toEqual(new Set([503]));
    const during = log.lines.slice(before);
    expect(during.map((l) => l.msg), JSON.stringify(during.slice(0, 5))).toEqual(['database unavailable']);
    expect(during[0]!.level).toBe(40);
    expect(String(during[0]!.cause)).toMatch(/SQLITE_IOERR|readiness/);

    down = false;
    await waitFor('"database answers again"', () => log.lines.some((l) => l.msg === 'database answers again'));
    const back = log.lines.filter((l) => l.msg === 'database answers again');
    expect(back).toHaveLength(1);
    expect(back[0]!.level).toBe(30);
    expect(back[0]!.refused).toBe(200);
    expect((await h.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
    // A new outage is reported again.
    down = true;
    expect((await h.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(503);
    expect(log.lines.filter((l) => l.msg === 'database unavailable')).toHaveLength(2);
    down = false;
  });
});

describe('StoreOutage', () => {
  it('while refusals go on: at most one summary per interval, with the count; no "answers again" while requests are still refused', async () => {
    const lines: [string, string, Record<string, unknown>][] = [];
    const log = { warn: (obj: object, msg: string) => void lines.push(['warn', msg, obj as Record<string, unknown>]), info: (obj: object, msg: string) => void lines.push(['info', msg, obj as Record<string, unknown>]) };
    let answers = true; // reads answer, writes fail: a locked SQLite file
    const sut = new StoreOutage(log, async () => answers, { probeMs: 20, summaryMs: 200, probeWithinMs: 100 });
    try {
      const start = Date.now();
      let refused = 0;
      while (Date.now() - start < 700) {
        sut.refused('SQLite: database is locked (SQLITE_BUSY)');
        refused++;
        await sleep(5); // the point: refusals go on for 700 ms
      }
      expect(lines[0]).toEqual(['warn', 'database unavailable', { reqId: undefined, cause: 'SQLite: database is locked (SQLITE_BUSY)' }]);
      const summaries = lines.filter(([, msg]) => msg === 'database still unavailable');
      expect(summaries.length).toBeGreaterThanOrEqual(2);
      expect(summaries.length).toBeLessThanOrEqual(4); // 700 ms / 200 ms
      expect(lines.some(([, msg]) => msg === 'database answers again')).toBe(false);
      await waitFor('"database answers again"', () => lines.some(([, msg]) => msg === 'database answers again'));
      const counted = summaries.reduce((n, [, , obj]) => n + Number(obj.refused), 0);
      expect(counted).toBeLessThan(refused);
      expect(lines.at(-1)).toEqual(['info', 'database answers again', { refused }]);
    } finally {
      sut.close();
    }
  });
});
