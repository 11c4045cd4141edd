import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import type { Db } from '../src/store/db.js';
import { migrate } from '../src/store/migrate.js';
import { dialectTypes, migrations } from '../src/store/migrations/index.js';
import { openDb } from '../src/store/open.js';
import { seatsRepository } from '../src/store/repositories/seats.js';
import { STORE } from './helpers.js';

/**
 * Issue 25, upgrading to migration 15: a seat taken before it (by a lease or by a checkout, which was never
 * recorded) gets lease_until = expires_at, so a lease issued before the upgrade still holds its seat against
 * the user's release until the lease's exp (a lease pushed expires_at to at least its exp).
 */

/** A database of its own on this project's store, given to fn, closed and removed after. */
async function withDatabase(fn: (db: Db) => Promise<void>): Promise<void> {
  if (STORE === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-m15-'));
    const db = await openDb(`sqlite:${join(dir, 'tollgate.db')}`);
    try {
      await fn(db);
    } finally {
      await db.close();
      rmSync(dir, { recursive: true, force: true });
    }
    return;
  }
  const base = inject('pgUrl');
  if (!base) throw new Error('PostgreSQL is not reachable (this test should have been skipped)');
  const schema = `m15_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  try {
    await admin.query(`CREATE SCHEMA ${schema}`);
    const url = new URL(base);
    url.searchParams.set('options', `-c search_path=${schema}`);
    const db = await openDb(url.toString(), { pgPoolSize: 2 });
    try {
      await fn(db);
    } finally {
      await db.close();
    }
  } finally {
    await admin.query(`DROP SCHEMA ${schema} CASCADE`);
    await admin.end();
  }
}

/** The schema a release of migration 14 left: the runner's own steps, stopped before 15. */
async function migrateTo(db: Db, last: number, now: number): Promise<void> {
  const types = dialectTypes(db.dialect);
  await db.script(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at ${types.ts} NOT NULL)`);
  for (const m of migrations.filter((m) => m.version <= last)) {
    await db.script(`BEGIN;\n${m.up(types)}\nINSERT INTO schema_migrations (version, name, applied_at) VALUES (${m.version}, '${m.name}', ${now});\nCOMMIT;`);
  }
}

describe('migration 15 on a database with seats (upgrade from schema 14)', () => {
  it('a seat taken before the upgrade is held until its expires_at: the user\'s release keeps it, then frees it once that passed', async () => {
    await withDatabase(async (db) => {
      const now = 1_800_000_000_000;
      const leaseExp = now + 7 * 86_400_000;
      await migrateTo(db, 14, now);
      await db.run('INSERT INTO apps (id, name, api_key, api_secret_hash, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)', ['app1', 'App', 'key1', 'hash', now, now]);
      await db.run('INSERT INTO users (id, app_id, username, username_key, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)', ['user1', 'app1', 'Ann', 'ann', now, now]);
      // A lease issued at schema 14 pushed its seat's expires_at to the lease's exp; a dead seat sits beside it.
      await db.run(
        'INSERT INTO seats (id, app_id, user_id, hardware_id, checked_out_at, heartbeat_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?, ?)',
        ['seat-leased', 'app1', 'user1', 'hw-leased', now, now, leaseExp, 'seat-dead', 'app1', 'user1', 'hw-dead', now - 9_000_000, now - 9_000_000, now - 1],
      );

      expect(await migrate(db, now)).toEqual(migrations.filter((m) => m.version > 14).map((m) => m.version));

      const rows = await db.all<{ id: string; lease_until: number | string | null; expires_at: number | string }>('SELECT id, lease_until, expires_at FROM seats ORDER BY id');
      expect(rows.map((r) => [r.id, r.lease_until === null ? null : Number(r.lease_until)])).toEqual([['seat-dead', now - 1], ['seat-leased', leaseExp]]);

      const seats = seatsRepository(db, db.dialect);
      const later = now + 60_000;
      const held = await seats.releaseByUser('user1', 'hw-leased', later);
      expect(held.held?.id).toBe('seat-leased');
      expect(held.held?.expiresAt).toBe(leaseExp);
      expect(held.gone).toBeUndefined();
      expect((await seats.releaseByUser('user1', 'hw-dead', later)).gone?.id).toBe('seat-dead');
      expect((await seats.releaseByUser('user1', 'hw-leased', leaseExp)).gone?.id).toBe('seat-leased');
    });
  });
});
