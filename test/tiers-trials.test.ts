import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { emailKey } from '../src/domain/trial-emails.js';
import { expectError, harness, noticesHeard, PASSWORD, type Harness, type TestApp } from './helpers.js';
import { hwidHashOf, leaseOf, postLease } from './lease-fixtures.js';
import { setUpKeys } from './signing-fixtures.js';
import { call, verifyAnswer, type Pin } from './signing-test-verifier.js';

/** Issue 24: verified trials, POST /trial per /work/notes/contract.md. */
let h: Harness;
let app: TestApp;
beforeEach(async () => {
  h = await harness();
  app = await h.createApp();
  const res = await h.admin('PATCH', `/apps/${app.id}`, { trial_minutes: 60, trial_entitlements: ['pro', 'basic'], trial_blocked_domains: ['Mailinator.com'] });
  expect(res.statusCode, res.body).toBe(200);
});
afterEach(async () => h.close());

const trial = (body: Record<string, unknown>) => h.client(app, 'POST', '/trial', body);
const contextWith = (token: string) => h.client(app, 'GET', '/app_context', undefined, { authorization: `Bearer ${token}` });

describe('POST /trial', () => {
  it('creates a trial user with the trial’s time and entitlements, is_trial before entitlements; the device resumes it', async () => {
    const res = await trial({ hardware_id: 'hw-1' });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(Object.keys(body)).toEqual(['session_token', 'user']);
    expect(Object.keys(body.user.membership)).toEqual(['is_active', 'is_lifetime', 'active_until', 'is_trial', 'entitlements']);
    expect(body.user.membership).toEqual({ is_active: true, is_lifetime: false, active_until: h.clock.iso(3_600_000), is_trial: true, entitlements: ['basic', 'pro'] });
    const ctx = await contextWith(body.session_token);
    expect(ctx.json().user).toEqual(body.user);
    expect(ctx.body).toContain('"is_trial":true,"entitlements":["basic","pro"]}');

    h.clock.minutes(30);
    const again = await trial({ hardware_id: 'hw-1' });
    expect(again.statusCode).toBe(200);
    expect(again.json().user.id).toBe(body.user.id);
    expect(again.json().session_token).not.toBe(body.session_token);
    expect(again.json().user.membership.active_until).toBe(body.user.membership.active_until);

    h.clock.minutes(31); // the trial has ended: never again on this device
    expectError(await trial({ hardware_id: 'hw-1' }), 403, 'trial_used');
    expectError(await contextWith(body.session_token), 403, 'membership_inactive');
  });

  it('is refused: 403 trials_disabled when trial_minutes is 0; 422 bad input; 403 banned', async () => {
    expectError(await trial({}), 422, 'validation_error');
    expectError(await trial({ hardware_id: '' }), 422, 'validation_error');
    expectError(await trial({ hardware_id: 'hw', email: 'not an address' }), 422, 'validation_error');
    expectError(await trial({ hardware_id: 'hw', email: 'someone@sub.mailinator.com' }), 422, 'validation_error');
    await h.ban(app, 'hardware_id', 'hw-banned');
    await noticesHeard(h);
    expectError(await trial({ hardware_id: 'hw-banned' }), 403, 'banned');
    await h.admin('PATCH', `/apps/${app.id}`, { trial_minutes: 0 });
    await noticesHeard(h);
    expectError(await trial({ hardware_id: 'hw-2' }), 403, 'trials_disabled');
    expect((await h.admin('GET', `/apps/${app.id}`)).json()).toMatchObject({ trial_minutes: 0, trial_entitlements: ['basic', 'pro'], trial_blocked_domains: ['mailinator.com'] });
  });

  it('closed registration refuses a new trial (403 registration_closed, no user made) and still resumes a running one', async () => {
    const running = await trial({ hardware_id: 'hw-running' });
    expect(running.statusCode, running.body).toBe(200);
    const users = async () => (await h.admin('GET', `/apps/${app.id}/users?with_total=true`)).json().total;
    const before = await users();
    expect(before).toBeGreaterThan(0); // a count, not two undefineds
    await h.admin('PATCH', `/apps/${app.id}`, { registration_open: false });
    await noticesHeard(h);
    expectError(await trial({ hardware_id: 'hw-new' }), 403, 'registration_closed');
    expect(await users()).toBe(before);
    const resumed = await trial({ hardware_id: 'hw-running' });
    expect(resumed.statusCode, resumed.body).toBe(200);
    expect(resumed.json().user.id).toBe(running.json().user.id);
  });

  it('one trial per normalised email: lower-case, +tag removed, Gmail’s dots removed (googlemail.com is gmail.com)', async () => {
    expect(emailKey('J.Doe+news@GoogleMail.com')).toBe('jdoe@gmail.com');
    expect(emailKey('j.doe+x@example.com')).toBe('j.doe@example.com');
    expect(emailKey('nobody')).toBeNull();
    expect((await trial({ hardware_id: 'hw-1', email: 'John.Doe+trial@gmail.com' })).statusCode).toBe(200);
    expectError(await trial({ hardware_id: 'hw-2', email: 'johndoe@googlemail.com' }), 403, 'trial_used');
    expectError(await trial({ hardware_id: 'hw-3', email: 'JOHN.DOE@GMAIL.COM' }), 403, 'trial_used');
    expect((await trial({ hardware_id: 'hw-4', email: 'john.doe@example.com' })).statusCode).toBe(200);
  });

  it('50 parallel requests for one device make one trial and one user', async () => {
    const answers = await Promise.all(Array.from({ length: 50 }, () => trial({ hardware_id: 'hw-race' })));
    for (const a of answers) expect(a.statusCode, a.body).toBe(200);
    expect(new Set(answers.map((a) => a.json().user.id)).size).toBe(1);
    const trials = (await h.admin('GET', `/apps/${app.id}/trials?with_total=true`)).json();
    expect(trials.total).toBe(1);
    expect((await h.admin('GET', `/apps/${app.id}/users?with_total=true`)).json().total).toBe(1);
  });

  it('a deleted trial user gets no second trial; the operator can reset the device’s trial (audited)', async () => {
    const first = (await trial({ hardware_id: 'hw-1' })).json();
    await h.admin('DELETE', `/apps/${app.id}/users/${first.user.id}`);
    expectError(await trial({ hardware_id: 'hw-1' }), 403, 'trial_used');
    const listed = (await h.admin('GET', `/apps/${app.id}/trials?hardware_id=hw-1`)).json().items;
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ hwid_hash: hwidHashOf(app.id, 'hw-1'), user_id: null, status: 'ended' });
    // The device's id itself is not stored for trials: only its hash.
    const raw = JSON.stringify(await h.tollgate.services.store.db.all('SELECT * FROM trials'));
    expect(raw).not.toContain('hw-1');

    expect((await h.admin('DELETE', `/apps/${app.id}/trials/${listed[0].id}`)).statusCode).toBe(204);
    const second = await trial({ hardware_id: 'hw-1' });
    expect(second.statusCode, second.body).toBe(200);
    expect(second.json().user.id).not.toBe(first.user.id);
    const actions = (await h.admin('GET', `/audit?app_id=${app.id}`)).json().items.map((e: { action: string }) => e.action);
    expect(actions).toContain('trial.reset');
  });

  it('the overview counts running trials and charts trials started per bucket', async () => {
    await trial({ hardware_id: 'hw-a' });
    await trial({ hardware_id: 'hw-b' });
    h.clock.minutes(61); // both ended; one more in the next hour
    await trial({ hardware_id: 'hw-c' });
    const stats = (await h.admin('GET', `/apps/${app.id}/stats?bucket=hour`)).json();
    expect(stats.running_trials).toBe(1);
    expect(stats.series.map((p: { trials: number }) => p.trials).filter((n: number) => n > 0)).toEqual([2, 1]);
  });

  it('trials are listed and filtered by status; trial users by ?trial=', async () => {
    const a = (await trial({ hardware_id: 'hw-a' })).json();
    h.clock.minutes(61);
    const b = (await trial({ hardware_id: 'hw-b' })).json();
    await h.activeUser(app, 'paying');
    const ids = async (q: string) => (await h.admin('GET', `/apps/${app.id}/trials${q}`)).json().items.map((t: { user_id: string }) => t.user_id);
    expect(await ids('')).toEqual([a.user.id, b.user.id]);
    expect(await ids('?status=running')).toEqual([b.user.id]);
    expect(await ids('?status=ended')).toEqual([a.user.id]);
    expect(await ids('?status=converted')).toEqual([]);
    const users = (await h.admin('GET', `/apps/${app.id}/users?trial=true`)).json().items;
    expect(users.map((u: { id: string }) => u.id)).toEqual([b.user.id]);
    expect(users[0].membership.is_trial).toBe(true);
  });

  it('converts on license redemption: the license’s time and entitlements from now, the trial’s remaining time and entitlements dropped', async () => {
    const t = (await trial({ hardware_id: 'hw-1' })).json();
    h.clock.minutes(10);
    // A trial user has no password; the operator gives one, as for any account that should sign in by name.
    await h.admin('PATCH', `/apps/${app.id}/users/${t.user.id}`, { password: PASSWORD });
    const tpl = (await h.admin('POST', `/apps/${app.id}/templates`, { name: 'Export', minutes: 120, entitlements: ['export'] })).json();
    const code = (await h.admin('POST', `/apps/${app.id}/licenses`, { count: 1, template_id: tpl.id })).json().licenses[0].code;
    const act = await h.client(app, 'POST', '/activate_license', { code, username: t.user.username, password: PASSWORD });
    expect(act.statusCode, act.body).toBe(200);
    await noticesHeard(h);
    const ctx = (await h.client(app, 'GET', '/app_context', undefined, { 'x-api-username': t.user.username, 'x-api-password': PASSWORD })).json();
    expect(ctx.user.membership).toEqual({ is_active: true, is_lifetime: false, active_until: h.clock.iso(120 * 60_000), entitlements: ['export'] });
    expect((await h.admin('GET', `/apps/${app.id}/trials?status=converted`)).json().items).toHaveLength(1);
    // Converted: the device never starts or resumes a trial again.
    expectError(await trial({ hardware_id: 'hw-1' }), 403, 'trial_used');
  });
});

