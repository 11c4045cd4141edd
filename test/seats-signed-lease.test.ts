import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sweepDeadSeats } from '../src/domain/seats.js';
import { expectError, harness, PASSWORD, type Harness, type TestApp } from './helpers.js';
import { captureLog, fields, type LogCapture } from './log-capture.js';
import { leaseApp, leaseOf, legacy, postLease } from './lease-fixtures.js';
import { setUpKeys } from './signing-fixtures.js';
import { call, verifyAnswer, type Pin, type SignedCall } from './signing-test-verifier.js';

/**
 * Issue 25: seat and self-reset answers are signed like every client answer (refusals included), and an
 * offline lease holds its device's seat until its exp (docs/decisions.md): neither the user's release nor
 * the user's self-reset frees it earlier (the signed lease runs on offline); the operator's reset and release do.
 */
let h: Harness;
let log: LogCapture;
beforeEach(async () => {
  log = captureLog();
  // The access log off: the seat tests read the event lines alone.
  h = await harness({ env: { LOG_LEVEL: 'info', ACCESS_LOG: 'off' }, logStream: log.stream });
});
afterEach(async () => h.close());

async function keyed(settings: Record<string, unknown>): Promise<{ app: TestApp; pin: Pin; root: string }> {
  const app = await leaseApp(h, { max_devices_per_user: 100 });
  const res = await h.admin('PATCH', `/apps/${app.id}`, settings);
  expect(res.statusCode, res.body).toBe(200);
  const keys = await setUpKeys(h, app);
  return { app, pin: { appId: app.id, rootPublicKey: keys.rootPublicKey }, root: keys.rootPublicKey };
}

function verified(pin: Pin, c: SignedCall, status: number): void {
  expect(c.res.statusCode, String(c.res.rawPayload)).toBe(status);
  expect(verifyAnswer(pin, c.req, c.res).verdict, String(c.res.rawPayload)).toBe('ok');
}

const seatHeaders = (user: string, hw: string) => ({ 'x-api-username': user, 'x-api-password': PASSWORD, 'x-hardware-id': hw });
const releaseSeat = (app: TestApp, user: string, hw: string) => h.inject({ method: 'DELETE', url: '/seats', headers: { ...app.headers, ...seatHeaders(user, hw) } });
const liveSeats = async (app: TestApp): Promise<{ hardware_id: string; expires_at: string; id: string }[]> => (await h.admin('GET', `/apps/${app.id}/seats`)).json().items;

interface StoredEvent { id: string; type: string; data: string }
const stored = () => h.tollgate.services.store.db.all<StoredEvent>('SELECT id, type, data FROM events ORDER BY occurred_at, id');
/** The outbox events `step` wrote: type, and the seat's hardware id when there is one. */
async function eventsOf(step: () => Promise<unknown>): Promise<string[]> {
  const before = new Set((await stored()).map((e) => e.id));
  await step();
  return (await stored()).filter((e) => !before.has(e.id)).map((e) => {
    const seat = (JSON.parse(e.data) as { seat?: { hardware_id: string } }).seat;
    return seat ? `${e.type} ${seat.hardware_id}` : e.type;
  });
}
/** The seat log lines (seat_released, seat_expired, seat_checked_out) `step` wrote, by event name. */
async function seatLinesOf(step: () => Promise<unknown>): Promise<string[]> {
  const from = log.lines.length;
  await step();
  return log.lines.slice(from).map(fields).filter((l) => String(l.event).startsWith('seat_')).map((l) => String(l.event));
}

