import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/index.js';
import { decodeCertificate } from '../src/domain/signing/format.js';
import { currentSigningKey, peekSigningKey } from '../src/domain/signing/keys.js';
import type { PostgresDb } from '../src/store/postgres.js';
import { createTollgate, type Tollgate } from '../src/wiring.js';
import { ADMIN_TOKEN, expectError, fastHasher, harness, STORE, type Harness, type TestApp } from './helpers.js';
import { rotateKey, setUpKeys } from './signing-fixtures.js';
import { waitFor } from './wait.js';

const DAY = 24 * 3600 * 1000;

/** Rotation and retirement as the server signs and as a client learns them (GET /signing_keys). */
describe('signing keys: rotation and retirement', () => {
  let h: Harness;
  let app: TestApp;
  beforeEach(async () => {
    h = await harness();
    app = await h.createApp();
  });
  afterEach(async () => h.close());

  const current = async () => (await currentSigningKey(h.tollgate.services, app.id, h.clock.ms))?.kid ?? null;
  const keyList = async () => {
    const res = await h.client(app, 'GET', '/signing_keys');
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as { keys: { kid: string; certificate: string; status: string }[]; retired: string[] };
  };
  const statusOf = async (kid: string) => (await h.admin('GET', `/apps/${app.id}/signing-keys/${kid}`)).json().status;

  it('rotation: the new key signs at once, the old stays listed and active until its not_after', async () => {
    const first = await setUpKeys(h, app, { days: 30 });
    expect(await current()).toBe(first.kid);
    h.clock.advance(20 * DAY);
    const second = await rotateKey(h, app, first.rootPrivateKey);
    expect(await current()).toBe(second);
    // The synchronous read: the new key, or a miss (on PostgreSQL this node's own NOTIFY may drop the entry
    // just loaded); never the superseded key.
    expect([second, ...(STORE === 'postgres' ? [undefined] : [])]).toContain(peekSigningKey(h.tollgate.services, app.id, h.clock.ms)?.kid);
    expect(await statusOf(first.kid)).toBe('active');
    const list = await keyList();
    expect(list.keys.map((k) => k.kid)).toEqual([first.kid, second]);
    expect(list.keys.every((k) => k.status === 'active')).toBe(true);
    expect(decodeCertificate(list.keys[1]!.certificate)).toMatchObject({ app_id: app.id, kid: second });
    expect(list.retired).toEqual([]);

    h.clock.advance(10 * DAY); // the first key's not_after
    expect(await statusOf(first.kid)).toBe('expired');
    expect((await keyList()).keys.map((k) => k.kid)).toEqual([second]);
    expect(await current()).toBe(second);
  });

  it('two keys made and certified in the same millisecond with the same validity: the later one signs, and lists last', async () => {
    const first = await setUpKeys(h, app);
    const second = await rotateKey(h, app, first.rootPrivateKey);
    expect(await current()).toBe(second);
    expect((await keyList()).keys.map((k) => k.kid)).toEqual([first.kid, second]);
  });

  it('a key certified for later does not sign before its not_before; the newest valid one does', async () => {
    const first = await setUpKeys(h, app);
    const later = await rotateKey(h, app, first.rootPrivateKey, { notBefore: h.clock.ms + DAY });
    expect(await current()).toBe(first.kid);
    expect((await keyList()).keys.map((k) => k.kid).sort()).toEqual([first.kid, later].sort());
    h.clock.advance(DAY);
    expect(await current()).toBe(later);
  });

  it('retire: never current again, its private key NULL in the database, listed as retired', async () => {
    const first = await setUpKeys(h, app);
    h.clock.minutes(1); // the newer key is the one with the later not_before
    const second = await rotateKey(h, app, first.rootPrivateKey);
    expect(await current()).toBe(second);
    const retired = await h.admin('POST', `/apps/${app.id}/signing-keys/${second}/retire`);
    expect(retired.statusCode, retired.body).toBe(200);
    expect(retired.json()).toMatchObject({ kid: second, status: 'retired', retired_at: h.clock.iso() });
    expect(await current()).toBe(first.kid);
    const row = await h.tollgate.services.store.db.one<{ private_key: string | null; status: string }>('SELECT private_key, status FROM signing_keys WHERE kid = ?', [second]);
    expect(row).toEqual({ private_key: null, status: 'retired' });
    expect(await keyList()).toEqual({ keys: [expect.objectContaining({ kid: first.kid })], retired: [second] });
    expectError(await h.admin('POST', `/apps/${app.id}/signing-keys/${second}/retire`), 409, 'conflict');

    await h.admin('POST', `/apps/${app.id}/signing-keys/${first.kid}/retire`);
    expect(await current()).toBeNull();
    expect(await keyList()).toEqual({ keys: [], retired: [first.kid, second] });
    // Years later the retired kids are still listed: an SDK's retired set only grows.
    h.clock.advance(400 * DAY);
    expect((await keyList()).retired).toEqual([first.kid, second]);
  });

  it('the key list needs the application headers (step 1) and no user', async () => {
    await setUpKeys(h, app);
    expectError(await h.inject({ method: 'GET', url: '/signing_keys' }), 401, 'invalid_app_credentials');
    expectError(await h.inject({ method: 'GET', url: '/signing_keys', headers: { ...app.headers, 'x-api-secret': 'wrong' } }), 401, 'invalid_app_credentials');
    expect((await keyList()).keys).toHaveLength(1);
  });

  it('signatures: required is refused (422) without an active key, accepted with one', async () => {
    const body = expectError(await h.admin('PATCH', `/apps/${app.id}`, { signatures: 'required' }), 422, 'validation_error');
    expect(body.errors?.[0]?.field).toBe('body.signatures');
    expectError(await h.admin('POST', '/apps', { name: 'Strict', signatures: 'required' }), 422, 'validation_error');
    expect((await h.admin('GET', `/apps/${app.id}`)).json().signatures).toBe('optional');

    // A key certified only for later cannot sign now: still refused.
    const { rootPrivateKey } = await setUpKeys(h, app, { notBefore: h.clock.ms + DAY });
    expectError(await h.admin('PATCH', `/apps/${app.id}`, { signatures: 'required' }), 422, 'validation_error');
    await rotateKey(h, app, rootPrivateKey);
    const ok = await h.admin('PATCH', `/apps/${app.id}`, { signatures: 'required' });
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json().signatures).toBe('required');
    // Unchanged settings patched again stay accepted (the check is on the switch to required).
    expect((await h.admin('PATCH', `/apps/${app.id}`, { signatures: 'required', name: 'Renamed' })).statusCode).toBe(200);
  });

  it('every write is audited without a private key', async () => {
    const first = await setUpKeys(h, app);
    await h.admin('POST', `/apps/${app.id}/signing-keys/${first.kid}/retire`);
    const audit = ((await h.admin('GET', `/audit?app_id=${app.id}`)).json().items as { action: string; target_id: string; details: Record<string, unknown> }[]).reverse();
    expect(audit.map((a) => a.action)).toEqual(['app.create', 'keys.root_set', 'keys.create', 'keys.certify', 'keys.retire']);
    expect(audit[1]!.details).toEqual({ before: { public_key: null }, after: { public_key: first.rootPublicKey } });
    expect(audit.slice(2).every((a) => a.target_id === first.kid)).toBe(true);
    expect(Object.keys(audit[2]!.details).sort()).toEqual(['kid', 'public_key']);
  });
});