describe('POST /trial, signed, and a trial user’s lease', () => {
  let pin: Pin;
  beforeEach(async () => {
    const keys = await setUpKeys(h, app);
    pin = { appId: app.id, rootPublicKey: keys.rootPublicKey };
  });

  it('answers are signed (docs/signing.md), the 200 and the refusals alike', async () => {
    const send = (body: unknown) => call(h.inject, app.headers, 'POST', '/trial', { body: JSON.stringify(body) });
    const ok = await send({ hardware_id: 'hw-1' });
    expect(ok.res.statusCode).toBe(200);
    expect(verifyAnswer(pin, ok.req, ok.res).verdict).toBe('ok');
    for (const [body, status] of [[{}, 422], [{ hardware_id: 'hw-1', email: 'x' }, 422]] as const) {
      const c = await send(body);
      expect(c.res.statusCode).toBe(status);
      expect(verifyAnswer(pin, c.req, c.res).verdict).toBe('ok');
    }
    h.clock.minutes(61);
    const used = await send({ hardware_id: 'hw-1' });
    expect(used.res.json().code).toBe('trial_used');
    expect(verifyAnswer(pin, used.req, used.res).verdict).toBe('ok');
    await h.admin('PATCH', `/apps/${app.id}`, { trial_minutes: 0 });
    await noticesHeard(h);
    const disabled = await send({ hardware_id: 'hw-2' });
    expect(disabled.res.json().code).toBe('trials_disabled');
    expect(verifyAnswer(pin, disabled.req, disabled.res).verdict).toBe('ok');
  });

  it('a trial user’s lease carries is_trial and its entitlements, and ends no later than the trial', async () => {
    await h.admin('PATCH', `/apps/${app.id}`, { offline_grace_seconds: 86_400, lease_renew_seconds: 600 });
    await noticesHeard(h);
    const t = (await trial({ hardware_id: 'hw-1' })).json();
    const lease = leaseOf(await postLease(h, app, { authorization: `Bearer ${t.session_token}` }), pin.rootPublicKey);
    const end = h.clock.ms + 3_600_000;
    expect(lease.payload).toMatchObject({ is_trial: true, entitlements: [{ code: 'basic', until: end }, { code: 'pro', until: end }], exp: end });
    expect(Object.keys(lease.payload).slice(-2)).toEqual(['entitlements', 'is_trial']);
  });

  it('a trial user whose membership outlasts the trial (the operator extended it, or made it lifetime): the lease still ends with the trial', async () => {
    // The cap of leaseExp that only the trial sets: a trial's membership otherwise ends with the trial itself.
    await h.admin('PATCH', `/apps/${app.id}`, { offline_grace_seconds: 86_400, lease_renew_seconds: 600 });
    await noticesHeard(h);
    const t = (await trial({ hardware_id: 'hw-1' })).json();
    const end = h.clock.ms + 3_600_000;
    for (const patch of [{ extend_minutes: 7 * 24 * 60 }, { lifetime: true }]) {
      expect((await h.admin('PATCH', `/apps/${app.id}/users/${t.user.id}`, patch)).statusCode).toBe(200);
      await noticesHeard(h);
      h.clock.minutes(10);
      const lease = leaseOf(await postLease(h, app, { authorization: `Bearer ${t.session_token}` }), pin.rootPublicKey);
      expect(lease.payload.is_trial, JSON.stringify(patch)).toBe(true);
      expect(lease.payload.exp, JSON.stringify(patch)).toBe(end); // not iat + a day of grace, nor the membership's end
      expect(lease.payload.exp).toBeLessThan(Math.min((lease.payload.iat as number) + 86_400_000, (lease.payload.active_until as number | null) ?? Infinity));
    }
  });

  it('a paying user’s lease: per code the latest end of its live grants, null when one never ends', async () => {
    await h.admin('PATCH', `/apps/${app.id}`, { offline_grace_seconds: 86_400, lease_renew_seconds: 600 });
    const id = await h.activeUser(app, 'alice', PASSWORD, undefined, { minutes: 600 });
    await h.admin('POST', `/apps/${app.id}/users/${id}/entitlements`, { code: 'pro', until: h.clock.iso(60_000) });
    await h.admin('POST', `/apps/${app.id}/users/${id}/entitlements`, { code: 'pro', until: h.clock.iso(120_000) });
    await h.admin('POST', `/apps/${app.id}/users/${id}/entitlements`, { code: 'export' });
    await h.admin('POST', `/apps/${app.id}/users/${id}/entitlements`, { code: 'export', until: h.clock.iso(60_000) });
    await h.admin('POST', `/apps/${app.id}/users/${id}/entitlements`, { code: 'old', until: h.clock.iso(1000) });
    h.clock.advance(2000);
    await noticesHeard(h);
    const lease = leaseOf(await postLease(h, app, { 'x-api-username': 'alice', 'x-api-password': PASSWORD }), pin.rootPublicKey);
    expect(lease.payload.entitlements).toEqual([{ code: 'export', until: null }, { code: 'pro', until: h.clock.ms - 2000 + 120_000 }]);
    expect(lease.payload.is_trial).toBe(false); // present beside entitlements: both or neither
  });
});
