/**
 * Issue 25 against the REAL server (dist/cli/main.js): floating seats checked
 * out, kept alive by the client's heartbeat, exhausted, lost when the operator
 * releases one (the next heartbeat is 404 seat_not_found), kept taken by the
 * lease that holds it (the device keeping its lease), released by close();
 * device self-reset and its cooldown.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryLeaseStore, TollgateError, TollgateSeatLostError } from '../src/index.js';
import { PASSWORD, startServer, type Server, type TestApp } from './server.js';

let server: Server;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server?.stop());

const rejection = async (p: Promise<unknown>) => p.then(() => expect.fail('expected a rejection'), (err: unknown) => err);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function seatApp(settings: Record<string, unknown>): Promise<TestApp> {
  const app = await server.app({ offline_grace_seconds: 86_400, max_devices_per_user: 100 });
  const res = await server.admin('PATCH', `/apps/${app.id}`, settings);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return app;
}

function device(app: TestApp, hardwareId: string) {
  const c = server.client(app, { hardwareId, leaseStore: new MemoryLeaseStore(), releaseSeatOnExit: false });
  c.auth = { username: 'alice', password: PASSWORD };
  return c;
}

describe('floating seats on the real server', () => {
  it('checked out, heartbeating, exhausted for a third device, lost when the operator releases it; a lease-held seat stays taken until the operator frees it', { timeout: 60_000 }, async () => {
    const app = await seatApp({ max_seats: 2, heartbeat_seconds: 10 });
    await server.activeUser(app, 'alice');
    const a = device(app, 'live-seat-a');
    const lost: TollgateSeatLostError[] = [];
    a.onSeatLost((e) => lost.push(e));
    const seat = await a.checkoutSeat();
    expect(seat).toMatchObject({ heartbeatSeconds: 10, max: 2, inUse: 1 });
    // A beat every 10/3 s moves the expiry on.
    await sleep(3_900);
    expect(Date.parse(a.seat!.expiresAt)).toBeGreaterThan(Date.parse(seat.expiresAt));
    expect(a.seatState).toBe('held');

    const b = device(app, 'live-seat-b');
    await b.createLease(); // the lease holds b's seat
    await b.checkoutSeat(); // the same seat: idempotent for a device holding one
    const c = device(app, 'live-seat-c');
    const full = (await rejection(c.checkoutSeat())) as TollgateError;
    expect([full.status, full.code, full.extra.in_use, full.extra.max, typeof full.extra.next_free_at]).toEqual([409, 'seats_exhausted', 2, 2, 'string']);

    // The operator releases a's seat: its next heartbeat is 404 seat_not_found, the seat is lost.
    const listed = (await server.admin('GET', `/apps/${app.id}/seats`)).body.items as { id: string; hardware_id: string }[];
    const aSeat = listed.find((s) => s.hardware_id === 'live-seat-a')!;
    expect((await server.admin('DELETE', `/apps/${app.id}/seats/${aSeat.id}`)).status).toBe(204);
    for (let i = 0; i < 100 && lost.length === 0; i++) await sleep(100);
    expect([lost[0]?.reason, lost[0]?.seatId]).toEqual(['seat_not_found', seat.id]);
    expect(a.seatState).toBe('lost');
    expect(await rejection(a.checkAccess())).toBe(lost[0]);

    // b gives its seat back: the lease holds it until its exp whatever the device says (a copy may run on offline):
    // released false, held_until, and b keeps its lease, so it may go on offline until then.
    const bLease = (await b.checkLease()).leaseId;
    const held = await b.releaseSeat();
    expect(held.released).toBe(false);
    expect(Date.parse(held.held_until!)).toBeGreaterThan(Date.now());
    expect((await b.checkLease()).leaseId).toBe(bLease);
    await c.checkoutSeat(); // a's place
    const d = device(app, 'live-seat-d');
    expect(((await rejection(d.checkoutSeat())) as TollgateError).code).toBe('seats_exhausted');
    // The operator frees b's seat; d gets the place.
    const bSeat = ((await server.admin('GET', `/apps/${app.id}/seats`)).body.items as { id: string; hardware_id: string }[]).find((s) => s.hardware_id === 'live-seat-b')!;
    expect((await server.admin('DELETE', `/apps/${app.id}/seats/${bSeat.id}`)).status).toBe(204);
    await d.checkoutSeat();
    await c.close(); // clean shutdown releases
    await d.close();
    const after = (await server.admin('GET', `/apps/${app.id}/seats`)).body.items as { hardware_id: string }[];
    expect(after.map((s) => s.hardware_id)).toEqual([]);
  });

  it('seats_not_enabled when the app sets no max_seats', async () => {
    const app = await server.app();
    await server.activeUser(app, 'alice');
    const err = (await rejection(device(app, 'live-seat-x').checkoutSeat())) as TollgateError;
    expect([err.status, err.code]).toEqual([409, 'seats_not_enabled']);
  });
});

describe('device self-reset on the real server', () => {
  it('resets, ends the session used, then answers reset_cooldown with retryAfter and lastResetAt; reset_disabled when off', async () => {
    const app = await seatApp({ device_reset_cooldown_seconds: 3600 });
    await server.activeUser(app, 'alice');
    const c = device(app, 'live-reset-1');
    await c.login({ credentials: { username: 'alice', password: PASSWORD } });
    const reset = await c.resetDevices();
    expect(reset).toMatchObject({ reset_at: expect.any(String), server_time: expect.any(String) });
    expect(c.auth).toBeNull();
    const again = (await rejection(c.resetDevices({ username: 'alice', password: PASSWORD }))) as TollgateError;
    expect([again.status, again.code]).toEqual([429, 'reset_cooldown']);
    expect(again.retryAfter).toBeGreaterThan(3500);
    expect(again.lastResetAt).toBe(reset.reset_at);

    const off = await seatApp({ device_reset_cooldown_seconds: 0 });
    await server.activeUser(off, 'alice');
    const disabled = (await rejection(device(off, 'live-reset-2').resetDevices())) as TollgateError;
    expect([disabled.status, disabled.code]).toEqual([403, 'reset_disabled']);
  });
});
