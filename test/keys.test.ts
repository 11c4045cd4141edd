import { createPrivateKey, verify, createPublicKey } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { certificateInput, decodeCertificate } from '../src/domain/signing/format.js';
import { currentSigningKey, peekSigningKey } from '../src/domain/signing/keys.js';
import { expectError, harness, STORE, type Harness, type TestApp } from './helpers.js';
import { certify, createPendingKey, rootPair, rotateKey, setUpKeys } from './signing-fixtures.js';
import { waitFor } from './wait.js';

const DAY = 24 * 3600 * 1000;

/** The admin flow of docs/signing.md "Keys": root, signing key, certificate, list, show. */
describe('signing keys: the admin flow', () => {
  let h: Harness;
  let app: TestApp;
  beforeEach(async () => {
    h = await harness();
    app = await h.createApp();
  });
  afterEach(async () => h.close());

  const services = () => h.tollgate.services;

  it('root key, a pending key, its certificate: active, listed, shown, and current', async () => {
    const root = rootPair();
    const set = await h.admin('PUT', `/apps/${app.id}/root-key`, { public_key: root.rootPublicKey });
    expect(set.statusCode, set.body).toBe(200);
    expect(set.json()).toEqual({ app_id: app.id, public_key: root.rootPublicKey, retired: [] });
    expect((await h.admin('GET', `/apps/${app.id}/root-key`)).json()).toEqual({ app_id: app.id, public_key: root.rootPublicKey });

    const created = await h.admin('POST', `/apps/${app.id}/signing-keys`);
    expect(created.statusCode, created.body).toBe(201);
    const pending = created.json();
    expect(Object.keys(pending).sort()).toEqual(['certificate', 'created_at', 'kid', 'not_after', 'not_before', 'public_key', 'retired_at', 'status']);
    expect(pending).toMatchObject({ status: 'pending', certificate: null, not_before: null, not_after: null, created_at: h.clock.iso(), retired_at: null });
    expect(pending.kid).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
    expect(Buffer.from(pending.public_key, 'base64url')).toHaveLength(32);
    expect(await currentSigningKey(services(), app.id, h.clock.ms)).toBeNull();

    const notBefore = h.clock.ms;
    const certificate = certify(root.rootPrivateKey, { app_id: app.id, kid: pending.kid, public_key: pending.public_key, not_before: notBefore, not_after: notBefore + 90 * DAY });
    const up = await h.admin('PUT', `/apps/${app.id}/signing-keys/${pending.kid}/certificate`, { certificate });
    expect(up.statusCode, up.body).toBe(200);
    expect(up.json()).toMatchObject({ kid: pending.kid, status: 'active', certificate, not_before: h.clock.iso(), not_after: h.clock.iso(90 * DAY) });

    const list = await h.admin('GET', `/apps/${app.id}/signing-keys`);
    expect(list.json()).toEqual({ items: [up.json()], next_cursor: null });
    expect((await h.admin('GET', `/apps/${app.id}/signing-keys/${pending.kid}`)).json()).toEqual(up.json());

    // The key that signs is this one: its private half matches the certified public key.
    const current = await currentSigningKey(services(), app.id, h.clock.ms);
    expect(current).toMatchObject({ kid: pending.kid, appId: app.id, certificate, notBefore, notAfter: notBefore + 90 * DAY });
    expect(createPublicKey(current!.privateKey).export({ format: 'jwk' }).x).toBe(pending.public_key);
    // The synchronous read: the new key, or a miss (on PostgreSQL this node's own NOTIFY may drop the entry
    // just loaded); never the superseded key.
    expect([pending.kid, ...(STORE === 'postgres' ? [undefined] : [])]).toContain(peekSigningKey(services(), app.id, h.clock.ms)?.kid);
    const c = decodeCertificate(certificate)!;
    expect(verify(null, certificateInput(c), createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: root.rootPublicKey }, format: 'jwk' }), Buffer.from(c.sig, 'base64url'))).toBe(true);
  });

  it('the key is current only inside its validity, and is listed expired after it', async () => {
    const { kid } = await setUpKeys(h, app, { notBefore: h.clock.ms + DAY, days: 10 });
    expect(await currentSigningKey(services(), app.id, h.clock.ms)).toBeNull();
    h.clock.advance(DAY);
    expect((await currentSigningKey(services(), app.id, h.clock.ms))?.kid).toBe(kid);
    h.clock.advance(10 * DAY);
    expect(await currentSigningKey(services(), app.id, h.clock.ms)).toBeNull();
    expect((await h.admin('GET', `/apps/${app.id}/signing-keys/${kid}`)).json().status).toBe('expired');
    expect((await h.client(app, 'GET', '/signing_keys')).json()).toEqual({ keys: [], retired: [] });
  });

  it('past its not_after a key loses its private key (the key ring load deletes it; the admin list before answering) and lists expired', async () => {
    const privateKeyOf = async (kid: string) =>
      (await services().store.db.one<{ private_key: string | null }>('SELECT private_key FROM signing_keys WHERE kid = ?', [kid]))!.private_key;
    const { kid: first, rootPrivateKey } = await setUpKeys(h, app, { days: 10 });
    h.clock.minutes(1);
    const second = await rotateKey(h, app, rootPrivateKey, { days: 20 });
    expect(await privateKeyOf(first)).not.toBeNull();

    // Through the signing path: the ring is reloaded after the TTL, sees the ended key and deletes it in the background.
    h.clock.advance(10 * DAY);
    expect((await currentSigningKey(services(), app.id, h.clock.ms))?.kid).toBe(second);
    await waitFor('the ended key\'s private key to be deleted', async () => (await privateKeyOf(first)) === null);
    expect(await privateKeyOf(first)).toBeNull();
    expect(await privateKeyOf(second)).not.toBeNull();
    expect((await h.admin('GET', `/apps/${app.id}/signing-keys/${first}`)).json()).toMatchObject({ status: 'expired', certificate: expect.any(String) });

    // Through the admin list, nothing else having loaded the ring: NULL before the answer.
    h.clock.advance(10 * DAY);
    const list = await h.admin('GET', `/apps/${app.id}/signing-keys`);
    expect(list.json().items.map((k: { kid: string; status: string }) => [k.kid, k.status])).toEqual([[first, 'expired'], [second, 'expired']]);
    expect(await privateKeyOf(second)).toBeNull();
    expect(await currentSigningKey(services(), app.id, h.clock.ms)).toBeNull();
    // Pending keys (no validity yet) keep theirs.
    const pending = await createPendingKey(h, app);
    await h.admin('GET', `/apps/${app.id}/signing-keys`);
    expect(await privateKeyOf(pending.kid)).not.toBeNull();
  });

  it('root key: malformed or off-curve is 422, replacing needs replace: true and retires what the old root certified', async () => {
    for (const bad of ['', 'abc', Buffer.alloc(31).toString('base64url'), `${Buffer.alloc(32).toString('base64url')}=`, Buffer.alloc(32, 0xff).toString('base64url')]) {
      const body = expectError(await h.admin('PUT', `/apps/${app.id}/root-key`, { public_key: bad }), 422, 'validation_error');
      expect(body.errors?.[0]?.field).toBe('body.public_key');
    }
    // y = 2 is not the y of any point of edwards25519: 32 well-formed bytes, still refused.
    const offCurve = Buffer.alloc(32);
    offCurve[0] = 2;
    expectError(await h.admin('PUT', `/apps/${app.id}/root-key`, { public_key: offCurve.toString('base64url') }), 422, 'validation_error');
    expectError(await h.admin('GET', `/apps/${app.id}/root-key`), 404, 'not_found');

    const first = await setUpKeys(h, app);
    const second = rootPair();
    expectError(await h.admin('PUT', `/apps/${app.id}/root-key`, { public_key: second.rootPublicKey }), 409, 'conflict');
    // The same root again is a no-op (a retried `keys init`).
    expect((await h.admin('PUT', `/apps/${app.id}/root-key`, { public_key: first.rootPublicKey })).json().retired).toEqual([]);
    expect((await currentSigningKey(services(), app.id, h.clock.ms))?.kid).toBe(first.kid);

    const replaced = await h.admin('PUT', `/apps/${app.id}/root-key`, { public_key: second.rootPublicKey, replace: true });
    expect(replaced.statusCode, replaced.body).toBe(200);
    expect(replaced.json()).toEqual({ app_id: app.id, public_key: second.rootPublicKey, retired: [first.kid] });
    expect(await currentSigningKey(services(), app.id, h.clock.ms)).toBeNull();
    expect((await h.client(app, 'GET', '/signing_keys')).json()).toEqual({ keys: [], retired: [first.kid] });
    const audit = (await h.admin('GET', `/audit?app_id=${app.id}`)).json().items as { action: string; details: unknown }[];
    expect(audit.find((a) => a.action === 'keys.root_replace')?.details).toEqual({ before: { public_key: first.rootPublicKey }, after: { public_key: second.rootPublicKey }, retired: [first.kid] });
  });

  it('issue 21 item 7: allow_missing=true answers "no root yet" as 200 with public_key null; the plain GET keeps its 404', async () => {
    const missing = await h.admin('GET', `/apps/${app.id}/root-key?allow_missing=true`);
    expect(missing.statusCode, missing.body).toBe(200);
    expect(missing.json()).toEqual({ app_id: app.id, public_key: null });
    expectError(await h.admin('GET', `/apps/${app.id}/root-key`), 404, 'not_found');
    expectError(await h.admin('GET', `/apps/${app.id}/root-key?allow_missing=false`), 404, 'not_found');
    const bad = expectError(await h.admin('GET', `/apps/${app.id}/root-key?allow_missing=maybe`), 422, 'validation_error');
    expect(bad.errors?.[0]?.field).toBe('querystring.allow_missing');
    // An app that does not exist is still 404 with the flag: only the root may be missing.
    expectError(await h.admin('GET', `/apps/00000000-0000-4000-8000-000000000000/root-key?allow_missing=true`), 404, 'not_found');

    const keys = await setUpKeys(h, app);
    for (const url of [`/apps/${app.id}/root-key?allow_missing=true`, `/apps/${app.id}/root-key`]) {
      expect((await h.admin('GET', url)).json(), url).toEqual({ app_id: app.id, public_key: keys.rootPublicKey });
    }
  });

  it('a certificate before the root key is set: 409, the key stays pending', async () => {
    const { kid, publicKey } = await createPendingKey(h, app);
    const certificate = certify(rootPair().rootPrivateKey, { app_id: app.id, kid, public_key: publicKey, not_before: h.clock.ms, not_after: h.clock.ms + DAY });
    expectError(await h.admin('PUT', `/apps/${app.id}/signing-keys/${kid}/certificate`, { certificate }), 409, 'conflict');
    expect((await h.admin('GET', `/apps/${app.id}/signing-keys/${kid}`)).json().status).toBe('pending');
  });

  it('unknown app or kid: 404; a malformed kid: 422', async () => {
    expectError(await h.admin('POST', `/apps/00000000-0000-4000-8000-000000000000/signing-keys`), 404, 'not_found');
    expectError(await h.admin('GET', `/apps/${app.id}/signing-keys/nope`), 404, 'not_found');
    expectError(await h.admin('POST', `/apps/${app.id}/signing-keys/nope/retire`), 404, 'not_found');
    expectError(await h.admin('GET', `/apps/${app.id}/signing-keys/not.a.kid`), 422, 'validation_error');
  });

  it('the stored private key is PKCS#8 DER of the pair whose public half is shown', async () => {
    const { kid, publicKey } = await createPendingKey(h, app);
    const row = await h.tollgate.services.store.db.one<{ private_key: string }>('SELECT private_key FROM signing_keys WHERE kid = ?', [kid]);
    const priv = createPrivateKey({ key: Buffer.from(row!.private_key, 'base64'), format: 'der', type: 'pkcs8' });
    expect(createPublicKey(priv).export({ format: 'jwk' }).x).toBe(publicKey);
  });
});
