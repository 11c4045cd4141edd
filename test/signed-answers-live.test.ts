/**
 * Signed answers on the wire and over time (docs/signing.md): the bytes a
 * real listening server sends verify, downloads and resumed downloads verify
 * once assembled, rotation needs no client update, a retired key never signs
 * again, an app without a usable key answers unsigned with a bounded warning,
 * and no private key reaches the logs.
 */
import { createHash, randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, harness, type Harness, type TestApp } from './helpers.js';
import { rotateKey, setUpKeys } from './signing-fixtures.js';
import { call, freshNonce, verifyAnswer, type Pin, type SentRequest } from './signing-test-verifier.js';

let h: Harness;
afterEach(async () => h?.close());

/** /app_context answers 200 without user authentication: the status is not what these tests look at. */
const anonymous = { anonymous_access_allowed: true };
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** One request over a real socket: the target goes on the request line as given, the answer's bytes as they arrived. */
function wire(port: number, target: string, headers: Record<string, string>): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method: 'GET', path: target, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

async function upload(app: TestApp, content: Buffer): Promise<{ id: string; sha256: string }> {
  const res = await h.inject({
    method: 'POST', url: `/admin/v1/apps/${app.id}/files?name=big.bin&mime_type=application/octet-stream`,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/octet-stream' }, payload: content,
  });
  if (res.statusCode !== 201) throw new Error(`upload: ${res.statusCode} ${res.body}`);
  return res.json();
}

describe('on the wire', () => {
  it('a listening server: /app_context, a full download and a resumed one (two ranges, assembled) all verify', async () => {
    h = await harness();
    const app = await h.createApp();
    const keys = await setUpKeys(h, app);
    const pin: Pin = { appId: app.id, rootPublicKey: keys.rootPublicKey };
    await h.activeUser(app, 'alice');
    const auth = { ...app.headers, authorization: `Bearer ${await h.login(app, 'alice')}` };
    const content = randomBytes(600_000);
    const file = await upload(app, content);
    await h.tollgate.server.listen({ port: 0, host: '127.0.0.1' });
    const port = (h.tollgate.server.server.address() as AddressInfo).port;

    const get = async (target: string, extra: Record<string, string> = {}, download = false) => {
      const req: SentRequest = { nonce: freshNonce(), method: 'GET', target, headers: { ...auth, ...extra } };
      const res = await wire(port, target, { ...auth, ...extra, 'tollgate-nonce': req.nonce });
      return { res, v: verifyAnswer(pin, req, { ...res, download }) };
    };

    // A credential header in UTF-8 (non-ASCII) with spaces around: hashed as the bytes sent, trimmed as the parser trims.
    const ctx = await get('/app_context?client=1', { 'x-hardware-id': ` ${Buffer.from('hw-ünï-1', 'utf8').toString('latin1')}\t` });
    expect(ctx.res.status).toBe(200);
    expect(ctx.v.verdict).toBe('ok');
    expect(ctx.v.kid).toBe(keys.kid);

    const full = await get(`/files/${file.id}/download`, {}, true);
    expect(full.res.status).toBe(200);
    expect(full.v.verdict).toBe('ok');
    expect(sha256(full.res.body)).toBe(full.v.fileSha256);

    // A resumed download: each part's signature is checked with its headers, the file hash once assembled.
    const first = await get(`/files/${file.id}/download`, { range: 'bytes=0-249999' }, true);
    const rest = await get(`/files/${file.id}/download`, { range: 'bytes=250000-', 'if-range': `"${file.sha256}"` }, true);
    expect([first.res.status, rest.res.status]).toEqual([206, 206]);
    expect([first.v.verdict, rest.v.verdict]).toEqual(['ok', 'ok']);
    expect(first.res.headers['content-range']).toBe('bytes 0-249999/600000');
    const assembled = Buffer.concat([first.res.body, rest.res.body]);
    expect(sha256(assembled)).toBe(rest.v.fileSha256);
    expect(assembled.equals(content)).toBe(true);

    // The range is signed: the same answer presented as another range does not verify.
    const req: SentRequest = { nonce: freshNonce(), method: 'GET', target: `/files/${file.id}/download`, headers: auth };
    const part = await wire(port, req.target, { ...auth, range: 'bytes=0-9', 'tollgate-nonce': req.nonce });
    expect(verifyAnswer(pin, req, { ...part, download: true }).verdict).toBe('ok');
    expect(verifyAnswer(pin, req, { ...part, headers: { ...part.headers, 'content-range': 'bytes 10-19/600000' }, download: true }).verdict).toBe('bad_signature');

    // An error of the download route signs its JSON body like any other answer.
    const unsatisfiable = await get(`/files/${file.id}/download`, { range: 'bytes=700000-' }, true);
    expect(unsatisfiable.res.status).toBe(416);
    expect(unsatisfiable.v.verdict).toBe('ok');
  });
});

