/**
 * Two instances of one app on one machine share the lease and its state
 * files (amendment E). Before, each loaded the state once and wrote its stale
 * copy back (undoing the other's drop) and read one copy while the other was
 * being written (a spurious clock_rollback in 11 of 30 rounds). Now every
 * read and write re-reads and merges under <data>/state.lock.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileLeaseStore, TollgateError, TollgateLeaseError, type TollgateClient } from '../src/index.js';
import { merge, freshState } from '../src/state.js';
import { PASSWORD, startServer, type Server, type TestApp } from './server.js';

let server: Server;
let app: TestApp;
let dir: string;
beforeAll(async () => {
  server = await startServer();
  app = await server.app({ offline_grace_seconds: 3600, lease_renew_seconds: 600 });
  dir = mkdtempSync(join(tmpdir(), 'tollgate-sdk-shared-'));
});
afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const verdictOf = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (err: unknown) => (err instanceof TollgateLeaseError ? err.verdict : err instanceof TollgateError ? `verified ${err.code}` : `other: ${String(err)}`),
  );

describe('two instances of the app sharing one state', () => {
  it('30 rounds of concurrent checks: never a clock_rollback; a drop by one while the other runs holds for both', async () => {
    const folders = { data: join(dir, 'data'), state: join(dir, 'state') };
    let mono = 0;
    // Each instance has its own FileLeaseStore over the same folders, as two processes would.
    const instance = async (baseUrl: string): Promise<TollgateClient> =>
      server.client(app, { baseUrl, leaseStore: await FileLeaseStore.forApp(app.id, folders), clock: { now: Date.now, monotonic: () => mono } });
    const userId = await server.activeUser(app, 'alice');
    const online = await instance(server.url);
    online.auth = { username: 'alice', password: PASSWORD };
    await online.createLease();
    const a = await instance('http://127.0.0.1:9'); // offline
    const b = await instance(server.url);
    b.auth = { username: 'alice', password: PASSWORD };

    const rounds: string[][] = [];
    for (let round = 0; round < 30; round++) {
      mono += 1000;
      if (round === 15) {
        // B learns online that the user was banned (a drop code) while A checks its lease.
        await server.admin('POST', `/apps/${app.id}/bans`, { type: 'user', value: userId });
        rounds.push(await Promise.all([verdictOf(a.checkLease()), verdictOf(b.getAppContext()), verdictOf(a.checkLease())]));
        continue;
      }
      rounds.push(await Promise.all([verdictOf(a.checkLease()), verdictOf(b.checkLease()), verdictOf(a.checkLease())]));
    }
    expect(rounds.slice(0, 15).flat().every((v) => v === 'ok'), JSON.stringify(rounds.slice(0, 15))).toBe(true);
    expect(rounds[15]![1]).toBe('verified banned');
    expect(rounds.slice(16).flat().every((v) => v === 'dropped'), JSON.stringify(rounds.slice(16))).toBe(true);
    // A new instance started afterwards sees the drop too; the lock file is gone.
    expect(await verdictOf((await instance('http://127.0.0.1:9')).checkLease())).toBe('dropped');
    expect(existsSync(join(folders.data, 'state.lock'))).toBe(false);
  });
});

describe('merge', () => {
  const base = { ...freshState(), highest_seq: 3, runtime_used_ms: 100, highest_trusted_time: 5000, max_server_time: 5000, retired: ['k0'], known: ['k1'] };

  it('the same lease: max of times and runtime, OR of dropped, union of kids; highest_trusted_time never lowered', () => {
    const disk = { ...base, dropped: true, runtime_used_ms: 50, highest_trusted_time: 4000, retired: ['k0', 'k9'] };
    const mine = { ...base, dropped: false, runtime_used_ms: 200, highest_trusted_time: 6000, known: ['k1', 'k2'] };
    expect(merge(disk, mine, true)).toMatchObject({ dropped: true, runtime_used_ms: 200, highest_trusted_time: 6000, retired: ['k0', 'k9'], known: ['k1', 'k2'] });
  });

  it('another lease stored since (a new lease by the other instance): its seq, runtime and dropped win over stale memory', () => {
    const disk = { ...base, highest_seq: 4, runtime_used_ms: 0, dropped: false };
    const mine = { ...base, highest_seq: 3, runtime_used_ms: 900, dropped: true };
    expect(merge(disk, mine, true)).toMatchObject({ highest_seq: 4, runtime_used_ms: 0, dropped: false });
  });

  it('the newest key: the later not_before, and for the same key the first time it was seen', () => {
    const disk = { ...base, newest_not_before: 10, newest_seen_at: 500 };
    expect(merge(disk, { ...base, newest_not_before: 20, newest_seen_at: 900 }, true)).toMatchObject({ newest_not_before: 20, newest_seen_at: 900 });
    expect(merge(disk, { ...base, newest_not_before: 10, newest_seen_at: 400 }, true)).toMatchObject({ newest_not_before: 10, newest_seen_at: 400 });
  });
});
