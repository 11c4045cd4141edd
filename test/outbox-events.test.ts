import { Webhook } from 'standardwebhooks';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { assertNoSecrets, EVENT_TYPES } from '../src/domain/outbox/catalogue.js';
import { sweepExpiries } from '../src/domain/outbox/sweeper.js';
import { loadConfig } from '../src/config/index.js';
import { write } from '../src/domain/unit-of-work.js';
import { createTollgate } from '../src/wiring.js';
import { ADMIN_TOKEN, fastHasher, harness, PASSWORD, STORE, TestClock, type Harness, type TestApp } from './helpers.js';
import { rootPair, rotateKey } from './signing-fixtures.js';
import { Receiver } from './webhook-receiver.js';

// The secrets check, watched: the test event's data never names a secret, so whether it passed through the check
// shows nowhere else (the check itself is the real one).
vi.mock('../src/domain/outbox/catalogue.js', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../src/domain/outbox/catalogue.js')>();
  return { ...actual, assertNoSecrets: vi.fn(actual.assertNoSecrets) };
});

/**
 * The outbox (src/domain/unit-of-work.ts `emit`): every state change writes its events in its own transaction,
 * so an event exists iff the change committed, and each catalogue event fires once for its change.
 */

interface StoredEvent { id: string; type: string; app_id: string | null; occurred_at: number | string; data: string }

async function stored(h: Harness): Promise<StoredEvent[]> {
  return h.tollgate.services.store.db.all<StoredEvent>('SELECT id, type, app_id, occurred_at, data FROM events ORDER BY occurred_at, id');
}

const typesOf = (events: StoredEvent[]) => events.map((e) => e.type);

/** The events a step wrote, by type. */
async function during(h: Harness, step: () => Promise<unknown>): Promise<StoredEvent[]> {
  const before = new Set((await stored(h)).map((e) => e.id));
  await step();
  return (await stored(h)).filter((e) => !before.has(e.id));
}

async function refuse(h: Harness, table: string): Promise<void> {
  const db = h.tollgate.services.store.db;
  if (STORE === 'sqlite') {
    await db.script(`CREATE TRIGGER refused_${table} BEFORE INSERT ON ${table} BEGIN SELECT RAISE(ABORT, 'refused by the test'); END;`);
  } else {
    await db.script(`
      CREATE FUNCTION refused_${table}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$;
      CREATE TRIGGER refused_${table} BEFORE INSERT ON ${table} FOR EACH ROW EXECUTE FUNCTION refused_${table}();`);
  }
}

