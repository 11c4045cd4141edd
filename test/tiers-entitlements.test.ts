import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { expectError, harness, noticesHeard, PASSWORD, type Harness, type TestApp } from './helpers.js';

/**
 * Issue 24: entitlements appear and disappear with their grants' time (docs/decisions.md): each
 * redemption extends each of its template's codes from that code's own live end (test/tiers-stacking.test.ts); lifetime never
 * ends; the operator grants directly (optionally until a time) and takes away; bans and deletion keep
 * their seed meaning.
 */
let h: Harness;
let app: TestApp;
beforeEach(async () => {
  h = await harness();
  app = await h.createApp();
});
afterEach(async () => h.close());

async function templateId(name: string, body: Record<string, unknown>): Promise<string> {
  const res = await h.admin('POST', `/apps/${app.id}/templates`, { name, ...body });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().id;
}

async function redeem(username: string, template: string): Promise<void> {
  const res = await h.admin('POST', `/apps/${app.id}/licenses`, { count: 1, template_id: template });
  const code = res.json().licenses[0].code;
  const act = await h.client(app, 'POST', '/activate_license', { code, username, password: PASSWORD });
  expect(act.statusCode, act.body).toBe(200);
}

const context = (username: string) => h.client(app, 'GET', '/app_context', undefined, { 'x-api-username': username, 'x-api-password': PASSWORD });
async function entitlementsOf(username: string): Promise<string[]> {
  await noticesHeard(h);
  const res = await context(username);
  expect(res.statusCode, res.body).toBe(200);
  return res.json().user.membership.entitlements;
}

