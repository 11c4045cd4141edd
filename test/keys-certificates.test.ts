import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { b64url, certificateInput, encodeCertificate, type CertificateFields } from '../src/domain/signing/format.js';
import { currentSigningKey } from '../src/domain/signing/keys.js';
import { expectError, harness, type Harness, type TestApp } from './helpers.js';
import { certify, createPendingKey, rootPair, type RootPair } from './signing-fixtures.js';
import { sign } from 'node:crypto';

const DAY = 24 * 3600 * 1000;

/**
 * A certificate is accepted only if the app's root signed exactly this key of
 * this app for at most 90 days that have not ended. Anything else would let a
 * client trust a key the operator never certified, so it is a 422 naming
 * body.certificate, and the key stays pending (it never signs).
 */
describe('signing key certificates: what is refused', () => {
  let h: Harness;
  let app: TestApp;
  let root: RootPair;
  let key: { kid: string; publicKey: string };
  let good: CertificateFields;
  beforeEach(async () => {
    h = await harness();
    app = await h.createApp();
    root = rootPair();
    expect((await h.admin('PUT', `/apps/${app.id}/root-key`, { public_key: root.rootPublicKey })).statusCode).toBe(200);
    key = await createPendingKey(h, app);
    good = { app_id: app.id, kid: key.kid, public_key: key.publicKey, not_before: h.clock.ms, not_after: h.clock.ms + 30 * DAY };
  });
  afterEach(async () => h.close());

  const upload = (certificate: string, kid = key.kid) => h.admin('PUT', `/apps/${app.id}/signing-keys/${kid}/certificate`, { certificate });

  async function refused(certificate: string, reason: RegExp): Promise<void> {
    const body = expectError(await upload(certificate), 422, 'validation_error');
    expect(body.errors).toEqual([{ field: 'body.certificate', message: expect.stringMatching(reason) }]);
    const stored = (await h.admin('GET', `/apps/${app.id}/signing-keys/${key.kid}`)).json();
    expect(stored).toMatchObject({ status: 'pending', certificate: null, not_before: null, not_after: null });
    expect(await currentSigningKey(h.tollgate.services, app.id, h.clock.ms)).toBeNull();
  }

  it('signed by another root', async () => {
    await refused(certify(rootPair().rootPrivateKey, good), /not signed by this application's root key/);
  });

  it('for another app, another kid, another public key (each correctly signed by this root)', async () => {
    const other = await h.createApp({ name: 'Other' });
    await refused(certify(root.rootPrivateKey, { ...good, app_id: other.id }), /another application/);
    const sibling = await createPendingKey(h, app);
    await refused(certify(root.rootPrivateKey, { ...good, kid: sibling.kid }), /another signing key/);
    await refused(certify(root.rootPrivateKey, { ...good, public_key: sibling.publicKey }), /public key/);
    // The sibling's own certificate does not fit this key either.
    await refused(certify(root.rootPrivateKey, { ...good, kid: sibling.kid, public_key: sibling.publicKey }), /another signing key/);
  });

  it('valid for over 90 days, for no time at all, or backwards; 90 days exactly is accepted', async () => {
    await refused(certify(root.rootPrivateKey, { ...good, not_after: good.not_before + 90 * DAY + 1 }), /90 days/);
    await refused(certify(root.rootPrivateKey, { ...good, not_after: good.not_before }), /90 days/);
    await refused(certify(root.rootPrivateKey, { ...good, not_after: good.not_before - DAY }), /90 days/);
    const ok = await upload(certify(root.rootPrivateKey, { ...good, not_after: good.not_before + 90 * DAY }));
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json().status).toBe('active');
  });

  it('already expired (not_after now or in the past)', async () => {
    await refused(certify(root.rootPrivateKey, { ...good, not_before: h.clock.ms - 10 * DAY, not_after: h.clock.ms - 1 }), /expired/);
    await refused(certify(root.rootPrivateKey, { ...good, not_before: h.clock.ms - 10 * DAY, not_after: h.clock.ms }), /expired/);
  });

  it('malformed: not base64url JSON, extra or missing fields, wrong types, v other than 1, a short or tampered signature', async () => {
    const sig = b64url(sign(null, certificateInput(good), root.rootPrivateKey));
    const json = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
    for (const bad of [
      'not a certificate',
      Buffer.from('{"v":1').toString('base64url'),
      json([1, 2]),
      json({ v: 1, ...good, sig, extra: 1 }),
      json({ v: 1, ...good }),
      json({ v: 2, ...good, sig }),
      json({ v: 1, ...good, not_before: String(good.not_before), sig }),
    ]) {
      await refused(bad, /not a tollgate\/keycert\/v1 certificate/);
    }
    await refused(encodeCertificate({ v: 1, ...good, sig: sig.slice(0, 40) }), /not signed/);
    const flipped = Buffer.from(sig, 'base64url');
    flipped[0] = flipped[0]! ^ 1;
    await refused(encodeCertificate({ v: 1, ...good, sig: b64url(flipped) }), /not signed/);
    // Signed over other fields than those it carries (a later not_after pasted in).
    await refused(encodeCertificate({ v: 1, ...good, not_after: good.not_after + DAY, sig }), /not signed/);
  });

  it('not canonical base64url (a trailing ==, an inserted .): 422, never stored (every SDK would refuse every answer); a canonical one is stored byte for byte', async () => {
    const good64 = certify(root.rootPrivateKey, good);
    await refused(`${good64}==`, /not a tollgate\/keycert\/v1 certificate/);
    await refused(`${good64.slice(0, 40)}.${good64.slice(40)}`, /not a tollgate\/keycert\/v1 certificate/);
    await refused(`${good64.slice(0, 40)}+${good64.slice(41)}`, /not a tollgate\/keycert\/v1 certificate/);
    const ok = await upload(good64);
    expect(ok.statusCode, ok.body).toBe(200);
    expect((await h.admin('GET', `/apps/${app.id}/signing-keys/${key.kid}`)).json().certificate).toBe(good64);
    expect((await currentSigningKey(h.tollgate.services, app.id, h.clock.ms))?.certificate).toBe(good64);
  });

  it('an empty or oversized certificate: 422 from the schema', async () => {
    expectError(await upload(''), 422, 'validation_error');
    expectError(await upload('A'.repeat(5000)), 422, 'validation_error');
  });

  it('a second certificate for an active key, or one for a retired key: 409, the first stays', async () => {
    const first = certify(root.rootPrivateKey, good);
    expect((await upload(first)).statusCode).toBe(200);
    expectError(await upload(certify(root.rootPrivateKey, { ...good, not_after: good.not_before + 60 * DAY })), 409, 'conflict');
    expect((await h.admin('GET', `/apps/${app.id}/signing-keys/${key.kid}`)).json().certificate).toBe(first);

    const retired = await createPendingKey(h, app);
    expect((await h.admin('POST', `/apps/${app.id}/signing-keys/${retired.kid}/retire`)).statusCode).toBe(200);
    expectError(await upload(certify(root.rootPrivateKey, { ...good, kid: retired.kid, public_key: retired.publicKey }), retired.kid), 409, 'conflict');
  });
});