describe('signed seat and reset answers', () => {
  it('200 and every refusal of POST /seats, POST /seats/heartbeat, DELETE /seats and POST /devices/reset verify against the pinned root', async () => {
    const { app, pin } = await keyed({ max_seats: 1, heartbeat_seconds: 60 });
    await h.activeUser(app, 'alice', PASSWORD, undefined, { minutes: undefined, lifetime: true });
    const send = (method: string, target: string, headers: Record<string, string>) => call(h.inject, app.headers, method, target, { headers });
    const checkedOut = await send('POST', '/seats', seatHeaders('alice', 'hw-1'));
    verified(pin, checkedOut, 200);
    expect(JSON.parse(String(checkedOut.res.rawPayload)).seats).toEqual({ max: 1, in_use: 1 });
    const full = await send('POST', '/seats', seatHeaders('alice', 'hw-2'));
    verified(pin, full, 409);
    expect(JSON.parse(String(full.res.rawPayload))).toMatchObject({ code: 'seats_exhausted', in_use: 1, max: 1 });
    verified(pin, await send('POST', '/seats/heartbeat', seatHeaders('alice', 'hw-1')), 200);
    verified(pin, await send('POST', '/seats/heartbeat', seatHeaders('alice', 'hw-2')), 404);
    verified(pin, await send('POST', '/seats', { 'x-api-username': 'alice', 'x-api-password': PASSWORD }), 422);
    verified(pin, await send('DELETE', '/seats', seatHeaders('alice', 'hw-1')), 200);
    verified(pin, await send('POST', '/devices/reset', seatHeaders('alice', 'hw-1')), 200);
    const cooldown = await send('POST', '/devices/reset', seatHeaders('alice', 'hw-1'));
    verified(pin, cooldown, 429);
    expect(JSON.parse(String(cooldown.res.rawPayload))).toMatchObject({ code: 'reset_cooldown', retry_after: 604_800 });
  });

  it('the answer of DELETE /seats for a seat a lease holds (held_until) is signed and verifies', async () => {
    const { app, pin, root } = await keyed({ max_seats: 1, heartbeat_seconds: 60, offline_grace_seconds: 3600 });
    await h.activeUser(app, 'alice', PASSWORD, undefined, { minutes: undefined, lifetime: true });
    const exp = leaseOf(await postLease(h, app, { ...legacy('alice'), 'x-hardware-id': 'hw-1' }), root).payload.exp as number;
    const held = await call(h.inject, app.headers, 'DELETE', '/seats', { headers: seatHeaders('alice', 'hw-1') });
    verified(pin, held, 200);
    expect(JSON.parse(String(held.res.rawPayload))).toEqual({ released: false, held_until: new Date(exp).toISOString(), server_time: h.clock.iso() });
  });
});

