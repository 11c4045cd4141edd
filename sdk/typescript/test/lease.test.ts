/**
 * Offline leases from the real server (POST /lease), checked offline by the
 * SDK with injected wall and monotonic clocks and the default file store:
 * good offline; refused at exp, after a clock set back, after the runtime
 * budget, on another machine, when superseded, after a ban seen online, and
 * when its state files are tampered with.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FileLeaseStore, TollgateError, TollgateLeaseError, type TollgateClient } from '../src/index.js';
import { PASSWORD, startServer, type Server, type TestApp } from './server.js';

const GRACE_S = 3600;
let server: Server;
let app: TestApp;
let dir: string;
let users = 0;

beforeAll(async () => {
  server = await startServer();
  app = await server.app({ offline_grace_seconds: GRACE_S, lease_renew_seconds: 600 });
});
afterAll(() => server?.stop());
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-sdk-lease-'));
  return () => rmSync(dir, { recursive: true, force: true });
});

/** The app as a user runs it: clocks the test moves, files in the app-data folders (here under a temp dir). */
class Device {
  shift = 0;
  mono = 0;
  readonly folders = { data: join(dir, 'data'), state: join(dir, 'state') };
  constructor(readonly hardwareId = 'machine-A') {}
  async client(baseUrl = server.url): Promise<TollgateClient> {
    return server.client(app, {
      baseUrl,
      hardwareId: this.hardwareId,
      leaseStore: await FileLeaseStore.forApp(app.id, this.folders),
      clock: { now: () => Date.now() + this.shift, monotonic: () => this.mono },
    });
  }
}

/** A user with an active membership, logged in on `device`, holding a fresh lease. */
async function leased(device: Device) {
  const username = `user${++users}`;
  const userId = await server.activeUser(app, username, 7 * 24 * 60);
  const online = await device.client();
  await online.login({ credentials: { username, password: PASSWORD }, hardware_id: device.hardwareId });
  const lease = await online.createLease();
  // Offline from here: the server is unreachable (a closed port), the lease works on its own.
  const offline = await device.client('http://127.0.0.1:9');
  return { online, offline, lease, userId, username };
}

const verdictOf = (p: Promise<unknown>) => p.then(() => 'ok', (err: unknown) => (err instanceof TollgateLeaseError ? err.verdict : `other: ${String(err)}`));

