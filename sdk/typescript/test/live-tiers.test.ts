/**
 * Issue 24 against the REAL server (dist/cli/main.js): entitlements granted by
 * the operator and by a license template reach has() online, and offline from
 * the lease the server signed (an entitlement's end kept offline); a trial
 * started from the client is a trial user holding the trial's entitlements,
 * resumed on the same device, refused when the app has trials off.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryLeaseStore, TollgateError } from '../src/index.js';
import { PASSWORD, startServer, type Server } from './server.js';

let server: Server;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server?.stop());

const rejection = async (p: Promise<unknown>) => p.then(() => expect.fail('expected a rejection'), (err: unknown) => err);

describe('entitlements on the real server', () => {
  it("an operator's grant and a template's license: has() online, then offline from the signed lease", async () => {
    const app = await server.app({ offline_grace_seconds: 86_400 });
    const userId = await server.activeUser(app, 'alice');
    const template = await server.admin('POST', `/apps/${app.id}/templates`, { name: 'Export', minutes: 60, entitlements: ['export-pdf'] });
    expect(template.status, JSON.stringify(template.body)).toBe(201);
    const license = await server.admin('POST', `/apps/${app.id}/licenses`, { count: 1, template_id: template.body.id });
    const store = new MemoryLeaseStore();
    const c = server.client(app, { leaseStore: store, hardwareId: 'live-tiers-1' });
    await c.activateLicense({ code: license.body.licenses[0].code, username: 'alice', password: PASSWORD });
    const soon = Date.now() + 4000;
    const grant = await server.admin('POST', `/apps/${app.id}/users/${userId}/entitlements`, { code: 'beta', until: new Date(soon).toISOString() });
    expect(grant.status, JSON.stringify(grant.body)).toBeLessThan(300);
    expect(await server.admin('POST', `/apps/${app.id}/users/${userId}/entitlements`, { code: 'pro' })).toMatchObject({ status: expect.any(Number) });

    c.auth = { username: 'alice', password: PASSWORD };
    expect(c.has('pro')).toBe(false); // nothing verified yet
    const online = await c.checkAccess();
    expect(online.source).toBe('online');
    expect(c.entitlements()).toEqual(['beta', 'export-pdf', 'pro']);
    expect(c.isTrial()).toBe(false);

    const offline = server.client(app, { leaseStore: store, hardwareId: 'live-tiers-1', baseUrl: 'http://127.0.0.1:9' });
    offline.auth = c.auth;
    const access = await offline.checkAccess();
    expect(access.source).toBe('lease');
    expect(access.source === 'lease' && access.lease.entitlements.map((e) => e.code)).toEqual(['beta', 'export-pdf', 'pro']);
    expect(offline.entitlements()).toEqual(['beta', 'export-pdf', 'pro']);
    await new Promise((r) => setTimeout(r, Math.max(0, soon - Date.now()) + 200));
    expect(offline.has('beta')).toBe(false); // its end passed: offline too
    expect(offline.has('pro')).toBe(true);
  });

  it("a trial: POST /trial keeps the session, the user is a trial user with the trial's entitlements; the same device resumes it", async () => {
    const app = await server.app({ offline_grace_seconds: 86_400 });
    expect((await server.admin('PATCH', `/apps/${app.id}`, { trial_minutes: 60, trial_entitlements: ['pro'] })).status).toBe(200);
    const c = server.client(app, { hardwareId: 'live-trial-device' });
    const trial = await c.startTrial(undefined, 'Someone+tag@example.com');
    expect(trial.user.membership.is_trial).toBe(true);
    expect(c.auth).toEqual({ sessionToken: trial.session_token });
    expect([c.isTrial(), c.has('pro')]).toEqual([true, true]);
    await c.checkAccess();
    expect([c.isTrial(), c.has('pro')]).toEqual([true, true]);
    const lease = await c.checkLease();
    expect([lease.isTrial, lease.entitlements.map((e) => e.code)]).toEqual([true, ['pro']]);
    const again = await server.client(app, { hardwareId: 'live-trial-device' }).startTrial();
    expect(again.user.id).toBe(trial.user.id);

    await server.admin('PATCH', `/apps/${app.id}`, { trial_minutes: 0 });
    const err = (await rejection(server.client(app, { hardwareId: 'another-device' }).startTrial())) as TollgateError;
    expect([err.status, err.code]).toEqual([403, 'trials_disabled']);
  });
});
