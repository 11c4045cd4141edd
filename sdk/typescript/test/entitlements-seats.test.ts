/**
 * Issues 24 and 25 on the client: has()/entitlements()/isTrial() online and
 * from a verified lease offline, startTrial(), floating seats with their
 * heartbeat (scheduling, retries, a lost seat surfaced as an event and as the
 * next call's error, release, release on exit) and resetDevices() with its
 * refusals. Against the signed stub server of sdk/test-vectors (stub-server.mjs),
 * which a test can make answer 404 seat_not_found, 409, or nothing at all; and
 * the heartbeat's schedule on a fake clock and fake timers.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  MemoryLeaseStore, TollgateClient, TollgateError, TollgateLeaseError, TollgateSeatLostError, TollgateUnavailableError, TollgateVerificationError, type TollgateClientOptions,
} from '../src/index.js';
import { Heartbeat, type SeatAnswer, type Timers } from '../src/seats.js';
// @ts-expect-error: an .mjs module without types (the shared stub server)
import { DEFAULTS, startStub } from '../../test-vectors/stub-server.mjs';

interface Stub {
  url: string;
  appId: string;
  rootPublicKey: string;
  appKey: string;
  appSecret: string;
  log: { method: string; path: string; hardware_id: string | null; authorization: string | null; at: number }[];
  configure(over: Record<string, unknown>): void;
  expireSeats(): void;
  close(): Promise<void>;
}

let stub: Stub;
beforeAll(async () => {
  stub = await startStub();
});
afterAll(() => stub?.close());
afterEach(() => {
  stub.configure({ ...DEFAULTS });
  stub.expireSeats();
});

const clients: TollgateClient[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});

function client(options: Partial<TollgateClientOptions> = {}): TollgateClient {
  const c = new TollgateClient({
    baseUrl: stub.url, appKey: stub.appKey, appSecret: stub.appSecret, appId: stub.appId, rootPublicKey: stub.rootPublicKey,
    hardwareId: `hw-${Math.random().toString(16).slice(2)}`, leaseStore: new MemoryLeaseStore(), notBefore: 0, releaseSeatOnExit: false, ...options,
  });
  c.auth = { sessionToken: 'stub-session' };
  clients.push(c);
  return c;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const rejection = async (p: Promise<unknown>) => p.then(() => expect.fail('expected a rejection'), (err: unknown) => err);
const calls = (path: string, hardwareId?: string) => stub.log.filter((e) => `${e.method} ${e.path}` === path && (hardwareId === undefined || e.hardware_id === hardwareId));
async function until<T>(what: () => T | undefined | false, ms = 5000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = what();
    if (v) return v;
    if (Date.now() > end) throw new Error('timed out waiting');
    await sleep(20);
  }
}

describe('has() and entitlements()', () => {
  it('online: nothing before a verified answer, then the user of the last verified answer', async () => {
    stub.configure({ entitlements: ['pro', 'export-pdf'] });
    const c = client();
    expect([c.has('pro'), c.entitlements(), c.isTrial()]).toEqual([false, [], false]);
    const context = await c.getAppContext();
    expect(context.user?.id).toBe('stub-user-1');
    expect([c.has('pro'), c.has('export-pdf'), c.has('studio'), c.entitlements(), c.isTrial()]).toEqual([true, true, false, ['export-pdf', 'pro'], false]);
    // An anonymous context carries no user: nothing is held any more.
    await c.getAppContext(null);
    expect(c.entitlements()).toEqual([]);
  });

  it('an unverified answer never grants: a client pinning another root sees the same body refused and holds nothing', async () => {
    const c = client({ rootPublicKey: 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' });
    const err = await rejection(c.getAppContext());
    expect(err).toBeInstanceOf(TollgateVerificationError);
    expect([c.has('pro'), c.entitlements()]).toEqual([false, []]);
  });

  it('offline: from the verified lease, each code until its `until` on the trusted clock; the lease ending ends them all', async () => {
    let shift = 0;
    const c = client({ clock: { now: () => Date.now() + shift } });
    stub.configure({ lease_entitlements: [{ code: 'export-pdf', until: Date.now() + 60_000 }, { code: 'pro', until: null }], entitlements: ['export-pdf', 'pro'] });
    await c.createLease();
    const lease = await c.checkLease();
    expect(lease.entitlements).toEqual([{ code: 'export-pdf', until: expect.any(Number) }, { code: 'pro', until: null }]);
    expect([c.has('pro'), c.has('export-pdf'), c.isTrial()]).toEqual([true, true, false]);
    shift = 61_000;
    expect([c.has('pro'), c.has('export-pdf'), c.entitlements()]).toEqual([true, false, ['pro']]);
    shift = 8 * 86_400_000; // past the lease's exp (7 days)
    expect(c.entitlements()).toEqual([]);
    await expect(c.checkLease()).rejects.toBeInstanceOf(TollgateLeaseError);
    shift = 0;
    expect(c.has('pro')).toBe(false); // a failed lease check holds nothing
  });

  it("a trial user's lease says is_trial; an older server's lease (no fields) holds nothing and is no trial", async () => {
    stub.configure({ is_trial: true, entitlements: ['pro'] });
    const c = client();
    await c.createLease();
    await c.checkLease();
    expect([c.has('pro'), c.isTrial()]).toEqual([true, true]);
    stub.configure({ is_trial: false, old_lease: true });
    const old = client();
    await old.createLease();
    const lease = await old.checkLease();
    expect([lease.entitlements, lease.isTrial, old.has('pro'), old.isTrial()]).toEqual([[], false, false, false]);
  });

  it('checkAccess() falls back to the lease when no answer comes, and has() then answers from the lease', async () => {
    const store = new MemoryLeaseStore();
    const hardwareId = 'hw-fallback';
    stub.configure({ entitlements: ['pro'] });
    const online = client({ leaseStore: store, hardwareId });
    expect((await online.checkAccess()).source).toBe('online');
    expect(online.has('pro')).toBe(true);
    const offline = client({ leaseStore: store, hardwareId, baseUrl: 'http://127.0.0.1:9' });
    expect(offline.has('pro')).toBe(false);
    expect((await offline.checkAccess()).source).toBe('lease');
    expect(offline.has('pro')).toBe(true);
  });
});

describe('startTrial()', () => {
  it('sends the hardware id (and the email), keeps the session as login() does, and the user is a trial user', async () => {
    stub.configure({ entitlements: ['pro'] });
    const c = client({ hardwareId: 'hw-trial' });
    c.auth = null;
    const before = stub.log.length;
    const trial = await c.startTrial(undefined, 'alice@example.com');
    expect(trial.user.membership.is_trial).toBe(true);
    expect(c.auth).toEqual({ sessionToken: 'stub-trial-session' });
    expect([c.isTrial(), c.has('pro')]).toEqual([true, true]);
    expect(stub.log.slice(before).map((e) => `${e.method} ${e.path}`)).toContain('POST /trial');
    await c.startTrial('hw-explicit');
  });

  it('trial_used and trials_disabled are verified refusals', async () => {
    for (const code of ['trial_used', 'trials_disabled']) {
      stub.configure({ trial: code });
      const err = (await rejection(client().startTrial())) as TollgateError;
      expect(err).toBeInstanceOf(TollgateError);
      expect([err.status, err.code]).toEqual([403, code]);
    }
  });
});

describe('floating seats', () => {
  it('checkoutSeat() answers the seat and heartbeats at a third of heartbeat_seconds, each beat moving expires_at', async () => {
    stub.configure({ heartbeat_seconds: 1.5 });
    const c = client();
    const seat = await c.checkoutSeat();
    expect(seat).toMatchObject({ heartbeatSeconds: 1.5, max: 5, inUse: 1 });
    expect(c.seatState).toBe('held');
    const hw = calls('POST /seats')[calls('POST /seats').length - 1]!.hardware_id!;
    const beats = await until(() => calls('POST /seats/heartbeat', hw).length >= 3 && calls('POST /seats/heartbeat', hw));
    const gaps = beats.slice(1).map((b, i) => b.at - beats[i]!.at);
    for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(400), expect(gap).toBeLessThan(1000);
    expect(Date.parse(c.seat!.expiresAt)).toBeGreaterThan(Date.parse(seat.expiresAt));
  });

  it('a 404 seat_not_found on a heartbeat: the listener hears it, the state says lost, the next call throws it once', async () => {
    stub.configure({ heartbeat_seconds: 0.6 });
    const heard: TollgateSeatLostError[] = [];
    const c = client({ onSeatLost: (e) => heard.push(e) });
    const other: TollgateSeatLostError[] = [];
    c.onSeatLost((e) => other.push(e));
    const seat = await c.checkoutSeat();
    stub.configure({ heartbeat: 'seat_not_found' });
    await until(() => heard.length > 0);
    expect(heard[0]).toMatchObject({ reason: 'seat_not_found', seatId: seat.id });
    expect(heard[0]!.cause).toBeInstanceOf(TollgateError);
    expect(other).toHaveLength(1);
    expect(c.seatState).toBe('lost');
    const err = await rejection(c.getAppContext());
    expect(err).toBe(heard[0]);
    expect(c.seatState).toBe('none');
    await c.getAppContext(); // thrown once: the app has been told
    const beatsAfter = calls('POST /seats/heartbeat').length;
    await sleep(400);
    expect(calls('POST /seats/heartbeat').length).toBe(beatsAfter); // no more heartbeats for a lost seat
  });

  it('a 409 on a heartbeat is a lost seat too (reason conflict); has() throws it as the next call', async () => {
    stub.configure({ heartbeat_seconds: 0.6 });
    const c = client();
    const lost = new Promise<TollgateSeatLostError>((r) => c.onSeatLost(r));
    await c.checkoutSeat();
    stub.configure({ heartbeat: 'conflict' });
    expect((await lost).reason).toBe('conflict');
    expect(() => c.has('pro')).toThrow(TollgateSeatLostError);
  });

  it('failed heartbeats (no signed answer) are retried before the expiry; the expiry passing with none through loses the seat', async () => {
    stub.configure({ heartbeat_seconds: 1.2 });
    const c = client();
    const lost = new Promise<TollgateSeatLostError>((r) => c.onSeatLost(r));
    await c.checkoutSeat();
    const hw = calls('POST /seats').at(-1)!.hardware_id!;
    await until(() => calls('POST /seats/heartbeat', hw).length >= 1);
    stub.configure({ heartbeat: 'unavailable' });
    const failedFrom = Date.now();
    const err = await lost;
    expect(err.reason).toBe('expired');
    expect(err.cause).toBeInstanceOf(TollgateUnavailableError);
    expect(calls('POST /seats/heartbeat', hw).filter((b) => b.at >= failedFrom).length).toBeGreaterThanOrEqual(2); // retried
    expect(Date.now() - failedFrom).toBeLessThan(2000);
  });

  it('a forged heartbeat answer is no beat: the seat expires (cause: the verification error)', async () => {
    stub.configure({ heartbeat_seconds: 0.9 });
    const c = client();
    const lost = new Promise<TollgateSeatLostError>((r) => c.onSeatLost(r));
    await c.checkoutSeat();
    stub.configure({ heartbeat: 'forged' });
    const err = await lost;
    expect([err.reason, (err.cause as TollgateVerificationError).verdict]).toEqual(['expired', 'bad_signature']);
  });

  it('seats_exhausted is a verified refusal with in_use, max and next_free_at; no heartbeat starts', async () => {
    stub.configure({ checkout: 'exhausted', max_seats: 5 });
    const c = client();
    const err = (await rejection(c.checkoutSeat())) as TollgateError;
    expect([err.status, err.code, err.extra.in_use, err.extra.max, typeof err.extra.next_free_at]).toEqual([409, 'seats_exhausted', 5, 5, 'string']);
    expect(c.seatState).toBe('none');
  });

  it('releaseSeat() releases, stops the heartbeat and drops the stored lease (the server counts no seat for it any more)', async () => {
    stub.configure({ heartbeat_seconds: 0.6 });
    const c = client();
    await c.createLease();
    await c.checkoutSeat();
    const released = await c.releaseSeat();
    expect(released.released).toBe(true);
    expect(c.seatState).toBe('none');
    expect(((await rejection(c.checkLease())) as TollgateLeaseError).verdict).toBe('dropped');
    const hw = calls('DELETE /seats').at(-1)!.hardware_id!;
    const beats = calls('POST /seats/heartbeat', hw).length;
    await sleep(500);
    expect(calls('POST /seats/heartbeat', hw).length).toBe(beats);
    expect((await c.releaseSeat()).released).toBe(false);
  });

  it('releaseSeat() with no seat on the server (released false, no held_until) drops the stored lease', async () => {
    const c = client();
    await c.createLease();
    const answer = await c.releaseSeat();
    expect([answer.released, answer.held_until]).toEqual([false, undefined]);
    expect(((await rejection(c.checkLease())) as TollgateLeaseError).verdict).toBe('dropped');
  });

  it('releaseSeat() of a seat an offline lease holds: released false and held_until, the lease kept (the device may go on offline until then), the heartbeat stopped', async () => {
    stub.configure({ release: 'held' });
    const c = client();
    const lease = await c.createLease();
    await c.checkoutSeat();
    const released = await c.releaseSeat();
    expect(released.released).toBe(false);
    expect(Date.parse(released.held_until!)).toBeGreaterThan(Date.now());
    expect(c.seatState).toBe('none');
    expect((await c.checkLease()).leaseId).toBe(lease.leaseId);
    // Once the server frees the seat, a release drops the lease.
    stub.configure({ release: 'ok' });
    expect((await c.releaseSeat()).held_until).toBeUndefined();
    expect(((await rejection(c.checkLease())) as TollgateLeaseError).verdict).toBe('dropped');
  });

  it('close() releases a held seat', async () => {
    const c = client({ hardwareId: 'hw-close' });
    await c.checkoutSeat();
    await c.close();
    expect(calls('DELETE /seats', 'hw-close')).toHaveLength(1);
    expect(c.seatState).toBe('none');
  });

  it('close() of a seat a lease holds keeps the lease: a clean exit does not leave the device without it while the seat stays taken', async () => {
    stub.configure({ release: 'held' });
    const c = client({ hardwareId: 'hw-close-held' });
    const lease = await c.createLease();
    await c.checkoutSeat();
    await c.close();
    expect(calls('DELETE /seats', 'hw-close-held')).toHaveLength(1);
    expect((await c.checkLease()).leaseId).toBe(lease.leaseId);
  });

  it('a process that ends on its own releases its seat (beforeExit), though the heartbeat was running', async () => {
    const dist = join(import.meta.dirname, '../dist/index.js');
    const script = (hardwareId: string, releaseSeatOnExit: boolean) => `
      const { TollgateClient, MemoryLeaseStore } = await import(${JSON.stringify(dist)});
      const c = new TollgateClient({ baseUrl: ${JSON.stringify(stub.url)}, appKey: 'k', appSecret: 's', appId: ${JSON.stringify(stub.appId)},
        rootPublicKey: ${JSON.stringify(stub.rootPublicKey)}, hardwareId: '${hardwareId}', leaseStore: new MemoryLeaseStore(), notBefore: 0,
        releaseSeatOnExit: ${releaseSeatOnExit} });
      c.auth = { sessionToken: 'stub-session' };
      await c.checkoutSeat();`;
    // Asynchronously: the stub answers from this process.
    const run = (s: string) => promisify(execFile)(process.execPath, ['--input-type=module', '-e', s], { encoding: 'utf8', timeout: 20_000 });
    await run(script('hw-exit', true));
    expect(calls('DELETE /seats', 'hw-exit')).toHaveLength(1);
    // The control: with the hook off, the process still ends (the heartbeat keeps nothing alive), the seat is not released.
    await run(script('hw-exit-off', false));
    expect(calls('POST /seats', 'hw-exit-off')).toHaveLength(1);
    expect(calls('DELETE /seats', 'hw-exit-off')).toHaveLength(0);
  });
});

describe('resetDevices()', () => {
  it('answers the reset and when the next is allowed; the session it used has ended', async () => {
    const c = client();
    const reset = await c.resetDevices();
    expect(reset).toMatchObject({ devices_removed: 1, next_reset_at: expect.any(String), reset_at: expect.any(String) });
    expect(c.auth).toBeNull();
  });

  it('reset_cooldown exposes retryAfter and lastResetAt; reset_disabled is a 403', async () => {
    stub.configure({ reset: 'cooldown' });
    const err = (await rejection(client().resetDevices())) as TollgateError;
    expect([err.status, err.code, err.retryAfter, typeof err.lastResetAt]).toEqual([429, 'reset_cooldown', 7 * 24 * 3600 - 3600, 'string']);
    stub.configure({ reset: 'disabled' });
    const off = (await rejection(client().resetDevices())) as TollgateError;
    expect([off.status, off.code, off.retryAfter, off.lastResetAt]).toEqual([403, 'reset_disabled', null, null]);
  });
});

describe('the heartbeat schedule (fake clock and timers)', () => {
  function fakeTime() {
    let mono = 0;
    const queue: { at: number; fn: () => void; id: number }[] = [];
    let ids = 0;
    const timers: Timers = {
      setTimeout: (fn, ms) => (queue.push({ at: mono + ms, fn, id: ++ids }), ids),
      clearTimeout: (id) => {
        const i = queue.findIndex((q) => q.id === id);
        if (i >= 0) queue.splice(i, 1);
      },
    };
    /** Runs the next timer: the clock jumps to it. Returns when it fired (ms on the clock). */
    const next = async () => {
      queue.sort((a, b) => a.at - b.at);
      const q = queue.shift()!;
      mono = q.at;
      q.fn();
      await sleep(0);
      return q.at;
    };
    return { timers, next, now: () => mono, pending: () => queue.length };
  }
  const answer = (serverMs: number, ttlMs: number, hb = 300, id = 'seat-1'): SeatAnswer => ({
    seat: { id, checked_out_at: new Date(0).toISOString(), expires_at: new Date(serverMs + ttlMs).toISOString(), heartbeat_seconds: hb },
    seats: { max: 5, in_use: 1 },
    server_time: new Date(serverMs).toISOString(),
  });

  it('beats every heartbeat_seconds/3 while beats succeed', async () => {
    const t = fakeTime();
    const at: number[] = [];
    const hb = new Heartbeat(answer(0, 300_000), 0, async () => (at.push(t.now()), { answer: answer(t.now(), 300_000), sentAt: t.now() }), t.now, () => expect.fail('lost'), () => {}, t.timers);
    for (let i = 0; i < 4; i++) await t.next();
    expect(at).toEqual([100_000, 200_000, 300_000, 400_000]);
    hb.stop();
    expect(t.pending()).toBe(0);
  });

  it('a failed beat is retried sooner, the seat kept when one gets through before the expiry', async () => {
    const t = fakeTime();
    let fail = 2;
    const at: number[] = [];
    const hb = new Heartbeat(answer(0, 300_000), 0, async () => {
      at.push(t.now());
      if (fail-- > 0) throw new TollgateUnavailableError(503, false, null, null);
      return { answer: answer(t.now(), 300_000), sentAt: t.now() };
    }, t.now, () => expect.fail('lost'), () => {}, t.timers);
    for (let i = 0; i < 4; i++) await t.next();
    expect(at[0]).toBe(100_000);
    expect(at[1]! - at[0]!).toBeLessThan(100_000); // retried before the next regular beat
    expect(at[2]!).toBeLessThan(300_000); // and again before the expiry
    expect(at[3]! - at[2]!).toBe(100_000); // then the regular interval again
    hb.stop();
  });

  it('no beat through before the expiry: lost as expired at the expiry, never later', async () => {
    const t = fakeTime();
    let lost: TollgateSeatLostError | undefined;
    new Heartbeat(answer(0, 300_000), 0, async () => {
      throw new TollgateUnavailableError(503, false, null, null);
    }, t.now, (e) => (lost = e), () => {}, t.timers);
    let last = 0;
    while (lost === undefined) last = await t.next();
    expect([lost.reason, last]).toEqual(['expired', 300_000]);
    expect(lost.cause).toBeInstanceOf(TollgateUnavailableError);
  });

  it('a shorter time to live than heartbeat_seconds (a seat about to expire) beats at a third of what is left', async () => {
    const t = fakeTime();
    const hb = new Heartbeat(answer(0, 30_000, 300), 0, async () => ({ answer: answer(t.now(), 300_000), sentAt: t.now() }), t.now, () => expect.fail('lost'), () => {}, t.timers);
    expect(hb.intervalMs).toBe(10_000);
    expect(await t.next()).toBe(10_000);
    expect(hb.intervalMs).toBe(100_000);
    hb.stop();
  });
});
