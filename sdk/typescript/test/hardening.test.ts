/**
 * The review's attacks on the client, against the real server (amendments B,
 * D, F, G): a leaked older key re-signing answers while a proxy blocks the
 * key list, a leaked ended key forging a ten-year lease, a device-auth app
 * used without an explicit hardware id, and a 413.
 */
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryLeaseStore, SDK_RELEASED_AT, TollgateError, TollgateLeaseError, TollgateVerificationError, hardwareId } from '../src/index.js';
import { certify, credentialsSha256, ed25519, encodeJson, leaseFile, leaseInput, responseInput, sha256Hex, signatureHeader, hwidHash } from '../../test-vectors/lib.mjs';
import { PASSWORD, proxy, startServer, type Answer, type Exchange, type Server, type TestApp } from './server.js';

const DAY = 86_400_000;
let server: Server;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server?.stop());

const outcome = (p: Promise<unknown>) =>
  p.then(
    () => 'accepted',
    (err: unknown) =>
      err instanceof TollgateVerificationError || err instanceof TollgateLeaseError ? err.verdict : err instanceof TollgateError ? `verified ${err.status}` : `other: ${String(err)}`,
  );

/** A signing key certified by the app's real root for [notBefore, notAfter]: an old key whose private half leaked from a backup. */
function leakedKey(app: TestApp, notBefore: number, notAfter: number) {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const kid = `leaked-${notBefore}`;
  const cert = encodeJson(certify({ privateKey: server.rootKey(app) }, { app_id: app.id, kid, public_key: publicKey.export({ format: 'jwk' }).x!, not_before: notBefore, not_after: notAfter }));
  const resign = (req: Exchange, real: Answer, t: number): Answer => {
    const input = responseInput({
      kid, t, nonce: String(req.headers['tollgate-nonce']), appId: app.id, status: real.status, method: req.method, target: req.path,
      requestBodySha256: sha256Hex(req.body), credentialsSha256: credentialsSha256(req.headers, 'latin1'), responseLine: sha256Hex(real.body),
    });
    return { ...real, headers: { ...real.headers, 'tollgate-signature': signatureHeader(kid, t, ed25519({ privateKey }, input)), 'tollgate-key-cert': cert } };
  };
  return { kid, cert, privateKey: privateKey as KeyObject, resign };
}

describe('amendment D: an older key after a newer one was verified', () => {
  it('a leaked older key, /signing_keys blocked: accepted during the 10-minute grace, key_retired after; a failed key-list fetch is retried after a minute', async () => {
    const app = await server.app();
    const leaked = leakedKey(app, Date.now() - DAY, Date.now() + 30 * DAY);
    let mode: 'pass' | 'leaked' = 'pass';
    let keyListAsked = 0;
    const mitm = await proxy(server.url, async (req, forward) => {
      if (req.path === '/signing_keys') {
        keyListAsked++;
        if (mode === 'leaked') return { status: 503, headers: {}, body: Buffer.from('blocked') };
      }
      return mode === 'leaked' ? leaked.resign(req, await forward(), Date.now()) : forward();
    });
    let shift = 0;
    let mono = 0;
    const client = server.client(app, { baseUrl: mitm.url, clock: { now: () => Date.now() + shift, monotonic: () => mono } });
    try {
      expect(await outcome(client.getAppContext(null))).toBe('verified 401'); // the first key, learned
      await server.cli('keys', 'rotate', '--app', app.id, '--root-key', app.rootKeyFile);
      expect(await outcome(client.getAppContext(null))).toBe('verified 401'); // the newer key: from now on the older ones have 10 minutes

      mode = 'leaked';
      const asked = keyListAsked;
      expect(await outcome(client.getAppContext(null))).toBe('verified 401'); // within the grace
      expect(keyListAsked).toBe(asked + 1); // the unknown kid was looked up (and blocked)
      await outcome(client.getAppContext(null));
      expect(keyListAsked, 'a failed fetch is not retried at once').toBe(asked + 1);
      mono += 61_000;
      await outcome(client.getAppContext(null));
      expect(keyListAsked, 'but again after a minute').toBe(asked + 2);

      shift = 11 * 60_000;
      expect(await outcome(client.getAppContext(null))).toBe('key_retired');
    } finally {
      await mitm.close();
    }
  });
});