describe('offline leases', () => {
  it('a lease works offline, with no network at all', async () => {
    const device = new Device();
    const { offline, lease, userId } = await leased(device);
    expect(lease).toMatchObject({ userId, renewDue: false, runtimeBudgetMs: GRACE_S * 1000 });
    await expect(offline.getAppContext(null)).rejects.toThrow(); // no server
    const info = await offline.checkLease();
    expect(info).toMatchObject({ userId, seq: lease.seq, expiresAt: lease.expiresAt });
    expect(info.expiresAt - info.issuedAt).toBe(GRACE_S * 1000);
  });

  it('stops at exp (the offline grace), and asks for renewal past renew_after', async () => {
    const device = new Device();
    const { offline, lease } = await leased(device);
    device.shift = 601_000;
    expect((await offline.checkLease()).renewDue).toBe(true);
    device.shift = lease.expiresAt - Date.now() - 1000;
    expect(await verdictOf(offline.checkLease())).toBe('ok');
    device.shift = lease.expiresAt - Date.now() + 1000;
    expect(await verdictOf(offline.checkLease())).toBe('expired');
  });

  it('stops after the clock is set back more than 5 minutes (a few minutes of drift are tolerated)', async () => {
    const device = new Device();
    const { offline } = await leased(device);
    device.shift = 30 * 60_000;
    expect(await verdictOf(offline.checkLease())).toBe('ok'); // the clock moved forward: that is now trusted time
    device.shift = 27 * 60_000;
    expect(await verdictOf(offline.checkLease())).toBe('ok');
    device.shift = 0;
    expect(await verdictOf(offline.checkLease())).toBe('clock_rollback');
    // A restart does not forget it: the state is on disk.
    expect(await verdictOf((await device.client('http://127.0.0.1:9')).checkLease())).toBe('clock_rollback');
  });

  it('stops when the offline runtime budget (monotonic clock) is spent, across restarts', async () => {
    const device = new Device();
    const { offline } = await leased(device);
    await offline.checkLease();
    device.mono += GRACE_S * 1000 - 60_000;
    expect((await offline.checkLease()).runtimeUsedMs).toBe(GRACE_S * 1000 - 60_000);
    const restarted = await device.client('http://127.0.0.1:9');
    device.mono = 10; // a new process: its monotonic clock starts again
    await restarted.checkLease();
    device.mono += 60_000;
    expect(await verdictOf(restarted.checkLease())).toBe('runtime_exhausted');
  });

  it('is refused on another machine (the files copied over)', async () => {
    const device = new Device('machine-A');
    await leased(device);
    const copy = new Device('machine-B');
    Object.assign(copy.folders, device.folders);
    expect(await verdictOf((await copy.client('http://127.0.0.1:9')).checkLease())).toBe('hardware_mismatch');
  });

  it('an older lease put back after a newer one is superseded', async () => {
    const device = new Device();
    const { online } = await leased(device);
    const leaseFile = join(device.folders.data, 'lease.tollgate');
    const old = readFileSync(leaseFile, 'utf8');
    await online.createLease();
    writeFileSync(leaseFile, old);
    expect(await verdictOf(online.checkLease())).toBe('superseded');
  });

  it('is dropped after a ban seen online', async () => {
    const device = new Device();
    const { online, offline, userId } = await leased(device);
    await server.admin('POST', `/apps/${app.id}/bans`, { type: 'user', value: userId });
    await expect(online.getAppContext()).rejects.toMatchObject({ code: 'banned' });
    expect(await verdictOf(offline.checkLease())).toBe('dropped');
    expect(await verdictOf((await device.client('http://127.0.0.1:9')).checkLease())).toBe('dropped');
  });

  it('tampered state is a rollback: a copy edited, one or both deleted while the lease is kept (issue 21.1)', async () => {
    const device = new Device();
    await leased(device);
    const [a, b] = [join(device.folders.data, 'state.json'), join(device.folders.state, 'state.json')];
    const original = readFileSync(a, 'utf8');
    rmSync(b);
    expect(await verdictOf((await device.client('http://127.0.0.1:9')).checkLease())).toBe('clock_rollback');
    writeFileSync(b, original);
    expect(await verdictOf((await device.client('http://127.0.0.1:9')).checkLease())).toBe('ok');
    rmSync(a);
    expect(await verdictOf((await device.client('http://127.0.0.1:9')).checkLease())).toBe('clock_rollback');
    writeFileSync(a, original);
    rmSync(b);
    const record = JSON.parse(readFileSync(a, 'utf8'));
    const state = JSON.parse(record.state);
    writeFileSync(a, JSON.stringify({ ...record, state: JSON.stringify({ ...state, runtime_used_ms: 0, highest_trusted_time: 0 }) }));
    expect(await verdictOf((await device.client('http://127.0.0.1:9')).checkLease())).toBe('clock_rollback');
    writeFileSync(a, original);
    writeFileSync(b, original.replace('"dropped\\":false', '"dropped\\":true'));
    expect(await verdictOf((await device.client('http://127.0.0.1:9')).checkLease())).toBe('clock_rollback');
    rmSync(a);
    rmSync(b);
    expect(await verdictOf((await device.client('http://127.0.0.1:9')).checkLease())).toBe('clock_rollback');
  });

  it('one copy restored from a backup and the other deleted does not undo a clock_rollback (issue 21.1)', async () => {
    const device = new Device();
    const { online } = await leased(device);
    const [a, b] = [join(device.folders.data, 'state.json'), join(device.folders.state, 'state.json')];
    const backup = readFileSync(a, 'utf8');
    device.shift = 50 * 60_000; // the "+20 h" within this app's 1 h grace
    const offline = await device.client('http://127.0.0.1:9');
    expect(await verdictOf(offline.checkLease())).toBe('ok');
    device.shift = 0;
    expect(await verdictOf(offline.checkLease())).toBe('clock_rollback');
    writeFileSync(a, backup);
    rmSync(b);
    expect(await verdictOf((await device.client('http://127.0.0.1:9')).checkLease())).toBe('clock_rollback');
    // A new lease from the server writes both copies again.
    await online.createLease();
    expect(await verdictOf((await device.client('http://127.0.0.1:9')).checkLease())).toBe('ok');
  });

  it('one copy restored from a backup and the other deleted does not bring back a lease dropped by membership_inactive (issue 21.1)', async () => {
    const device = new Device();
    const { online, userId } = await leased(device);
    const [a, b] = [join(device.folders.data, 'state.json'), join(device.folders.state, 'state.json')];
    const backup = readFileSync(a, 'utf8');
    expect((await server.admin('PATCH', `/apps/${app.id}/users/${userId}`, { active_until: new Date(Date.now() - 60_000).toISOString() })).status).toBe(200);
    await expect(online.getAppContext()).rejects.toMatchObject({ code: 'membership_inactive' });
    expect(await verdictOf((await device.client('http://127.0.0.1:9')).checkLease())).toBe('dropped');
    writeFileSync(a, backup);
    rmSync(b);
    expect(await verdictOf((await device.client('http://127.0.0.1:9')).checkLease())).not.toBe('ok');
  });

  it('no lease yet is no_lease; an app without leases answers 403 leases_disabled', async () => {
    const device = new Device();
    expect(await verdictOf((await device.client()).checkLease())).toBe('no_lease');
    const noLeases = await server.app();
    await server.activeUser(noLeases, 'nolease');
    const c = server.client(noLeases);
    await c.login({ credentials: { username: 'nolease', password: PASSWORD } });
    const err = await c.createLease().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TollgateError);
    expect(err).toMatchObject({ status: 403, code: 'leases_disabled' });
  });
});

