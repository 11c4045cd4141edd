/**
 * docs/signing.md, "Signed answers": every client answer to a request with
 * Tollgate-Nonce is signed, 2xx and errors alike, and verifies with a
 * verifier written from the document (test/signing-test-verifier.ts) against
 * the pinned root only; the same answer checked against another request or
 * another app does not.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { expectError, harness, PASSWORD, type Harness, type TestApp } from './helpers.js';
import { setUpKeys } from './signing-fixtures.js';
import { call, verifyAnswer, type Pin, type SignedCall } from './signing-test-verifier.js';

let h: Harness;
let app: TestApp;
let pin: Pin;
let kid: string;
let token: string;
let aliceId: string;

beforeEach(async () => {
  h = await harness();
  app = await h.createApp();
  const keys = await setUpKeys(h, app);
  pin = { appId: app.id, rootPublicKey: keys.rootPublicKey };
  kid = keys.kid;
  aliceId = await h.activeUser(app, 'alice');
  token = await h.login(app, 'alice');
});
afterEach(async () => h.close());

const send = (method: string, target: string, opts: Parameters<typeof call>[4] = {}) => call(h.inject, app.headers, method, target, opts);
const bearer = () => ({ authorization: `Bearer ${token}` });

function expectVerified(c: SignedCall, status: number): void {
  expect(c.res.statusCode, String(c.res.rawPayload)).toBe(status);
  const v = verifyAnswer(pin, c.req, c.res);
  expect(v.verdict, String(c.res.rawPayload)).toBe('ok');
  expect(v.kid).toBe(kid);
  expect(v.t).toBe(h.clock.ms);
}

describe('signed answers verify against the pinned root', () => {
  it('200 GET /app_context, with the certificate of the signing key', async () => {
    const c = await send('GET', '/app_context', { headers: bearer() });
    expectVerified(c, 200);
    expect(c.res.headers['tollgate-signature']).toMatch(new RegExp(`^v1; kid=${kid}; t=\\d+; sig=[A-Za-z0-9_-]{86}$`));
    expect(JSON.parse(Buffer.from(String(c.res.headers['tollgate-key-cert']), 'base64url').toString()).kid).toBe(kid);
  });

  it('a query string is signed exactly as on the request line', async () => {
    expectVerified(await send('GET', '/app_context?b=2&a=%41', { headers: bearer() }), 200);
  });

  it('401 (a wrong Bearer token), 403 banned, 404 file_not_found', async () => {
    expectVerified(await send('GET', '/app_context', { headers: { authorization: 'Bearer nope' } }), 401);
    await h.ban(app, 'hardware_id', 'hw-banned');
    expectVerified(await send('GET', '/app_context', { headers: { ...bearer(), 'x-hardware-id': 'hw-banned' } }), 403);
    expectVerified(await send('GET', '/files/00000000-0000-4000-8000-000000000000/download', { headers: bearer(), download: true }), 404);
  });

  it('422: a bad shape, a body that is not JSON, and one that is not even UTF-8 (hashed as received, not as decoded)', async () => {
    expectVerified(await send('POST', '/sign_up', { body: '{"username":1,"password":2}' }), 422);
    expectVerified(await send('POST', '/sign_up', { body: '{"username":' }), 422);
    const notUtf8 = Buffer.from([0x7b, 0x22, 0x75, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0xc3, 0x22, 0x7d]); // {"u":"<ff fe c3>"}
    const c = await send('POST', '/sign_up', { body: notUtf8 });
    expectVerified(c, 422);
    // The decoded text (with U+FFFD) would hash differently: the signature is over the bytes.
    expect(verifyAnswer(pin, { ...c.req, body: notUtf8.toString('utf8') }, c.res).verdict).toBe('bad_signature');
  });

  it('200 sign_up and 200 login: bodies in, bodies out', async () => {
    expectVerified(await send('POST', '/sign_up', { body: JSON.stringify({ username: 'bob', password: PASSWORD }) }), 200);
    expectVerified(await send('POST', '/auth/login', { body: JSON.stringify({ credentials: { username: 'alice', password: PASSWORD } }) }), 200);
  });

  it('a 413 is signed over the empty request-body hash: the body over the limit was never read', async () => {
    const c = await send('POST', '/sign_up', { body: 'x'.repeat(70 * 1024) });
    expect(c.res.statusCode).toBe(413);
    expect(verifyAnswer(pin, { ...c.req, body: '' }, c.res).verdict).toBe('ok');
  });

  it('HEAD is signed over the empty body it answers with', async () => {
    const c = await send('HEAD', '/app_context', { headers: bearer() });
    expect(c.res.rawPayload.length).toBe(0);
    expectVerified(c, 200);
  });
});

describe('429 with RATE_LIMIT on', () => {
  it('the refusal of step 2 is signed', async () => {
    await h.close();
    h = await harness({ env: { RATE_LIMIT: 'on' } });
    app = await h.createApp();
    pin = { appId: app.id, rootPublicKey: (await setUpKeys(h, app).then((k) => ((kid = k.kid), k))).rootPublicKey };
    expect((await h.admin('PATCH', `/apps/${app.id}`, { rate_signups_per_ip: 1 })).statusCode).toBe(200);
    expectVerified(await send('POST', '/sign_up', { body: JSON.stringify({ username: 'first', password: PASSWORD }) }), 200);
    const c = await send('POST', '/sign_up', { body: JSON.stringify({ username: 'second', password: PASSWORD }) });
    expectVerified(c, 429);
    expect(c.res.headers['retry-after']).toBeDefined();
  });
});

describe('an answer checked against anything else does not verify', () => {
  it('another nonce, method, target, request body, app, status or body: bad_signature or wrong_app', async () => {
    const c = await send('POST', '/auth/login', { body: JSON.stringify({ credentials: { username: 'alice', password: PASSWORD } }) });
    expectVerified(c, 200);
    const other = await h.createApp();
    const cases: [string, Pin, SignedCall['req'], SignedCall['res'], string][] = [
      ['an old nonce (a replay)', pin, { ...c.req, nonce: 'another-nonce-0123456789' }, c.res, 'bad_signature'],
      ['another method', pin, { ...c.req, method: 'PUT' }, c.res, 'bad_signature'],
      ['another path', pin, { ...c.req, target: '/sign_up' }, c.res, 'bad_signature'],
      ['another query', pin, { ...c.req, target: '/auth/login?x=1' }, c.res, 'bad_signature'],
      ['another request body', pin, { ...c.req, body: JSON.stringify({ credentials: { username: 'mallory', password: PASSWORD } }) }, c.res, 'bad_signature'],
      ['another app', { ...pin, appId: other.id }, c.req, c.res, 'wrong_app'],
      ['another status', pin, c.req, { ...c.res, status: 201 }, 'bad_signature'],
      ['another body', pin, c.req, { ...c.res, body: Buffer.concat([c.res.rawPayload, Buffer.from(' ')]) }, 'bad_signature'],
      ['another root (an emulator)', { ...pin, rootPublicKey: Buffer.alloc(32, 7).toString('base64url') }, c.req, c.res, 'bad_certificate'],
    ];
    for (const [what, p, req, res, verdict] of cases) expect(verifyAnswer(p, req, res).verdict, what).toBe(verdict);
  });

  it('a retired kid the client has learned is refused', async () => {
    const c = await send('GET', '/app_context', { headers: bearer() });
    expect(verifyAnswer({ ...pin, retired: new Set([kid]) }, c.req, c.res).verdict).toBe('key_retired');
  });
});

describe("the user's credentials are signed (a proxy swapping them is caught)", () => {
  const legacy = (username: string) => ({ 'x-api-username': username, 'x-api-password': PASSWORD });

  /** The paying user's answer, checked as the answer to the free user's request a proxy rewrote. */
  function swapped(paying: SignedCall, free: Record<string, string>): string {
    return verifyAnswer(pin, { ...paying.req, headers: { ...app.headers, ...free } }, paying.res).verdict;
  }

  it('x-api-username/x-api-password, Bearer, x-api-license-code and x-hardware-id: the answer for other credentials is bad_signature', async () => {
    await h.activeUser(app, 'bob');
    const bobToken = await h.login(app, 'bob');
    const { code } = await h.license(app);
    expect((await h.client(app, 'POST', '/sign_up_with_license_code', { code })).statusCode).toBe(200);
    const { code: otherCode } = await h.license(app);

    const byPassword = await send('GET', '/app_context', { headers: legacy('alice') });
    expectVerified(byPassword, 200);
    expect(byPassword.res.json().user.membership.is_active).toBe(true);
    expect(swapped(byPassword, legacy('bob'))).toBe('bad_signature');

    const byBearer = await send('GET', '/app_context', { headers: bearer() });
    expectVerified(byBearer, 200);
    expect(swapped(byBearer, { authorization: `Bearer ${bobToken}` })).toBe('bad_signature');
    expect(swapped(byBearer, {})).toBe('bad_signature'); // credentials removed
    expect(verifyAnswer(pin, { ...byBearer.req, headers: { ...byBearer.req.headers, authorization: ` Bearer ${token}\t` } }, byBearer.res).verdict, 'spaces around are not hashed').toBe('ok');

    const byLicense = await send('GET', '/app_context', { headers: { 'x-api-license-code': code } });
    expectVerified(byLicense, 200);
    expect(swapped(byLicense, { 'x-api-license-code': otherCode })).toBe('bad_signature');

    const withDevice = await send('GET', '/app_context', { headers: { ...bearer(), 'x-hardware-id': 'hw-paying' } });
    expectVerified(withDevice, 200);
    expect(swapped(withDevice, { ...bearer(), 'x-hardware-id': 'hw-free' })).toBe('bad_signature');
  });

  it("POST /lease: a lease answer for the paying user's credentials or another machine is bad_signature", async () => {
    expect((await h.admin('PATCH', `/apps/${app.id}`, { offline_grace_seconds: 3600 })).statusCode).toBe(200);
    await h.signUp(app, 'bob');
    const lease = await send('POST', '/lease', { headers: { ...legacy('alice'), 'x-hardware-id': 'hw-1' } });
    expectVerified(lease, 200);
    expect(swapped(lease, { ...legacy('bob'), 'x-hardware-id': 'hw-1' })).toBe('bad_signature');
    expect(swapped(lease, { ...legacy('alice'), 'x-hardware-id': 'hw-2' })).toBe('bad_signature');
  });

  it('a repeated signature or certificate header is refused, never picked from', async () => {
    const c = await send('GET', '/app_context', { headers: bearer() });
    const sig = String(c.res.headers['tollgate-signature']);
    const cert = String(c.res.headers['tollgate-key-cert']);
    expect(verifyAnswer(pin, c.req, { ...c.res, headers: { ...c.res.headers, 'tollgate-signature': [sig, sig] } }).verdict).toBe('malformed_signature');
    expect(verifyAnswer(pin, c.req, { ...c.res, headers: { ...c.res.headers, 'tollgate-key-cert': [cert, cert] } }).verdict).toBe('bad_certificate');
  });
});