describe('amendment B and F: a leaked ended key', () => {
  it('forging a lease with exp ten years out: key_expired, whether served in an answer (a fresh install) or put in the store', async () => {
    const app = await server.app({ offline_grace_seconds: 3600 });
    await server.activeUser(app, 'alice');
    const leaked = leakedKey(app, Date.now() - 100 * DAY, Date.now() - 11 * DAY);
    const iat = Date.now() - 50 * DAY;
    const decade = 10 * 365 * DAY;
    const payload = Buffer.from(JSON.stringify({
      lease_id: '9a4c2f1e-7b3d-4e8a-b5c6-1d2e3f4a5b6c', seq: 999, app_id: app.id, user_id: 'someone', hwid_hash: hwidHash(app.id, 'test-machine-1'),
      is_lifetime: true, active_until: null, iat, renew_after: iat + decade, exp: iat + decade, max_offline_runtime_s: decade / 1000,
    }));
    const forged = leaseFile({ v: 1, kid: leaked.kid, cert: leaked.cert, payload: payload.toString('base64url'), sig: ed25519({ privateKey: leaked.privateKey }, leaseInput(payload)).toString('base64url') });

    // Served by a proxy in a back-dated answer to a fresh install: the floor (here the app's notBefore) already
    // lies past the key's end, so the answer itself is refused.
    const mitm = await proxy(server.url, async (req, forward) => {
      const real = await forward();
      return req.path === '/lease' ? leaked.resign(req, { ...real, status: 200, body: Buffer.from(forged) }, iat) : real;
    });
    const store = new MemoryLeaseStore();
    try {
      const fresh = server.client(app, { baseUrl: mitm.url, leaseStore: store, notBefore: Date.now() - 60_000 });
      expect(await outcome(fresh.createLease({ username: 'alice', password: PASSWORD }))).toBe('key_expired');
      expect(store.lease).toBeNull();
    } finally {
      await mitm.close();
    }
    // Put in the store by hand: the lease outlives its key's not_after.
    store.lease = forged;
    expect(await outcome(server.client(app, { leaseStore: store }).checkLease())).toBe('key_expired');
    expect(SDK_RELEASED_AT).toBeGreaterThan(Date.UTC(2026, 0, 1)); // the default floor is a real date
  });
});

describe('amendment F: the default hardware id on every call', () => {
  it('a device-auth app used without a hardwareId option: sign-up, activation, login and app_context all carry hardwareId(appId)', async () => {
    const app = await server.app({ device_auth_enabled: true });
    const seen: { path: string; header?: string; body?: string }[] = [];
    const mitm = await proxy(server.url, async (req, forward) => {
      const body = req.body.length ? (JSON.parse(req.body.toString()) as { hardware_id?: string }) : {};
      seen.push({ path: req.path, header: req.headers['x-hardware-id'] as string | undefined, body: body.hardware_id });
      return forward();
    });
    try {
      const client = server.client(app, { baseUrl: mitm.url, hardwareId: undefined });
      const { licenses } = (await server.admin('POST', `/apps/${app.id}/licenses`, { count: 1, minutes: 60 })).body;
      await client.signUp({ username: 'dora', password: PASSWORD });
      await client.activateLicense({ code: licenses[0].code, username: 'dora', password: PASSWORD });
      await client.login({ credentials: { username: 'dora', password: PASSWORD } });
      const context = await client.getAppContext({ username: 'dora', password: PASSWORD });
      expect(context.user?.membership.is_active).toBe(true);
      const id = await hardwareId(app.id);
      expect(seen.filter((s) => s.path !== '/signing_keys').map((s) => [s.path, s.body ?? s.header])).toEqual([
        ['/sign_up', id], ['/activate_license', id], ['/auth/login', id], ['/app_context', id],
      ]);
    } finally {
      await mitm.close();
    }
  });
});

describe('amendment G: a 413', () => {
  it('is verified over the empty request-body hash (the server never read the body): a TollgateError, not a failed verification', async () => {
    const app = await server.app();
    const err = await server.client(app).signUp({ username: 'x'.repeat(70_000), password: PASSWORD }).then(() => null, (e: unknown) => e);
    expect(err).toBeInstanceOf(TollgateError);
    expect(err).toMatchObject({ status: 413, code: 'payload_too_large' });
  });
});
