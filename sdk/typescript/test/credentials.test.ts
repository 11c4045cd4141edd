/**
 * A proxy that rewrites only the user's credential headers (docs/signing.md,
 * amendment A): a free user's request goes out, the proxy swaps in a paying
 * user's username and password, session token or license code, and hands
 * back the server's genuine, validly signed answer for the paying user. The
 * signed bytes hold the hash of the credential headers the SDK sent, so that
 * answer is refused (bad_signature) on every call, /lease included, and no
 * lease is kept.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TollgateError, TollgateLeaseError, TollgateVerificationError } from '../src/index.js';
import { PASSWORD, proxy, startServer, type Answer, type Exchange, type Server, type TestApp } from './server.js';

let server: Server;
let app: TestApp;
let payingToken: string;
let payingCode: string;

beforeAll(async () => {
  server = await startServer();
  app = await server.app({ offline_grace_seconds: 3600, lease_renew_seconds: 600 });
  await server.activeUser(app, 'alice');
  payingToken = (await server.client(app).login({ credentials: { username: 'alice', password: PASSWORD } })).session_token;
  const { licenses } = (await server.admin('POST', `/apps/${app.id}/licenses`, { count: 1, minutes: 60 })).body;
  payingCode = licenses[0].code;
  await server.client(app).signUpWithLicenseCode({ code: payingCode });
  await server.client(app).signUp({ username: 'bob', password: PASSWORD }); // the free user: no membership
});
afterAll(() => server?.stop());

const outcome = (p: Promise<unknown>) =>
  p.then(
    () => 'accepted',
    (err: unknown) => (err instanceof TollgateVerificationError ? err.verdict : err instanceof TollgateError ? `verified ${err.code}` : `other error: ${String(err)}`),
  );

/** A client whose requests pass a proxy that overwrites the credential headers present with `swap`'s. */
async function swapping(swap: Record<string, string>) {
  const mitm = await proxy(server.url, (req: Exchange, forward: (req?: Exchange) => Promise<Answer>) => {
    const headers = { ...req.headers };
    for (const [name, value] of Object.entries(swap)) if (headers[name] !== undefined) headers[name] = value;
    return forward({ ...req, headers });
  });
  return { client: server.client(app, { baseUrl: mitm.url }), close: mitm.close };
}

describe("a proxy swapping in a paying user's credentials is refused", () => {
  it('the proxy itself is transparent: without a swap the paying user is accepted and the free one gets his own verified answer', async () => {
    const { client, close } = await swapping({});
    try {
      expect(await outcome(client.getAppContext({ username: 'alice', password: PASSWORD }))).toBe('accepted');
      expect(await outcome(client.getAppContext({ username: 'bob', password: PASSWORD }))).toBe('verified membership_inactive');
      expect(await outcome(client.createLease({ username: 'bob', password: PASSWORD }))).toBe('verified membership_inactive');
    } finally {
      await close();
    }
  });

  it('x-api-username and x-api-password: app_context and /lease answered for the paying user are bad_signature', async () => {
    const { client, close } = await swapping({ 'x-api-username': 'alice', 'x-api-password': PASSWORD });
    try {
      expect(await outcome(client.getAppContext({ username: 'bob', password: PASSWORD }))).toBe('bad_signature');
      expect(await outcome(client.createLease({ username: 'bob', password: PASSWORD }))).toBe('bad_signature');
      const kept = await client.checkLease().then(() => 'a lease', (err: unknown) => (err instanceof TollgateLeaseError ? err.verdict : String(err)));
      expect(kept).toBe('no_lease');
    } finally {
      await close();
    }
  });

  it('a Bearer session token: bad_signature, /lease included', async () => {
    const { client, close } = await swapping({ authorization: `Bearer ${payingToken}` });
    client.auth = { sessionToken: 'tg_sess_of_the_free_user_000000000000' };
    try {
      expect(await outcome(client.getAppContext())).toBe('bad_signature');
      expect(await outcome(client.createLease())).toBe('bad_signature');
    } finally {
      await close();
    }
  });

  it('x-api-license-code: bad_signature, /lease included', async () => {
    const { client, close } = await swapping({ 'x-api-license-code': payingCode });
    try {
      expect(await outcome(client.getAppContext({ licenseCode: 'FREE-CODE-0000' }))).toBe('bad_signature');
      expect(await outcome(client.createLease({ licenseCode: 'FREE-CODE-0000' }))).toBe('bad_signature');
    } finally {
      await close();
    }
  });

  it("x-hardware-id: a lease made for the paying user's machine is bad_signature", async () => {
    const { client, close } = await swapping({ 'x-hardware-id': 'the-paying-users-machine' });
    try {
      expect(await outcome(client.createLease({ username: 'alice', password: PASSWORD }))).toBe('bad_signature');
    } finally {
      await close();
    }
  });
});
