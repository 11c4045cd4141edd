import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { expectError, harness, PASSWORD, type Harness, type TestApp } from './helpers.js';

/** Issue 24: license templates create licenses with their minutes, entitlements, limits and redeem window. */
let h: Harness;
let app: TestApp;
beforeEach(async () => {
  h = await harness();
  app = await h.createApp({ device_auth_enabled: true, max_devices_per_user: 1 });
});
afterEach(async () => h.close());

async function template(body: Record<string, unknown>): Promise<Record<string, any>> {
  const res = await h.admin('POST', `/apps/${app.id}/templates`, body);
  expect(res.statusCode, res.body).toBe(201);
  return res.json();
}

async function licenseFrom(templateId: string, extra: Record<string, unknown> = {}): Promise<Record<string, any>> {
  const res = await h.admin('POST', `/apps/${app.id}/licenses`, { count: 1, template_id: templateId, ...extra });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().licenses[0];
}

const contextOf = async (username: string, hw: string) =>
  h.client(app, 'GET', '/app_context', undefined, { 'x-api-username': username, 'x-api-password': PASSWORD, 'x-hardware-id': hw });

describe('templates', () => {
  it('are created, listed, read, changed and deleted, each write audited', async () => {
    const t = await template({ name: 'Pro monthly', minutes: 43_200, entitlements: ['pro', 'export-pdf', 'pro'], max_devices: 3, redeem_within_minutes: 60, max_seats: 5, heartbeat_seconds: 120 });
    expect(t).toMatchObject({ name: 'Pro monthly', minutes: 43_200, lifetime: false, entitlements: ['export-pdf', 'pro'], max_devices: 3, redeem_within_minutes: 60, max_seats: 5, heartbeat_seconds: 120 });
    expect((await h.admin('GET', `/apps/${app.id}/templates`)).json().items.map((x: { id: string }) => x.id)).toEqual([t.id]);
    expect((await h.admin('GET', `/apps/${app.id}/templates/${t.id}`)).json()).toEqual(t);
    const changed = await h.admin('PATCH', `/apps/${app.id}/templates/${t.id}`, { lifetime: true, max_seats: null });
    expect(changed.json()).toMatchObject({ minutes: null, lifetime: true, max_seats: null, heartbeat_seconds: 120 });
    expect((await h.admin('DELETE', `/apps/${app.id}/templates/${t.id}`)).statusCode).toBe(204);
    expectError(await h.admin('GET', `/apps/${app.id}/templates/${t.id}`), 404, 'not_found');
    const actions = (await h.admin('GET', `/audit?app_id=${app.id}`)).json().items.map((e: { action: string }) => e.action);
    expect(actions).toEqual(expect.arrayContaining(['template.create', 'template.update', 'template.delete']));
  });

  it('refuses bad input with 422 and a taken name with 409', async () => {
    expectError(await h.admin('POST', `/apps/${app.id}/templates`, { name: 'x' }), 422, 'validation_error'); // neither minutes nor lifetime
    expectError(await h.admin('POST', `/apps/${app.id}/templates`, { name: 'x', minutes: 5, lifetime: true }), 422, 'validation_error');
    expectError(await h.admin('POST', `/apps/${app.id}/templates`, { name: 'x', minutes: 5, entitlements: ['Pro'] }), 422, 'validation_error');
    expectError(await h.admin('POST', `/apps/${app.id}/templates`, { name: 'x', minutes: 5, entitlements: ['-pro'] }), 422, 'validation_error');
    expectError(await h.admin('POST', `/apps/${app.id}/templates`, { name: 'x', minutes: 5, entitlements: ['a'.repeat(65)] }), 422, 'validation_error');
    expectError(await h.admin('POST', `/apps/${app.id}/templates`, { name: 'x', minutes: 5, max_seats: 0 }), 422, 'validation_error');
    expectError(await h.admin('POST', `/apps/${app.id}/templates`, { name: 'x', minutes: 5, heartbeat_seconds: 'often' }), 422, 'validation_error');
    await template({ name: 'x', minutes: 5 });
    expectError(await h.admin('POST', `/apps/${app.id}/templates`, { name: 'x', minutes: 6 }), 409, 'conflict');
    const t = await template({ name: 'y', minutes: 5 });
    expectError(await h.admin('PATCH', `/apps/${app.id}/templates/${t.id}`, { name: 'x' }), 409, 'conflict');
    expectError(await h.admin('POST', `/apps/${app.id}/licenses`, { count: 1, template_id: t.id, minutes: 5 }), 422, 'validation_error');
    expectError(await h.admin('POST', `/apps/${app.id}/licenses`, { count: 1, template_id: '00000000-0000-4000-8000-000000000000' }), 422, 'validation_error');
  });

  it('another app’s template is not found and cannot make licenses', async () => {
    const t = await template({ name: 'mine', minutes: 5 });
    const other = await h.createApp();
    expectError(await h.admin('GET', `/apps/${other.id}/templates/${t.id}`), 404, 'not_found');
    expectError(await h.admin('POST', `/apps/${other.id}/licenses`, { count: 1, template_id: t.id }), 422, 'validation_error');
  });

  it('make licenses with the template’s minutes, entitlements, device limit and redeem window; the license keeps its template', async () => {
    const t = await template({ name: 'Pro', minutes: 90, entitlements: ['pro'], max_devices: 2, redeem_within_minutes: 30 });
    const l = await licenseFrom(t.id);
    expect(l).toMatchObject({ minutes: 90, grants_lifetime_access: false, template_id: t.id, entitlements: ['pro'], max_devices: 2, expires_at: h.clock.iso(30 * 60_000) });
    expect((await h.admin('GET', `/apps/${app.id}/licenses?template_id=${t.id}`)).json().items.map((x: { id: string }) => x.id)).toEqual([l.id]);

    await h.signUp(app, 'alice', PASSWORD, 'hw-1');
    expect((await h.client(app, 'POST', '/activate_license', { code: l.code, username: 'alice', password: PASSWORD, hardware_id: 'hw-1' })).statusCode).toBe(200);
    const ctx = (await contextOf('alice', 'hw-1')).json();
    expect(ctx.user.membership).toEqual({ is_active: true, is_lifetime: false, active_until: h.clock.iso(90 * 60_000), entitlements: ['pro'] });
    // The app allows one device; the template two: a second device is taken, a third refused.
    expect((await contextOf('alice', 'hw-2')).statusCode).toBe(200);
    expectError(await contextOf('alice', 'hw-3'), 401, 'device_limit');
  });

  it('a license made as today (implicit template) has no template, no entitlements and no limits', async () => {
    const res = await h.admin('POST', `/apps/${app.id}/licenses`, { count: 1, minutes: 10 });
    expect(res.json().licenses[0]).toMatchObject({ template_id: null, entitlements: [], max_devices: null, max_seats: null, heartbeat_seconds: null });
  });

  it('a lifetime template makes lifetime licenses, whose entitlements never end', async () => {
    const t = await template({ name: 'Forever', lifetime: true, entitlements: ['pro'] });
    const l = await licenseFrom(t.id);
    expect(l).toMatchObject({ minutes: null, grants_lifetime_access: true });
    await h.signUp(app, 'alice', PASSWORD, 'hw-1');
    await h.client(app, 'POST', '/activate_license', { code: l.code, username: 'alice', password: PASSWORD, hardware_id: 'hw-1' });
    h.clock.minutes(60 * 24 * 365 * 50);
    expect((await contextOf('alice', 'hw-1')).json().user.membership).toEqual({ is_active: true, is_lifetime: true, active_until: null, entitlements: ['pro'] });
  });

  it('an edit changes future licenses only, until the operator applies it to existing ones (audited)', async () => {
    const t = await template({ name: 'Pro', minutes: 60, entitlements: ['pro'] });
    const usedLicense = await licenseFrom(t.id);
    const unused = await licenseFrom(t.id);
    await h.signUp(app, 'alice', PASSWORD, 'hw-1');
    await h.client(app, 'POST', '/activate_license', { code: usedLicense.code, username: 'alice', password: PASSWORD, hardware_id: 'hw-1' });
    await h.admin('PATCH', `/apps/${app.id}/templates/${t.id}`, { minutes: 120, entitlements: ['pro', 'export'], max_devices: 4 });

    expect((await h.admin('GET', `/apps/${app.id}/licenses/${unused.id}`)).json()).toMatchObject({ minutes: 60, entitlements: ['pro'], max_devices: null });
    expect((await licenseFrom(t.id))).toMatchObject({ minutes: 120, entitlements: ['export', 'pro'], max_devices: 4 });
    expect((await contextOf('alice', 'hw-1')).json().user.membership.entitlements).toEqual(['pro']);

    const applied = await h.admin('POST', `/apps/${app.id}/templates/${t.id}/apply`);
    expect(applied.json()).toEqual({ unused_licenses: 2, used_licenses: 1, users: 1 });
    expect((await h.admin('GET', `/apps/${app.id}/licenses/${unused.id}`)).json()).toMatchObject({ minutes: 120, entitlements: ['export', 'pro'], max_devices: 4 });
    const after = (await contextOf('alice', 'hw-1')).json().user.membership;
    // Entitlements rewritten; the time the redemption added is not (60 minutes, as redeemed).
    expect(after).toEqual({ is_active: true, is_lifetime: false, active_until: h.clock.iso(60 * 60_000), entitlements: ['export', 'pro'] });
    expect((await contextOf('alice', 'hw-2')).statusCode).toBe(200); // the applied device limit
    h.clock.minutes(61);
    expect((await h.admin('GET', `/apps/${app.id}/users?entitlement=export`)).json().items).toEqual([]);
    const audit = (await h.admin('GET', `/audit?app_id=${app.id}`)).json().items.find((e: { action: string }) => e.action === 'template.apply');
    expect(audit.details).toMatchObject({ unused_licenses: 2, used_licenses: 1, users: 1 });
  });

  it('applying a template to many users sends one cache change, which drops each of them', async () => {
    const t = await template({ name: 'Pro', minutes: 60, entitlements: ['pro'] });
    const names = ['alice', 'bob', 'carol'];
    for (const [i, name] of names.entries()) {
      const l = await licenseFrom(t.id);
      await h.signUp(app, name, PASSWORD, `hw-${i}`);
      await h.client(app, 'POST', '/activate_license', { code: l.code, username: name, password: PASSWORD, hardware_id: `hw-${i}` });
      expect((await contextOf(name, `hw-${i}`)).json().user.membership.entitlements).toEqual(['pro']); // cached
    }
    await h.admin('PATCH', `/apps/${app.id}/templates/${t.id}`, { entitlements: ['pro', 'export'] });
    const caches = h.tollgate.services.caches;
    const sent: unknown[] = [];
    const changed = caches.changed.bind(caches);
    caches.changed = async (change) => {
      sent.push(change);
      return changed(change);
    };
    expect((await h.admin('POST', `/apps/${app.id}/templates/${t.id}/apply`)).json()).toMatchObject({ users: 3 });
    expect(sent).toEqual([{ appUsers: app.id }]);
    for (const [i, name] of names.entries()) expect((await contextOf(name, `hw-${i}`)).json().user.membership.entitlements).toEqual(['export', 'pro']);
  });

  it('deleting a template leaves its licenses with what they copied', async () => {
    const t = await template({ name: 'Pro', minutes: 60, entitlements: ['pro'] });
    const l = await licenseFrom(t.id);
    await h.admin('DELETE', `/apps/${app.id}/templates/${t.id}`);
    expect((await h.admin('GET', `/apps/${app.id}/licenses/${l.id}`)).json()).toMatchObject({ template_id: null, minutes: 60, entitlements: ['pro'] });
  });

  it('the effective limits of a user: the largest device limit and max_seats, the shortest heartbeat among the templates held now', async () => {
    const { effectiveLimits } = await import('../src/domain/entitlements.js');
    const a = await template({ name: 'A', minutes: 60, max_devices: 3, max_seats: 2, heartbeat_seconds: 300 });
    const b = await template({ name: 'B', minutes: 120, max_seats: 5, heartbeat_seconds: 60 });
    const id = await h.signUp(app, 'alice', PASSWORD, 'hw-1');
    for (const t of [a, b]) {
      const l = await licenseFrom(t.id);
      await h.client(app, 'POST', '/activate_license', { code: l.code, username: 'alice', password: PASSWORD, hardware_id: 'hw-1' });
    }
    const s = h.tollgate.services;
    const user = (await s.store.users.findById(app.id, id))!;
    const appRecord = (await s.store.apps.findById(app.id))!;
    expect(effectiveLimits(appRecord, user, h.clock.ms)).toEqual({ maxDevices: 3, maxSeats: 5, heartbeatSeconds: 60 });
    // A's holding ends after its 60 min: its device limit goes. B's limits differ from A's: they stack on nothing
    // and end after B's own 120 min, though the membership runs to 180 (docs/decisions.md, "stacks on itself").
    expect(effectiveLimits(appRecord, user, h.clock.ms + 61 * 60_000)).toEqual({ maxDevices: 1, maxSeats: 5, heartbeatSeconds: 60 });
    expect(effectiveLimits(appRecord, user, h.clock.ms + 119 * 60_000)).toEqual({ maxDevices: 1, maxSeats: 5, heartbeatSeconds: 60 });
    expect(effectiveLimits(appRecord, user, h.clock.ms + 120 * 60_000)).toEqual({ maxDevices: 1, maxSeats: null, heartbeatSeconds: null });
  });
});
