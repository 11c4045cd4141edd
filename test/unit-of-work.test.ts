import type { LightMyRequestResponse } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Change } from '../src/domain/services.js';
import { ADMIN_TOKEN, errorOf, harness, PASSWORD, STORE, type Harness, type TestApp } from './helpers.js';

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
  return { app, userId, licenseId, banId, fileId: file.json().id, tokenId: token.json().id };
}

/** More than one 256 KiB chunk, so content is streamed into the store before the file row is written. */
const CONTENT = Buffer.alloc(300 * 1024, 7);

const upload = (h: Harness, url: string, method: 'POST' | 'PUT') =>
  h.inject({ method, url, headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/octet-stream' }, payload: CONTENT });

/** Every admin write (DECISIONS: each is audited). */
const WRITES: [string, (h: Harness, f: Fixture) => Promise<LightMyRequestResponse>][] = [
  ['app create', (h) => h.admin('POST', '/apps', { name: 'Another' })],
  ['app update', (h, f) => h.admin('PATCH', `/apps/${f.app.id}`, { registration_open: false })],
  ['app secret rotation', (h, f) => h.admin('POST', `/apps/${f.app.id}/secret`)],
  ['app delete', (h, f) => h.admin('DELETE', `/apps/${f.app.id}?confirm=${encodeURIComponent(f.app.name)}`)],
  ['license create', (h, f) => h.admin('POST', `/apps/${f.app.id}/licenses`, { count: 3, minutes: 60 })],
  ['license delete', (h, f) => h.admin('DELETE', `/apps/${f.app.id}/licenses/${f.licenseId}`)],
  ['ban create (user)', (h, f) => h.admin('POST', `/apps/${f.app.id}/bans`, { type: 'user', value: f.userId })],
  ['ban create (ip)', (h, f) => h.admin('POST', `/apps/${f.app.id}/bans`, { type: 'ip', value: '0.0.0.0/0' })],
  ['ban delete', (h, f) => h.admin('DELETE', `/apps/${f.app.id}/bans/${f.banId}`)],
  ['user update (membership)', (h, f) => h.admin('PATCH', `/apps/${f.app.id}/users/${f.userId}`, { active_until: '2020-01-01T00:00:00Z' })],
  ['user update (password)', (h, f) => h.admin('PATCH', `/apps/${f.app.id}/users/${f.userId}`, { password: 'a new password' })],
  ['user reset-devices', (h, f) => h.admin('POST', `/apps/${f.app.id}/users/${f.userId}/reset-devices`)],
  ['user revoke-sessions', (h, f) => h.admin('POST', `/apps/${f.app.id}/users/${f.userId}/revoke-sessions`)],
  ['user delete', (h, f) => h.admin('DELETE', `/apps/${f.app.id}/users/${f.userId}`)],
  ['variable put', (h, f) => h.admin('PUT', `/apps/${f.app.id}/variables/motd`, { value: 'changed' })],
  ['variable delete', (h, f) => h.admin('DELETE', `/apps/${f.app.id}/variables/motd`)],
  ['file upload', (h, f) => upload(h, `/admin/v1/apps/${f.app.id}/files?name=b.bin`, 'POST')],
  ['file content replace', (h, f) => upload(h, `/admin/v1/apps/${f.app.id}/files/${f.fileId}/content`, 'PUT')],
  ['file update', (h, f) => h.admin('PATCH', `/apps/${f.app.id}/files/${f.fileId}`, { name: 'renamed.bin' })],
  ['file delete', (h, f) => h.admin('DELETE', `/apps/${f.app.id}/files/${f.fileId}`)],
  ['token create', (h) => h.admin('POST', '/tokens', { name: 'another' })],
  ['token revoke', (h, f) => h.admin('DELETE', `/tokens/${f.tokenId}`)],
];

const TABLES = [
  'apps', 'licenses', 'users', 'activations', 'devices', 'user_ips', 'sessions', 'variables', 'blobs', 'files', 'bans', 'admin_tokens', 'audit_log',
];

/** Everything stored, table by table (chunk contents by length only). */
async function snapshot(h: Harness): Promise<Record<string, unknown[]>> {
  const db = h.tollgate.services.store.db;
  const out: Record<string, unknown[]> = {};
  for (const table of TABLES) out[table] = await db.all(`SELECT * FROM ${table} ORDER BY 1`);
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
  const { store, caches, credentials } = h.tollgate.services;
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
    h = await harness();
    f = await fixture(h);
  });
  afterEach(async () => h.close());

  for (const [name, act] of WRITES) {
    it(`${name}: the audit insert fails -> an error, nothing applied, no cache or node told`, async () => {
      await refuseAuditInserts(h);
      const before = await snapshot(h);
      const events = recordPublications(h);
      const res = await act(h, f);
      expect([500, 503], res.body).toContain(res.statusCode);
      errorOf(res);
      expect(await snapshot(h)).toEqual(before);
      expect(events.filter((e) => e !== 'commit')).toEqual([]);
    });

    it(`${name}: one audit entry, committed with the change; caches published only after the commit`, async () => {
      const audited = (await snapshot(h)).audit_log!.length;
      const events = recordPublications(h);
      const res = await act(h, f);
      expect(res.statusCode, res.body).toBeLessThan(300);
      expect((await snapshot(h)).audit_log).toHaveLength(audited + 1);
      expect(events, 'the write ran in a transaction').toContain('commit');
      events.forEach((event, i) => {
        if (event !== 'commit') expect(events.slice(0, i), `${event} before any commit: ${events.join(' | ')}`).toContain('commit');
      });
    });
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
