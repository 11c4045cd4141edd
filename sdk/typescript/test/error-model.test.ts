/**
 * The SDK error model (docs/signing.md, "The SDK error model") and
 * checkAccess() against the real server: a network failure is a
 * TollgateNetworkError (never a bare TypeError that also catches the app's
 * own bugs), a LeaseError names its times and the online failure behind it,
 * and checkAccess() renews the lease online only when one is due.
 */
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

  it("the app's own bug after a good answer is not a TollgateException: `instanceof TollgateException` cannot mistake it for offline", async () => {
    const { auth } = await user();
    const client = server.client(app);
    const bug = await client.checkAccess(auth).then((a) => (a as { context: { app: { files: { id: string }[] } } }).context.app.files[1]!.id, (e: unknown) => e).catch((e: unknown) => e);
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