describe('an offline lease holds a seat', () => {
  it('POST /lease takes the device’s seat until the lease’s exp; a full pool refuses the lease; DELETE /seats cannot give it back before exp', async () => {
    const { app, root } = await keyed({ max_seats: 1, heartbeat_seconds: 60, offline_grace_seconds: 86_400 });
    await h.activeUser(app, 'alice', PASSWORD, undefined, { minutes: undefined, lifetime: true });
    const lease = leaseOf(await postLease(h, app, { ...legacy('alice'), 'x-hardware-id': 'hw-1' }), root);
    expect(lease.payload.exp).toBe(h.clock.ms + 86_400_000);
    const seats = (await h.admin('GET', `/apps/${app.id}/seats`)).json();
    expect(seats.total).toBe(1);
    expect(seats.items[0]).toMatchObject({ hardware_id: 'hw-1', expires_at: new Date(lease.payload.exp as number).toISOString() });

    // Offline for hours: no heartbeat, the seat stays taken until the lease ends.
    h.clock.advance(3_600_000);
    expectError(await h.client(app, 'POST', '/seats', undefined, seatHeaders('alice', 'hw-2')), 409, 'seats_exhausted');
    expectError(await postLease(h, app, { ...legacy('alice'), 'x-hardware-id': 'hw-2' }), 409, 'seats_exhausted');
    // A heartbeat never shortens a seat a lease holds.
    const beat = (await h.client(app, 'POST', '/seats/heartbeat', undefined, seatHeaders('alice', 'hw-1'))).json();
    expect(beat.seat.expires_at).toBe(new Date(lease.payload.exp as number).toISOString());
    // Nor does a checkout of the same device, and it leaves the lease's hold (lease_until) as it was.
    expect((await h.client(app, 'POST', '/seats', undefined, seatHeaders('alice', 'hw-1'))).json().seat.expires_at).toBe(new Date(lease.payload.exp as number).toISOString());

    // The hole of issue 25: lease, release, lease on another device... The seat stays taken until the lease ends,
    // and the release emits nothing (the signed lease runs on offline whatever the device says).
    const exp = new Date(lease.payload.exp as number).toISOString();
    let released!: Awaited<ReturnType<typeof releaseSeat>>;
    expect(await eventsOf(async () => (released = await releaseSeat(app, 'alice', 'hw-1')))).toEqual([]);
    expect(released.statusCode, released.body).toBe(200);
    // held_until is added after the fields the answer always had (their bytes unchanged).
    expect(released.body).toBe(JSON.stringify({ released: false, server_time: h.clock.iso(), held_until: exp }));
    expect(await liveSeats(app)).toMatchObject([{ hardware_id: 'hw-1', expires_at: exp }]);
    const full = await h.client(app, 'POST', '/seats', undefined, seatHeaders('alice', 'hw-2'));
    expectError(full, 409, 'seats_exhausted');
    expect(full.json().next_free_at).toBe(exp);
    expectError(await postLease(h, app, { ...legacy('alice'), 'x-hardware-id': 'hw-2' }), 409, 'seats_exhausted');
    // Released again: the same answer (idempotent).
    expect((await releaseSeat(app, 'alice', 'hw-1')).json()).toEqual({ released: false, held_until: exp, server_time: h.clock.iso() });

    // One millisecond before exp the pool is still full; at exp the seat is dead and another device takes it.
    h.clock.advance((lease.payload.exp as number) - h.clock.ms - 1);
    expectError(await h.client(app, 'POST', '/seats', undefined, seatHeaders('alice', 'hw-2')), 409, 'seats_exhausted');
    h.clock.advance(1);
    expect(await eventsOf(async () => expect((await h.client(app, 'POST', '/seats', undefined, seatHeaders('alice', 'hw-2'))).statusCode).toBe(200)))
      .toEqual(['seat.expired hw-1', 'seat.checked_out hw-2']);
  });

  it('a release ends the heartbeat part of a lease-held seat at once: a heartbeat past exp no longer keeps it', async () => {
    const { app, root } = await keyed({ max_seats: 1, heartbeat_seconds: 60, offline_grace_seconds: 3600 });
    await h.activeUser(app, 'alice', PASSWORD, undefined, { minutes: undefined, lifetime: true });
    const exp = leaseOf(await postLease(h, app, { ...legacy('alice'), 'x-hardware-id': 'hw-1' }), root).payload.exp as number;
    h.clock.advance(3_600_000 - 20_000);
    const beat = (await h.client(app, 'POST', '/seats/heartbeat', undefined, seatHeaders('alice', 'hw-1'))).json();
    expect(beat.seat.expires_at).toBe(h.clock.iso(60_000)); // past exp: the heartbeat's own window
    expect((await releaseSeat(app, 'alice', 'hw-1')).json()).toEqual({ released: false, held_until: new Date(exp).toISOString(), server_time: h.clock.iso() });
    expect(await liveSeats(app)).toMatchObject([{ hardware_id: 'hw-1', expires_at: new Date(exp).toISOString() }]);
    h.clock.advance(20_000);
    expect((await h.client(app, 'POST', '/seats', undefined, seatHeaders('alice', 'hw-2'))).statusCode).toBe(200);
  });

  it('a seat whose lease has ended, or that no lease ever held, releases as before', async () => {
    const { app, root } = await keyed({ max_seats: 2, heartbeat_seconds: 60, offline_grace_seconds: 3600 });
    await h.activeUser(app, 'alice', PASSWORD, undefined, { minutes: undefined, lifetime: true });
    leaseOf(await postLease(h, app, { ...legacy('alice'), 'x-hardware-id': 'hw-1' }), root);
    h.clock.advance(3_600_000 - 10_000);
    // A heartbeat keeps the seat past the lease's exp; once the lease ended, the release frees it.
    expect((await h.client(app, 'POST', '/seats/heartbeat', undefined, seatHeaders('alice', 'hw-1'))).statusCode).toBe(200);
    h.clock.advance(10_000);
    const after = await releaseSeat(app, 'alice', 'hw-1');
    expect(after.body).toBe(JSON.stringify({ released: true, server_time: h.clock.iso() }));
    expect((await h.client(app, 'POST', '/seats', undefined, seatHeaders('alice', 'hw-2'))).statusCode).toBe(200);
    expect((await releaseSeat(app, 'alice', 'hw-2')).body).toBe(JSON.stringify({ released: true, server_time: h.clock.iso() }));
    expect((await releaseSeat(app, 'alice', 'hw-2')).body).toBe(JSON.stringify({ released: false, server_time: h.clock.iso() }));
    expect(await liveSeats(app)).toEqual([]);
  });

  it('the user’s self-reset keeps a lease-held seat until exp (no event now, seat.expired when it dies) and frees the others', async () => {
    const { app, root } = await keyed({ max_seats: 2, heartbeat_seconds: 60, offline_grace_seconds: 3600 });
    await h.activeUser(app, 'alice', PASSWORD, undefined, { minutes: undefined, lifetime: true });
    const exp = leaseOf(await postLease(h, app, { ...legacy('alice'), 'x-hardware-id': 'hw-1' }), root).payload.exp as number;
    expect((await h.client(app, 'POST', '/seats', undefined, seatHeaders('alice', 'hw-2'))).statusCode).toBe(200);
    const reset = await eventsOf(async () => expect((await h.client(app, 'POST', '/devices/reset', undefined, seatHeaders('alice', 'hw-2'))).statusCode).toBe(200));
    expect(reset).toEqual(['devices.reset', 'seat.released hw-2']);
    expect(await liveSeats(app)).toMatchObject([{ hardware_id: 'hw-1', expires_at: new Date(exp).toISOString() }]);
    // One seat is free again, the lease's is not.
    expect((await h.client(app, 'POST', '/seats', undefined, seatHeaders('alice', 'hw-3'))).statusCode).toBe(200);
    expectError(await h.client(app, 'POST', '/seats', undefined, seatHeaders('alice', 'hw-4')), 409, 'seats_exhausted');
    h.clock.advance(3_600_000);
    expect((await eventsOf(() => sweepDeadSeats(h.tollgate.services))).sort()).toEqual(['seat.expired hw-1', 'seat.expired hw-3']);
  });

  it('the operator’s reset-devices and seat release free a lease-held seat at once', async () => {
    const { app, root } = await keyed({ max_seats: 1, heartbeat_seconds: 60, offline_grace_seconds: 3600 });
    const id = await h.activeUser(app, 'alice', PASSWORD, undefined, { minutes: undefined, lifetime: true });
    leaseOf(await postLease(h, app, { ...legacy('alice'), 'x-hardware-id': 'hw-1' }), root);
    const reset = await eventsOf(async () => expect((await h.admin('POST', `/apps/${app.id}/users/${id}/reset-devices`)).statusCode).toBe(204));
    expect(reset).toEqual(['devices.reset', 'seat.released hw-1']);
    expect(await liveSeats(app)).toEqual([]);

    leaseOf(await postLease(h, app, { ...legacy('alice'), 'x-hardware-id': 'hw-2' }), root);
    const [seat] = await liveSeats(app);
    expect((await h.admin('DELETE', `/apps/${app.id}/seats/${seat!.id}`)).statusCode).toBe(204);
    expect((await h.client(app, 'POST', '/seats', undefined, seatHeaders('alice', 'hw-3'))).statusCode).toBe(200);
  });

  it('dead seats a lease or a self-reset sweeps on its way are logged (seat_expired), as a checkout’s are', async () => {
    const { app, root } = await keyed({ max_seats: 2, heartbeat_seconds: 60, offline_grace_seconds: 3600 });
    await h.activeUser(app, 'alice', PASSWORD, undefined, { minutes: undefined, lifetime: true });
    await h.client(app, 'POST', '/seats', undefined, seatHeaders('alice', 'hw-1'));
    h.clock.advance(60_000);
    expect(await seatLinesOf(async () => leaseOf(await postLease(h, app, { ...legacy('alice'), 'x-hardware-id': 'hw-2' }), root))).toEqual(['seat_expired', 'seat_checked_out']);
    await h.client(app, 'POST', '/seats', undefined, seatHeaders('alice', 'hw-3'));
    h.clock.advance(60_000);
    // hw-3's seat died; hw-2's is held by its lease and stays.
    expect(await seatLinesOf(() => h.client(app, 'POST', '/devices/reset', undefined, seatHeaders('alice', 'hw-3')))).toEqual(['seat_expired']);
    expect((await liveSeats(app)).map((s) => s.hardware_id)).toEqual(['hw-2']);
  });

  it('the operator’s reset-devices logs each seat it frees (seat_released by reset) and sweeps (seat_expired), as the user’s reset does', async () => {
    const { app } = await keyed({ max_seats: 2, heartbeat_seconds: 60 });
    const id = await h.activeUser(app, 'alice', PASSWORD, undefined, { minutes: undefined, lifetime: true });
    const dead = (await h.client(app, 'POST', '/seats', undefined, seatHeaders('alice', 'hw-1'))).json().seat.id as string;
    const live = (await h.client(app, 'POST', '/seats', undefined, seatHeaders('alice', 'hw-2'))).json().seat.id as string;
    h.clock.advance(30_000);
    expect((await h.client(app, 'POST', '/seats/heartbeat', undefined, seatHeaders('alice', 'hw-2'))).statusCode).toBe(200);
    h.clock.advance(30_000); // hw-1's seat is dead now, hw-2's lives on
    const from = log.lines.length;
    expect((await h.admin('POST', `/apps/${app.id}/users/${id}/reset-devices`)).statusCode).toBe(204);
    const lines = log.lines.slice(from).map(fields).filter((l) => String(l.event).startsWith('seat_'));
    expect(lines).toEqual([
      expect.objectContaining({ event: 'seat_released', appId: app.id, userId: id, seatId: live, by: 'reset' }),
      expect.objectContaining({ event: 'seat_expired', appId: app.id, userId: id, seatId: dead }),
    ]);
  });

  it('the lease of the device already holding the seat renews it; without max_seats a lease takes no seat', async () => {
    const { app, root } = await keyed({ max_seats: 1, offline_grace_seconds: 3600, lease_renew_seconds: 600 });
    await h.activeUser(app, 'alice', PASSWORD, undefined, { minutes: undefined, lifetime: true });
    expect((await h.client(app, 'POST', '/seats', undefined, seatHeaders('alice', 'hw-1'))).statusCode).toBe(200);
    const lease = leaseOf(await postLease(h, app, { ...legacy('alice'), 'x-hardware-id': 'hw-1' }), root);
    expect((await h.admin('GET', `/apps/${app.id}/seats`)).json().items[0].expires_at).toBe(new Date(lease.payload.exp as number).toISOString());

    const off = await keyed({ offline_grace_seconds: 3600, lease_renew_seconds: 600 });
    await h.activeUser(off.app, 'bob', PASSWORD, undefined, { minutes: undefined, lifetime: true });
    expect((await postLease(h, off.app, { ...legacy('bob'), 'x-hardware-id': 'hw-1' })).statusCode).toBe(200);
    expect((await h.admin('GET', `/apps/${off.app.id}/seats`)).json().total).toBe(0);
  });

  it('10 parallel leases from 10 devices with max_seats 3: exactly 3 leases', async () => {
    const { app } = await keyed({ max_seats: 3, offline_grace_seconds: 3600, lease_renew_seconds: 600 });
    await h.activeUser(app, 'alice', PASSWORD, undefined, { minutes: undefined, lifetime: true });
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => postLease(h, app, { ...legacy('alice'), 'x-hardware-id': `hw-${i}` })));
    expect(results.filter((r) => r.statusCode === 200)).toHaveLength(3);
    expect(results.filter((r) => r.statusCode === 409)).toHaveLength(7);
  });
});

