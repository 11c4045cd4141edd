import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { BanSet } from '../src/domain/bans.js';
import type { Queryable } from '../src/store/db.js';
import { expectError, harness, noticesHeard, PASSWORD, type Harness, type TestApp } from './helpers.js';
import { setUpKeys } from './signing-fixtures.js';
import { call, verifyAnswer } from './signing-test-verifier.js';

/** Issue 24: POST /redeem, the signed-in user (a trial user too, who has no password) redeems a license code. */
interface StoredEvent { id: string; type: string; data: string }

let h: Harness;
let app: TestApp;
beforeEach(async () => {
  h = await harness();
  app = await h.createApp();
  const res = await h.admin('PATCH', `/apps/${app.id}`, { trial_minutes: 60, trial_entitlements: ['basic'] });
  expect(res.statusCode, res.body).toBe(200);
});
afterEach(async () => h.close());

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const redeem = (code: unknown, headers: Record<string, string>) => h.client(app, 'POST', '/redeem', { code }, headers);
const storedEvents = () => h.tollgate.services.store.db.all<StoredEvent>('SELECT id, type, data FROM events ORDER BY occurred_at, id');

async function templateCode(minutes: number, entitlements: string[]): Promise<{ id: string; code: string }> {
  const tpl = (await h.admin('POST', `/apps/${app.id}/templates`, { name: `T${minutes}`, minutes, entitlements })).json();
  return h.license(app, { template_id: tpl.id });
}

