import { createHash, verify } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { harness, PASSWORD, type Harness, type TestApp } from './helpers.js';
import { bearer, hwidHashOf, leaseApp, leaseOf, legacy, nonce, postLease, rawPublicKey, type LeaseSettings } from './lease-fixtures.js';
import { rotateKey, setUpKeys } from './signing-fixtures.js';

let h: Harness;
beforeEach(async () => {
  h = await harness();
});
afterEach(async () => h.close());

/** An app with leases and keys, and its pinned root. */
async function keyedApp(settings: LeaseSettings = {}): Promise<{ app: TestApp; root: string; kid: string; rootPrivateKey: Awaited<ReturnType<typeof setUpKeys>>['rootPrivateKey'] }> {
  const app = await leaseApp(h, settings);
  const keys = await setUpKeys(h, app);
  return { app, root: keys.rootPublicKey, kid: keys.kid, rootPrivateKey: keys.rootPrivateKey };
}

const seqOf = (res: Parameters<typeof leaseOf>[0], root: string): number => leaseOf(res, root).payload.seq as number;

describe('POST /lease: the lease file', () => {
  it('decodes (armour, JSON, payload bytes); its sig verifies with the certificate key, the certificate with the root', async () => {
    const { app, root, kid } = await keyedApp();
    await h.activeUser(app, 'alice');
    const res = await postLease(h, app, legacy('alice'));
    const lease = leaseOf(res, root);
    expect(lease.kid).toBe(kid);
    expect(lease.cert.app_id).toBe(app.id);
    // The payload is carried as the signed bytes: its JSON is exactly those bytes, fields in the table's order.
    expect(Object.keys(lease.payload)).toEqual([
      'lease_id', 'seq', 'app_id', 'user_id', 'hwid_hash', 'is_lifetime', 'active_until', 'iat', 'renew_after', 'exp', 'max_offline_runtime_s',
      'entitlements', 'is_trial',
    ]);
    expect(JSON.stringify(lease.payload)).toBe(lease.payloadBytes.toString('utf8'));
    expect(res.headers['cache-control']).toBe('private, no-store');
  });

  it('the answer itself is signed (docs/signing.md, 10 lines, the credential headers included) with the key that signed the lease', async () => {
    const { app, root, kid } = await keyedApp();
    await h.activeUser(app, 'alice');
    const n = nonce();
    const res = await postLease(h, app, { ...legacy('alice'), 'tollgate-nonce': n });
    const lease = leaseOf(res, root);
    expect(res.headers['tollgate-key-cert']).toBe(JSON.parse(Buffer.from(res.body.split('\n').slice(1, -2).join(''), 'base64url').toString()).cert);
    const m = /^v1; kid=([A-Za-z0-9_-]+); t=(\d+); sig=([A-Za-z0-9_-]{86})$/.exec(String(res.headers['tollgate-signature']));
    expect(m, String(res.headers['tollgate-signature'])).not.toBeNull();
    expect(m![1]).toBe(kid);
    const sha = (b: string) => createHash('sha256').update(b, 'utf8').digest('hex');
    const credentials = sha(`x-api-username:alice\nx-api-password:${PASSWORD}\nx-hardware-id:hw-1\n`);
    const lines = ['tollgate/response/v1', kid, m![2], n, app.id, '200', 'POST /lease', sha(''), credentials, sha(res.body)].join('\n');
    expect(verify(null, Buffer.from(lines, 'utf8'), rawPublicKey(lease.cert.public_key as string), Buffer.from(m![3]!, 'base64url'))).toBe(true);
  });

  it('a timed membership: exp capped by active_until when the grace is longer; renew_after and the runtime budget', async () => {
    const { app, root } = await keyedApp({ offline_grace_seconds: 7200, lease_renew_seconds: 900 });
    const userId = await h.activeUser(app, 'alice'); // 60 minutes from now
    const activeUntil = h.clock.ms + 60 * 60_000;
    h.clock.advance(5_000);
    // A client sends its hardware id as UTF-8 bytes (Node reads header bytes as latin1): the hash is over that UTF-8 id.
    const utf8Header = Buffer.from('machine-Ä', 'utf8').toString('latin1');
    const { payload } = leaseOf(await postLease(h, app, { ...legacy('alice'), 'x-hardware-id': utf8Header }), root);
    const iat = h.clock.ms;
    expect(payload).toEqual({
      lease_id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/),
      seq: 1,
      app_id: app.id,
      user_id: userId,
      hwid_hash: hwidHashOf(app.id, 'machine-Ä'),
      is_lifetime: false,
      active_until: activeUntil,
      iat,
      renew_after: iat + 900_000,
      exp: activeUntil,
      max_offline_runtime_s: 7200,
      entitlements: [],
      is_trial: false,
    });
  });

  it('a timed membership longer than the grace: exp = iat + grace', async () => {
    const { app, root } = await keyedApp({ offline_grace_seconds: 1800 });
    await h.activeUser(app, 'alice');
    const { payload } = leaseOf(await postLease(h, app, legacy('alice')), root);
    expect(payload.exp).toBe(h.clock.ms + 1_800_000);
    expect(payload.active_until).toBe(h.clock.ms + 3_600_000);
    expect(payload.max_offline_runtime_s).toBe(1800);
  });

  it("exp never outlives the signing key: capped at its certificate's not_after (amendment B)", async () => {
    const DAY = 86_400_000;
    const app = await leaseApp(h, { offline_grace_seconds: 30 * 86_400 });
    // A key certified 89 days ago for 90 days: one day left, a grace of 30 days.
    const keys = await setUpKeys(h, app, { notBefore: h.clock.ms - 89 * DAY });
    await h.activeUser(app, 'alice', undefined, undefined, { minutes: undefined, lifetime: true });
    const lease = leaseOf(await postLease(h, app, legacy('alice')), keys.rootPublicKey);
    expect(lease.kid).toBe(keys.kid);
    expect(lease.cert.not_after).toBe(h.clock.ms + DAY);
    expect(lease.payload).toMatchObject({ iat: h.clock.ms, exp: h.clock.ms + DAY, max_offline_runtime_s: 30 * 86_400 });
  });

  it('a lifetime membership: active_until null, exp = iat + grace', async () => {
    const { app, root } = await keyedApp({ offline_grace_seconds: 3 * 86_400, lease_renew_seconds: 3600 });
    await h.activeUser(app, 'alice', undefined, undefined, { minutes: undefined, lifetime: true });
    const { payload } = leaseOf(await postLease(h, app, legacy('alice')), root);
    expect(payload).toMatchObject({ is_lifetime: true, active_until: null, iat: h.clock.ms, exp: h.clock.ms + 3 * 86_400_000, renew_after: h.clock.ms + 3_600_000 });
  });

  it('each lease has its own lease_id, and the stored row names the last one', async () => {
    const { app, root } = await keyedApp();
    const userId = await h.activeUser(app, 'alice');
    const first = leaseOf(await postLease(h, app, legacy('alice')), root).payload;
    const second = leaseOf(await postLease(h, app, legacy('alice')), root).payload;
    expect(second.lease_id).not.toBe(first.lease_id);
    expect(await h.tollgate.services.store.leases.seqOf(app.id, userId, hwidHashOf(app.id, 'hw-1'))).toBe(2);
  });
});