describe('admin: live seats', () => {
  it('lists seats per app and per user and releases one (audited); the device’s next heartbeat is 404', async () => {
    const { app } = await keyed({ max_seats: 2 });
    const id = await h.activeUser(app, 'alice');
    await h.client(app, 'POST', '/seats', undefined, seatHeaders('alice', 'hw-1'));
    const seat = (await h.client(app, 'POST', '/seats', undefined, seatHeaders('alice', 'hw-2'))).json().seat;
    expect((await h.admin('GET', `/apps/${app.id}/users/${id}/seats`)).json().total).toBe(2);
    expect((await h.admin('GET', `/apps/${app.id}/users/${id}`)).json().seats).toHaveLength(2);
    expect((await h.admin('DELETE', `/apps/${app.id}/seats/${seat.id}`)).statusCode).toBe(204);
    expectError(await h.admin('DELETE', `/apps/${app.id}/seats/${seat.id}`), 404, 'not_found');
    expectError(await h.client(app, 'POST', '/seats/heartbeat', undefined, seatHeaders('alice', 'hw-2')), 404, 'seat_not_found');
    expect((await h.admin('GET', `/apps/${app.id}/seats`)).json().items.map((s: { hardware_id: string }) => s.hardware_id)).toEqual(['hw-1']);
    const audit = (await h.admin('GET', `/audit?app_id=${app.id}`)).json().items;
    expect(audit[0]).toMatchObject({ action: 'seat.release', target_id: id });
    // Another app's seat is not found through this app.
    const other = await h.createApp();
    expectError(await h.admin('DELETE', `/apps/${other.id}/seats/${(await h.admin('GET', `/apps/${app.id}/seats`)).json().items[0].id}`), 404, 'not_found');
  });
});
