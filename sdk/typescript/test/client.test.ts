/**
 * Every typed call against the real server: answers verified and parsed,
 * verified errors thrown as TollgateError with the stable code, unsigned
 * answers refused, a fresh nonce on every call, a resumed download.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TollgateError, TollgateVerificationError } from '../src/index.js';
import { ADMIN_TOKEN, PASSWORD, proxy, startServer, type Server, type TestApp } from './server.js';

let server: Server;
let app: TestApp;
const dir = mkdtempSync(join(tmpdir(), 'tollgate-sdk-dl-'));
const FILE = Buffer.from(Array.from({ length: 5000 }, (_, i) => `line ${i} of the game data\n`).join(''));
let fileId: string;

beforeAll(async () => {
  server = await startServer();
  app = await server.app();
  await server.admin('PUT', `/apps/${app.id}/variables/latest_version`, { value: '2.4.1' });
  const res = await fetch(`${server.url}/admin/v1/apps/${app.id}/files?name=game.pak&mime_type=application/octet-stream`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/octet-stream' },
    body: FILE,
  });
  fileId = ((await res.json()) as { id: string }).id;
});
afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const rejection = async (p: Promise<unknown>) => p.then(() => expect.fail('expected a rejection'), (err: unknown) => err);

describe('typed calls on the real server', () => {
  it('sign up, activate a license, log in, read the context and a variable, log out', async () => {
    const sut = server.client(app);
    const user = await sut.signUp({ username: 'alice', password: PASSWORD });
    expect(user).toMatchObject({ username: 'alice', membership: { is_active: false } });
    const { licenses } = (await server.admin('POST', `/apps/${app.id}/licenses`, { count: 1, minutes: 60 })).body;
    const activation = await sut.activateLicense({ code: licenses[0].code, username: 'alice', password: PASSWORD });
    expect(activation.minutes).toBe(60);
    const session = await sut.login({ credentials: { username: 'alice', password: PASSWORD } });
    expect(sut.auth).toEqual({ sessionToken: session.session_token });
    const context = await sut.getAppContext();
    expect(context.user?.membership.is_active).toBe(true);
    expect(context.application.variables.find((v) => v.name === 'latest_version')?.value).toBe('2.4.1');
    await sut.logout();
    expect(sut.auth).toBeNull();
    const err = await rejection(sut.getAppContext({ sessionToken: session.session_token }));
    expect(err).toBeInstanceOf(TollgateError);
    expect(err).toMatchObject({ status: 401 });
  });

  it('redeem(): the user redeems a code (POST /redeem) before any membership, then by session; a used code is a verified 401', async () => {
    const sut = server.client(app);
    await sut.signUp({ username: 'redeemer', password: PASSWORD });
    // No membership yet, so no login: the password headers (redeeming needs no live membership, as activating).
    sut.auth = { username: 'redeemer', password: PASSWORD };
    const { licenses } = (await server.admin('POST', `/apps/${app.id}/licenses`, { count: 1, minutes: 45 })).body;
    const answer = await sut.redeem(licenses[0].code);
    expect(answer.activation).toMatchObject({ minutes: 45, type: 'license', license_id: licenses[0].id });
    expect(answer.user).toMatchObject({ username: 'redeemer', membership: { is_active: true } });
    expect((await sut.getAppContext()).user?.membership).toEqual(answer.user.membership);
    await sut.login({ credentials: { username: 'redeemer', password: PASSWORD } });
    const err = await rejection(sut.redeem(licenses[0].code));
    expect(err).toBeInstanceOf(TollgateError);
    expect(err).toMatchObject({ status: 401, code: 'license_used' });
  });

  it('redeems a license code alone and uses it as the credential', async () => {
    const sut = server.client(app);
    const { licenses } = (await server.admin('POST', `/apps/${app.id}/licenses`, { count: 1, minutes: 60 })).body;
    const user = await sut.signUpWithLicenseCode({ code: licenses[0].code });
    expect(user.membership.is_active).toBe(true);
    const context = await sut.getAppContext({ licenseCode: licenses[0].code });
    expect(context.user?.id).toBe(user.id);
  });

  it('a verified error is a TollgateError with its status, stable code and field errors', async () => {
    const sut = server.client(app);
    const err = (await rejection(sut.login({ credentials: { username: 'nobody', password: 'wrong password' } }))) as TollgateError;
    expect(err).toBeInstanceOf(TollgateError);
    expect([err.status, err.code]).toEqual([401, 'invalid_credentials']);
    const invalid = (await rejection(sut.signUp({ username: 'x', password: PASSWORD }))) as TollgateError;
    expect([invalid.status, invalid.code]).toEqual([422, 'validation_error']);
    expect(invalid.fieldErrors?.[0]?.field).toMatch(/^body\.username/);
  });

  it('an unsigned answer (wrong application secret: the app is not known) is refused as missing_signature', async () => {
    const sut = server.client({ ...app, apiSecret: 'not-the-secret' });
    const err = (await rejection(sut.getAppContext({ licenseCode: 'X' }))) as TollgateVerificationError;
    expect(err).toBeInstanceOf(TollgateVerificationError);
    expect([err.verdict, err.unverifiedStatus]).toEqual(['missing_signature', 401]);
  });

  it('sends a fresh nonce on every call, and the key list names the current kid', async () => {
    const nonces: string[] = [];
    const mitm = await proxy(server.url, async (req, forward) => {
      nonces.push(String(req.headers['tollgate-nonce']));
      return forward();
    });
    try {
      const sut = server.client(app, { baseUrl: mitm.url });
      const keys = await sut.getSigningKeys();
      expect(keys.keys.map((k) => k.kid)).toContain(app.kid);
      await sut.getAppContext(null).catch(() => undefined);
      await sut.getAppContext(null).catch(() => undefined);
      expect(nonces.length).toBeGreaterThanOrEqual(3);
      expect(new Set(nonces).size).toBe(nonces.length);
      for (const n of nonces) expect(n).toMatch(/^[A-Za-z0-9_-]{16,64}$/);
    } finally {
      await mitm.close();
    }
  });
});

describe('downloads', () => {
  const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

  it('downloads a whole file, verified against the signed hash', async () => {
    await server.activeUser(app, 'dl-whole');
    const sut = server.client(app);
    await sut.login({ credentials: { username: 'dl-whole', password: PASSWORD } });
    const dest = join(dir, 'whole.pak');
    const result = await sut.downloadFile(fileId, dest);
    expect(readFileSync(dest).equals(FILE)).toBe(true);
    expect(result).toMatchObject({ size: FILE.length, sha256: sha(FILE), resumed: false });
    expect(existsSync(`${dest}.part`)).toBe(false);
  });

  it('resumes an interrupted download with Range and If-Range, and checks the assembled file', async () => {
    await server.activeUser(app, 'dl-resume');
    const sut = server.client(app);
    await sut.login({ credentials: { username: 'dl-resume', password: PASSWORD } });
    const dest = join(dir, 'resumed.pak');
    // What an interrupted first attempt leaves: the first bytes and the ETag they came with.
    writeFileSync(`${dest}.part`, FILE.subarray(0, 1234));
    writeFileSync(`${dest}.part.json`, JSON.stringify({ etag: `"${sha(FILE)}"` }));
    const ranges: string[] = [];
    const mitm = await proxy(server.url, async (req, forward) => {
      if (req.path.includes('/download')) ranges.push(String(req.headers.range));
      return forward();
    });
    try {
      const result = await server.client(app, { baseUrl: mitm.url }).downloadFile(fileId, dest, { auth: sut.auth });
      expect(ranges).toEqual(['bytes=1234-']);
      expect(result).toMatchObject({ resumed: true, sha256: sha(FILE) });
      expect(readFileSync(dest).equals(FILE)).toBe(true);
    } finally {
      await mitm.close();
    }
  });

  it('refuses a resumed file whose earlier bytes were wrong, and keeps nothing', async () => {
    await server.activeUser(app, 'dl-bad');
    const sut = server.client(app);
    await sut.login({ credentials: { username: 'dl-bad', password: PASSWORD } });
    const dest = join(dir, 'bad.pak');
    writeFileSync(`${dest}.part`, Buffer.alloc(1000, 0x41));
    writeFileSync(`${dest}.part.json`, JSON.stringify({ etag: `"${sha(FILE)}"` }));
    const err = (await rejection(sut.downloadFile(fileId, dest))) as TollgateVerificationError;
    expect(err.verdict).toBe('bad_signature');
    expect([existsSync(dest), existsSync(`${dest}.part`)]).toEqual([false, false]);
  });
});