describe('rotation and retirement', () => {
  it('after rotation the new kid signs and verifies against the same pinned root; a retired key never signs again', async () => {
    h = await harness();
    const app = await h.createApp(anonymous);
    const keys = await setUpKeys(h, app);
    const pin: Pin = { appId: app.id, rootPublicKey: keys.rootPublicKey };
    const send = () => call(h.inject, app.headers, 'GET', '/app_context');
    const before = await send();
    expect(verifyAnswer(pin, before.req, before.res)).toMatchObject({ verdict: 'ok', kid: keys.kid });

    h.clock.advance(1000);
    const kid2 = await rotateKey(h, app, keys.rootPrivateKey);
    const rotated = await send();
    const v = verifyAnswer(pin, rotated.req, rotated.res);
    expect(v).toMatchObject({ verdict: 'ok', kid: kid2 });

    // Retiring the newest key: the older one, still valid, signs again; the retired one never.
    expect((await h.admin('POST', `/apps/${app.id}/signing-keys/${kid2}/retire`)).statusCode).toBe(200);
    for (let i = 0; i < 3; i++) {
      h.clock.advance(60_000);
      const c = await send();
      expect(verifyAnswer(pin, c.req, c.res)).toMatchObject({ verdict: 'ok', kid: keys.kid });
    }
    // Both retired: nothing left to sign with, so unsigned.
    expect((await h.admin('POST', `/apps/${app.id}/signing-keys/${keys.kid}/retire`)).statusCode).toBe(200);
    const none = await send();
    expect(none.res.statusCode).toBe(200);
    expect(none.res.headers['tollgate-signature']).toBeUndefined();
  });

  it('an expired key does not sign', async () => {
    h = await harness();
    const app = await h.createApp(anonymous);
    await setUpKeys(h, app, { days: 1 });
    h.clock.advance(24 * 3600 * 1000 + 1);
    const c = await call(h.inject, app.headers, 'GET', '/app_context');
    expect(c.res.statusCode).toBe(200);
    expect(c.res.headers['tollgate-signature']).toBeUndefined();
  });
});

describe('logs', () => {
  function capture(): { stream: PassThrough; text: () => string; lines: () => { msg?: string; appId?: string }[] } {
    const stream = new PassThrough();
    const chunks: string[] = [];
    stream.on('data', (d: Buffer) => chunks.push(d.toString()));
    const text = () => chunks.join('');
    return { stream, text, lines: () => text().split('\n').filter(Boolean).map((l) => JSON.parse(l)) };
  }

  it('an app with no usable key answers unsigned and warns at most once per app per minute', async () => {
    const logs = capture();
    h = await harness({ env: { LOG_LEVEL: 'warn' }, logStream: logs.stream });
    const [a, b] = [await h.createApp(anonymous), await h.createApp(anonymous)];
    const warnings = (app: TestApp) => logs.lines().filter((l) => l.appId === app.id && /no usable signing key/.test(l.msg ?? '')).length;
    for (let i = 0; i < 5; i++) {
      const c = await call(h.inject, a.headers, 'GET', '/app_context');
      expect(c.res.statusCode).toBe(200);
      expect(c.res.headers['tollgate-signature']).toBeUndefined();
    }
    expect(warnings(a)).toBe(1);
    await call(h.inject, b.headers, 'GET', '/app_context');
    expect(warnings(b)).toBe(1);
    h.clock.advance(59_000);
    await call(h.inject, a.headers, 'GET', '/app_context');
    expect(warnings(a)).toBe(1);
    h.clock.advance(2_000);
    await call(h.inject, a.headers, 'GET', '/app_context');
    expect(warnings(a)).toBe(2);
  });

  it('a key that cannot be loaded: answers go out unsigned, and the error is logged at most once per app per minute', async () => {
    const logs = capture();
    h = await harness({ env: { LOG_LEVEL: 'warn' }, logStream: logs.stream });
    const app = await h.createApp(anonymous);
    await setUpKeys(h, app);
    // A private key the server cannot parse: every load of the app's key ring fails.
    await h.tollgate.services.store.db.run('UPDATE signing_keys SET private_key = ? WHERE app_id = ?', ['AAAA', app.id]);
    h.clock.advance(5_000); // past the key cache's TTL
    const errors = () => logs.lines().filter((l) => l.appId === app.id && /signing the answer failed/.test(l.msg ?? '')).length;
    for (let i = 0; i < 5; i++) {
      const c = await call(h.inject, app.headers, 'GET', '/app_context');
      expect(c.res.statusCode).toBe(200);
      expect(c.res.headers['tollgate-signature']).toBeUndefined();
    }
    expect(errors()).toBe(1);
    h.clock.advance(59_000);
    await call(h.inject, app.headers, 'GET', '/app_context');
    expect(errors()).toBe(1);
    h.clock.advance(2_000);
    await call(h.inject, app.headers, 'GET', '/app_context');
    expect(errors()).toBe(2);
  });

  it('at trace level, no private key of any signing key appears in the logs', async () => {
    const logs = capture();
    h = await harness({ env: { LOG_LEVEL: 'trace' }, logStream: logs.stream });
    const app = await h.createApp();
    const keys = await setUpKeys(h, app);
    await rotateKey(h, app, keys.rootPrivateKey);
    await h.activeUser(app, 'alice');
    const token = await h.login(app, 'alice');
    const records = await h.tollgate.services.store.signingKeys.all(app.id);
    const secrets = records.flatMap((r) => {
      const der = Buffer.from(r.privateKey!, 'base64');
      const seed = der.subarray(der.length - 32);
      return [r.privateKey!, der.toString('base64url'), der.toString('hex'), seed.toString('base64'), seed.toString('base64url'), seed.toString('hex')];
    });
    expect(secrets.length).toBe(12);
    for (const headers of [{ authorization: `Bearer ${token}` }, { authorization: 'Bearer wrong' }, {}] as Record<string, string>[]) await call(h.inject, app.headers, 'GET', '/app_context', { headers });
    await call(h.inject, app.headers, 'POST', '/sign_up', { body: '{"username":' });
    await h.admin('GET', `/apps/${app.id}/signing-keys`);
    await h.admin('POST', `/apps/${app.id}/signing-keys/${keys.kid}/retire`);
    const text = logs.text();
    expect(text.length).toBeGreaterThan(0);
    for (const secret of secrets) expect(text.includes(secret)).toBe(false);
  });
});