describe('events are written with their change', () => {
  let h: Harness;
  let app: TestApp;
  beforeEach(async () => {
    h = await harness();
    app = await h.createApp({ device_auth_enabled: true, max_devices_per_user: 3 });
  });
  afterEach(async () => h.close());

  it('a forced rollback writes no event: the audit insert fails after the event was emitted', async () => {
    await refuse(h, 'audit_log');
    const before = await stored(h);
    const res = await h.admin('POST', `/apps/${app.id}/licenses`, { count: 2, minutes: 60 });
    expect(res.statusCode).toBeGreaterThanOrEqual(500);
    expect(await stored(h)).toEqual(before);
  });

  it('a forced rollback of a client write (sign-up) writes no event', async () => {
    await refuse(h, 'user_ips');
    const before = await stored(h);
    const res = await h.client(app, 'POST', '/sign_up', { username: 'alice', password: PASSWORD, hardware_id: 'hw-1' });
    expect(res.statusCode).toBeGreaterThanOrEqual(500);
    expect(await stored(h)).toEqual(before);
  });

  it('an event refused by the store rolls its change back: no license is created when the events table refuses', async () => {
    await refuse(h, 'events');
    const res = await h.admin('POST', `/apps/${app.id}/licenses`, { count: 2, minutes: 60 });
    expect(res.statusCode).toBeGreaterThanOrEqual(500);
    const list = await h.admin('GET', `/apps/${app.id}/licenses`);
    expect(list.json().items).toEqual([]);
  });

  it('each event: a UUIDv7 id, its type, the time, the app, and the object after the change without secrets', async () => {
    const [event] = await during(h, () => h.signUp(app, 'alice', PASSWORD, 'hw-1'));
    expect(event!.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(event!.type).toBe('user.created');
    expect(event!.app_id).toBe(app.id);
    expect(Number(event!.occurred_at)).toBe(h.clock.ms);
    const data = JSON.parse(event!.data);
    expect(data).toMatchObject({ username: 'alice', password_set: true, device_count: 1, membership: { is_active: false } });
    expect(event!.data).not.toContain(PASSWORD);
  });

  it('every catalogue event fires exactly once for its change', async () => {
    const seen = new Map<string, number>();
    const expectOne = async (type: string, step: () => Promise<unknown>) => {
      const events = await during(h, step);
      expect(typesOf(events).filter((t) => t === type), `${type} from its step: ${typesOf(events).join(', ')}`).toHaveLength(1);
      for (const e of events) seen.set(e.type, (seen.get(e.type) ?? 0) + 1);
      return events.find((e) => e.type === type)!;
    };
    const ok = async (p: Promise<{ statusCode: number; body: string }>, status = 200) => {
      const res = await p;
      expect(res.statusCode, res.body).toBe(status);
      return res as unknown as { statusCode: number; json(): any };
    };

    const created = await expectOne('app.created', () => h.admin('POST', '/apps', { name: 'Other' }));
    expect(JSON.parse(created.data)).not.toHaveProperty('api_key');
    await expectOne('app.updated', () => ok(h.admin('PATCH', `/apps/${app.id}`, { name: 'Renamed' })));
    await expectOne('app.secret_rotated', () => ok(h.admin('POST', `/apps/${app.id}/secret`)));
    const rotated = await h.admin('GET', `/apps/${app.id}`);
    expect(rotated.statusCode).toBe(200);
    // The app's secret changed: the test's app headers are refreshed from a new app below.
    app = await h.createApp({ device_auth_enabled: true, max_devices_per_user: 3 });

    const batch = await expectOne('license.created', () => ok(h.admin('POST', `/apps/${app.id}/licenses`, { count: 3, minutes: 60 }), 201));
    const batchData = JSON.parse(batch.data);
    expect(batchData.count).toBe(3);
    expect(batchData.licenses.map((l: { code: string }) => l.code)).toHaveLength(3);
    const codes: string[] = batchData.licenses.map((l: { code: string }) => l.code);

    await expectOne('user.created', () => h.signUp(app, 'alice', PASSWORD, 'hw-1'));
    const aliceId = (await h.admin('GET', `/apps/${app.id}/users?search=alice`)).json().items[0].id;
    const redeemed = await during(h, () => ok(h.client(app, 'POST', '/activate_license', { code: codes[0], username: 'alice', password: PASSWORD, hardware_id: 'hw-1' })));
    expect(typesOf(redeemed).sort()).toEqual(['license.redeemed', 'user.updated']);
    expect(redeemed.map((e) => e.data).join('')).not.toContain(codes[0]);
    for (const e of redeemed) seen.set(e.type, (seen.get(e.type) ?? 0) + 1);

    const device = await expectOne('device.registered', () => ok(h.client(app, 'POST', '/auth/login', { credentials: { username: 'alice', password: PASSWORD }, hardware_id: 'hw-2' })));
    expect(JSON.parse(device.data)).toMatchObject({ user_id: aliceId, hardware_id: 'hw-2' });
    const licenseSignUp = await during(h, () => ok(h.client(app, 'POST', '/sign_up_with_license_code', { code: codes[1], hardware_id: 'hw-9' })));
    expect(typesOf(licenseSignUp).sort()).toEqual(['device.registered', 'license.redeemed', 'user.created']);
    for (const e of licenseSignUp) seen.set(e.type, (seen.get(e.type) ?? 0) + 1);

    await expectOne('user.updated', () => ok(h.admin('PATCH', `/apps/${app.id}/users/${aliceId}`, { extend_minutes: 10 })));
    const reset = await expectOne('devices.reset', () => ok(h.admin('POST', `/apps/${app.id}/users/${aliceId}/reset-devices`), 204));
    expect(JSON.parse(reset.data)).toMatchObject({ user_id: aliceId, devices_removed: 2 });
    await expectOne('user.sessions_revoked', () => ok(h.admin('POST', `/apps/${app.id}/users/${aliceId}/revoke-sessions`)));
    const ban = await expectOne('ban.created', () => ok(h.admin('POST', `/apps/${app.id}/bans`, { type: 'hardware_id', value: 'hw-bad' }), 201));
    await expectOne('ban.deleted', () => ok(h.admin('DELETE', `/apps/${app.id}/bans/${JSON.parse(ban.data).id}`), 204));
    const licenseId = batchData.licenses[2].id;
    await expectOne('license.deleted', () => ok(h.admin('DELETE', `/apps/${app.id}/licenses/${licenseId}`), 204));
    await expectOne('variable.updated', () => ok(h.admin('PUT', `/apps/${app.id}/variables/motd`, { value: 'hi' })));
    await expectOne('variable.deleted', () => ok(h.admin('DELETE', `/apps/${app.id}/variables/motd`), 204));

    const upload = (url: string, method: 'POST' | 'PUT') =>
      ok(h.inject({ method, url: `/admin/v1/apps/${app.id}${url}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/octet-stream' }, payload: Buffer.from('abc') }) as never, method === 'POST' ? 201 : 200);
    const file = await expectOne('file.created', () => upload('/files?name=a.bin', 'POST'));
    const fileId = JSON.parse(file.data).id;
    await expectOne('file.updated', () => upload(`/files/${fileId}/content`, 'PUT'));
    await expectOne('file.updated', () => ok(h.admin('PATCH', `/apps/${app.id}/files/${fileId}`, { name: 'b.bin' })));
    await expectOne('file.deleted', () => ok(h.admin('DELETE', `/apps/${app.id}/files/${fileId}`), 204));

    const root = rootPair();
    await expectOne('root_key.set', () => ok(h.admin('PUT', `/apps/${app.id}/root-key`, { public_key: root.rootPublicKey })));
    const certified = await during(h, () => rotateKey(h, app, root.rootPrivateKey));
    expect(typesOf(certified)).toEqual(['signing_key.created', 'signing_key.rotated']);
    expect(JSON.parse(certified[1]!.data)).toMatchObject({ status: 'active' });
    for (const e of certified) seen.set(e.type, (seen.get(e.type) ?? 0) + 1);

    const key = await expectOne('signing_key.created', () => ok(h.admin('POST', `/apps/${app.id}/signing-keys`), 201));
    const kid = JSON.parse(key.data).kid;
    await expectOne('signing_key.retired', () => ok(h.admin('POST', `/apps/${app.id}/signing-keys/${kid}/retire`)));

    // The sweep finds the expiry of a membership once, however often and on however many nodes it runs.
    await ok(h.admin('PATCH', `/apps/${app.id}/users/${aliceId}`, { active_until: h.clock.iso(60_000) }));
    h.clock.minutes(2);
    // On PostgreSQL a second node on the same database (its own services, pool and caches) sweeps at the same
    // moments; SQLite has one node, whose sweeps overlap here.
    const other = STORE === 'postgres'
      ? await createTollgate(loadConfig({ DATABASE_URL: h.databaseUrl, TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN, LOG_LEVEL: 'silent', RATE_LIMIT: 'off' }), { clock: h.clock.now, hasher: fastHasher })
      : h.tollgate;
    const expired = await during(h, async () => Promise.all([sweepExpiries(h.tollgate.services), sweepExpiries(other.services), sweepExpiries(h.tollgate.services), sweepExpiries(other.services)]));
    if (other !== h.tollgate) await other.close();
    expect(typesOf(expired)).toEqual(['membership.expired']);
    expect(JSON.parse(expired[0]!.data)).toEqual({ user_id: aliceId, expired_at: h.clock.iso(-60_000) });
    seen.set('membership.expired', 1);
    expect(await during(h, () => sweepExpiries(h.tollgate.services))).toEqual([]);

    await expectOne('user.deleted', () => ok(h.admin('DELETE', `/apps/${app.id}/users/${aliceId}`), 204));
    await expectOne('app.deleted', () => ok(h.admin('DELETE', `/apps/${app.id}?confirm=${encodeURIComponent('Test app')}`), 204));

    // Not a change of this branch: license.revoked and license.extended are emitted by the sales integration (issue 23,
    // "Sales in": test/sales-lifecycle.test.ts), and webhook.test by an endpoint's test route (test/webhooks.test.ts).
    // Issue 24's template, entitlement and trial events: test/tiers-events.test.ts; issue 25's seats: test/seats-events.test.ts.
    const elsewhere = new Set([
      'license.revoked', 'license.extended', 'webhook.test',
      'template.created', 'template.updated', 'template.applied', 'template.deleted', 'entitlement.granted', 'entitlement.revoked', 'trial.started', 'trial.converted',
      'seat.checked_out', 'seat.released', 'seat.expired',
    ]);
    expect(EVENT_TYPES.filter((t) => !seen.has(t) && !elsewhere.has(t))).toEqual([]);
  });
});

describe('one recording path, the test event’s too', () => {
  let h: Harness;
  let app: TestApp;
  let receiver: Receiver;
  beforeEach(async () => {
    // The clock starts at the real time: standardwebhooks checks webhook-timestamp against the wall clock (5 min).
    h = await harness({ clock: new TestClock(Date.now()), env: { WEBHOOK_ALLOW_HOSTS: '127.0.0.1' } });
    app = await h.createApp();
    receiver = await Receiver.start();
  });
  afterEach(async () => {
    await h.close();
    await receiver.close();
  });

  const endpoint = async (path: string, body: Record<string, unknown> = {}): Promise<{ id: string; secret: string }> => {
    const res = await h.admin('POST', path, { url: 'http://127.0.0.1:9/hook', ...body });
    expect(res.statusCode, res.body).toBe(201);
    return res.json();
  };
  const deliveredTo = async (eventId: string) =>
    (await h.tollgate.services.store.db.all<{ endpoint_id: string }>('SELECT endpoint_id FROM webhook_deliveries WHERE event_id = ?', [eventId])).map((r) => r.endpoint_id);

  it('emit with `only` delivers to that endpoint alone, whatever the subscriptions, through the secrets check', async () => {
    const service = (await endpoint('/webhooks')).id;
    const own = (await endpoint(`/apps/${app.id}/webhooks`, { event_types: ['user.created'] })).id;
    const recorded = await write(h.tollgate.services, ({ emit }) => emit('webhook.test', app.id, { endpoint_id: own, message: 'hi' }, own));
    expect(recorded.deliveries).toBe(1);
    expect(recorded.deliveryId).toBeDefined();
    expect(await deliveredTo(recorded.eventId)).toEqual([own]);
    const all = await write(h.tollgate.services, ({ emit }) => emit('webhook.test', app.id, { endpoint_id: own, message: 'hi' }));
    expect(await deliveredTo(all.eventId), 'without `only`: the subscribers (the service-wide endpoint)').toEqual([service]);
    await expect(write(h.tollgate.services, ({ emit }) => emit('webhook.test', app.id, { api_secret: 'x' }, own))).rejects.toThrow(/looks like a secret/);
  });

  it('POST …/test goes through emit: checked for secrets, listed as a webhook.test event, delivered to the endpoint tested alone, signed', async () => {
    await endpoint('/webhooks');
    const own = await endpoint(`/apps/${app.id}/webhooks`, { url: receiver.url, event_types: ['user.created'] });
    vi.mocked(assertNoSecrets).mockClear();
    const res = await h.admin('POST', `/apps/${app.id}/webhooks/${own.id}/test`);
    expect(res.statusCode, res.body).toBe(202);
    const { event_id: eventId, delivery_id: deliveryId } = res.json() as { event_id: string; delivery_id: string };
    // Recorded as emit records: its data went through the secrets check, the event is listed under its type.
    const data = { endpoint_id: own.id, message: 'A test event sent from Tollgate' };
    expect(vi.mocked(assertNoSecrets).mock.calls.filter(([type]) => type === 'webhook.test')).toEqual([['webhook.test', data]]);
    const listed = await h.admin('GET', `/events?app_id=${app.id}&type=webhook.test`);
    expect(listed.json().items).toEqual([expect.objectContaining({ id: eventId, type: 'webhook.test', app_id: app.id, data })]);
    // One delivery, to the endpoint tested only (not the service-wide one, which hears of every app event).
    expect(await deliveredTo(eventId)).toEqual([own.id]);
    const deliveries = (await h.admin('GET', `/apps/${app.id}/webhooks/${own.id}/deliveries`)).json().items;
    expect(deliveries.map((d: { id: string; event_id: string; event_type: string }) => [d.id, d.event_id, d.event_type])).toEqual([[deliveryId, eventId, 'webhook.test']]);
    // It reaches the endpoint signed with the endpoint's secret, as every event does.
    const [got] = await receiver.count(1);
    const headers = { 'webhook-id': got!.headers['webhook-id'] as string, 'webhook-timestamp': got!.headers['webhook-timestamp'] as string, 'webhook-signature': got!.headers['webhook-signature'] as string };
    expect(new Webhook(own.secret).verify(got!.body, headers)).toMatchObject({ id: eventId, type: 'webhook.test', app_id: app.id, data });
    expect(headers['webhook-id']).toBe(eventId);
  });
});