describe('the nonce', () => {
  it('no nonce: no signature headers, the answer as before', async () => {
    const signed = await send('GET', '/app_context', { headers: bearer() });
    const c = await send('GET', '/app_context', { headers: bearer(), nonce: null });
    expect(c.res.statusCode).toBe(200);
    expect(c.res.headers['tollgate-signature']).toBeUndefined();
    expect(c.res.headers['tollgate-key-cert']).toBeUndefined();
    expect(c.res.rawPayload.equals(signed.res.rawPayload)).toBe(true);
    expect(verifyAnswer(pin, c.req, c.res).verdict).toBe('missing_signature');
  });

  it.each([
    ['too short', 'abcdefghijklmno'],
    ['too long', 'a'.repeat(65)],
    ['a character outside base64url', 'abcdefghijklmnop='],
    ['two nonces', 'abcdefghijklmnop, qrstuvwxyzabcdef'],
  ])('a malformed nonce (%s) is 422 naming header.tollgate-nonce, unsigned', async (_what, nonce) => {
    const c = await send('GET', '/app_context', { headers: bearer(), nonce });
    const body = expectError(c.res as never, 422, 'validation_error');
    expect(body.errors?.[0]?.field).toBe('header.tollgate-nonce');
    expect(c.res.headers['tollgate-signature']).toBeUndefined();
  });

  it('signatures: required: no nonce is 422 nonce_required before the request is looked at; with one, signed as usual', async () => {
    expect((await h.admin('PATCH', `/apps/${app.id}`, { signatures: 'required' })).statusCode).toBe(200);
    // A sign-up without a nonce: refused at step 1's end, nothing created.
    const c = await send('POST', '/sign_up', { body: JSON.stringify({ username: 'carol', password: PASSWORD }), nonce: null });
    const body = expectError(c.res as never, 422, 'nonce_required');
    expect(body.errors?.[0]?.field).toBe('header.tollgate-nonce');
    expect(c.res.headers['tollgate-signature']).toBeUndefined();
    expect(await h.tollgate.services.store.users.findByUsernameKey(app.id, 'carol')).toBeFalsy();
    expectVerified(await send('POST', '/sign_up', { body: JSON.stringify({ username: 'carol', password: PASSWORD }) }), 200);
  });
});

