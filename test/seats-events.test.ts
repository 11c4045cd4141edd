import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/index.js';
import { sweepDeadSeats } from '../src/domain/seats.js';
import { createTollgate } from '../src/wiring.js';
import { ADMIN_TOKEN, fastHasher, harness, PASSWORD, STORE, type Harness, type TestApp } from './helpers.js';

/** Issue 25's events in the outbox: seat.checked_out, seat.released, seat.expired (once per seat), devices.reset by the user. */
let h: Harness;
let app: TestApp;
beforeEach(async () => {
  h = await harness();
  app = await h.createApp({ max_devices_per_user: 10 });
  expect((await h.admin('PATCH', `/apps/${app.id}`, { max_seats: 3, heartbeat_seconds: 60, seat_grace_seconds: 0 })).statusCode).toBe(200);
});
afterEach(async () => h.close());

interface StoredEvent { id: string; type: string; data: string }
const stored = () => h.tollgate.services.store.db.all<StoredEvent>('SELECT id, type, data FROM events ORDER BY occurred_at, id');
async function during(step: () => Promise<unknown>): Promise<{ type: string; data: Record<string, unknown> }[]> {
  const before = new Set((await stored()).map((e) => e.id));
  await step();
  return (await stored()).filter((e) => !before.has(e.id)).map((e) => ({ type: e.type, data: JSON.parse(e.data) }));
}
const headers = (hw: string) => ({ 'x-api-username': 'alice', 'x-api-password': PASSWORD, 'x-hardware-id': hw });

describe('seat events', () => {
  it('a checkout emits seat.checked_out once (not again for the same device), DELETE /seats seat.released by the user', async () => {
    const userId = await h.activeUser(app, 'alice');
    const first = await during(() => h.client(app, 'POST', '/seats', undefined, headers('hw-1')));
    expect(first).toEqual([{ type: 'seat.checked_out', data: { seat: expect.objectContaining({ user_id: userId, hardware_id: 'hw-1' }) } }]);
    expect(await during(() => h.client(app, 'POST', '/seats', undefined, headers('hw-1')))).toEqual([]);
    expect(await during(() => h.client(app, 'POST', '/seats/heartbeat', undefined, headers('hw-1')))).toEqual([]);
    const released = await during(() => h.inject({ method: 'DELETE', url: '/seats', headers: { ...app.headers, ...headers('hw-1') } }));
    expect(released).toEqual([{ type: 'seat.released', data: { seat: expect.objectContaining({ hardware_id: 'hw-1' }), by: 'user' } }]);
  });

  it('a dead seat is seat.expired exactly once, found by the sweep on several nodes at once', async () => {
    await h.activeUser(app, 'alice');
    await h.client(app, 'POST', '/seats', undefined, headers('hw-1'));
    await h.client(app, 'POST', '/seats', undefined, headers('hw-2'));
    h.clock.advance(60_000);
    // On PostgreSQL a second node on the same database (its own services and pool) sweeps at the same moments.
    const other = STORE === 'postgres'
      ? await createTollgate(loadConfig({ DATABASE_URL: h.databaseUrl, TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN, LOG_LEVEL: 'silent', RATE_LIMIT: 'off' }), { clock: h.clock.now, hasher: fastHasher })
      : h.tollgate;
    const swept = await during(() => Promise.all([sweepDeadSeats(h.tollgate.services), sweepDeadSeats(other.services), sweepDeadSeats(h.tollgate.services), sweepDeadSeats(other.services)]));
    if (other !== h.tollgate) await other.close();
    expect(swept.map((e) => e.type)).toEqual(['seat.expired', 'seat.expired']);
    expect(new Set(swept.map((e) => (e.data.seat as { hardware_id: string }).hardware_id))).toEqual(new Set(['hw-1', 'hw-2']));
    expect(await during(() => sweepDeadSeats(h.tollgate.services))).toEqual([]);
  });

  it('a checkout that finds a dead seat of the same user emits its seat.expired with the new seat', async () => {
    await h.activeUser(app, 'alice');
    await h.client(app, 'POST', '/seats', undefined, headers('hw-1'));
    h.clock.advance(60_000);
    const events = await during(() => h.client(app, 'POST', '/seats', undefined, headers('hw-2')));
    expect(events.map((e) => e.type)).toEqual(['seat.expired', 'seat.checked_out']);
  });

  it('the operator’s release is seat.released by operator; the user’s reset is devices.reset by user with seat.released by reset', async () => {
    const userId = await h.activeUser(app, 'alice');
    const seat = (await h.client(app, 'POST', '/seats', undefined, headers('hw-1'))).json().seat;
    await h.client(app, 'POST', '/seats', undefined, headers('hw-2'));
    const byOperator = await during(() => h.admin('DELETE', `/apps/${app.id}/seats/${seat.id}`));
    expect(byOperator).toEqual([{ type: 'seat.released', data: { seat: expect.objectContaining({ id: seat.id }), by: 'operator' } }]);
    const reset = await during(() => h.client(app, 'POST', '/devices/reset', undefined, headers('hw-3')));
    expect(reset.map((e) => e.type)).toEqual(['devices.reset', 'seat.released']);
    expect(reset[0]!.data).toEqual({ user_id: userId, devices_removed: 0, seats_released: 1, by: 'user' });
    expect(reset[1]!.data.by).toBe('reset');
  });

  it('a lease under a seat policy emits seat.checked_out', async () => {
    // Leases need keys and offline grace: covered for the seat itself in seats-signed-lease.test.ts; here the event only.
    const { setUpKeys } = await import('./signing-fixtures.js');
    await h.admin('PATCH', `/apps/${app.id}`, { offline_grace_seconds: 3600, lease_renew_seconds: 600 });
    await setUpKeys(h, app);
    await h.activeUser(app, 'alice');
    const events = await during(() => h.client(app, 'POST', '/lease', undefined, { ...headers('hw-1'), 'tollgate-nonce': 'n'.repeat(24) }));
    expect(events.map((e) => e.type)).toEqual(['seat.checked_out']);
  });
});
