import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { harness, PASSWORD, type Harness, type TestApp } from './helpers.js';

/** Issue 24's writes emit their outbox events (src/domain/outbox/catalogue.ts) in their own unit of work. */
interface StoredEvent { id: string; type: string; data: string }

let h: Harness;
let app: TestApp;
beforeEach(async () => {
  h = await harness();
  app = await h.createApp();
});
afterEach(async () => h.close());

async function during(step: () => Promise<unknown>): Promise<StoredEvent[]> {
  const all = () => h.tollgate.services.store.db.all<StoredEvent>('SELECT id, type, data FROM events ORDER BY occurred_at, id');
  const before = new Set((await all()).map((e) => e.id));
  await step();
  return (await all()).filter((e) => !before.has(e.id));
}

async function ok(p: Promise<{ statusCode: number; body: string }>): Promise<void> {
  const res = await p;
  expect(res.statusCode, res.body).toBeLessThan(300);
}

describe('template, entitlement and trial events', () => {
  it('fire once each, with the object after the change and no secret', async () => {
    let templateId = '';
    const created = await during(async () => {
      const res = await h.admin('POST', `/apps/${app.id}/templates`, { name: 'Pro', minutes: 60, entitlements: ['pro'] });
      templateId = res.json().id;
    });
    expect(created.map((e) => e.type)).toEqual(['template.created']);
    expect(JSON.parse(created[0]!.data)).toMatchObject({ id: templateId, name: 'Pro', entitlements: ['pro'] });
    const updated = await during(() => ok(h.admin('PATCH', `/apps/${app.id}/templates/${templateId}`, { max_seats: 2 })));
    expect(updated.map((e) => e.type)).toEqual(['template.updated']);
    expect(JSON.parse(updated[0]!.data).max_seats).toBe(2);
    expect((await during(() => ok(h.admin('POST', `/apps/${app.id}/templates/${templateId}/apply`)))).map((e) => e.type)).toEqual(['template.applied']);

    const userId = await h.activeUser(app, 'alice');
    const granted = await during(() => ok(h.admin('POST', `/apps/${app.id}/users/${userId}/entitlements`, { code: 'beta' })));
    expect(granted.map((e) => [e.type, JSON.parse(e.data)])).toEqual([['entitlement.granted', { user_id: userId, code: 'beta', until: null }]]);
    const revoked = await during(() => ok(h.admin('DELETE', `/apps/${app.id}/users/${userId}/entitlements/beta`)));
    expect(revoked.map((e) => [e.type, JSON.parse(e.data)])).toEqual([['entitlement.revoked', { user_id: userId, code: 'beta', ended: 1 }]]);

    await ok(h.admin('PATCH', `/apps/${app.id}`, { trial_minutes: 30 }));
    let trialUser: { id: string; username: string } = { id: '', username: '' };
    const started = await during(async () => {
      trialUser = (await h.client(app, 'POST', '/trial', { hardware_id: 'hw-secret-1', email: 'a@example.com' })).json().user;
    });
    expect(started.map((e) => e.type).sort()).toEqual(['trial.started', 'user.created']);
    const trialData = JSON.parse(started.find((e) => e.type === 'trial.started')!.data);
    expect(trialData).toMatchObject({ user_id: trialUser.id, email_key: 'a@example.com', status: 'running' });
    expect(started.map((e) => e.data).join('')).not.toContain('hw-secret-1');
    // Resuming writes no event.
    expect(await during(() => ok(h.client(app, 'POST', '/trial', { hardware_id: 'hw-secret-1' })))).toEqual([]);

    await ok(h.admin('PATCH', `/apps/${app.id}/users/${trialUser.id}`, { password: PASSWORD }));
    const license = await h.license(app, { template_id: templateId });
    const converted = await during(() => ok(h.client(app, 'POST', '/activate_license', { code: license.code, username: trialUser.username, password: PASSWORD })));
    expect(converted.map((e) => e.type).sort()).toEqual(['license.redeemed', 'trial.converted', 'user.updated']);
    expect(JSON.parse(converted.find((e) => e.type === 'trial.converted')!.data)).toEqual({ user_id: trialUser.id, license_id: license.id, converted_at: h.clock.iso() });

    expect((await during(() => ok(h.admin('DELETE', `/apps/${app.id}/templates/${templateId}`)))).map((e) => e.type)).toEqual(['template.deleted']);
  });

  it("a trial's sign-up writes the events of every sign-up, in their order: the user, the trial, the first device", async () => {
    await ok(h.admin('PATCH', `/apps/${app.id}`, { trial_minutes: 30, trial_entitlements: ['pro'], device_auth_enabled: true }));
    let user: { id: string; username: string } = { id: '', username: '' };
    const events = await during(async () => {
      user = (await h.client(app, 'POST', '/trial', { hardware_id: 'hw-1' })).json().user;
    });
    expect(events.map((e) => e.type)).toEqual(['user.created', 'trial.started', 'device.registered']);
    const [created, , device] = events.map((e) => JSON.parse(e.data));
    expect(created).toMatchObject({ id: user.id, username: user.username, membership: { is_active: true, is_trial: true, entitlements: ['pro'] } });
    expect(user.username).toMatch(/^user_[a-z2-7]{12}$/);
    expect(device).toEqual({ user_id: user.id, device_id: expect.any(String), hardware_id: 'hw-1' });
    const stored = (await h.tollgate.services.store.users.findById(app.id, user.id))!;
    expect(stored).toMatchObject({ passwordHash: null, signupLicenseId: null, signupCode: null, trialEndsAt: h.clock.ms + 30 * 60_000 });
  });
});