describe('browsers (an SDK in an Electron renderer)', () => {
  it('with CORS on, a preflight allows Tollgate-Nonce and a signed answer exposes its signature headers', async () => {
    await h.close();
    const origin = 'https://app.example';
    h = await harness({ env: { CORS_ORIGINS: origin } });
    app = await h.createApp({ anonymous_access_allowed: true });
    const keys = await setUpKeys(h, app);
    pin = { appId: app.id, rootPublicKey: keys.rootPublicKey };
    kid = keys.kid;
    const preflight = await h.inject({ method: 'OPTIONS', url: '/app_context', headers: { origin, 'access-control-request-method': 'GET', 'access-control-request-headers': 'tollgate-nonce' } });
    expect(preflight.statusCode).toBe(204);
    expect(String(preflight.headers['access-control-allow-headers'])).toContain('tollgate-nonce');
    const c = await send('GET', '/app_context', { headers: { origin } });
    expectVerified(c, 200);
    expect(String(c.res.headers['access-control-expose-headers'])).toMatch(/tollgate-signature.*tollgate-key-cert/);
  });
});

describe("a signed banned answer carries the operator's ban_reason (issue 27); an unsigned one keeps the seed's bytes", () => {
  const appContext = (nonce?: null) => send('GET', '/app_context', { headers: bearer(), ...(nonce === null && { nonce }) });

  it('a user ban with a reason: signed answer carries it (and verifies), unsigned answer is exactly {detail, code}', async () => {
    await h.ban(app, 'user', aliceId, { reason: 'Chargeback on order 1234' });
    const signed = await appContext();
    expectVerified(signed, 403);
    expect(signed.res.json()).toEqual({ detail: 'This user is banned', code: 'banned', ban_reason: 'Chargeback on order 1234', user_id: aliceId });
    const unsigned = await appContext(null);
    expect(unsigned.res.statusCode).toBe(403);
    expect(unsigned.res.headers['tollgate-signature']).toBeUndefined();
    expect(String(unsigned.res.rawPayload)).toBe('{"detail":"This user is banned","code":"banned"}');
  });

  it('ip, hardware id and license bans carry their own reason; a ban without a reason carries no field', async () => {
    const ipBan = await h.ban(app, 'ip', '127.0.0.1', { reason: 'abuse from this address' });
    const c = await appContext();
    expectVerified(c, 403);
    expect(c.res.json()).toEqual({ detail: 'Your IP address is banned', code: 'banned', ban_reason: 'abuse from this address' });
    expect((await h.admin('DELETE', `/apps/${app.id}/bans/${ipBan}`)).statusCode).toBe(204);

    await h.ban(app, 'hardware_id', 'hw-1', { reason: 'stolen device' });
    const hw = await send('GET', '/app_context', { headers: { ...bearer(), 'x-hardware-id': 'hw-1' } });
    expectVerified(hw, 403);
    expect(hw.res.json()).toEqual({ detail: 'This device is banned', code: 'banned', ban_reason: 'stolen device' });

    await h.ban(app, 'hardware_id', 'hw-2');
    const noReason = await send('GET', '/app_context', { headers: { ...bearer(), 'x-hardware-id': 'hw-2' } });
    expectVerified(noReason, 403);
    expect(noReason.res.json()).toEqual({ detail: 'This device is banned', code: 'banned' });

    const { code } = await h.license(app);
    await h.ban(app, 'license', code, { reason: 'refunded' });
    const signUp = await send('POST', '/sign_up_with_license_code', { body: JSON.stringify({ code }) });
    expectVerified(signUp, signUp.res.statusCode);
    expect(signUp.res.json()).toMatchObject({ code: 'banned', ban_reason: 'refunded' });
  });
});

