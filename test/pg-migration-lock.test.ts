import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { MIGRATION_LOCK } from '../src/store/postgres.js';
import { STORE, harness, ownPostgresDatabase, type Harness } from './helpers.js';
import { waitFor } from './wait.js';

/**
 * Nodes starting at once on one PostgreSQL database: one migrates under the migration advisory lock while the
 * others wait for it (src/store/migrate.ts). The wait lasts as long as that migration, so the statement timeout
 * (PG_STATEMENT_TIMEOUT_MS, 10 s by default) must not cut it: a node whose wait was cut failed to start.
 */
describe('the migration lock', () => {
  let h: Harness | undefined;
  let holder: pg.Client | undefined;
  let own: Awaited<ReturnType<typeof ownPostgresDatabase>> | undefined;
  afterEach(async () => {
    await holder?.end();
    holder = undefined;
    await h?.close();
    h = undefined;
    await own?.drop();
    own = undefined;
  }, 60_000); // DROP DATABASE on a loaded server

  it.runIf(STORE === 'postgres')('a node starting while another holds the lock waits past its statement, lock and query timeouts, then starts (PostgreSQL project only)', async () => {
    // A database of its own: advisory locks are per database, and other files' nodes migrate in the run's.
    own = await ownPostgresDatabase();
    holder = new pg.Client({ connectionString: own.url.toString() });
    await holder.connect();
    await holder.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]); // another node, migrating
    let settled = false;
    // Every timeout that could cut the wait short: the server's statement timeout, a lock timeout set outside Tollgate
    // (here in the URL; a role's or database's default alike), and the client's query timeout.
    const url = new URL(own.url);
    url.searchParams.set('options', '-c lock_timeout=300');
    const starting = harness({ env: { DATABASE_URL: url.toString(), PG_STATEMENT_TIMEOUT_MS: '300', PG_QUERY_TIMEOUT_MS: '600' } });
    starting.then(() => (settled = true), () => (settled = true));
    const waiting = async () =>
      (await holder!.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory'`,
      )).rows[0]!.n > 0;
    await waitFor('the starting node to wait on the migration lock', waiting);
    // The point of the case: more than three of its statement and lock timeouts, and its query timeout, go by while it waits.
    await new Promise((r) => setTimeout(r, 1_000));
    expect(settled, 'the start ended while the lock was held').toBe(false);
    expect(await waiting()).toBe(true);
    await holder.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
    h = await starting;
    expect((await h.admin('GET', '/apps')).statusCode).toBe(200);
  }, 60_000); // a database of its own: migrated from scratch inside the test (about 7 s on a loaded machine)
});
