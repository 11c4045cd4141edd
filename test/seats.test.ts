import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import pg from 'pg';
import { expectError, harness, PASSWORD, STORE, type Harness, type TestApp } from './helpers.js';

/**
 * Floating seats (issue 25): POST /seats, POST /seats/heartbeat, DELETE /seats, on this run's store.
 * The clock is the harness's: a seat's death is tested by moving it, never by waiting.
 */
let h: Harness;
beforeEach(async () => {
  h = await harness();
});
afterEach(async () => h.close());

const legacy = (username: string, hw: string) => ({ 'x-api-username': username, 'x-api-password': PASSWORD, 'x-hardware-id': hw });

async function seatApp(settings: Record<string, unknown> = {}): Promise<TestApp> {
  const app = await h.createApp({ max_devices_per_user: 1000 });
  const res = await h.admin('PATCH', `/apps/${app.id}`, { max_seats: 2, heartbeat_seconds: 60, seat_grace_seconds: 30, ...settings });
  expect(res.statusCode, res.body).toBe(200);
  return app;
}

/** Polls (bounded) until `what` holds. */
async function until(what: () => Promise<boolean>, ms = 10_000): Promise<void> {
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 10))) if (await what()) return;
  throw new Error('condition not reached');
}

const checkout = (app: TestApp, user: string, hw: string) => h.client(app, 'POST', '/seats', undefined, legacy(user, hw));
const heartbeat = (app: TestApp, user: string, hw: string) => h.client(app, 'POST', '/seats/heartbeat', undefined, legacy(user, hw));
const release = (app: TestApp, user: string, hw: string) => h.inject({ method: 'DELETE', url: '/seats', headers: { ...app.headers, ...legacy(user, hw) } });

describe('POST /seats', () => {
  it('checks a seat out, is idempotent for the device holding it, and refuses a full pool with in_use, max and next_free_at', async () => {
    const app = await seatApp();
    await h.activeUser(app, 'alice');
    const first = await checkout(app, 'alice', 'hw-1');
    expect(first.statusCode, first.body).toBe(200);
    const seat = first.json();
    expect(seat).toEqual({
      seat: { id: expect.any(String), checked_out_at: h.clock.iso(), expires_at: h.clock.iso(90_000), heartbeat_seconds: 60 },
      seats: { max: 2, in_use: 1 },
      server_time: h.clock.iso(),
    });
    h.clock.advance(10_000);
    const again = (await checkout(app, 'alice', 'hw-1')).json();
    expect(again.seat.id).toBe(seat.seat.id);
    expect(again.seat.expires_at).toBe(h.clock.iso(90_000));
    expect(again.seats).toEqual({ max: 2, in_use: 1 });
    expect((await checkout(app, 'alice', 'hw-2')).json().seats.in_use).toBe(2);
    const full = expectError(await checkout(app, 'alice', 'hw-3'), 409, 'seats_exhausted') as Record<string, unknown>;
    // The soonest-ending seat is hw-1's, extended 10 s after the start.
    expect(full).toMatchObject({ in_use: 2, max: 2, next_free_at: h.clock.iso(90_000) });
  });

  it('another user has a pool of their own', async () => {
    const app = await seatApp({ max_seats: 1 });
    await h.activeUser(app, 'alice');
    await h.activeUser(app, 'bob');
    expect((await checkout(app, 'alice', 'hw-1')).statusCode).toBe(200);
    expect((await checkout(app, 'bob', 'hw-1')).statusCode).toBe(200);
    expectError(await checkout(app, 'alice', 'hw-2'), 409, 'seats_exhausted');
  });

  it('422 hardware_id_required without x-hardware-id; 409 seats_not_enabled without max_seats; anonymous and wrong credentials refused', async () => {
    const app = await seatApp();
    await h.activeUser(app, 'alice');
    expectError(await h.client(app, 'POST', '/seats', undefined, { 'x-api-username': 'alice', 'x-api-password': PASSWORD }), 422, 'hardware_id_required');
    expectError(await h.client(app, 'POST', '/seats', undefined, { 'x-hardware-id': 'hw-1' }), 401, 'anonymous_not_allowed');
    expectError(await h.client(app, 'POST', '/seats', undefined, { ...legacy('alice', 'hw-1'), 'x-api-password': 'wrong password' }), 401, 'invalid_credentials');
    const off = await h.createApp();
    await h.activeUser(off, 'carol');
    expectError(await checkout(off, 'carol', 'hw-1'), 409, 'seats_not_enabled');
  });

  it('a Bearer session works as on /app_context; an inactive membership is refused', async () => {
    const app = await seatApp();
    await h.activeUser(app, 'alice');
    const token = await h.login(app, 'alice');
    const res = await h.client(app, 'POST', '/seats', undefined, { authorization: `Bearer ${token}`, 'x-hardware-id': 'hw-9' });
    expect(res.statusCode, res.body).toBe(200);
    await h.signUp(app, 'lapsed');
    expectError(await checkout(app, 'lapsed', 'hw-1'), 403, 'membership_inactive');
  });

  it('banned user, device and IP get no seat', async () => {
    const app = await seatApp();
    const alice = await h.activeUser(app, 'alice');
    await h.activeUser(app, 'bob');
    await h.ban(app, 'hardware_id', 'hw-banned');
    expectError(await checkout(app, 'bob', 'hw-banned'), 403, 'banned');
    await h.ban(app, 'user', alice);
    expectError(await checkout(app, 'alice', 'hw-1'), 403, 'banned');
  });
});

