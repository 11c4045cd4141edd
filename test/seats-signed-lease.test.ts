import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { expectError, harness, PASSWORD, type Harness, type TestApp } from './helpers.js';
import { leaseApp, leaseOf, legacy, postLease } from './lease-fixtures.js';
import { setUpKeys } from './signing-fixtures.js';
import { call, verifyAnswer, type Pin, type SignedCall } from './signing-test-verifier.js';

/**
 * Issue 25: seat and self-reset answers are signed like every client answer (refusals included), and an
 * offline lease holds its device's seat until its exp (docs/decisions.md).
 */
let h: Harness;
beforeEach(async () => {
  h = await harness();
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
});

describe('an offline lease holds a seat', () => {
  it('POST /lease takes the device’s seat until the lease’s exp; a full pool refuses the lease; DELETE /seats gives it back early', async () => {
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

    const released = await h.inject({ method: 'DELETE', url: '/seats', headers: { ...app.headers, ...seatHeaders('alice', 'hw-1') } });
    expect(released.json().released).toBe(true);
    expect((await h.client(app, 'POST', '/seats', undefined, seatHeaders('alice', 'hw-2'))).statusCode).toBe(200);
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
