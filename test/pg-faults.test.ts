import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import { StoreUnavailable } from '../src/store/db.js';
import { leasesRepository } from '../src/store/repositories/leases.js';
import type { PostgresDb } from '../src/store/postgres.js';
import { PASSWORD, STORE, expectError, harness, type Harness, type TestApp } from './helpers.js';
import { waitFor } from './wait.js';

/**
 * PostgreSQL drops the node's connections (pg_terminate_backend: what a restart, a failover or an
 * operator does to them): the process survives (no unhandled 'error' event), the requests that
 * lost their connection are answered 503 service_unavailable (never 500), and the node serves again
 * at once, with no restart. Only this test's own backends are terminated: each test names its
 * connections with an application_name of its own.
 */

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(STORE !== 'postgres')('PostgreSQL connections dropped under the node', () => {
  let h: Harness | undefined;
  let admin: pg.Client;
  let schema: string;
  let appName: string;
  const uncaught: unknown[] = [];
  const record = (err: unknown) => void uncaught.push(err);

  /** Terminates every backend of this test's node; returns how many. */
  async function terminate(filter = ''): Promise<number> {
    const res = await admin.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid() ${filter}`,
      [appName],
    );
    return res.rowCount ?? 0;
  }

  /** This test's node's backends waiting for a lock. `admin` may be inside a transaction, whose view of pg_stat_activity is fixed at its first read: cleared first. */
  async function lockWaits(): Promise<number> {
    await admin.query('SELECT pg_stat_clear_snapshot()');
    const res = await admin.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'",
      [appName],
    );
    return res.rows[0]!.n;
  }

  beforeEach(async () => {
    uncaught.length = 0;
    process.on('uncaughtException', record);
    process.on('unhandledRejection', record);
    schema = `f_${randomBytes(5).toString('hex')}`;
    appName = `tollgate_faults_${schema}`;
    admin = new pg.Client({ connectionString: inject('pgUrl')! });
    await admin.connect();
    await admin.query(`CREATE SCHEMA ${schema}`);
    const url = new URL(inject('pgUrl')!);
    url.searchParams.set('options', `-c search_path=${schema}`);
    url.searchParams.set('application_name', appName);
    h = await harness({ env: { DATABASE_URL: url.toString() } });
  });

  afterEach(async () => {
    await h?.close();
    h = undefined;
    await admin.query(`DROP SCHEMA ${schema} CASCADE`);
    await admin.end();
    process.off('uncaughtException', record);
    process.off('unhandledRejection', record);
  });

  it('a lease sequence for a user deleted by a transaction that commits under it: none (the foreign key refusal), not an error', async () => {
    const app = await h!.createApp();
    const userId = await h!.signUp(app, 'leaving');
    await admin.query('BEGIN');
    await admin.query(`DELETE FROM ${schema}.users WHERE id = $1`, [userId]);
    // The INSERT … SELECT still sees the user; its foreign key check waits for the DELETE, then finds it gone.
    const seq = leasesRepository(h!.tollgate.services.store.db).nextSeq({ appId: app.id, userId, hwidHash: 'h', leaseId: 'l', issuedAt: Date.now() });
    let ended = false;
    void seq.then(() => (ended = true), () => (ended = true));
    // COMMIT only once the INSERT … SELECT waits for the DELETE's row lock: committed earlier, the INSERT would not
    // see the user at all, and the case under test (the user seen, then found gone) would not be the one run.
    await waitFor("the INSERT … SELECT to wait for the DELETE's lock", async () => {
      if (ended) throw new Error('the INSERT … SELECT ended before the DELETE committed: it never waited for it');
      return (await lockWaits()) > 0;
    });
    await admin.query('COMMIT');
    await expect(seq).resolves.toBeUndefined();
  });

  it('a connection terminated between two statements of a transaction fails that transaction with StoreUnavailable, and the node serves on', async () => {
    const app = await h!.createApp();
    const db = h!.tollgate.services.store.db;
    const attempt = db.transaction(async (tx) => {
      const { pid } = (await tx.one<{ pid: number }>('SELECT pg_backend_pid() AS pid'))!;
      expect(await terminate()).toBeGreaterThan(0);
      // The server's FATAL reaches the client while it sits idle in the transaction: the backend writes it before it
      // leaves pg_stat_activity, and the turn after the poll's own answer has read it (it was readable first).
      await waitFor('the terminated backend to exit', async () => (await admin.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid])).rowCount === 0);
      await new Promise((r) => setImmediate(r));
      await tx.one('SELECT 2');
    });
    await expect(attempt).rejects.toBeInstanceOf(StoreUnavailable);
    // Nothing says an unhandled 'error' will not come (the socket's end follows the FATAL): a short while for one to show.
    await sleep(50);
    expect(uncaught, 'unhandled error: the node would have died').toEqual([]);
    expect((await h!.client(app, 'POST', '/sign_up', { username: 'after_kill', password: PASSWORD })).statusCode).toBe(200);
  });

  it('a sign-up whose connection is terminated mid-statement is answered 503 service_unavailable, and the next sign-up works', async () => {
    const app = await h!.createApp();
    // Holds the sign-up's INSERT inside its transaction long enough to terminate it there.
    await admin.query(`CREATE FUNCTION ${schema}.slow() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(5); RETURN NEW; END $$`);
    await admin.query(`CREATE TRIGGER slow BEFORE INSERT ON ${schema}.users FOR EACH ROW EXECUTE FUNCTION ${schema}.slow()`);
    const pending = h!.client(app, 'POST', '/sign_up', { username: 'killed', password: PASSWORD });
    let killed = 0;
    for (let i = 0; i < 100 && killed === 0; i++) {
      await sleep(50);
      killed = await terminate(`AND wait_event = 'PgSleep'`);
    }
    expect(killed).toBe(1);
    const res = await pending;
    expectError(res, 503, 'service_unavailable');
    expect(res.headers['retry-after']).toBe('2');

    await admin.query(`DROP TRIGGER slow ON ${schema}.users`);
    expect((await h!.client(app, 'POST', '/sign_up', { username: 'killed', password: PASSWORD })).statusCode).toBe(200);
    expect(uncaught).toEqual([]);
  });

  it('under parallel sign-ups and activations with backends terminated again and again: only 2xx or 503, no crash, no acknowledged write lost, LISTEN back', async () => {
    const t = h!;
    const app = await t.createApp();
    const codes = await t.licenses(app, { count: 400, minutes: 60 });
    const statuses = new Map<number, number>();
    const bodies: unknown[] = [];
    const signedUp: string[] = [];
    const activated: string[] = [];
    let next = 0;
    let stop = false;
    const note = (status: number, body: string) => {
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
      if (status !== 200) bodies.push(JSON.parse(body));
    };
    const worker = async () => {
      while (!stop && next < codes.length) {
        const n = next++;
        const username = `load_${n}`;
        const signed = await t.client(app, 'POST', '/sign_up', { username, password: PASSWORD });
        note(signed.statusCode, signed.body);
        if (signed.statusCode !== 200) continue;
        signedUp.push(username);
        const act = await t.client(app, 'POST', '/activate_license', { code: codes[n], username, password: PASSWORD });
        note(act.statusCode, act.body);
        if (act.statusCode === 200) activated.push(codes[n]!);
      }
    };
    let terminated = 0;
    let killing = true;
    const killer = async () => {
      while (killing) {
        await sleep(40 + Math.random() * 160); // some gaps long enough for a sign-up and its activation on a loaded machine
        terminated += await terminate();
      }
    };
    const running = [...Array.from({ length: 8 }, worker), killer()];
    await sleep(2500);
    // The terminations go on until one activation is acknowledged under them (12.5 s at most): on a loaded machine
    // 2.5 s may hold none (the test failed 4 runs in 10 so, on the code before and after), and the loss check
    // below must check writes acknowledged while backends were being terminated, not after.
    for (const end = Date.now() + 10_000; activated.length === 0 && Date.now() < end; ) await sleep(50);
    killing = false;
    stop = true;
    await Promise.all(running);

    expect(terminated).toBeGreaterThan(0);
    expect(uncaught, 'unhandled error: the node would have died').toEqual([]);
    expect([...statuses.keys()].filter((s) => s !== 200 && s !== 503), JSON.stringify(bodies.slice(0, 5))).toEqual([]);
    for (const body of bodies) expect(body).toMatchObject({ code: 'service_unavailable' });
    expect(signedUp.length).toBeGreaterThan(0);
    expect(activated.length).toBeGreaterThan(0); // else the check that none was lost below checks nothing

    // Serves again by itself (the last termination may still be reaching idle pooled clients: a few
    // 503s, bounded, then 200, with no restart), and what it acknowledged is there.
    let after = 0;
    for (let i = 0; i < 20 && after !== 200; i++) {
      if (i > 0) await sleep(100);
      after = (await t.client(app, 'POST', '/sign_up', { username: 'after_load', password: PASSWORD })).statusCode;
      expect([200, 503]).toContain(after);
    }
    expect(after).toBe(200);
    const db = t.tollgate.services.store.db;
    const users = await db.all<{ username: string }>('SELECT username FROM users WHERE app_id = ?', [app.id]);
    expect(users.map((u) => u.username)).toEqual(expect.arrayContaining(signedUp));
    const used = await db.all<{ code: string }>('SELECT code FROM licenses WHERE app_id = ? AND used_by_user_id IS NOT NULL', [app.id]);
    expect(used.map((l) => l.code)).toEqual(expect.arrayContaining(activated));

    // The LISTEN connection was terminated too: it comes back and delivers again.
    const bus = (db as PostgresDb).bus;
    const heard: string[] = [];
    await bus.subscribe('faults_probe', (payload) => heard.push(payload));
    for (let i = 0; i < 100 && heard.length === 0; i++) {
      await bus.publish('faults_probe', 'ping').catch(() => undefined);
      await sleep(100);
    }
    expect(heard).toContain('ping');
  });
});
