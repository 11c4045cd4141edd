/**
 * The SDK error model (docs/signing.md, "The SDK error model") and
 * checkAccess() against the real server: a network failure is a
 * TollgateNetworkError (never a bare TypeError that also catches the app's
 * own bugs), a LeaseError names its times and the online failure behind it,
 * and checkAccess() renews the lease online only when one is due.
 */
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryLeaseStore, TollgateException, TollgateLeaseError, TollgateNetworkError } from '../src/index.js';
import { freePort, PASSWORD, startServer, type Server, type TestApp } from './server.js';

const GRACE_S = 3600;
let server: Server;
let app: TestApp;
let users = 0;

beforeAll(async () => {
  server = await startServer();
  app = await server.app({ offline_grace_seconds: GRACE_S, lease_renew_seconds: 600 });
});
afterAll(() => server?.stop());

async function user() {
  const username = `em${++users}`;
  const userId = await server.activeUser(app, username);
  return { userId, auth: { username, password: PASSWORD } };
}

describe('the error model', () => {
  it('no server: TollgateNetworkError with reason connection, a TollgateException, not a TypeError (issue 27.3)', async () => {
    const client = server.client(app, { baseUrl: `http://127.0.0.1:${await freePort()}` });
    const err = await client.getAppContext(null).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TollgateNetworkError);
    expect(err).toBeInstanceOf(TollgateException);
    expect(err).not.toBeInstanceOf(TypeError);
    expect((err as TollgateNetworkError).reason).toBe('connection');
    expect((err as Error).cause).toBeDefined(); // fetch's own error, for diagnostics
  });

  it('connectTimeoutMs: a connect that never completes ends as a timeout, long before the total timeout', async () => {
    // A listener with a full accept queue: Linux drops further SYNs, so a connect hangs (Node cannot listen
    // without accepting; python3 runs the other SDK's suite here anyway).
    const py = spawn('python3', ['-c', 'import socket,time\ns=socket.socket();s.bind(("127.0.0.1",0));s.listen(0)\nprint(s.getsockname()[1],flush=True)\ntime.sleep(60)']);
    try {
      const port = await new Promise<number>((done) => py.stdout.once('data', (d: Buffer) => done(Number(String(d).trim()))));
      const filler = connect(port, '127.0.0.1'); // takes the one slot of the queue
      await new Promise((r) => filler.once('connect', r));
      const client = server.client(app, { baseUrl: `http://127.0.0.1:${port}`, connectTimeoutMs: 500, timeoutMs: 20_000 });
      const started = performance.now();
      const err = await client.getAppContext(null).catch((e: unknown) => e);
      const elapsed = performance.now() - started;
      filler.destroy();
      expect(err).toBeInstanceOf(TollgateNetworkError);
      expect((err as TollgateNetworkError).reason).toBe('timeout');
      expect(elapsed).toBeGreaterThanOrEqual(450);
      expect(elapsed).toBeLessThan(5_000); // neither undici's own 10 s connect timeout nor the total (20 s) ended it
    } finally {
      py.kill();
    }
  }, 40_000);

  it("the app's own bug after a good answer is not a TollgateException: `instanceof TollgateException` cannot mistake it for offline", async () => {
    const { auth } = await user();
    const client = server.client(app);
    // The example: indexing a file the app does not have (files[1].id).
    const bug = await client.checkAccess(auth).then((a) => (a.source === 'online' ? a.context.application.files[1]!.id : 'not online')).catch((e: unknown) => e);
    expect(bug).toBeInstanceOf(TypeError);
    expect(bug).not.toBeInstanceOf(TollgateException);
  });
});

describe('checkAccess and LeaseError', () => {
  it('online: renews the lease when none is stored, not while it is fresh', async () => {
    const { userId, auth } = await user();
    const client = server.client(app);
    const first = await client.checkAccess(auth);
    expect(first.source).toBe('online');
    expect(first.lease?.userId).toBe(userId);
    const second = await client.checkAccess(auth);
    expect(second).toMatchObject({ source: 'online', lease: null });
    expect((await client.checkLease()).seq).toBe(first.lease!.seq);
  });

  it('offline with an expired lease: LeaseError expired with its times and the network error as cause', async () => {
    const { auth } = await user();
    let shift = 0;
    const store = new MemoryLeaseStore();
    const lease = await server.client(app, { leaseStore: store }).createLease(auth);
    const offline = server.client(app, { leaseStore: store, baseUrl: `http://127.0.0.1:${await freePort()}`, clock: { now: () => Date.now() + shift, monotonic: () => 0 } });
    const good = await offline.checkAccess(auth);
    expect(good).toMatchObject({ source: 'lease', lease: { leaseId: lease.leaseId } });
    shift = GRACE_S * 1000 + 1000;
    const err = await offline.checkAccess(auth).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TollgateLeaseError);
    const e = err as TollgateLeaseError;
    expect(e.verdict).toBe('expired');
    expect(e.expiresAt).toBe(lease.expiresAt);
    expect(e.lastSeenTime).toBeGreaterThanOrEqual(lease.issuedAt);
    expect(e.runtimeLeft).toBe(GRACE_S * 1000);
    expect(e.cause).toBeInstanceOf(TollgateNetworkError);
    // checkLease() alone: the same verdict and times, no cause.
    const alone = (await offline.checkLease().catch((x: unknown) => x)) as TollgateLeaseError;
    expect([alone.verdict, alone.expiresAt, alone.cause]).toEqual(['expired', lease.expiresAt, null]);
  });

  it('no lease at all: LeaseError no_lease, times null', async () => {
    const offline = server.client(app, { baseUrl: `http://127.0.0.1:${await freePort()}` });
    const e = (await offline.checkAccess(null).catch((x: unknown) => x)) as TollgateLeaseError;
    expect(e).toBeInstanceOf(TollgateLeaseError);
    expect([e.verdict, e.expiresAt, e.lastSeenTime, e.runtimeLeft]).toEqual(['no_lease', null, null, null]);
    expect(e.cause).toBeInstanceOf(TollgateNetworkError);
  });
});
