import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import pg from 'pg';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { maskedUrl } from '../src/store/postgres-errors.js';
import { STORE, harness, type Harness } from './helpers.js';

/**
 * What an operator reads while the database is away: the cause of a 503 never carries the database
 * password, however the URL gives it.
 */

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

describe.skipIf(STORE !== 'postgres')('PostgreSQL password given as a query parameter', () => {
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
