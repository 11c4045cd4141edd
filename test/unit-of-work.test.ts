import type { LightMyRequestResponse } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AUDIT_ACTIONS, type AuditAction } from '../src/domain/admin/actions.js';
import type { Change } from '../src/domain/caches.js';
import { ADMIN_TOKEN, errorOf, harness, PASSWORD, STORE, type Harness, type TestApp, writableStore } from './helpers.js';
import { login, makeOperator, OPERATOR_PASSWORD, signIn, totpCode, withTotp, type Session } from './operator-helpers.js';
import { certify, createPendingKey, rootPair, rotateKey, type RootPair } from './signing-fixtures.js';
import { connect, fixture as storeSample, map, post } from './sales-helpers.js';

/**
 * One unit of work per write (src/domain/unit-of-work.ts): the change and its
 * audit record commit together or not at all, caches are dropped only after
 * the commit, and a committed write is never answered as an error.
 */

/** What one admin write needs to exist beforehand. */
interface Fixture {
  app: TestApp;
  userId: string;
  licenseId: string;
  banId: string;
  fileId: string;
  tokenId: string;
  /** A live seat of alice's (issue 25). */
  seatId: string;
  /** A webhook endpoint of `app` (a closed loopback port, subscribed to webhook.test only) and one deleted with nothing else. */
  webhookId: string;
  spareWebhookId: string;
  /** A Lemon Squeezy integration of `app` with one product mapped. */
  mappingId: string;
  /** A second app with a root key, a certified signing key and a pending one. */
  keyed: TestApp;
  root: RootPair;
  activeKid: string;
  pendingKid: string;
  pendingPublicKey: string;
  /** An admin operator, signed in, who minted an admin token, and has TOTP set-up started (not confirmed). */
  dave: { id: string; session: Session; pendingSecret: string };
  /** An admin operator with TOTP on, signed in. */
  tess: { id: string; session: Session; secret: string };
  /** A license template of `app`, and a trial started on it (issue 24). */
  templateId: string;
  trialId: string;
}

async function fixture(h: Harness): Promise<Fixture> {
  const app = await h.createApp();
  const userId = await h.activeUser(app, 'alice');
  await h.login(app, 'alice');
  const { id: licenseId } = await h.license(app);
  const banId = await h.ban(app, 'hardware_id', 'hw-banned');
  expect((await h.admin('PUT', `/apps/${app.id}/variables/motd`, { value: 'hello' })).statusCode).toBe(200);
  const file = await upload(h, `/admin/v1/apps/${app.id}/files?name=a.bin`, 'POST');
  expect(file.statusCode, file.body).toBe(201);
  const token = await h.admin('POST', '/tokens', { name: 'ops' });
  expect(token.statusCode, token.body).toBe(201);
  expect((await h.admin('PATCH', `/apps/${app.id}`, { max_seats: 5, max_devices_per_user: 5 })).statusCode).toBe(200);
  const seat = await h.client(app, 'POST', '/seats', undefined, { 'x-api-username': 'alice', 'x-api-password': PASSWORD, 'x-hardware-id': 'hw-seat' });
  expect(seat.statusCode, seat.body).toBe(200);

  const keyed = await h.createApp({ name: 'Keyed' });
  const root = rootPair();
  expect((await h.admin('PUT', `/apps/${keyed.id}/root-key`, { public_key: root.rootPublicKey })).statusCode).toBe(200);
  const activeKid = await rotateKey(h, keyed, root.rootPrivateKey);
  const pending = await createPendingKey(h, keyed);

  const daveId = await makeOperator(h, 'dave', 'admin');
  const daveSession = await signIn(h, 'dave');
  expect((await daveSession.call('POST', '/tokens', { name: 'dave-ci' })).statusCode).toBe(201);
  const started = await daveSession.call('POST', '/session/totp');
  expect(started.statusCode, started.body).toBe(200);
  const hook = await h.admin('POST', `/apps/${app.id}/webhooks`, { url: 'http://127.0.0.1:9/hook', event_types: ['webhook.test'] });
  expect(hook.statusCode, hook.body).toBe(201);
  const spare = await h.admin('POST', '/webhooks', { url: 'http://127.0.0.1:9/spare', event_types: ['webhook.test'] });
  expect(spare.statusCode, spare.body).toBe(201);
  const tessId = await makeOperator(h, 'tess', 'admin');
  const tess = await withTotp(h, 'tess');
  const template = await h.admin('POST', `/apps/${app.id}/templates`, { name: 'Pro', minutes: 60, entitlements: ['pro'] });
  expect(template.statusCode, template.body).toBe(201);
  expect((await h.admin('POST', `/apps/${app.id}/licenses`, { count: 1, template_id: template.json().id })).statusCode).toBe(201);
  expect((await h.admin('POST', `/apps/${app.id}/users/${userId}/entitlements`, { code: 'pro' })).statusCode).toBe(201);
  expect((await h.admin('PATCH', `/apps/${app.id}`, { trial_minutes: 60, trial_entitlements: ['pro'] })).statusCode).toBe(200);
  expect((await h.client(app, 'POST', '/trial', { hardware_id: 'hw-trial' })).statusCode).toBe(200);
  const trialId = (await h.admin('GET', `/apps/${app.id}/trials`)).json().items[0].id;
  await connect(h, app, 'lemonsqueezy');
  const mappingId = await map(h, app, 'lemonsqueezy', { product_key: '1', minutes: 60 });
  return {
    templateId: template.json().id, trialId, mappingId,
    app, userId, licenseId, banId, fileId: file.json().id, tokenId: token.json().id, seatId: seat.json().seat.id, webhookId: hook.json().id, spareWebhookId: spare.json().id,
    keyed, root, activeKid, pendingKid: pending.kid, pendingPublicKey: pending.publicKey,
    dave: { id: daveId, session: daveSession, pendingSecret: started.json().secret },
    tess: { id: tessId, ...tess },
  };
}

