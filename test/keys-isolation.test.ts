import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { currentSigningKey } from '../src/domain/signing/keys.js';
import { expectError, harness, type Harness, type TestApp } from './helpers.js';
import { certify, createPendingKey, rootPair, setUpKeys } from './signing-fixtures.js';

const DAY = 24 * 3600 * 1000;

/** App B's admin paths and client credentials reach none of app A's keys. */
describe('signing keys: one app cannot see or touch another’s', () => {
  let h: Harness;
  let a: TestApp;
  let b: TestApp;
  beforeEach(async () => {
    h = await harness();
    a = await h.createApp({ name: 'A' });
    b = await h.createApp({ name: 'B' });
  });
  afterEach(async () => h.close());

  it("B's paths do not list, show or retire A's key: 404, and A's key keeps signing", async () => {
    const { kid } = await setUpKeys(h, a);
    await setUpKeys(h, b);
    expect((await h.admin('GET', `/apps/${b.id}/signing-keys`)).json().items.map((k: { kid: string }) => k.kid)).not.toContain(kid);
    expectError(await h.admin('GET', `/apps/${b.id}/signing-keys/${kid}`), 404, 'not_found');
    expectError(await h.admin('POST', `/apps/${b.id}/signing-keys/${kid}/retire`), 404, 'not_found');
    expect((await currentSigningKey(h.tollgate.services, a.id, h.clock.ms))?.kid).toBe(kid);
    expect((await h.admin('GET', `/apps/${a.id}/signing-keys/${kid}`)).json().status).toBe('active');
  });

  it("B's root cannot certify A's key, neither through B's path nor A's", async () => {
    const rootA = rootPair();
    const rootB = rootPair();
    await h.admin('PUT', `/apps/${a.id}/root-key`, { public_key: rootA.rootPublicKey });
    await h.admin('PUT', `/apps/${b.id}/root-key`, { public_key: rootB.rootPublicKey });
    const key = await createPendingKey(h, a);
    const fields = { kid: key.kid, public_key: key.publicKey, not_before: h.clock.ms, not_after: h.clock.ms + DAY };
    // Through B's path: the key is not B's.
    expectError(await h.admin('PUT', `/apps/${b.id}/signing-keys/${key.kid}/certificate`, { certificate: certify(rootB.rootPrivateKey, { app_id: b.id, ...fields }) }), 404, 'not_found');
    // Through A's path, signed by B's root (naming either app): not A's root.
    for (const appId of [a.id, b.id]) {
      const body = expectError(await h.admin('PUT', `/apps/${a.id}/signing-keys/${key.kid}/certificate`, { certificate: certify(rootB.rootPrivateKey, { app_id: appId, ...fields }) }), 422, 'validation_error');
      expect(body.errors?.[0]?.field).toBe('body.certificate');
    }
    expect((await h.admin('GET', `/apps/${a.id}/signing-keys/${key.kid}`)).json().status).toBe('pending');
  });

  it("B's client credentials list B's keys only; a retirement in A is not B's", async () => {
    const keyA = await setUpKeys(h, a);
    const keyB = await setUpKeys(h, b);
    await h.admin('POST', `/apps/${a.id}/signing-keys/${keyA.kid}/retire`);
    const listB = (await h.client(b, 'GET', '/signing_keys')).json();
    expect(listB.keys.map((k: { kid: string }) => k.kid)).toEqual([keyB.kid]);
    expect(listB.retired).toEqual([]);
    expect((await h.client(a, 'GET', '/signing_keys')).json()).toEqual({ keys: [], retired: [keyA.kid] });
    expect((await currentSigningKey(h.tollgate.services, b.id, h.clock.ms))?.kid).toBe(keyB.kid);
  });

  it("B's root key is its own: setting it leaves A's untouched", async () => {
    const rootA = await setUpKeys(h, a);
    await setUpKeys(h, b);
    expect((await h.admin('GET', `/apps/${a.id}/root-key`)).json().public_key).toBe(rootA.rootPublicKey);
    const replacement = rootPair().rootPublicKey;
    expect((await h.admin('PUT', `/apps/${b.id}/root-key`, { public_key: replacement, replace: true })).statusCode).toBe(200);
    expect((await h.admin('GET', `/apps/${b.id}/root-key`)).json().public_key).toBe(replacement);
    expect((await h.admin('GET', `/apps/${a.id}/root-key`)).json().public_key).toBe(rootA.rootPublicKey);
    expect((await currentSigningKey(h.tollgate.services, a.id, h.clock.ms))?.kid).toBe(rootA.kid);
  });
});
