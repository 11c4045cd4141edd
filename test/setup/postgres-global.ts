import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The fresh database of this run, or null when no PostgreSQL answers (every test is then skipped). */
    pgUrl: string | null;
  }
}

const DEFAULT_SERVER = 'postgres://postgres@127.0.0.1:5432/postgres';

function banner(lines: string[]): void {
  const width = Math.max(...lines.map((l) => l.length)) + 4;
  const bar = '!'.repeat(width);
  process.stderr.write(`\n${bar}\n${lines.map((l) => `! ${l.padEnd(width - 4)} !`).join('\n')}\n${bar}\n\n`);
}

/**
 * Once per run: find a PostgreSQL server (TEST_DATABASE_URL, else 127.0.0.1:5432),
 * create a database for this run alone, and drop it at the end. Without a
 * server, say so loudly; the tests of this project are then marked skipped.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const serverUrl = process.env.TEST_DATABASE_URL ?? DEFAULT_SERVER;
  const admin = new pg.Client({ connectionString: serverUrl, connectionTimeoutMillis: 3000 });
  try {
    await admin.connect();
  } catch (err) {
    if (process.env.REQUIRE_POSTGRES === '1') {
      throw new Error(`REQUIRE_POSTGRES=1 but PostgreSQL is not reachable at ${serverUrl.replace(/:[^:@/]*@/, ':***@')}: ${(err as Error).message}`);
    }
    banner([
      'PostgreSQL IS NOT REACHABLE: every PostgreSQL test of this run is SKIPPED, not passed.',
      `Tried ${serverUrl.replace(/:[^:@/]*@/, ':***@')}: ${(err as Error).message}`,
      'Set TEST_DATABASE_URL or start PostgreSQL on 127.0.0.1:5432 to run them.',
    ]);
    project.provide('pgUrl', null);
    return async () => undefined;
  }
  const name = `tollgate_test_${randomBytes(6).toString('hex')}`;
  await admin.query(`CREATE DATABASE ${name}`);
  // Migrated schemas that harnesses finished with, emptied, for the next harness to take (test/helpers.ts).
  const run = new pg.Client({ connectionString: Object.assign(new URL(serverUrl), { pathname: `/${name}` }).toString() });
  await run.connect();
  await run.query('CREATE TABLE harness_pool (name TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, in_use BOOLEAN NOT NULL)');
  await run.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  project.provide('pgUrl', url.toString());
  process.stderr.write(`PostgreSQL tests run in the fresh database ${name} (dropped afterwards)\n`);
  return async () => {
    // Tests' own databases (ownPostgresDatabase in test/helpers.ts) that a failed test did not drop.
    const own = await admin.query<{ datname: string }>('SELECT datname FROM pg_database WHERE starts_with(datname, $1)', [`${name}_own_`]);
    for (const { datname } of own.rows) await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(datname)} WITH (FORCE)`);
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  };
}
