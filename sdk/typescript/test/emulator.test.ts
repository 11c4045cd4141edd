/**
 * What a cracked or redirected client meets, against the real server: an
 * emulator with its own keys, real answers re-signed or edited, replayed, or
 * taken from another request or another app. Each is refused with the
 * verdict of docs/signing.md, and nothing of the answer reaches the app.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TollgateVerificationError } from '../src/index.js';
// The vectors' independent implementation of the layouts: an emulator signs exactly as the server would.
import { certify, credentialsSha256, ed25519, encodeJson, keyPair, responseInput, sha256Hex, signatureHeader } from '../../test-vectors/lib.mjs';
import { PASSWORD, proxy, startServer, type Answer, type Exchange, type Server, type TestApp } from './server.js';

let server: Server;
let app: TestApp;
let sessionToken: string;

beforeAll(async () => {
  server = await startServer();
  app = await server.app();
  await server.activeUser(app, 'alice');
  sessionToken = (await server.client(app).login({ credentials: { username: 'alice', password: PASSWORD } })).session_token;
});
afterAll(() => server?.stop());

const verdictOf = (p: Promise<unknown>) =>
  p.then(
    () => 'accepted',
    (err: unknown) => (err instanceof TollgateVerificationError ? err.verdict : `other error: ${String(err)}`),
  );

/** A client whose every request goes through `handle` (a man in the middle, or a DNS-redirected emulator). */
async function through(handle: (req: Exchange, forward: (req?: Exchange) => Promise<Answer>) => Promise<Answer>, target = app) {
  const mitm = await proxy(server.url, handle);
  const client = server.client(target, { baseUrl: mitm.url });
  client.auth = { sessionToken };
  return { client, close: mitm.close };
}

/** Signs an answer to `req` the way the server does, with any key and certificate. */
function sign(req: Exchange, answer: Answer, key: ReturnType<typeof keyPair> & { kid: string }, certificate: string, appId: string, t = Date.now()): Answer {
  const input = responseInput({
    kid: key.kid, t, nonce: String(req.headers['tollgate-nonce']), appId, status: answer.status,
    method: req.method, target: req.path, requestBodySha256: sha256Hex(req.body), credentialsSha256: credentialsSha256(req.headers, 'latin1'), responseLine: sha256Hex(answer.body),
  });
  return { ...answer, headers: { ...answer.headers, 'tollgate-signature': signatureHeader(key.kid, t, ed25519(key, input)), 'tollgate-key-cert': certificate } };
}

const activeContext = (appId: string) =>
  Buffer.from(JSON.stringify({ application: { id: appId, name: 'x', variables: [], files: [] }, user: { id: 'u', username: 'alice', membership: { is_active: true, is_lifetime: true, active_until: null } }, server_time: new Date().toISOString() }));

