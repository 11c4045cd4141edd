/**
 * Signing keys seen from a client that pins only the root, against the real
 * server and the real CLI: rotation needs no client update; a retired key is
 * refused once the client has learned it; an expired key is refused, even
 * when its (leaked) private key signs a back-dated time.
 */
import { generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TollgateVerificationError } from '../src/index.js';
import { certify, credentialsSha256, ed25519, encodeJson, responseInput, sha256Hex, signatureHeader } from '../../test-vectors/lib.mjs';
import { proxy, startServer, type Answer, type Exchange, type Server, type TestApp } from './server.js';

let server: Server;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server?.stop());

const DAY = 86_400_000;
const kidOf = (a: Answer) => /kid=([^;]+)/.exec(a.headers['tollgate-signature'] ?? '')?.[1];
const verdictOf = (p: Promise<unknown>) => p.then(() => 'accepted', (err: unknown) => (err instanceof TollgateVerificationError ? err.verdict : `other: ${String(err)}`));

/** A client behind a proxy that logs the kid of each answer and can answer in the proxy's stead. */
async function watched(app: TestApp) {
  const seen: { path: string; kid?: string }[] = [];
  let override: ((req: Exchange, forward: () => Promise<Answer>) => Promise<Answer>) | undefined;
  const mitm = await proxy(server.url, async (req, forward) => {
    const answer = override ? await override(req, () => forward()) : await forward();
    seen.push({ path: req.path, kid: kidOf(answer) });
    return answer;
  });
  const client = server.client(app, { baseUrl: mitm.url });
  return { client, seen, close: mitm.close, answerWith: (f: typeof override) => (override = f) };
}

describe('signing keys as the client sees them', () => {
  it('rotation (tollgate keys rotate) needs no client update: the new kid verifies under the same pinned root', async () => {
    const app = await server.app();
    const w = await watched(app);
    try {
      await w.client.getAppContext(null).catch(() => undefined);
      expect(w.seen.filter((s) => s.path === '/app_context').map((s) => s.kid)).toEqual([app.kid]);
      const rotated = await server.cli('keys', 'rotate', '--app', app.id, '--root-key', app.rootKeyFile);
      expect(rotated.kid).not.toBe(app.kid);
      w.seen.length = 0;
      // The same client object, the same pinned root: the answer now comes from the new key, and the client learns it.
      const err = await w.client.getAppContext(null).then(() => null, (e: unknown) => e);
      expect(err).not.toBeInstanceOf(TollgateVerificationError);
      expect(err).toMatchObject({ status: 401 }); // the verified refusal of an anonymous caller
      // The answer's kid is unknown: before it is accepted, the client fetches the key list (its retired kids).
      expect(w.seen.map((s) => [s.path, s.kid])).toEqual([
        ['/app_context', rotated.kid],
        ['/signing_keys', rotated.kid],
      ]);
      const keys = await w.client.getSigningKeys();
      expect(keys.keys.map((k) => k.kid).sort()).toEqual([app.kid, rotated.kid].sort());
    } finally {
      await w.close();
    }
  });

  it('a retired key (tollgate keys retire) is refused once learned: an answer it signed earlier, replayed, is key_retired', async () => {
    const app = await server.app();
    const w = await watched(app);
    try {
      // A genuine answer signed by the first key, kept by an attacker (a 401: anonymous access is off; signed all the same).
      let captured: Answer | undefined;
      w.answerWith(async (req, forward) => (req.path === '/app_context' ? (captured = await forward()) : forward()));
      await w.client.getAppContext(null).catch(() => undefined);
      w.answerWith(undefined);
      expect(kidOf(captured!)).toBe(app.kid);
      const replay = async (req: Exchange, forward: () => Promise<Answer>) => (req.path === '/app_context' ? captured! : forward());

      await server.cli('keys', 'rotate', '--app', app.id, '--root-key', app.rootKeyFile);
      await server.cli('keys', 'retire', '--app', app.id, app.kid);
      // A fresh client that never met the retired kid: the unknown kid makes it fetch the key list, which names it retired.
      const fresh = await watched(app);
      fresh.answerWith(replay);
      expect(await verdictOf(fresh.client.getAppContext(null))).toBe('key_retired');
      await fresh.close();
      // The first client learns it from the new key's first answer, then refuses the replay.
      await w.client.getAppContext(null).catch(() => undefined);
      w.answerWith(replay);
      expect(await verdictOf(w.client.getAppContext(null))).toBe('key_retired');
    } finally {
      await w.close();
    }
  });

  describe('an expired key', () => {
    // A signing key certified by the app's real root (an old key whose private half leaked from a backup).
    async function leakedKey(app: TestApp, notBefore: number, notAfter: number) {
      const { privateKey, publicKey } = generateKeyPairSync('ed25519');
      const kid = `leaked-${notAfter}`;
      const cert = encodeJson(certify({ privateKey: server.rootKey(app) }, { app_id: app.id, kid, public_key: publicKey.export({ format: 'jwk' }).x!, not_before: notBefore, not_after: notAfter }));
      const resign = (req: Exchange, real: Answer, t: number): Answer => {
        const input = responseInput({
          kid, t, nonce: String(req.headers['tollgate-nonce']), appId: app.id, status: real.status,
          method: req.method, target: req.path, requestBodySha256: sha256Hex(req.body), credentialsSha256: credentialsSha256(req.headers, 'latin1'), responseLine: sha256Hex(real.body),
        });
        return { ...real, headers: { ...real.headers, 'tollgate-signature': signatureHeader(kid, t, ed25519({ privateKey }, input)), 'tollgate-key-cert': cert } };
      };
      return { resign };
    }

    it('signing now, after its not_after: key_expired', async () => {
      const app = await server.app();
      const leaked = await leakedKey(app, Date.now() - 40 * DAY, Date.now() - 10 * DAY);
      const w = await watched(app);
      try {
        w.answerWith(async (req, forward) => leaked.resign(req, await forward(), Date.now()));
        expect(await verdictOf(w.client.getSigningKeys())).toBe('key_expired');
      } finally {
        await w.close();
      }
    });

    it('signing a back-dated time inside its old validity: key_expired once the client has seen the server\'s time', async () => {
      const app = await server.app();
      const end = Date.now() - 10 * DAY;
      const leaked = await leakedKey(app, end - 30 * DAY, end);
      const w = await watched(app);
      try {
        await w.client.getSigningKeys(); // one genuine answer: the server's time is known
        w.answerWith(async (req, forward) => leaked.resign(req, await forward(), end - DAY));
        expect(await verdictOf(w.client.getSigningKeys())).toBe('key_expired');
      } finally {
        await w.close();
      }
    });

    it('certified for longer than 90 days: key_expired', async () => {
      const app = await server.app();
      const leaked = await leakedKey(app, Date.now() - DAY, Date.now() + 90 * DAY);
      const w = await watched(app);
      try {
        w.answerWith(async (req, forward) => leaked.resign(req, await forward(), Date.now()));
        expect(await verdictOf(w.client.getSigningKeys())).toBe('key_expired');
      } finally {
        await w.close();
      }
    });
  });
});