/**
 * Issue 21.2: a verified refusal drops the stored lease only when it is about the lease's user (the signed body's
 * `user_id`) or about this machine (a ban naming nobody: IP or hardware id); a refusal naming nobody otherwise keeps
 * it unless this process saw those credentials accepted for the lease's user. Each check runs in a FRESH client (a
 * new process): what an earlier client saw must not be needed.
 */
describe('a verified refusal drops only a lease it is about (issue 21.2)', () => {
  /** A's lease on `device`; B, a signed-up user with no membership (inactive), on the same machine and store. */
  async function twoUsers() {
    const device = new Device();
    const a = await leased(device);
    const b = `other${++users}`;
    const bId = (await (await device.client()).signUp({ username: b, password: PASSWORD })).id; // no membership: inactive
    const check = async () => verdictOf((await device.client('http://127.0.0.1:9')).checkLease());
    expect(await check()).toBe('ok');
    return { device, a, b, bId, check };
  }

  it("A banned (a user ban): a fresh client's refusal for A drops A's lease, and the error names A", async () => {
    const { device, a, check } = await twoUsers();
    const ban = await server.admin('POST', `/apps/${app.id}/bans`, { type: 'user', value: a.userId });
    expect(ban.status).toBe(201);
    const err = await (await device.client()).getAppContext({ username: a.username, password: PASSWORD }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TollgateError);
    expect(err).toMatchObject({ status: 403, code: 'banned', userId: a.userId });
    expect(await check()).toBe('dropped');
  });

  it("checkAccess renews a lease a refusal dropped once the user is let back in, before its renew_after (the rule of all three SDKs)", async () => {
    const { device, a, check } = await twoUsers();
    const creds = { username: a.username, password: PASSWORD };
    const ban = await server.admin('POST', `/apps/${app.id}/bans`, { type: 'user', value: a.userId });
    await (await device.client()).getAppContext(creds).catch(() => undefined);
    expect(await check()).toBe('dropped');
    expect((await server.admin('DELETE', `/apps/${app.id}/bans/${ban.body.id}`)).status).toBe(204);
    const access = await (await device.client()).checkAccess(creds);
    expect(access.source).toBe('online');
    expect(access.source === 'online' && access.lease).not.toBeNull();
    expect(await check()).toBe('ok');
  });

  it("B refused with membership_inactive on the same machine and store: A's lease is kept, the error names B", async () => {
    const { device, b, bId, check } = await twoUsers();
    const err = await (await device.client()).getAppContext({ username: b, password: PASSWORD }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'membership_inactive' });
    expect((err as TollgateError).userId).toBe(bId);
    expect(await check()).toBe('ok');
  });

  it("an IP ban (this machine, naming nobody) drops A's lease, whoever's request met it", async () => {
    const { device, b, check } = await twoUsers();
    const ban = await server.admin('POST', `/apps/${app.id}/bans`, { type: 'ip', value: '127.0.0.1' });
    expect(ban.status).toBe(201);
    try {
      const err = await (await device.client()).getAppContext({ username: b, password: PASSWORD }).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'banned', userId: null });
    } finally {
      expect((await server.admin('DELETE', `/apps/${app.id}/bans/${ban.body.id}`)).status).toBe(204);
    }
    expect(await check()).toBe('dropped');
  });

  it("B's wrong password (invalid_credentials, credentials unknown here) keeps A's lease; A's own, once seen accepted, drops it", async () => {
    const { device, a, b, check } = await twoUsers();
    const fresh = await device.client();
    const err = await fresh.getAppContext({ username: b, password: 'not the password' }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'invalid_credentials', userId: null });
    expect(await check()).toBe('ok');
    // The in-memory rule still covers what names nobody: A's credentials, seen accepted by this client, then A is
    // deleted (invalid_credentials from then on).
    const seen = await device.client();
    await seen.getAppContext({ username: a.username, password: PASSWORD });
    expect((await server.admin('DELETE', `/apps/${app.id}/users/${a.userId}`)).status).toBe(204);
    await expect(seen.getAppContext({ username: a.username, password: PASSWORD })).rejects.toMatchObject({ code: 'invalid_credentials', userId: null });
    expect(await check()).toBe('dropped');
  });
});
