import type { LightMyRequestResponse } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { harness, PASSWORD, type Harness, type TestApp, expectError } from './helpers.js';

/**
 * The users part of the admin API (DECISIONS.md "Admin API"; docs/decisions.md
 * "Admin API": PATCH extend_minutes / lifetime / active_until / password,
 * reset-devices, revoke-sessions, delete).
 */

let h: Harness;
beforeEach(async () => {
  h = await harness();
});
afterEach(async () => h.close());

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const MINUTE = 60_000;
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

function expect422(res: LightMyRequestResponse, field: string) {
  const body = expectError(res, 422, 'validation_error');
  const fields = body.errors!.map((e) => e.field);
  expect(fields.some((f) => f === field || f.startsWith(`${field}.`) || f.startsWith(`${field}/`)), `fields ${JSON.stringify(fields)} should name ${field}`).toBe(true);
}

/** GET /app_context with a session token: 200 while the session lives. */
function withToken(app: TestApp, token: string) {
  return h.client(app, 'GET', '/app_context', undefined, bearer(token));
}

function loginRes(app: TestApp, username: string, password = PASSWORD, hardwareId?: string, remoteAddress?: string) {
  return h.inject({
    method: 'POST', url: '/auth/login', headers: app.headers,
    payload: { credentials: { username, password }, ...(hardwareId !== undefined && { hardware_id: hardwareId }) },
    ...(remoteAddress !== undefined && { remoteAddress }),
  });
}

const users = (app: TestApp, query = '') => h.admin('GET', `/apps/${app.id}/users${query}`);
const detail = (app: TestApp, id: string) => h.admin('GET', `/apps/${app.id}/users/${id}`);
const patch = (app: TestApp, id: string, body: unknown) => h.admin('PATCH', `/apps/${app.id}/users/${id}`, body);

interface Membership { is_active: boolean; is_lifetime: boolean; active_until: string | null }

async function membership(app: TestApp, id: string): Promise<Membership> {
  const res = await detail(app, id);
  expect(res.statusCode, res.body).toBe(200);
  return res.json().membership;
}

/** Creates one license and returns {id, code}. */
const license = (app: TestApp, body?: Record<string, unknown>): Promise<{ id: string; code: string }> => h.license(app, body);

// ---------------------------------------------------------------------------------------------