/**
 * Every node signs with the key the operator last set: a rotation or a
 * retirement made through one node reaches another node's cache through the
 * bus, and never later than the cache TTL. (SQLite has one process: no other node.)
 */
describe.skipIf(STORE !== 'postgres')('signing keys: a second node on the same database (PostgreSQL project only: SQLite serves one node)', () => {
  let h: Harness;
  let other: Tollgate;
  afterEach(async () => {
    await other?.close();
    await h?.close();
  });

  it('sees a rotation and a retirement without a restart', async () => {
    h = await harness();
    const url = (h.tollgate.services.store.db as PostgresDb).options.url;
    other = await createTollgate(loadConfig({ DATABASE_URL: url, TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN, LOG_LEVEL: 'silent', RATE_LIMIT: 'off' }), { clock: h.clock.now, hasher: fastHasher });
    const app = await h.createApp();
    const first = await setUpKeys(h, app);
    const seen = async () => (await currentSigningKey(other.services, app.id, h.clock.ms))?.kid ?? null;
    const eventually = async (kid: string | null) => {
      // NOTIFY arrives in milliseconds and the TTL (1 s) bounds it anyway; the deadline is for a loaded machine.
      await waitFor(`the other node to sign with ${kid}`, async () => (await seen()) === kid);
      expect(await seen()).toBe(kid);
    };
    expect(await seen()).toBe(first.kid); // cached on the other node from here on
    h.clock.minutes(1);
    const second = await rotateKey(h, app, first.rootPrivateKey);
    await eventually(second);
    await h.admin('POST', `/apps/${app.id}/signing-keys/${second}/retire`);
    await eventually(first.kid);
    const list = await other.server.inject({ method: 'GET', url: '/signing_keys', headers: app.headers });
    expect(list.json().retired).toEqual([second]);
  });
});