describe('a signed refusal about an identified user names that user (issue 21.2: an SDK drops only its lease); unsigned ones keep the seed\'s bytes', () => {
  it('membership_inactive: signed carries user_id, unsigned is exactly {detail, code}', async () => {
    const bob = await h.signUp(app, 'bob');
    const headers = { 'x-api-username': 'bob', 'x-api-password': PASSWORD };
    const signed = await send('GET', '/app_context', { headers });
    expectVerified(signed, 403);
    expect(signed.res.json()).toEqual({ detail: 'The membership is not active', code: 'membership_inactive', user_id: bob });
    const unsigned = await send('GET', '/app_context', { headers, nonce: null });
    expect(String(unsigned.res.rawPayload)).toBe('{"detail":"The membership is not active","code":"membership_inactive"}');
  });

  it('a device lock names the user; a refusal that identified nobody (wrong password, an IP ban) names none', async () => {
    expect((await h.admin('PATCH', `/apps/${app.id}`, { device_auth_enabled: true, max_devices_per_user: 1 })).statusCode).toBe(200);
    const carol = await h.activeUser(app, 'carol', PASSWORD, 'hw-a');
    const other = await send('GET', '/app_context', { headers: { 'x-api-username': 'carol', 'x-api-password': PASSWORD, 'x-hardware-id': 'hw-b' } });
    expectVerified(other, 401);
    expect(other.res.json()).toMatchObject({ code: 'device_mismatch', user_id: carol });

    const wrong = await send('GET', '/app_context', { headers: { 'x-api-username': 'carol', 'x-api-password': 'not the password', 'x-hardware-id': 'hw-a' } });
    expectVerified(wrong, 401);
    expect(wrong.res.json()).toEqual({ detail: 'Invalid credentials', code: 'invalid_credentials' });

    await h.ban(app, 'ip', '127.0.0.1');
    const ip = await send('GET', '/app_context', { headers: bearer() });
    expectVerified(ip, 403);
    expect(ip.res.json()).toEqual({ detail: 'Your IP address is banned', code: 'banned' });
  });
});