describe('POST /redeem', () => {
  it('converts a trial user by session: the license’s time and entitlements, is_trial gone, trial.converted once', async () => {
    const t = (await h.client(app, 'POST', '/trial', { hardware_id: 'hw-1' })).json();
    h.clock.minutes(10);
    const license = await templateCode(120, ['export']);
    const before = new Set((await storedEvents()).map((e) => e.id));
    const res = await redeem(license.code, bearer(t.session_token));
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(Object.keys(body)).toEqual(['activation', 'user']);
    expect(body.activation).toEqual({
      id: expect.any(String), occurred_at: h.clock.iso(), minutes: 120, grants_lifetime_access: false, revokes_lifetime_access: false, license_id: license.id, type: 'license',
    });
    expect(body.user.id).toBe(t.user.id);
    expect(body.user.membership).toEqual({ is_active: true, is_lifetime: false, active_until: h.clock.iso(120 * 60_000), entitlements: ['export'] });
    await noticesHeard(h);
    const ctx = await h.client(app, 'GET', '/app_context', undefined, bearer(t.session_token));
    expect(ctx.json().user).toEqual(body.user);
    const added = (await storedEvents()).filter((e) => !before.has(e.id));
    expect(added.map((e) => e.type).sort()).toEqual(['license.redeemed', 'trial.converted', 'user.updated']);
    expect(JSON.parse(added.find((e) => e.type === 'trial.converted')!.data)).toEqual({ user_id: t.user.id, license_id: license.id, converted_at: h.clock.iso() });
    expect((await h.admin('GET', `/apps/${app.id}/trials?status=converted`)).json().items).toHaveLength(1);
    // A second code stacks as on /activate_license, and converts nothing again.
    const more = await templateCode(30, []);
    const after = new Set((await storedEvents()).map((e) => e.id));
    expect((await redeem(more.code, bearer(t.session_token))).json().user.membership.active_until).toBe(h.clock.iso(150 * 60_000));
    expect((await storedEvents()).filter((e) => !after.has(e.id)).map((e) => e.type)).not.toContain('trial.converted');
  });

  it('an ended trial redeems too (no membership check, as /activate_license)', async () => {
    const t = (await h.client(app, 'POST', '/trial', { hardware_id: 'hw-1' })).json();
    h.clock.minutes(61);
    expectError(await h.client(app, 'GET', '/app_context', undefined, bearer(t.session_token)), 403, 'membership_inactive');
    const [code] = await h.licenses(app, { count: 1, minutes: 60 });
    const res = await redeem(code, bearer(t.session_token));
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().user.membership).toEqual({ is_active: true, is_lifetime: false, active_until: h.clock.iso(60 * 60_000), entitlements: [] });
  });

  it('a normal user redeems by session and by the password headers; the answer is /activate_license’s activation', async () => {
    await h.activeUser(app, 'alice', PASSWORD, 'hw-1');
    const token = await h.login(app, 'alice', PASSWORD, 'hw-1');
    const [c1, c2] = await h.licenses(app, { count: 2, minutes: 30 });
    const a = await redeem(c1, bearer(token));
    expect(a.statusCode, a.body).toBe(200);
    expect(a.json().user.username).toBe('alice');
    expect(a.json().user.membership.active_until).toBe(h.clock.iso(90 * 60_000));
    const b = await redeem(c2, { 'x-api-username': 'alice', 'x-api-password': PASSWORD, 'x-hardware-id': 'hw-1' });
    expect(b.statusCode, b.body).toBe(200);
    expect(b.json().user.membership.active_until).toBe(h.clock.iso(120 * 60_000));
  });

  it('20 parallel redemptions of one code by one session: exactly one 200, the others 401 license_used', async () => {
    const t = (await h.client(app, 'POST', '/trial', { hardware_id: 'hw-1' })).json();
    const [code] = await h.licenses(app, { count: 1, minutes: 60 });
    const answers = await Promise.all(Array.from({ length: 20 }, () => redeem(code, bearer(t.session_token))));
    expect(answers.filter((a) => a.statusCode === 200)).toHaveLength(1);
    for (const a of answers.filter((x) => x.statusCode !== 200)) expectError(a, 401, 'license_used');
    const detail = (await h.admin('GET', `/apps/${app.id}/users/${t.user.id}`)).json();
    expect(detail.activations).toHaveLength(1);
  });

  it('refusals: 401 used or unknown code, 403 banned user or license, 422 bad input, 401 no credentials', async () => {
    await h.activeUser(app, 'alice', PASSWORD, 'hw-1');
    const token = await h.login(app, 'alice', PASSWORD, 'hw-1');
    const [used, other, bannedCode] = await h.licenses(app, { count: 3, minutes: 30 });
    expect((await redeem(used, bearer(token))).statusCode).toBe(200);
    expectError(await redeem(used, bearer(token)), 401, 'license_used');
    expectError(await redeem('NOT-A-REAL-CODE', bearer(token)), 401, 'invalid_license');
    expectError(await redeem('', bearer(token)), 422, 'validation_error');
    expectError(await redeem(42, bearer(token)), 422, 'validation_error');
    expectError(await h.client(app, 'POST', '/redeem', {}, bearer(token)), 422, 'validation_error');
    expectError(await redeem(other!, {}), 401, 'anonymous_not_allowed');
    await h.ban(app, 'license', bannedCode!);
    await noticesHeard(h);
    expectError(await redeem(bannedCode, bearer(token)), 403, 'banned');
    const userId = (await h.admin('GET', `/apps/${app.id}/users?with_total=true`)).json().items[0].id;
    await h.ban(app, 'user', userId);
    await noticesHeard(h);
    expectError(await redeem(other, bearer(token)), 403, 'banned');
    expect((await h.client(app, 'POST', '/activate_license', { code: other, username: 'alice', password: PASSWORD })).statusCode).toBe(403);
  });

  it('reads the license once before and once after its claim, and asks each ban once', async () => {
    await h.activeUser(app, 'alice', PASSWORD, 'hw-1');
    const token = await h.login(app, 'alice', PASSWORD, 'hw-1');
    const [code] = await h.licenses(app, { count: 1, minutes: 30 });
    await redeem('NOT-A-REAL-CODE', bearer(token)); // every cache warm: what follows is the redemption's own work
    const reads: string[] = [];
    const db = h.tollgate.services.store.db;
    const counted = (q: Queryable): Queryable => ({
      one: (sql, params) => (reads.push(sql), q.one(sql, params)),
      all: (sql, params) => (reads.push(sql), q.all(sql, params)),
      run: (sql, params) => q.run(sql, params),
    });
    const plain = { one: db.one.bind(db), all: db.all.bind(db), transaction: db.transaction.bind(db) };
    const asked = (['ip', 'hardwareId', 'user', 'license'] as const).map((kind) => vi.spyOn(BanSet.prototype, kind));
    Object.assign(db, { ...counted(plain as unknown as Queryable), run: db.run.bind(db), transaction: (fn: (tx: Queryable) => Promise<unknown>) => plain.transaction((tx) => fn(counted(tx))) });
    try {
      expect((await redeem(code, bearer(token))).statusCode).toBe(200);
    } finally {
      Object.assign(db, plain);
    }
    expect(reads.filter((sql) => /\bFROM licenses\b/i.test(sql))).toHaveLength(2);
    const [ip, hardwareId, user, license] = asked.map((spy) => spy.mock.calls);
    vi.restoreAllMocks();
    expect([ip!.length, hardwareId!.length, user!.length]).toEqual([1, 1, 1]);
    expect(license!.filter(([c]) => c === code)).toHaveLength(1);
  });

  it('answers are signed (docs/signing.md): the 200 and the refusals', async () => {
    const keys = await setUpKeys(h, app);
    const pin = { appId: app.id, rootPublicKey: keys.rootPublicKey };
    const t = (await h.client(app, 'POST', '/trial', { hardware_id: 'hw-1' })).json();
    const [code] = await h.licenses(app, { count: 1, minutes: 60 });
    const send = (body: unknown) => call(h.inject, app.headers, 'POST', '/redeem', { body: JSON.stringify(body), headers: bearer(t.session_token) });
    const ok = await send({ code });
    expect(ok.res.statusCode).toBe(200);
    expect(verifyAnswer(pin, ok.req, ok.res).verdict).toBe('ok');
    for (const [body, status] of [[{ code }, 401], [{}, 422], [{ code: 'NOPE-NOPE' }, 401]] as const) {
      const c = await send(body);
      expect(c.res.statusCode).toBe(status);
      expect(verifyAnswer(pin, c.req, c.res).verdict).toBe('ok');
    }
  });
});