describe('heartbeats and dead seats (controlled clock)', () => {
  it('a heartbeat extends; a seat late by heartbeat_seconds + grace is dead, its place free, and its device may check out again', async () => {
    const app = await seatApp({ max_seats: 1 });
    await h.activeUser(app, 'alice');
    const first = (await checkout(app, 'alice', 'hw-1')).json();
    h.clock.advance(80_000); // within 60 s + 30 s grace
    const beat = await heartbeat(app, 'alice', 'hw-1');
    expect(beat.statusCode, beat.body).toBe(200);
    expect(beat.json().seat).toMatchObject({ id: first.seat.id, expires_at: h.clock.iso(90_000) });
    expectError(await checkout(app, 'alice', 'hw-2'), 409, 'seats_exhausted');
    h.clock.advance(89_999);
    expectError(await checkout(app, 'alice', 'hw-2'), 409, 'seats_exhausted');
    h.clock.advance(1); // exactly heartbeat + grace after the last heartbeat: dead
    expectError(await heartbeat(app, 'alice', 'hw-1'), 404, 'seat_not_found');
    const taken = await checkout(app, 'alice', 'hw-2');
    expect(taken.statusCode, taken.body).toBe(200);
    expectError(await checkout(app, 'alice', 'hw-1'), 409, 'seats_exhausted');
    h.clock.advance(90_000);
    const back = (await checkout(app, 'alice', 'hw-1')).json();
    expect(back.seat.id).not.toBe(first.seat.id); // a new seat: the old one died
  });

  it('a heartbeat from a device holding no seat is 404 seat_not_found', async () => {
    const app = await seatApp();
    await h.activeUser(app, 'alice');
    expectError(await heartbeat(app, 'alice', 'hw-1'), 404, 'seat_not_found');
  });
});

describe('DELETE /seats', () => {
  it('releases the device’s seat at once (released true), then false; the place is free', async () => {
    const app = await seatApp({ max_seats: 1 });
    await h.activeUser(app, 'alice');
    await checkout(app, 'alice', 'hw-1');
    const res = await release(app, 'alice', 'hw-1');
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ released: true, server_time: h.clock.iso() });
    expect((await release(app, 'alice', 'hw-1')).json().released).toBe(false);
    expectError(await heartbeat(app, 'alice', 'hw-1'), 404, 'seat_not_found');
    expect((await checkout(app, 'alice', 'hw-2')).statusCode).toBe(200);
  });
});

describe('races: seats are counted by the database', () => {
  it('100 parallel checkouts from 100 devices with max_seats 5 give exactly 5 seats', async () => {
    const app = await seatApp({ max_seats: 5 });
    await h.activeUser(app, 'alice');
    const token = await h.login(app, 'alice');
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) => h.client(app, 'POST', '/seats', undefined, { authorization: `Bearer ${token}`, 'x-hardware-id': `hw-${i}` })),
    );
    expect(results.filter((r) => r.statusCode >= 500).map((r) => r.body)).toEqual([]);
    expect(results.filter((r) => r.statusCode === 200)).toHaveLength(5);
    expect(results.filter((r) => r.statusCode === 409 && r.json().code === 'seats_exhausted')).toHaveLength(95);
    const ids = new Set(results.filter((r) => r.statusCode === 200).map((r) => r.json().seat.id));
    expect(ids.size).toBe(5);
    const listed = await h.admin('GET', `/apps/${app.id}/seats`);
    expect(listed.json().total).toBe(5);
  });

  it('50 parallel checkouts from ONE device give one seat (same id every time)', async () => {
    const app = await seatApp({ max_seats: 5 });
    await h.activeUser(app, 'alice');
    const token = await h.login(app, 'alice');
    const results = await Promise.all(
      Array.from({ length: 50 }, () => h.client(app, 'POST', '/seats', undefined, { authorization: `Bearer ${token}`, 'x-hardware-id': 'hw-1' })),
    );
    expect(results.every((r) => r.statusCode === 200)).toBe(true);
    expect(new Set(results.map((r) => r.json().seat.id)).size).toBe(1);
    expect((await h.admin('GET', `/apps/${app.id}/seats`)).json().total).toBe(1);
  });
});