describe('an emulator or a tampering proxy is refused', () => {
  it('an emulator with its own root and key, signing every answer correctly over the request: bad_certificate', async () => {
    const root = keyPair('emulator-root');
    const key = { ...keyPair('emulator-key'), kid: 'emu1' };
    const cert = encodeJson(certify(root, { app_id: app.id, kid: key.kid, public_key: key.publicKey, not_before: Date.now() - 1000, not_after: Date.now() + 86_400_000 }));
    const { client, close } = await through(async (req) => sign(req, { status: 200, headers: { 'content-type': 'application/json' }, body: activeContext(app.id) }, key, cert, app.id));
    try {
      expect(await verdictOf(client.getAppContext())).toBe('bad_certificate');
    } finally {
      await close();
    }
  });

  it('the real certificate with the emulator\'s own key: bad_signature', async () => {
    const key = keyPair('emulator-key');
    const { client, close } = await through(async (req, forward) => {
      const real = await forward();
      const [, kid] = /kid=([^;]+)/.exec(real.headers['tollgate-signature']!)!;
      return sign(req, { ...real, body: activeContext(app.id) }, { ...key, kid: kid! }, real.headers['tollgate-key-cert']!, app.id);
    });
    try {
      expect(await verdictOf(client.getAppContext())).toBe('bad_signature');
    } finally {
      await close();
    }
  });

  it('a real answer with its body changed (a banned user made active): bad_signature', async () => {
    const banned = await server.activeUser(app, 'mallory');
    await server.admin('POST', `/apps/${app.id}/bans`, { type: 'user', value: banned });
    const { client, close } = await through(async (_req, forward) => {
      const real = await forward();
      return { ...real, status: 200, body: activeContext(app.id) };
    });
    try {
      expect(await verdictOf(client.getAppContext({ username: 'mallory', password: PASSWORD }))).toBe('bad_signature');
    } finally {
      await close();
    }
  });

  it('a replayed answer (the right key, an old nonce): bad_signature', async () => {
    let recorded: Answer | undefined;
    const { client, close } = await through(async (req, forward) => {
      if (!req.path.startsWith('/app_context')) return forward();
      recorded ??= await forward();
      return recorded;
    });
    try {
      await client.getAppContext(); // recorded, and accepted: it answers this request
      expect(await verdictOf(client.getAppContext())).toBe('bad_signature');
    } finally {
      await close();
    }
  });

  it('an answer to another request (same nonce, another target): bad_signature', async () => {
    const { client, close } = await through(async (req, forward) => forward(req.path === '/app_context' ? { ...req, path: '/signing_keys' } : req));
    try {
      expect(await verdictOf(client.getAppContext())).toBe('bad_signature');
    } finally {
      await close();
    }
  });

  it('an answer to another request body (a login for another user): bad_signature', async () => {
    await server.activeUser(app, 'bob');
    const { client, close } = await through(async (req, forward) =>
      forward(req.path === '/auth/login' ? { ...req, body: Buffer.from(JSON.stringify({ credentials: { username: 'bob', password: PASSWORD } })) } : req),
    );
    try {
      expect(await verdictOf(client.login({ credentials: { username: 'nobody', password: 'wrong' } }))).toBe('bad_signature');
    } finally {
      await close();
    }
  });

  it("an answer for another app (another root): bad_certificate; another app under the same root: wrong_app", async () => {
    const other = await server.app();
    const { licenses } = (await server.admin('POST', `/apps/${other.id}/licenses`, { count: 1, minutes: 60 })).body;
    await server.client(other).signUpWithLicenseCode({ code: licenses[0].code });
    // The proxy swaps in the other app's credentials: the server answers, signed, for the other app.
    const swap = async (req: Exchange, forward: (req?: Exchange) => Promise<Answer>) =>
      forward({ ...req, headers: { ...req.headers, 'x-api-key': other.apiKey, 'x-api-secret': other.apiSecret } });
    const a = await through(swap);
    try {
      expect(await verdictOf(a.client.getAppContext({ licenseCode: licenses[0].code }))).toBe('bad_certificate');
    } finally {
      await a.close();
    }
    // A third app whose keys the operator certified with the first app's root (one root for two apps).
    const shared = (await server.admin('POST', '/apps', { name: 'shared root' })).body;
    await server.admin('PUT', `/apps/${shared.id}/root-key`, { public_key: app.rootPublicKey });
    const pending = (await server.admin('POST', `/apps/${shared.id}/signing-keys`)).body;
    const now = Date.now() - 1000;
    const certificate = encodeJson(certify({ privateKey: server.rootKey(app) }, { app_id: shared.id, kid: pending.kid, public_key: pending.public_key, not_before: now, not_after: now + 86_400_000 }));
    expect((await server.admin('PUT', `/apps/${shared.id}/signing-keys/${pending.kid}/certificate`, { certificate })).status).toBe(200);
    const b = await through(async (req, forward) => forward({ ...req, headers: { ...req.headers, 'x-api-key': shared.api_key, 'x-api-secret': shared.api_secret } }));
    try {
      expect(await verdictOf(b.client.getAppContext(null))).toBe('wrong_app');
    } finally {
      await b.close();
    }
  });

  it('headers stripped by a proxy: missing_signature; a garbled signature header: malformed_signature', async () => {
    const strip = await through(async (_req, forward) => {
      const real = await forward();
      delete real.headers['tollgate-signature'];
      return real;
    });
    const garble = await through(async (_req, forward) => {
      const real = await forward();
      return { ...real, headers: { ...real.headers, 'tollgate-signature': real.headers['tollgate-signature']!.replace('v1;', 'v2;') } };
    });
    try {
      expect(await verdictOf(strip.client.getAppContext())).toBe('missing_signature');
      expect(await verdictOf(garble.client.getAppContext())).toBe('malformed_signature');
    } finally {
      await strip.close();
      await garble.close();
    }
  });
});