describe('GET /apps/:app/users (list and search)', () => {
  it('lists {items, next_cursor} with the summary of each user', async () => {
    const app = await h.createApp();
    const id = await h.activeUser(app, 'alice');
    const res = await users(app);
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body.next_cursor).toBeNull();
    expect(body.items).toHaveLength(1);
    expect(body.items[0]).toMatchObject({
      id, username: 'alice', password_set: true, device_count: 0,
      membership: { is_active: true, is_lifetime: false, active_until: h.clock.iso(60 * MINUTE), entitlements: [] },
    });
    expect(body.items[0].id).toMatch(UUID);
    expect(body.items[0].created_at).toMatch(ISO);
  });

  it('q= matches a username substring, case-insensitively', async () => {
    const app = await h.createApp();
    const alice = await h.signUp(app, 'alice');
    const malice = await h.signUp(app, 'Malice_99');
    await h.signUp(app, 'bob');
    await h.signUp(app, 'carol');

    const ids = async (q: string) => ((await users(app, `?q=${encodeURIComponent(q)}`)).json().items as { id: string }[]).map((u) => u.id).sort();
    expect(await ids('lic')).toEqual([alice, malice].sort());
    expect(await ids('LIC')).toEqual([alice, malice].sort());
    expect(await ids('_99')).toEqual([malice]);
    expect(await ids('bob')).toHaveLength(1);
    expect(await ids('nobody-here')).toEqual([]);
  });

  it('q= treats % and _ literally (no wildcard search)', async () => {
    const app = await h.createApp();
    await h.signUp(app, 'alice');
    await h.signUp(app, 'bob_smith');
    const count = async (q: string) => (await users(app, `?q=${encodeURIComponent(q)}`)).json().items.length;
    expect(await count('%')).toBe(0);
    expect(await count('_')).toBe(1);
    expect(await count('a%e')).toBe(0);
  });

  it('q= with a user id finds exactly that user', async () => {
    const app = await h.createApp();
    await h.signUp(app, 'alice');
    const bob = await h.signUp(app, 'bob');
    await h.signUp(app, 'carol');
    const res = await users(app, `?q=${bob}`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().items.map((u: { id: string }) => u.id)).toEqual([bob]);
  });

  it('q= never finds a user of another app, even by id', async () => {
    const appA = await h.createApp({ name: 'A' });
    const appB = await h.createApp({ name: 'B' });
    await h.signUp(appA, 'alice');
    const other = await h.signUp(appB, 'alice2');
    expect((await users(appA, `?q=${other}`)).json().items).toEqual([]);
    expect((await users(appA, '?q=alice2')).json().items).toEqual([]);
    expect((await users(appA)).json().items.map((u: { username: string }) => u.username)).toEqual(['alice']);
  });

  it('cursor pagination visits every user exactly once, also with a search', async () => {
    const app = await h.createApp();
    const all: string[] = [];
    for (let i = 0; i < 11; i++) {
      all.push(await h.signUp(app, `user${String(i).padStart(2, '0')}`));
      if (i % 3 === 0) h.clock.advance(1); // some users share a created_at, some do not
    }
    await h.signUp(app, 'zed');

    const walk = async (extra: string) => {
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const res = await users(app, `?limit=4${extra}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
        expect(res.statusCode, res.body).toBe(200);
        const body = res.json();
        expect(body.items.length).toBeLessThanOrEqual(4);
        seen.push(...body.items.map((u: { id: string }) => u.id));
        cursor = body.next_cursor;
        pages++;
      } while (cursor !== null && pages < 20);
      return seen;
    };
    const everyone = await walk('');
    expect(everyone).toHaveLength(12);
    expect(new Set(everyone).size).toBe(12);
    const matching = await walk('&q=user');
    expect(matching.sort()).toEqual([...all].sort());
  });

  it('a bad cursor or limit → 422; an unknown app → 404', async () => {
    const app = await h.createApp();
    expect422(await users(app, '?cursor=not-a-cursor'), 'querystring.cursor');
    expectError(await users(app, '?limit=0'), 422, 'validation_error');
    expectError(await users(app, '?limit=501'), 422, 'validation_error');
    expectError(await h.admin('GET', '/apps/00000000-0000-4000-8000-000000000000/users'), 404, 'not_found');
  });
});

describe('GET /apps/:app/users/:id (detail)', () => {
  it('shows membership, devices, IPs with counts, activations and live sessions', async () => {
    const app = await h.createApp({ device_auth_enabled: true, max_devices_per_user: 2 });
    const id = await h.signUp(app, 'alice', PASSWORD, 'HW-ONE');
    const lic = await license(app, { minutes: 90 });
    const act = await h.client(app, 'POST', '/activate_license', { code: lic.code, username: 'alice', password: PASSWORD, hardware_id: 'HW-ONE' });
    expect(act.statusCode, act.body).toBe(200);
    const activatedAt = h.clock.iso();

    h.clock.minutes(1);
    expect((await loginRes(app, 'alice', PASSWORD, 'HW-ONE')).statusCode).toBe(200);
    h.clock.minutes(1);
    expect((await loginRes(app, 'alice', PASSWORD, 'HW-TWO', '203.0.113.7')).statusCode).toBe(200);

    const res = await detail(app, id);
    expect(res.statusCode, res.body).toBe(200);
    const d = res.json();
    expect(d).toMatchObject({
      id, username: 'alice', password_set: true, device_count: 2, signup_license_id: null,
      membership: { is_active: true, is_lifetime: false, active_until: new Date(Date.parse(activatedAt) + 90 * MINUTE).toISOString(), entitlements: [] },
    });
    expect(d.devices.map((x: { hardware_id: string }) => x.hardware_id).sort()).toEqual(['HW-ONE', 'HW-TWO']);
    for (const dev of d.devices) {
      expect(dev.id).toMatch(UUID);
      expect(dev.created_at).toMatch(ISO);
      expect(dev.last_seen_at).toMatch(ISO);
    }
    // IPs: the sign-up and one login from 127.0.0.1, one login from 203.0.113.7.
    const ips = Object.fromEntries(d.ips.map((i: { ip: string; count: number }) => [i.ip, i]));
    expect(Object.keys(ips).sort()).toEqual(['127.0.0.1', '203.0.113.7']);
    expect(ips['127.0.0.1'].count).toBe(2);
    expect(ips['203.0.113.7'].count).toBe(1);
    expect(ips['203.0.113.7'].first_seen_at).toBe(h.clock.iso());
    expect(ips['127.0.0.1'].last_seen_at).toBe(h.clock.iso(-MINUTE));

    expect(d.activations).toHaveLength(1);
    expect(d.activations[0]).toMatchObject({ license_id: lic.id, minutes: 90, grants_lifetime_access: false, revokes_lifetime_access: false, occurred_at: activatedAt });
    expect(d.activations[0].id).toMatch(UUID);

    expect(d.sessions).toHaveLength(2);
    const byDevice = Object.fromEntries(d.sessions.map((x: { hardware_id: string }) => [x.hardware_id, x]));
    expect(byDevice['HW-TWO']).toMatchObject({ ip: '203.0.113.7', created_at: h.clock.iso(), expires_at: h.clock.iso(86_400_000) });
    expect(byDevice['HW-ONE'].ip).toBe('127.0.0.1');
    // Never the session token, nor its digest.
    expect(res.body).not.toMatch(/tg_sess_/);
    expect(res.body).not.toMatch(/token/i);
  });

  it('lists live sessions only: an expired session is not listed', async () => {
    const app = await h.createApp({ session_ttl_seconds: 60 });
    const id = await h.activeUser(app, 'alice');
    const first = await h.login(app, 'alice');
    h.clock.advance(30_000);
    const second = await h.login(app, 'alice');
    expect((await detail(app, id)).json().sessions).toHaveLength(2);

    h.clock.advance(40_000); // the first expired 10 s ago, the second has 20 s left
    expectError(await withToken(app, first), 401, 'session_expired');
    expect((await withToken(app, second)).statusCode).toBe(200);
    const sessions = (await detail(app, id)).json().sessions;
    expect(sessions).toHaveLength(1);
    expect(sessions[0].expires_at).toBe(h.clock.iso(20_000));

    h.clock.advance(20_000); // exactly at expiry: gone too
    expect((await detail(app, id)).json().sessions).toEqual([]);
  });

  it('a user created from a license shows its signup_license_id and no password', async () => {
    const app = await h.createApp();
    const lic = await license(app);
    const res = await h.client(app, 'POST', '/sign_up_with_license_code', { code: lic.code });
    expect(res.statusCode, res.body).toBe(200);
    const d = (await detail(app, res.json().id)).json();
    expect(d.signup_license_id).toBe(lic.id);
    expect(d.password_set).toBe(false);
    expect(d.membership.is_active).toBe(true);
  });

  it('an unknown user → 404 not_found; a non-UUID id → 422', async () => {
    const app = await h.createApp();
    expectError(await detail(app, '00000000-0000-4000-8000-000000000000'), 404, 'not_found');
    expectError(await detail(app, 'not-a-uuid'), 422, 'validation_error');
  });
});

describe('PATCH /apps/:app/users/:id', () => {
  it('extend_minutes adds to active_until when it is in the future: max(active_until, now) + minutes', async () => {
    const app = await h.createApp();
    const id = await h.activeUser(app, 'alice'); // active until T0 + 60 min
    const t0 = h.clock.ms;
    h.clock.minutes(10);
    const res = await patch(app, id, { extend_minutes: 30 });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ id, username: 'alice', membership: { is_active: true, is_lifetime: false, active_until: new Date(t0 + 90 * MINUTE).toISOString() } });
    expect(await membership(app, id)).toEqual({ is_active: true, is_lifetime: false, active_until: new Date(t0 + 90 * MINUTE).toISOString(), entitlements: [] });
  });

  it('extend_minutes counts from now when the membership has expired or never started', async () => {
    const app = await h.createApp();
    const expired = await h.activeUser(app, 'alice');
    const never = await h.signUp(app, 'bob');
    h.clock.minutes(500);
    expect((await patch(app, expired, { extend_minutes: 15 })).json().membership).toEqual({ is_active: true, is_lifetime: false, active_until: h.clock.iso(15 * MINUTE), entitlements: [] });
    expect((await patch(app, never, { extend_minutes: 1 })).json().membership).toEqual({ is_active: true, is_lifetime: false, active_until: h.clock.iso(MINUTE), entitlements: [] });
    // and the client sees it at once
    const token = await h.login(app, 'bob');
    expect((await withToken(app, token)).statusCode).toBe(200);
    h.clock.minutes(1);
    expectError(await withToken(app, token), 403, 'membership_inactive');
  });

  it('extend_minutes on a lifetime membership changes nothing (as a license would)', async () => {
    const app = await h.createApp();
    const id = await h.signUp(app, 'alice');
    await patch(app, id, { lifetime: true });
    const res = await patch(app, id, { extend_minutes: 60 });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().membership).toEqual({ is_active: true, is_lifetime: true, active_until: null, entitlements: [] });
  });

  it('lifetime: true grants lifetime access; lifetime: false revokes it', async () => {
    const app = await h.createApp();
    const id = await h.signUp(app, 'alice');
    expectError(await loginRes(app, 'alice'), 403, 'membership_inactive');

    const granted = await patch(app, id, { lifetime: true });
    expect(granted.statusCode, granted.body).toBe(200);
    expect(granted.json().membership).toEqual({ is_active: true, is_lifetime: true, active_until: null, entitlements: [] });
    const token = await h.login(app, 'alice');
    h.clock.minutes(1_000);
    expect((await withToken(app, token)).statusCode).toBe(200);

    const revoked = await patch(app, id, { lifetime: false });
    expect(revoked.statusCode, revoked.body).toBe(200);
    expect(revoked.json().membership).toEqual({ is_active: false, is_lifetime: false, active_until: null, entitlements: [] });
    expectError(await withToken(app, token), 403, 'membership_inactive');
  });

  it('active_until sets the expiry outright (earlier or later), and null clears it', async () => {
    const app = await h.createApp();
    const id = await h.activeUser(app, 'alice');

    const later = '2027-03-04T05:06:07.890Z';
    let res = await patch(app, id, { active_until: later });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().membership).toEqual({ is_active: true, is_lifetime: false, active_until: later, entitlements: [] });

    const earlier = h.clock.iso(-MINUTE);
    res = await patch(app, id, { active_until: earlier });
    expect(res.json().membership).toEqual({ is_active: false, is_lifetime: false, active_until: earlier, entitlements: [] });

    res = await patch(app, id, { active_until: null });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().membership).toEqual({ is_active: false, is_lifetime: false, active_until: null, entitlements: [] });
    expect(await membership(app, id)).toEqual({ is_active: false, is_lifetime: false, active_until: null, entitlements: [] });
  });

  it('active_until in another offset is stored as the same instant, shown in UTC', async () => {
    const app = await h.createApp();
    const id = await h.signUp(app, 'alice');
    const res = await patch(app, id, { active_until: '2027-01-01T02:00:00+02:00' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().membership.active_until).toBe('2027-01-01T00:00:00.000Z');
  });

  it('password: the old password then fails (401), the new one works, and every session of the user is revoked', async () => {
    const app = await h.createApp();
    const id = await h.activeUser(app, 'alice');
    const other = await h.activeUser(app, 'bob');
    const t1 = await h.login(app, 'alice');
    const t2 = await h.login(app, 'alice');
    const bobToken = await h.login(app, 'bob');

    const res = await patch(app, id, { password: 'a brand new password' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ id, password_set: true, membership: { is_active: true } });
    expect(res.body).not.toContain('a brand new password');

    expectError(await withToken(app, t1), 401, 'invalid_credentials');
    expectError(await withToken(app, t2), 401, 'invalid_credentials');
    expect((await detail(app, id)).json().sessions).toEqual([]);
    expectError(await loginRes(app, 'alice', PASSWORD), 401, 'invalid_credentials');
    const fresh = await loginRes(app, 'alice', 'a brand new password');
    expect(fresh.statusCode, fresh.body).toBe(200);
    expect((await withToken(app, fresh.json().session_token)).statusCode).toBe(200);

    // Another user is not touched.
    expect((await withToken(app, bobToken)).statusCode).toBe(200);
    expect((await detail(app, other)).json().sessions).toHaveLength(1);
  });

  it('password on a license-only account lets it log in with username and password', async () => {
    const app = await h.createApp();
    const lic = await license(app);
    const signed = await h.client(app, 'POST', '/sign_up_with_license_code', { code: lic.code });
    expect(signed.statusCode, signed.body).toBe(200);
    const { id, username } = signed.json();
    const res = await patch(app, id, { password: 'operator-set-pass' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().password_set).toBe(true);
    expect((await loginRes(app, username, 'operator-set-pass')).statusCode).toBe(200);
  });

  it('several properties at once apply together', async () => {
    const app = await h.createApp();
    const id = await h.signUp(app, 'alice');
    const res = await patch(app, id, { active_until: h.clock.iso(10 * MINUTE), extend_minutes: 5, password: 'another password' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().membership).toEqual({ is_active: true, is_lifetime: false, active_until: h.clock.iso(15 * MINUTE), entitlements: [] });
    expect((await loginRes(app, 'alice', 'another password')).statusCode).toBe(200);
  });

  it('422 on an unknown property, an empty body, a bad active_until, a short password, bad types; nothing changes', async () => {
    const app = await h.createApp({ password_min_length: 12 });
    const id = await h.activeUser(app, 'alice', 'twelve chars ok');
    const token = await h.login(app, 'alice', 'twelve chars ok');
    const before = await membership(app, id);

    expectError(await patch(app, id, { extend_minute: 30 }), 422, 'validation_error');
    expectError(await patch(app, id, { extend_minutes: 30, is_lifetime: true }), 422, 'validation_error');
    expectError(await patch(app, id, {}), 422, 'validation_error');
    expect422(await patch(app, id, { active_until: 'next tuesday' }), 'body.active_until');
    expect422(await patch(app, id, { active_until: '' }), 'body.active_until');
    expectError(await patch(app, id, { active_until: 1893456000000 }), 422, 'validation_error');
    expect422(await patch(app, id, { password: 'elevenchars' }), 'body.password');
    expect422(await patch(app, id, { password: 'short', extend_minutes: 30 }), 'body.password');
    expectError(await patch(app, id, { password: 12345678901234 }), 422, 'validation_error');
    expectError(await patch(app, id, { extend_minutes: 0 }), 422, 'validation_error');
    expectError(await patch(app, id, { extend_minutes: -5 }), 422, 'validation_error');
    expectError(await patch(app, id, { extend_minutes: 1.5 }), 422, 'validation_error');
    expectError(await patch(app, id, { extend_minutes: '30' }), 422, 'validation_error');
    expectError(await patch(app, id, { lifetime: 'yes' }), 422, 'validation_error');
    expectError(await patch(app, id, [{ extend_minutes: 1 }]), 422, 'validation_error');

    expect(await membership(app, id)).toEqual(before);
    expect((await withToken(app, token)).statusCode).toBe(200);
    expect((await loginRes(app, 'alice', 'twelve chars ok')).statusCode).toBe(200);
  });

  it('active_until must be ISO 8601: "12", "1/2/2027" or "March 5, 2027" → 422 (not silently read as some date)', async () => {
    const app = await h.createApp();
    const id = await h.activeUser(app, 'alice');
    const before = await membership(app, id);
    for (const bad of ['12', '1/2/2027', 'March 5, 2027', '2027-02-30T00:00:00Z']) {
      expect422(await patch(app, id, { active_until: bad }), 'body.active_until');
    }
    expect(await membership(app, id)).toEqual(before);
  });

  it('the edge of time: a far-future active_until and extensions past it never give a 5xx, and the user list keeps working', async () => {
    const app = await h.createApp();
    const id = await h.signUp(app, 'alice');
    await h.signUp(app, 'bob');
    // The last instant a JavaScript Date can hold: refusing it (422) or keeping it (200) are both fine.
    const set = await patch(app, id, { active_until: '+275760-09-13T00:00:00.000Z' });
    expect([200, 422], set.body).toContain(set.statusCode);
    for (const minutes of [1, 1_000_000_000]) {
      const res = await patch(app, id, { extend_minutes: minutes });
      expect([200, 422], `extend_minutes ${minutes}: ${res.statusCode} ${res.body}`).toContain(res.statusCode);
    }
    const d = await detail(app, id);
    expect(d.statusCode, d.body).toBe(200);
    expect(d.json().membership.is_active).toBe(true);
    const list = await users(app);
    expect(list.statusCode, list.body).toBe(200);
    expect(list.json().items).toHaveLength(2);
  });

  it('a password over 1024 bytes → 422', async () => {
    const app = await h.createApp();
    const id = await h.signUp(app, 'alice');
    expect422(await patch(app, id, { password: 'é'.repeat(513) }), 'body.password');
  });

  it('an unknown user → 404', async () => {
    const app = await h.createApp();
    expectError(await patch(app, '00000000-0000-4000-8000-000000000000', { extend_minutes: 5 }), 404, 'not_found');
  });
});

describe('POST /apps/:app/users/:id/reset-devices', () => {
  it('forgets the devices, frees the slot for a new hardware id (limit 1) and revokes the sessions', async () => {
    const app = await h.createApp({ device_auth_enabled: true, max_devices_per_user: 1 });
    const id = await h.activeUser(app, 'alice', PASSWORD, 'HW-OLD');
    const token = await h.login(app, 'alice', PASSWORD, 'HW-OLD');
    expectError(await loginRes(app, 'alice', PASSWORD, 'HW-NEW'), 401, 'device_mismatch');
    expect((await detail(app, id)).json()).toMatchObject({ device_count: 1, devices: [{ hardware_id: 'HW-OLD' }] });

    const res = await h.admin('POST', `/apps/${app.id}/users/${id}/reset-devices`);
    expect(res.statusCode, res.body).toBe(204);
    expect(res.body).toBe('');

    const d = (await detail(app, id)).json();
    expect(d.devices).toEqual([]);
    expect(d.device_count).toBe(0);
    expect(d.sessions).toEqual([]);
    expectError(await withToken(app, token), 401, 'invalid_credentials');

    const fresh = await loginRes(app, 'alice', PASSWORD, 'HW-NEW');
    expect(fresh.statusCode, fresh.body).toBe(200);
    expect((await withToken(app, fresh.json().session_token)).statusCode).toBe(200);
    // The slot is taken again, by the new device.
    expectError(await loginRes(app, 'alice', PASSWORD, 'HW-OLD'), 401, 'device_mismatch');
    expect((await detail(app, id)).json()).toMatchObject({ device_count: 1, devices: [{ hardware_id: 'HW-NEW' }] });
  });

  it('with a limit above 1 every slot is free again', async () => {
    const app = await h.createApp({ device_auth_enabled: true, max_devices_per_user: 2 });
    const id = await h.activeUser(app, 'alice', PASSWORD, 'HW-1');
    await h.login(app, 'alice', PASSWORD, 'HW-2');
    expectError(await loginRes(app, 'alice', PASSWORD, 'HW-3'), 401, 'device_limit');
    expect((await h.admin('POST', `/apps/${app.id}/users/${id}/reset-devices`)).statusCode).toBe(204);
    expect((await loginRes(app, 'alice', PASSWORD, 'HW-3')).statusCode).toBe(200);
    expect((await loginRes(app, 'alice', PASSWORD, 'HW-4')).statusCode).toBe(200);
    expectError(await loginRes(app, 'alice', PASSWORD, 'HW-1'), 401, 'device_limit');
  });

  it('an unknown user → 404', async () => {
    const app = await h.createApp();
    expectError(await h.admin('POST', `/apps/${app.id}/users/00000000-0000-4000-8000-000000000000/reset-devices`), 404, 'not_found');
  });
});

describe('POST /apps/:app/users/:id/revoke-sessions', () => {
  it('answers {revoked: n}; the tokens then get 401; the user can log in again', async () => {
    const app = await h.createApp();
    const id = await h.activeUser(app, 'alice');
    await h.activeUser(app, 'bob');
    const tokens = [await h.login(app, 'alice'), await h.login(app, 'alice'), await h.login(app, 'alice')];
    const bobToken = await h.login(app, 'bob');

    const res = await h.admin('POST', `/apps/${app.id}/users/${id}/revoke-sessions`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ revoked: 3 });
    for (const t of tokens) expectError(await withToken(app, t), 401, 'invalid_credentials');
    expect((await detail(app, id)).json().sessions).toEqual([]);
    expect((await withToken(app, bobToken)).statusCode).toBe(200);

    expect((await h.admin('POST', `/apps/${app.id}/users/${id}/revoke-sessions`)).json()).toEqual({ revoked: 0 });
    expect((await withToken(app, await h.login(app, 'alice'))).statusCode).toBe(200);
  });

  it('an unknown user → 404', async () => {
    const app = await h.createApp();
    expectError(await h.admin('POST', `/apps/${app.id}/users/00000000-0000-4000-8000-000000000000/revoke-sessions`), 404, 'not_found');
  });
});

describe('DELETE /apps/:app/users/:id', () => {
  it('204, then 404; the sessions no longer work; a license they used stays used', async () => {
    const app = await h.createApp();
    const id = await h.signUp(app, 'alice');
    const lic = await license(app);
    const act = await h.client(app, 'POST', '/activate_license', { code: lic.code, username: 'alice', password: PASSWORD });
    expect(act.statusCode, act.body).toBe(200);
    const token = await h.login(app, 'alice');
    expect((await withToken(app, token)).statusCode).toBe(200);

    const res = await h.admin('DELETE', `/apps/${app.id}/users/${id}`);
    expect(res.statusCode, res.body).toBe(204);
    expect(res.body).toBe('');

    expectError(await detail(app, id), 404, 'not_found');
    expectError(await h.admin('DELETE', `/apps/${app.id}/users/${id}`), 404, 'not_found');
    expectError(await patch(app, id, { extend_minutes: 5 }), 404, 'not_found');
    expect((await users(app)).json().items).toEqual([]);
    expect(await h.tollgate.services.store.sessions.listLive(id, h.clock.ms)).toEqual([]);

    expectError(await withToken(app, token), 401, 'invalid_credentials');
    expectError(await loginRes(app, 'alice'), 401, 'invalid_credentials');

    const l = await h.admin('GET', `/apps/${app.id}/licenses/${lic.id}`);
    expect(l.statusCode, l.body).toBe(200);
    expect(l.json().used_at).not.toBeNull();
    expect((await h.admin('GET', `/apps/${app.id}/licenses?used=true`)).json().items.map((x: { id: string }) => x.id)).toEqual([lic.id]);
    // The code cannot be redeemed a second time by someone else.
    await h.signUp(app, 'mallory');
    expectError(await h.client(app, 'POST', '/activate_license', { code: lic.code, username: 'mallory', password: PASSWORD }), 401, 'license_used');
    // A used license still cannot be deleted.
    expectError(await h.admin('DELETE', `/apps/${app.id}/licenses/${lic.id}`), 409, 'conflict');
  });

  it('deleting a user created from a license keeps the license used', async () => {
    const app = await h.createApp();
    const lic = await license(app);
    const signed = await h.client(app, 'POST', '/sign_up_with_license_code', { code: lic.code });
    expect(signed.statusCode, signed.body).toBe(200);
    expect((await h.admin('DELETE', `/apps/${app.id}/users/${signed.json().id}`)).statusCode).toBe(204);
    expect((await h.admin('GET', `/apps/${app.id}/licenses/${lic.id}`)).json().used_at).not.toBeNull();
    expectError(await h.client(app, 'POST', '/sign_up_with_license_code', { code: lic.code }), 422, 'license_used');
  });

  it('the username is free again after the delete', async () => {
    const app = await h.createApp();
    const id = await h.signUp(app, 'alice');
    expect((await h.admin('DELETE', `/apps/${app.id}/users/${id}`)).statusCode).toBe(204);
    const again = await h.signUp(app, 'Alice');
    expect(again).not.toBe(id);
  });
});

describe('isolation between apps', () => {
  it('a user of another app is 404 through this app’s id, on every user route, and is left untouched', async () => {
    const appA = await h.createApp({ name: 'A' });
    const appB = await h.createApp({ name: 'B' });
    const victim = await h.activeUser(appB, 'victim');
    const token = await h.login(appB, 'victim');
    const before = (await detail(appB, victim)).json();

    const base = `/apps/${appA.id}/users/${victim}`;
    expectError(await h.admin('GET', base), 404, 'not_found');
    expectError(await h.admin('PATCH', base, { lifetime: true }), 404, 'not_found');
    expectError(await h.admin('PATCH', base, { password: 'hijacked password' }), 404, 'not_found');
    expectError(await h.admin('POST', `${base}/reset-devices`), 404, 'not_found');
    expectError(await h.admin('POST', `${base}/revoke-sessions`), 404, 'not_found');
    expectError(await h.admin('DELETE', base), 404, 'not_found');

    const after = (await detail(appB, victim)).json();
    expect(after.membership).toEqual(before.membership);
    expect(after.sessions).toHaveLength(1);
    expect((await withToken(appB, token)).statusCode).toBe(200);
    expect((await loginRes(appB, 'victim')).statusCode).toBe(200);
  });

  it('a user route of an unknown app → 404', async () => {
    const app = await h.createApp();
    const id = await h.signUp(app, 'alice');
    expectError(await h.admin('GET', `/apps/00000000-0000-4000-8000-000000000000/users/${id}`), 404, 'not_found');
    expectError(await h.admin('DELETE', `/apps/00000000-0000-4000-8000-000000000000/users/${id}`), 404, 'not_found');
    expect((await detail(app, id)).statusCode).toBe(200);
  });
});

describe('admin token on user routes', () => {
  it('401 invalid_admin_token without a token or with a wrong one; nothing changes', async () => {
    const app = await h.createApp();
    const id = await h.activeUser(app, 'alice');
    const token = await h.login(app, 'alice');
    const base = `/admin/v1/apps/${app.id}/users`;
    const routes: [InjectMethod, string, unknown?][] = [
      ['GET', base],
      ['GET', `${base}?q=alice`],
      ['GET', `${base}/${id}`],
      ['PATCH', `${base}/${id}`, { password: 'hijacked password' }],
      ['PATCH', `${base}/${id}`, { lifetime: true }],
      ['POST', `${base}/${id}/reset-devices`],
      ['POST', `${base}/${id}/revoke-sessions`],
      ['DELETE', `${base}/${id}`],
    ];
    for (const auth of [{}, { authorization: 'Bearer wrong-token-0123456789abcdef' }, { authorization: 'Bearer tg_adm_' + 'A'.repeat(43) }]) {
      for (const [method, url, payload] of routes) {
        const res = await h.inject({ method, url, headers: auth, ...(payload !== undefined && { payload: payload as object }) });
        expectError(res, 401, 'invalid_admin_token');
        expect(res.body).not.toContain('alice');
      }
    }
    const d = (await detail(app, id)).json();
    expect(d.membership).toEqual({ is_active: true, is_lifetime: false, active_until: h.clock.iso(60 * MINUTE), entitlements: [] });
    expect(d.sessions).toHaveLength(1);
    expect((await withToken(app, token)).statusCode).toBe(200);
    expect((await loginRes(app, 'alice')).statusCode).toBe(200);
  });
});

type InjectMethod = 'GET' | 'POST' | 'PATCH' | 'DELETE';