/** More than one 256 KiB chunk, so content is streamed into the store before the file row is written. */
const CONTENT = Buffer.alloc(300 * 1024, 7);

const upload = (h: Harness, url: string, method: 'POST' | 'PUT') =>
  h.inject({ method, url, headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/octet-stream' }, payload: CONTENT });

type Act = (h: Harness, f: Fixture) => Promise<LightMyRequestResponse>;

/** One way to make a write: the request, and the actions it records (more than one when a write cascades). */
interface Scenario {
  name: string;
  act: Act;
  audits?: AuditAction[];
}

const DAY_MS = 24 * 3600 * 1000;

/**
 * Every audited action (src/domain/admin/actions.ts) and the admin writes that
 * record it (DECISIONS: each is audited). Keyed by the catalogue, so a new
 * action does not compile until it has a scenario here.
 */
const WRITES: Record<AuditAction, Scenario[]> = {
  'app.create': [{ name: 'app create', act: (h) => h.admin('POST', '/apps', { name: 'Another' }) }],
  'app.update': [{ name: 'app update', act: (h, f) => h.admin('PATCH', `/apps/${f.app.id}`, { registration_open: false }) }],
  'app.rotate_secret': [{ name: 'app secret rotation', act: (h, f) => h.admin('POST', `/apps/${f.app.id}/secret`) }],
  'app.delete': [{ name: 'app delete', act: (h, f) => h.admin('DELETE', `/apps/${f.app.id}?confirm=${encodeURIComponent(f.app.name)}`) }],
  'licenses.create': [{ name: 'license create', act: (h, f) => h.admin('POST', `/apps/${f.app.id}/licenses`, { count: 3, minutes: 60 }) }],
  'license.delete': [{ name: 'license delete', act: (h, f) => h.admin('DELETE', `/apps/${f.app.id}/licenses/${f.licenseId}`) }],
  'licenses.delete_unused': [{ name: 'licenses delete-unused', act: (h, f) => h.admin('POST', `/apps/${f.app.id}/licenses/delete_unused`, {}) }],
  'ban.create': [
    { name: 'ban create (user)', act: (h, f) => h.admin('POST', `/apps/${f.app.id}/bans`, { type: 'user', value: f.userId }) },
    { name: 'ban create (ip)', act: (h, f) => h.admin('POST', `/apps/${f.app.id}/bans`, { type: 'ip', value: '0.0.0.0/0' }) },
  ],
  'ban.delete': [{ name: 'ban delete', act: (h, f) => h.admin('DELETE', `/apps/${f.app.id}/bans/${f.banId}`) }],
  'user.update': [
    { name: 'user update (membership)', act: (h, f) => h.admin('PATCH', `/apps/${f.app.id}/users/${f.userId}`, { active_until: '2020-01-01T00:00:00Z' }) },
    { name: 'user update (password)', act: (h, f) => h.admin('PATCH', `/apps/${f.app.id}/users/${f.userId}`, { password: 'a new password' }) },
  ],
  'user.reset_devices': [
    { name: 'user reset-devices', act: (h, f) => h.admin('POST', `/apps/${f.app.id}/users/${f.userId}/reset-devices`) },
    { name: 'the user’s own POST /devices/reset', act: (h, f) => h.client(f.app, 'POST', '/devices/reset', undefined, { 'x-api-username': 'alice', 'x-api-password': PASSWORD }) },
  ],
  'seat.release': [{ name: 'seat release', act: (h, f) => h.admin('DELETE', `/apps/${f.app.id}/seats/${f.seatId}`) }],
  'user.revoke_sessions': [{ name: 'user revoke-sessions', act: (h, f) => h.admin('POST', `/apps/${f.app.id}/users/${f.userId}/revoke-sessions`) }],
  'user.delete': [{ name: 'user delete', act: (h, f) => h.admin('DELETE', `/apps/${f.app.id}/users/${f.userId}`) }],
  'template.create': [{ name: 'template create', act: (h, f) => h.admin('POST', `/apps/${f.app.id}/templates`, { name: 'Other', lifetime: true }) }],
  'template.update': [{ name: 'template update', act: (h, f) => h.admin('PATCH', `/apps/${f.app.id}/templates/${f.templateId}`, { minutes: 30, max_seats: 3 }) }],
  'template.apply': [{ name: 'template apply to existing licenses', act: (h, f) => h.admin('POST', `/apps/${f.app.id}/templates/${f.templateId}/apply`) }],
  'template.delete': [{ name: 'template delete', act: (h, f) => h.admin('DELETE', `/apps/${f.app.id}/templates/${f.templateId}`) }],
  'entitlement.grant': [{ name: 'entitlement grant', act: (h, f) => h.admin('POST', `/apps/${f.app.id}/users/${f.userId}/entitlements`, { code: 'beta', until: h.clock.iso(60_000) }) }],
  'entitlement.revoke': [{ name: 'entitlement revoke', act: (h, f) => h.admin('DELETE', `/apps/${f.app.id}/users/${f.userId}/entitlements/pro`) }],
  'trial.reset': [{ name: 'trial reset', act: (h, f) => h.admin('DELETE', `/apps/${f.app.id}/trials/${f.trialId}`) }],
  'variable.put': [{ name: 'variable put', act: (h, f) => h.admin('PUT', `/apps/${f.app.id}/variables/motd`, { value: 'changed' }) }],
  'variable.delete': [{ name: 'variable delete', act: (h, f) => h.admin('DELETE', `/apps/${f.app.id}/variables/motd`) }],
  'file.create': [{ name: 'file upload', act: (h, f) => upload(h, `/admin/v1/apps/${f.app.id}/files?name=b.bin`, 'POST') }],
  'file.replace_content': [{ name: 'file content replace', act: (h, f) => upload(h, `/admin/v1/apps/${f.app.id}/files/${f.fileId}/content`, 'PUT') }],
  'file.update': [{ name: 'file update', act: (h, f) => h.admin('PATCH', `/apps/${f.app.id}/files/${f.fileId}`, { name: 'renamed.bin' }) }],
  'file.delete': [{ name: 'file delete', act: (h, f) => h.admin('DELETE', `/apps/${f.app.id}/files/${f.fileId}`) }],
  'keys.root_set': [{ name: 'root key set', act: (h, f) => h.admin('PUT', `/apps/${f.app.id}/root-key`, { public_key: f.root.rootPublicKey }) }],
  'keys.root_replace': [{ name: 'root key replace', act: (h, f) => h.admin('PUT', `/apps/${f.keyed.id}/root-key`, { public_key: rootPair().rootPublicKey, replace: true }) }],
  'keys.create': [{ name: 'signing key create', act: (h, f) => h.admin('POST', `/apps/${f.keyed.id}/signing-keys`) }],
  'keys.certify': [{
    name: 'signing key certify',
    act: (h, f) => h.admin('PUT', `/apps/${f.keyed.id}/signing-keys/${f.pendingKid}/certificate`, {
      certificate: certify(f.root.rootPrivateKey, { app_id: f.keyed.id, kid: f.pendingKid, public_key: f.pendingPublicKey, not_before: h.clock.ms, not_after: h.clock.ms + 90 * DAY_MS }),
    }),
  }],
  'keys.retire': [{ name: 'signing key retire', act: (h, f) => h.admin('POST', `/apps/${f.keyed.id}/signing-keys/${f.activeKid}/retire`) }],
  'keys.forget_ended': [{
    name: 'ended key listed: its private key forgotten',
    act: (h, f) => {
      h.clock.advance(91 * DAY_MS);
      return h.admin('GET', `/apps/${f.keyed.id}/signing-keys`);
    },
  }],
  'admin_token.create': [{ name: 'token create', act: (h) => h.admin('POST', '/tokens', { name: 'another' }) }],
  'admin_token.update': [{ name: 'operator demoted: their token capped', act: (h, f) => h.admin('PATCH', `/operators/${f.dave.id}`, { role: 'support' }), audits: ['operator.update', 'admin_token.update'] }],
  'admin_token.revoke': [
    { name: 'token revoke', act: (h, f) => h.admin('DELETE', `/tokens/${f.tokenId}`) },
    { name: 'operator disabled: their token revoked', act: (h, f) => h.admin('PATCH', `/operators/${f.dave.id}`, { disabled: true }), audits: ['operator.update', 'admin_token.revoke'] },
  ],
  'operator.create': [{ name: 'operator create', act: (h) => h.admin('POST', '/operators', { username: 'olga', password: OPERATOR_PASSWORD, role: 'viewer' }) }],
  'operator.update': [{ name: 'operator update (password)', act: (h, f) => h.admin('PATCH', `/operators/${f.tess.id}`, { password: 'another operator password' }) }],
  'operator.delete': [{ name: 'operator delete', act: (h, f) => h.admin('DELETE', `/operators/${f.dave.id}`), audits: ['operator.delete', 'admin_token.revoke'] }],
  'operator.totp_reset': [{ name: 'operator TOTP reset', act: (h, f) => h.admin('POST', `/operators/${f.tess.id}/reset_totp`) }],
  'operator.login': [{ name: 'operator sign-in', act: (h) => login(h, 'dave') }],
  'operator.logout': [{ name: 'operator sign-out', act: (_h, f) => f.dave.session.call('DELETE', '/session') }],
  'operator.totp_start': [{ name: 'operator TOTP set-up started', act: (_h, f) => f.dave.session.call('POST', '/session/totp') }],
  'operator.totp_enable': [{ name: 'operator TOTP confirm', act: (h, f) => f.dave.session.call('POST', '/session/totp/confirm', { code: totpCode(f.dave.pendingSecret, h.clock.ms) }) }],
  'operator.totp_disable': [{ name: 'operator TOTP off', act: (h, f) => f.tess.session.call('DELETE', '/session/totp', { code: totpCode(f.tess.secret, h.clock.ms) }) }],
  'webhook.create': [
    { name: 'app webhook create', act: (h, f) => h.admin('POST', `/apps/${f.app.id}/webhooks`, { url: 'http://127.0.0.1:9/other' }) },
    { name: 'service webhook create', act: (h) => h.admin('POST', '/webhooks', { url: 'http://127.0.0.1:9/other', kind: 'discord' }) },
  ],
  'webhook.update': [{ name: 'webhook update', act: (h, f) => h.admin('PATCH', `/apps/${f.app.id}/webhooks/${f.webhookId}`, { description: 'CRM', event_types: ['user.created'] }) }],
  'webhook.delete': [
    { name: 'app webhook delete', act: (h, f) => h.admin('DELETE', `/apps/${f.app.id}/webhooks/${f.webhookId}`) },
    { name: 'service webhook delete', act: (h, f) => h.admin('DELETE', `/webhooks/${f.spareWebhookId}`) },
  ],
  'webhook.rotate_secret': [{ name: 'webhook secret rotation', act: (h, f) => h.admin('POST', `/apps/${f.app.id}/webhooks/${f.webhookId}/secret`) }],
  'webhook.test': [{ name: 'webhook test event', act: (h, f) => h.admin('POST', `/apps/${f.app.id}/webhooks/${f.webhookId}/test`) }],
  'webhook.replay': [{ name: 'webhook replay of failures', act: (h, f) => h.admin('POST', `/apps/${f.app.id}/webhooks/${f.webhookId}/replay`, { since: '2020-01-01T00:00:00Z' }) }],
  'integration.set': [
    { name: 'store secret set', act: (h, f) => h.admin('PUT', `/apps/${f.app.id}/integrations/stripe`, { signing_secret: 'whsec_unit_of_work_0123' }) },
    { name: 'store secret replaced', act: (h, f) => h.admin('PUT', `/apps/${f.app.id}/integrations/lemonsqueezy`, { signing_secret: 'another-secret' }) },
  ],
  'integration.update': [{ name: 'store integration disabled', act: (h, f) => h.admin('PATCH', `/apps/${f.app.id}/integrations/lemonsqueezy`, { enabled: false }) }],
  'integration.delete': [{ name: 'store integration delete', act: (h, f) => h.admin('DELETE', `/apps/${f.app.id}/integrations/lemonsqueezy`) }],
  'integration.product_create': [{ name: 'product mapping create', act: (h, f) => h.admin('POST', `/apps/${f.app.id}/integrations/lemonsqueezy/products`, { product_key: '99', lifetime: true }) }],
  'integration.product_update': [{ name: 'product mapping update', act: (h, f) => h.admin('PATCH', `/apps/${f.app.id}/integrations/lemonsqueezy/products/${f.mappingId}`, { codes_per_unit: 2 }) }],
  'integration.product_delete': [{ name: 'product mapping delete', act: (h, f) => h.admin('DELETE', `/apps/${f.app.id}/integrations/lemonsqueezy/products/${f.mappingId}`) }],
  // The store's own write (its audit actor is integration:lemonsqueezy): licenses, order and event id in one unit of work.
  'sale.apply': [{ name: 'store sale webhook', act: (h, f) => post(h, 'lemonsqueezy', f.app, storeSample('lemonsqueezy', 'order_created')) }],
};

const TABLES = [
  'apps', 'licenses', 'users', 'activations', 'devices', 'user_ips', 'sessions', 'variables', 'blobs', 'files', 'bans', 'admin_tokens', 'audit_log',
  'signing_keys', 'operators', 'operator_sessions', 'events', 'webhook_endpoints', 'license_templates', 'entitlement_grants', 'trials',
  'integrations', 'integration_products', 'integration_events', 'integration_orders', 'integration_order_licenses', 'integration_renewals',
];

/**
 * Columns the request changes before its write, on purpose and whatever the write's fate: a session's
 * last sight (every signed-in request) and the last TOTP step used (a code checked is spent, so it never works twice).
 */
const BEFORE_THE_WRITE: Record<string, string[]> = { operator_sessions: ['last_seen_at'], operators: ['totp_last_step'] };

/** Everything stored, table by table (chunk contents by length only). */
async function snapshot(h: Harness): Promise<Record<string, unknown[]>> {
  const db = h.tollgate.services.store.db;
  const out: Record<string, unknown[]> = {};
  for (const table of TABLES) {
    const rows = await db.all<Record<string, unknown>>(`SELECT * FROM ${table} ORDER BY 1`);
    for (const row of rows) for (const column of BEFORE_THE_WRITE[table] ?? []) delete row[column];
    out[table] = rows;
  }
  out.blob_chunks = await db.all('SELECT blob_id, seq, LENGTH(data) AS n FROM blob_chunks ORDER BY blob_id, seq');
  return out;
}

/** A trigger that makes every audit insert fail, as a full disk or a dropped connection would at that moment. */
async function refuseAuditInserts(h: Harness): Promise<void> {
  const db = h.tollgate.services.store.db;
  if (STORE === 'sqlite') {
    await db.script("CREATE TRIGGER audit_refused BEFORE INSERT ON audit_log BEGIN SELECT RAISE(ABORT, 'audit refused by the test'); END;");
  } else {
    await db.script(`
      CREATE FUNCTION audit_refused() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'audit refused by the test'; END $$;
      CREATE TRIGGER audit_refused BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION audit_refused();`);
  }
}

/** Records, in order, each commit of a transaction and each cache publication. */
function recordPublications(h: Harness): string[] {
  const events: string[] = [];
  const { caches, credentials } = h.tollgate.services;
  const store = writableStore(h.tollgate.services);
  const transaction = store.transaction.bind(store);
  store.transaction = async (fn) => {
    const result = await transaction(fn);
    events.push('commit');
    return result;
  };
  const changed = caches.changed.bind(caches);
  caches.changed = async (change: Change) => {
    events.push(`changed ${Object.keys(change).join(',')}`);
    await changed(change);
  };
  const forgetUser = credentials.forgetUser.bind(credentials);
  credentials.forgetUser = (userId: string) => {
    events.push('forget');
    forgetUser(userId);
  };
  return events;
}

describe('an admin write and its audit record are one unit', () => {
  let h: Harness;
  let f: Fixture;
  beforeEach(async () => {
    h = await harness({ env: { WEBHOOK_ALLOW_HOSTS: '127.0.0.1' } });
    f = await fixture(h);
  });
  afterEach(async () => h.close());

  it('every catalogued action has a write that records it', () => {
    expect(Object.keys(WRITES).sort()).toEqual([...AUDIT_ACTIONS].sort());
    for (const action of AUDIT_ACTIONS) expect(WRITES[action].length, action).toBeGreaterThan(0);
  });

  for (const action of AUDIT_ACTIONS) {
    for (const { name, act, audits = [action] } of WRITES[action]) {
      it(`${action} (${name}): the audit insert fails -> an error, nothing applied, no cache or node told`, async () => {
        await refuseAuditInserts(h);
        const before = await snapshot(h);
        const events = recordPublications(h);
        const res = await act(h, f);
        expect([500, 503], res.body).toContain(res.statusCode);
        errorOf(res);
        expect(await snapshot(h)).toEqual(before);
        expect(events.filter((e) => e !== 'commit')).toEqual([]);
      });

      it(`${action} (${name}): its audit entries, committed with the change; caches published only after the commit`, async () => {
        const audited = (await snapshot(h)).audit_log!.length;
        const events = recordPublications(h);
        const res = await act(h, f);
        expect(res.statusCode, res.body).toBeLessThan(300);
        const entries = (await snapshot(h)).audit_log as { action: string; at: number }[];
        expect(entries.slice(audited).map((e) => e.action).sort()).toEqual([...audits].sort());
        expect(events, 'the write ran in a transaction').toContain('commit');
        events.forEach((event, i) => {
          if (event !== 'commit') expect(events.slice(0, i), `${event} before any commit: ${events.join(' | ')}`).toContain('commit');
        });
      });
    }
  }

  it('a rolled-back ban leaves the access it would have removed: the cached app context still answers', async () => {
    const ctx = () => h.client(f.app, 'GET', '/app_context', undefined, { 'x-api-username': 'alice', 'x-api-password': PASSWORD });
    expect((await ctx()).statusCode).toBe(200);
    await refuseAuditInserts(h);
    expect((await h.admin('POST', `/apps/${f.app.id}/bans`, { type: 'user', value: f.userId })).statusCode).toBeGreaterThanOrEqual(500);
    expect((await ctx()).statusCode).toBe(200);
  });
});

describe('a committed sign-up is never answered as failed', () => {
  let h: Harness;
  let app: TestApp;
  beforeEach(async () => {
    h = await harness();
    app = await h.createApp();
  });
  afterEach(async () => h.close());

  /** Any read of a user outside a transaction fails from now on (what a dropped connection after COMMIT does). */
  function failReadsAfterCommit(): () => void {
    const users = h.tollgate.services.store.users;
    const findById = users.findById;
    users.findById = async () => {
      throw new Error('connection lost after COMMIT (test)');
    };
    return () => {
      users.findById = findById;
    };
  }

  it('sign_up: 200 with the new user, who is stored', async () => {
    const restore = failReadsAfterCommit();
    const res = await h.client(app, 'POST', '/sign_up', { username: 'alice', password: PASSWORD });
    restore();
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ username: 'alice', membership: { is_active: false, is_lifetime: false, active_until: null } });
    const stored = await h.admin('GET', `/apps/${app.id}/users/${res.json().id}`);
    expect(stored.statusCode, stored.body).toBe(200);
    expect(stored.json().username).toBe('alice');
  });

  it('sign_up_with_license_code: 200 with the new user and the membership of the license, which is used', async () => {
    const { id: licenseId, code } = await h.license(app, { minutes: 60 });
    const restore = failReadsAfterCommit();
    const res = await h.client(app, 'POST', '/sign_up_with_license_code', { code });
    restore();
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().membership).toMatchObject({ is_active: true, active_until: h.clock.iso(60 * 60_000) });
    const stored = await h.admin('GET', `/apps/${app.id}/users/${res.json().id}`);
    expect(stored.statusCode, stored.body).toBe(200);
    expect(stored.json().signup_license_id).toBe(licenseId);
  });
});