describe.skipIf(STORE !== 'postgres')('PostgreSQL: a seat deleted under a checkout', () => {
  it('the operator deletes the device’s seat while its checkout waits to extend it: the checkout takes a new seat (200), not a 500', async () => {
    const app = await seatApp();
    await h.activeUser(app, 'alice');
    const first = (await checkout(app, 'alice', 'hw-1')).json().seat.id as string;
    // The operator's release and reset and the periodic sweep delete seats without the user's lock: this
    // DELETE holds the row while the checkout (under the user's lock) finds it live and waits to extend it.
    const operator = new pg.Client({ connectionString: h.databaseUrl });
    await operator.connect();
    try {
      await operator.query('BEGIN');
      await operator.query('DELETE FROM seats WHERE id = $1', [first]);
      const again = checkout(app, 'alice', 'hw-1');
      // Polled inside the transaction: pg_stat_activity is read afresh only after its snapshot is cleared.
      await until(async () => {
        await operator.query('SELECT pg_stat_clear_snapshot()');
        const waiting = await operator.query(
          "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'UPDATE seats SET heartbeat_at%'",
        );
        return waiting.rowCount === 1;
      });
      await operator.query('COMMIT');
      const res = await again;
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json().seat.id).not.toBe(first);
      expect((await h.admin('GET', `/apps/${app.id}/seats`)).json().items.map((s: { id: string }) => s.id)).toEqual([res.json().seat.id]);
    } finally {
      await operator.end();
    }
  });
});

describe('the seat policy: a license template overrides the app’s defaults', () => {
  it('a template’s max_seats and heartbeat_seconds apply to its holder while the holding lives; others get the app’s (or no seats)', async () => {
    const app = await h.createApp({ max_devices_per_user: 1000 });
    const t = await h.admin('POST', `/apps/${app.id}/templates`, { name: 'Studio', minutes: 60, max_seats: 3, heartbeat_seconds: 30 });
    expect(t.statusCode, t.body).toBe(201);
    const license = await h.admin('POST', `/apps/${app.id}/licenses`, { count: 1, template_id: t.json().id });
    const code = license.json().licenses[0].code;
    await h.signUp(app, 'studio');
    expect((await h.client(app, 'POST', '/activate_license', { code, username: 'studio', password: PASSWORD })).statusCode).toBe(200);
    await h.activeUser(app, 'plain');
    // The app has no max_seats: only the template's holder has seats.
    expectError(await checkout(app, 'plain', 'hw-1'), 409, 'seats_not_enabled');
    const seat = (await checkout(app, 'studio', 'hw-1')).json();
    expect(seat.seat.heartbeat_seconds).toBe(30);
    expect(seat.seats.max).toBe(3);
    expect(seat.seat.expires_at).toBe(h.clock.iso(30_000));
    // An app default fills what the template leaves unset, and the template wins where it sets one.
    expect((await h.admin('PATCH', `/apps/${app.id}`, { max_seats: 1, heartbeat_seconds: 600 })).statusCode).toBe(200);
    expect((await checkout(app, 'plain', 'hw-1')).json()).toMatchObject({ seats: { max: 1 }, seat: { heartbeat_seconds: 600 } });
    expect((await checkout(app, 'studio', 'hw-2')).json().seats).toEqual({ max: 3, in_use: 2 });
    // The holding ends with the membership time it added: the app's defaults apply again.
    h.clock.minutes(61);
    await h.admin('PATCH', `/apps/${app.id}/users/${(await h.admin('GET', `/apps/${app.id}/users?q=studio`)).json().items[0].id}`, { extend_minutes: 60 });
    expect((await checkout(app, 'studio', 'hw-3')).json().seats.max).toBe(1);
  });
});