describe('entitlements with the clock', () => {
  it('stacking: each code stacks on itself, not on the membership end', async () => {
    const pro = await templateId('pro', { minutes: 60, entitlements: ['pro'] });
    const exp = await templateId('export', { minutes: 60, entitlements: ['export-pdf'] });
    await h.signUp(app, 'alice');
    await redeem('alice', pro); // membership to +60, pro to +60
    h.clock.minutes(30);
    await redeem('alice', exp); // membership to +120 (stacked), export-pdf to +90 (its own 60 minutes)
    expect(await entitlementsOf('alice')).toEqual(['export-pdf', 'pro']);
    h.clock.minutes(30); // +60: pro's time has run out
    expect(await entitlementsOf('alice')).toEqual(['export-pdf']);
    h.clock.minutes(29); // +89
    expect(await entitlementsOf('alice')).toEqual(['export-pdf']);
    h.clock.minutes(1); // +90: export-pdf's time has run out; the membership goes on
    expect(await entitlementsOf('alice')).toEqual([]);
    h.clock.minutes(30); // +120: the membership ends
    expectError(await context('alice'), 403, 'membership_inactive');
  });

  it('the same code twice: it lives until the later grant ends; sorted, no duplicates', async () => {
    const pro = await templateId('pro', { minutes: 60, entitlements: ['pro', 'b.code', 'a_code'] });
    await h.signUp(app, 'alice');
    await redeem('alice', pro);
    await redeem('alice', pro);
    expect(await entitlementsOf('alice')).toEqual(['a_code', 'b.code', 'pro']);
    h.clock.minutes(61);
    expect(await entitlementsOf('alice')).toEqual(['a_code', 'b.code', 'pro']);
    h.clock.minutes(60);
    expectError(await context('alice'), 403, 'membership_inactive');
  });

  it('lifetime grants never end; revoking lifetime (operator or a revoking license) ends them', async () => {
    const forever = await templateId('forever', { lifetime: true, entitlements: ['pro'] });
    const month = await templateId('month', { minutes: 60, entitlements: ['export'] });
    const id = await h.signUp(app, 'alice');
    await redeem('alice', forever);
    await redeem('alice', month); // on a lifetime membership: its own 60 minutes from now
    h.clock.minutes(30);
    expect(await entitlementsOf('alice')).toEqual(['export', 'pro']);
    h.clock.minutes(31);
    expect(await entitlementsOf('alice')).toEqual(['pro']);
    h.clock.minutes(1_000_000);
    expect(await entitlementsOf('alice')).toEqual(['pro']);
    await h.admin('PATCH', `/apps/${app.id}/users/${id}`, { lifetime: false, extend_minutes: 10 });
    expect(await entitlementsOf('alice')).toEqual([]);

    const bob = await h.signUp(app, 'bob');
    await redeem('bob', forever);
    const revoke = await h.admin('POST', `/apps/${app.id}/licenses`, { count: 1, revokes_lifetime_access: true, minutes: 5 });
    await h.client(app, 'POST', '/activate_license', { code: revoke.json().licenses[0].code, username: 'bob', password: PASSWORD });
    expect(await entitlementsOf('bob')).toEqual([]);
    expect(bob).toBeTruthy();
  });

  it('a ban refuses the user (403) and lifting it shows the same live entitlements; deleting the user removes them', async () => {
    const pro = await templateId('pro', { minutes: 60, entitlements: ['pro'] });
    const id = await h.signUp(app, 'alice');
    await redeem('alice', pro);
    const ban = await h.ban(app, 'user', id);
    await noticesHeard(h);
    expectError(await context('alice'), 403, 'banned');
    await h.admin('DELETE', `/apps/${app.id}/bans/${ban}`);
    expect(await entitlementsOf('alice')).toEqual(['pro']);
    await h.admin('DELETE', `/apps/${app.id}/users/${id}`);
    await h.signUp(app, 'alice');
    const res = await h.client(app, 'POST', '/auth/login', { credentials: { username: 'alice', password: PASSWORD } });
    expectError(res, 403, 'membership_inactive');
    expect((await h.admin('GET', `/apps/${app.id}/users?entitlement=pro`)).json().items).toEqual([]);
  });

  it('the operator grants a code until a time, takes it away, and filters the user list by it (audited)', async () => {
    const id = await h.activeUser(app, 'alice', PASSWORD, undefined, { minutes: 600 });
    await h.activeUser(app, 'bob', PASSWORD, undefined, { minutes: 600 });
    const granted = await h.admin('POST', `/apps/${app.id}/users/${id}/entitlements`, { code: 'beta', until: h.clock.iso(60_000 * 10) });
    expect(granted.statusCode, granted.body).toBe(201);
    expect(granted.json()).toMatchObject({ code: 'beta', until: h.clock.iso(60_000 * 10) });
    await h.admin('POST', `/apps/${app.id}/users/${id}/entitlements`, { code: 'pro' });
    expect(await entitlementsOf('alice')).toEqual(['beta', 'pro']);
    expect(await entitlementsOf('bob')).toEqual([]);
    const list = (await h.admin('GET', `/apps/${app.id}/users?entitlement=pro&with_total=true`)).json();
    expect(list.items.map((u: { id: string }) => u.id)).toEqual([id]);
    expect(list.total).toBe(1);
    expect(list.items[0].membership.entitlements).toEqual(['beta', 'pro']);
    const detail = (await h.admin('GET', `/apps/${app.id}/users/${id}`)).json();
    expect(detail.membership.entitlements).toEqual(['beta', 'pro']);
    expect(detail.entitlement_grants.map((g: { code: string; source: string; live: boolean }) => [g.code, g.source, g.live])).toEqual([['beta', 'operator', true], ['pro', 'operator', true]]);

    h.clock.minutes(11);
    expect(await entitlementsOf('alice')).toEqual(['pro']);
    expect((await h.admin('GET', `/apps/${app.id}/users?entitlement=beta`)).json().items).toEqual([]);
    expect((await h.admin('DELETE', `/apps/${app.id}/users/${id}/entitlements/pro`)).json()).toEqual({ ended: 1 });
    expect(await entitlementsOf('alice')).toEqual([]);
    const actions = (await h.admin('GET', `/audit?app_id=${app.id}`)).json().items.map((e: { action: string }) => e.action);
    expect(actions).toEqual(expect.arrayContaining(['entitlement.grant', 'entitlement.revoke']));
  });

  it('refuses a bad code, a past end, and another app’s user', async () => {
    const id = await h.activeUser(app, 'alice');
    expectError(await h.admin('POST', `/apps/${app.id}/users/${id}/entitlements`, { code: 'Pro' }), 422, 'validation_error');
    expectError(await h.admin('POST', `/apps/${app.id}/users/${id}/entitlements`, { code: 'pro', until: h.clock.iso(-1) }), 422, 'validation_error');
    expectError(await h.admin('POST', `/apps/${app.id}/users/${id}/entitlements`, { code: 'pro', until: 'soon' }), 422, 'validation_error');
    expectError(await h.admin('GET', `/apps/${app.id}/users?entitlement=Pro`), 422, 'validation_error');
    const other = await h.createApp();
    expectError(await h.admin('POST', `/apps/${other.id}/users/${id}/entitlements`, { code: 'pro' }), 404, 'not_found');
  });

  it('sign-up answers carry entitlements: [] (a license sign-up, those of its template)', async () => {
    const res = await h.client(app, 'POST', '/sign_up', { username: 'alice', password: PASSWORD });
    expect(res.json().membership).toEqual({ is_active: false, is_lifetime: false, active_until: null, entitlements: [] });
    const pro = await templateId('pro', { minutes: 60, entitlements: ['pro'] });
    const code = (await h.admin('POST', `/apps/${app.id}/licenses`, { count: 1, template_id: pro })).json().licenses[0].code;
    const signed = await h.client(app, 'POST', '/sign_up_with_license_code', { code });
    expect(signed.json().membership).toEqual({ is_active: true, is_lifetime: false, active_until: h.clock.iso(3_600_000), entitlements: ['pro'] });
  });
});