describe('POST /lease: seq', () => {
  it('increases per device, and is independent per device and per user', async () => {
    const { app, root } = await keyedApp();
    await h.activeUser(app, 'alice');
    await h.activeUser(app, 'bob');
    const alice = async (hw: string) => seqOf(await postLease(h, app, { ...legacy('alice'), 'x-hardware-id': hw }), root);
    expect([await alice('hw-1'), await alice('hw-1'), await alice('hw-1')]).toEqual([1, 2, 3]);
    expect([await alice('hw-2'), await alice('hw-2')]).toEqual([1, 2]);
    expect(seqOf(await postLease(h, app, { ...legacy('bob'), 'x-hardware-id': 'hw-1' }), root)).toBe(1);
    expect(await alice('hw-1')).toBe(4);
  });

  it('200 parallel calls for one device get 200 distinct seqs, 1..200 (taken in the database, not read-then-write)', async () => {
    const { app, root } = await keyedApp();
    await h.activeUser(app, 'alice');
    const token = await h.login(app, 'alice');
    const answers = await Promise.all(Array.from({ length: 200 }, () => postLease(h, app, bearer(token))));
    const seqs = answers.map((res) => seqOf(res, root)).sort((a, b) => a - b);
    expect(seqs).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
  });

  it('the same user id at another app is another sequence (a user of app B cannot get a lease of app A)', async () => {
    const a = await keyedApp();
    const b = await keyedApp();
    await h.activeUser(a.app, 'alice');
    await h.activeUser(b.app, 'carol');
    const tokenB = await h.login(b.app, 'carol');
    const res = await postLease(h, a.app, bearer(tokenB));
    expect(res.statusCode).toBe(401);
    expect(res.json().code).toBe('invalid_credentials');
    expect((await postLease(h, a.app, legacy('carol'))).json().code).toBe('invalid_credentials');
    // app B's own lease is signed by B's key and names B.
    const lease = leaseOf(await postLease(h, b.app, bearer(tokenB)), b.root);
    expect(lease.payload.app_id).toBe(b.app.id);
    expect(lease.kid).toBe(b.kid);
  });
});

describe('POST /lease: rotation', () => {
  it('after rotation a new lease carries the new kid, certified by the same root', async () => {
    const { app, root, kid, rootPrivateKey } = await keyedApp();
    await h.activeUser(app, 'alice');
    expect(leaseOf(await postLease(h, app, legacy('alice')), root).kid).toBe(kid);
    h.clock.advance(1000);
    const next = await rotateKey(h, app, rootPrivateKey);
    expect(next).not.toBe(kid);
    const lease = leaseOf(await postLease(h, app, legacy('alice')), root);
    expect(lease.kid).toBe(next);
    expect(lease.payload.seq).toBe(2);
  });
});