describe('an answer that asked to be signed but goes out unsigned carries only the seed\'s fields (the reviewer\'s finding)', () => {
  it('an app with no signing key: a ban with a reason and a membership refusal are exactly {detail, code}, with no ban_reason or user_id', async () => {
    const bare = await h.createApp();
    const userId = await h.activeUser(bare, 'dave');
    await h.ban(bare, 'user', userId, { reason: 'Chargeback on order 99' });
    const nonce = 'AAAAAAAAAAAAAAAAAAAAAA';
    const banned = await h.inject({ method: 'GET', url: '/app_context', headers: { ...bare.headers, 'x-api-username': 'dave', 'x-api-password': PASSWORD, 'tollgate-nonce': nonce } });
    expect(banned.statusCode).toBe(403);
    expect(banned.headers['tollgate-signature']).toBeUndefined();
    expect(banned.body).toBe('{"detail":"This user is banned","code":"banned"}');
    expect(Number(banned.headers['content-length'])).toBe(Buffer.byteLength(banned.body));
    await h.signUp(bare, 'erin');
    const inactive = await h.inject({ method: 'GET', url: '/app_context', headers: { ...bare.headers, 'x-api-username': 'erin', 'x-api-password': PASSWORD, 'tollgate-nonce': nonce } });
    expect(inactive.statusCode).toBe(403);
    expect(inactive.headers['tollgate-signature']).toBeUndefined();
    expect(inactive.body).toBe('{"detail":"The membership is not active","code":"membership_inactive"}');
  });
});
