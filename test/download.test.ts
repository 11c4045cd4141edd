import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { ADMIN_TOKEN, PASSWORD, errorOf, harness, type Harness, type TestApp, expectError } from './helpers.js';

let h: Harness;
beforeEach(async () => {
  h = await harness();
});
afterEach(async () => h.close());

const CHUNK = 256 * 1024;
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const legacy = (username: string, password = PASSWORD) => ({ 'x-api-username': username, 'x-api-password': password });
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

interface Uploaded {
  id: string;
  name: string;
  size: number;
  sha256: string;
}

async function upload(app: TestApp, name: string, content: Buffer, mimeType = 'application/octet-stream'): Promise<Uploaded> {
  const qs = new URLSearchParams({ name, mime_type: mimeType, is_encrypted: 'false' });
  const res = await h.inject({
    method: 'POST',
    url: `/admin/v1/apps/${app.id}/files?${qs}`,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/octet-stream' },
    payload: content,
  });
  if (res.statusCode !== 201) throw new Error(`upload: ${res.statusCode} ${res.body}`);
  return res.json();
}

function download(app: TestApp, fileId: string, headers: Record<string, string> = {}, remoteAddress?: string): Promise<LightMyRequestResponse> {
  return h.inject({ method: 'GET', url: `/files/${fileId}/download`, headers: { ...app.headers, ...headers }, ...(remoteAddress !== undefined && { remoteAddress }) });
}

/** An app with an active user "alice" (token) and a ~700 KB random file spanning three chunks. */
async function setup(settings: Parameters<Harness['createApp']>[0] = {}) {
  const app = await h.createApp(settings);
  const content = randomBytes(700_000);
  const file = await upload(app, 'big file.bin', content);
  const userId = await h.activeUser(app, 'alice');
  const token = await h.login(app, 'alice');
  return { app, content, file, userId, token, auth: bearer(token) };
}

describe('GET /files/{file_id}/download, full content', () => {
  it('SPEC 4.6: the bytes equal the upload (700 KB across several 256 KiB chunks), with the download headers', async () => {
    const { app, content, file, auth } = await setup();
    expect(file.size).toBe(700_000);
    expect(file.sha256).toBe(sha256(content));

    const res = await download(app, file.id, auth);
    expect(res.statusCode).toBe(200);
    expect(res.rawPayload.length).toBe(content.length);
    expect(res.rawPayload.equals(content)).toBe(true);
    expect(res.headers['content-type']).toBe('application/octet-stream');
    expect(res.headers['content-length']).toBe('700000');
    expect(res.headers['content-disposition']).toMatch(/^attachment;/);
    expect(res.headers['content-disposition']).toContain('filename="big file.bin"');
    expect(res.headers['etag']).toBe(`"${sha256(content)}"`);
    expect(res.headers['accept-ranges']).toBe('bytes');
    expect(res.headers['content-range']).toBeUndefined();
  });

  it('DECISIONS: a non-ASCII file name is given exactly in filename* (RFC 8187) with an ASCII fallback', async () => {
    const app = await h.createApp({ anonymous_access_allowed: true });
    const file = await upload(app, 'résumé.pdf', Buffer.from('pdf'));
    const res = await download(app, file.id);
    expect(res.statusCode).toBe(200);
    const cd = res.headers['content-disposition'] as string;
    expect(cd).toMatch(/^attachment;/);
    expect(cd).toContain("filename*=UTF-8''r%C3%A9sum%C3%A9.pdf");
    expect(cd).toMatch(/filename="[\x20-\x7e]*"/);
  });

  it('SPEC 4.6: the content type is application/octet-stream whatever the file mime_type', async () => {
    const app = await h.createApp({ anonymous_access_allowed: true });
    const file = await upload(app, 'notes.txt', Buffer.from('hello'), 'text/plain');
    const res = await download(app, file.id);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/octet-stream');
    expect(res.body).toBe('hello');
  });

  it('SPEC 4.6: an empty (0-byte) file downloads with content-length 0', async () => {
    const app = await h.createApp({ anonymous_access_allowed: true });
    const file = await upload(app, 'empty.bin', Buffer.alloc(0));
    expect(file.size).toBe(0);
    const res = await download(app, file.id);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-length']).toBe('0');
    expect(res.rawPayload.length).toBe(0);
    expect(res.headers['etag']).toBe(`"${sha256(Buffer.alloc(0))}"`);
  });

  it('SPEC 4.6: a file of exactly one chunk downloads intact', async () => {
    const app = await h.createApp({ anonymous_access_allowed: true });
    const content = randomBytes(CHUNK);
    const file = await upload(app, 'one.bin', content);
    const res = await download(app, file.id);
    expect(res.statusCode).toBe(200);
    expect(res.rawPayload.equals(content)).toBe(true);
  });
});

describe('GET /files/{file_id}/download, byte ranges', () => {
  it('DECISIONS: Range bytes=100-199 → 206 with the exact bytes and Content-Range', async () => {
    const { app, content, file, auth } = await setup();
    const res = await download(app, file.id, { ...auth, range: 'bytes=100-199' });
    expect(res.statusCode).toBe(206);
    expect(res.rawPayload.equals(content.subarray(100, 200))).toBe(true);
    expect(res.headers['content-range']).toBe('bytes 100-199/700000');
    expect(res.headers['content-length']).toBe('100');
    expect(res.headers['etag']).toBe(`"${file.sha256}"`);
  });

  it('DECISIONS: a range crossing a chunk boundary (262100-262200) returns the exact bytes', async () => {
    const { app, content, file, auth } = await setup();
    const res = await download(app, file.id, { ...auth, range: 'bytes=262100-262200' });
    expect(res.statusCode).toBe(206);
    expect(res.rawPayload.length).toBe(101);
    expect(res.rawPayload.equals(content.subarray(262100, 262201))).toBe(true);
    expect(res.headers['content-range']).toBe('bytes 262100-262200/700000');
  });

  it('DECISIONS: a range spanning a whole middle chunk returns the exact bytes', async () => {
    const { app, content, file, auth } = await setup();
    const res = await download(app, file.id, { ...auth, range: `bytes=${CHUNK - 5}-${2 * CHUNK + 4}` });
    expect(res.statusCode).toBe(206);
    expect(res.rawPayload.equals(content.subarray(CHUNK - 5, 2 * CHUNK + 5))).toBe(true);
  });

  it('DECISIONS: a suffix range bytes=-10 returns the last 10 bytes', async () => {
    const { app, content, file, auth } = await setup();
    const res = await download(app, file.id, { ...auth, range: 'bytes=-10' });
    expect(res.statusCode).toBe(206);
    expect(res.rawPayload.equals(content.subarray(700_000 - 10))).toBe(true);
    expect(res.headers['content-range']).toBe('bytes 699990-699999/700000');
    expect(res.headers['content-length']).toBe('10');
  });

  it('DECISIONS: an open range bytes=N- returns everything from N (resume)', async () => {
    const { app, content, file, auth } = await setup();
    const res = await download(app, file.id, { ...auth, range: 'bytes=500000-' });
    expect(res.statusCode).toBe(206);
    expect(res.rawPayload.equals(content.subarray(500_000))).toBe(true);
    expect(res.headers['content-range']).toBe('bytes 500000-699999/700000');
    expect(res.headers['content-length']).toBe('200000');
  });

  it('DECISIONS: a range ending past the end is clamped to the last byte', async () => {
    const { app, content, file, auth } = await setup();
    const res = await download(app, file.id, { ...auth, range: 'bytes=699000-999999' });
    expect(res.statusCode).toBe(206);
    expect(res.rawPayload.equals(content.subarray(699_000))).toBe(true);
    expect(res.headers['content-range']).toBe('bytes 699000-699999/700000');
  });

  it('DECISIONS: an unsatisfiable range → 416 with Content-Range bytes */size and a JSON error', async () => {
    const { app, file, auth } = await setup();
    const res = await download(app, file.id, { ...auth, range: 'bytes=700000-' });
    expect(res.statusCode).toBe(416);
    expect(res.headers['content-range']).toBe('bytes */700000');
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(errorOf(res).code).toBeTruthy();
  });

  it('DECISIONS: If-Range with a wrong ETag → 200 and the full content', async () => {
    const { app, content, file, auth } = await setup();
    const res = await download(app, file.id, { ...auth, range: 'bytes=100-199', 'if-range': `"${'0'.repeat(64)}"` });
    expect(res.statusCode).toBe(200);
    expect(res.rawPayload.equals(content)).toBe(true);
    expect(res.headers['content-range']).toBeUndefined();
    expect(res.headers['content-length']).toBe('700000');
  });

  it('DECISIONS: If-Range with the current ETag honours the range (206)', async () => {
    const { app, content, file, auth } = await setup();
    const res = await download(app, file.id, { ...auth, range: 'bytes=100-199', 'if-range': `"${file.sha256}"` });
    expect(res.statusCode).toBe(206);
    expect(res.rawPayload.equals(content.subarray(100, 200))).toBe(true);
  });

  it('DECISIONS: a byte range of a 0-byte file is unsatisfiable (416 bytes */0)', async () => {
    const app = await h.createApp({ anonymous_access_allowed: true });
    const file = await upload(app, 'empty.bin', Buffer.alloc(0));
    const res = await download(app, file.id, { range: 'bytes=0-' });
    expect(res.statusCode).toBe(416);
    expect(res.headers['content-range']).toBe('bytes */0');
  });
});

describe('GET /files/{file_id}/download, lookup', () => {
  it('SPEC 4.6: 404 file_not_found for an unknown file id', async () => {
    const { app, auth } = await setup();
    expectError(await download(app, randomUUID(), auth), 404, 'file_not_found');
  });

  it('DECISIONS: a file of app B requested through app A → 404 file_not_found', async () => {
    const { app: appA, auth } = await setup();
    const appB = await h.createApp({ name: 'B', anonymous_access_allowed: true });
    const fileB = await upload(appB, 'b.bin', Buffer.from('secret of B'));
    expectError(await download(appA, fileB.id, auth), 404, 'file_not_found');
    expect((await download(appB, fileB.id)).body).toBe('secret of B');
  });

  it('DECISIONS: a deleted file → 404 file_not_found', async () => {
    const { app, file, auth } = await setup();
    expect((await h.admin('DELETE', `/apps/${app.id}/files/${file.id}`)).statusCode).toBe(204);
    expectError(await download(app, file.id, auth), 404, 'file_not_found');
  });

  it('SPEC 4.6: a file id that is not a UUID → 422 validation_error', async () => {
    const { app, auth } = await setup();
    const res = await download(app, 'not-a-uuid', auth);
    expect(res.statusCode).toBe(422);
    expect(errorOf(res).code).toBe('validation_error');
  });

  it('DECISIONS: authentication comes before the file lookup (unknown file, no user → 401, not 404)', async () => {
    const app = await h.createApp();
    expectError(await download(app, randomUUID()), 401, 'anonymous_not_allowed');
  });
});

describe('GET /files/{file_id}/download, access', () => {
  it('SPEC 4.6: 401 when no user is authenticated and anonymous access is off', async () => {
    const { app, file } = await setup();
    const res = await download(app, file.id);
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual({ detail: 'Only logged in users are allowed to access', code: 'anonymous_not_allowed' });
  });

  it('SPEC 4.6: 401 authentication failed for a bad token, a wrong password or a bad license code', async () => {
    const { app, file } = await setup();
    expectError(await download(app, file.id, bearer('tg_sess_nope')), 401, 'invalid_credentials');
    expectError(await download(app, file.id, legacy('alice', 'wrong password!')), 401, 'invalid_credentials');
    expectError(await download(app, file.id, { 'x-api-license-code': 'NOPE' }), 401, 'invalid_credentials');
  });

  it('SPEC 4.6: 401 for an expired session', async () => {
    const { app, file, auth } = await setup({ session_ttl_seconds: 60 });
    h.clock.advance(60_000);
    expectError(await download(app, file.id, auth), 401, 'session_expired');
  });

  it('SPEC 4.6: legacy username/password and license-code headers download too', async () => {
    const { app, content, file } = await setup();
    expect((await download(app, file.id, legacy('alice'))).rawPayload.equals(content)).toBe(true);
    const [code] = await h.licenses(app);
    expect((await h.client(app, 'POST', '/sign_up_with_license_code', { code })).statusCode).toBe(200);
    const res = await download(app, file.id, { 'x-api-license-code': code! });
    expect(res.statusCode).toBe(200);
    expect(res.rawPayload.equals(content)).toBe(true);
  });

  it('SPEC 4.6: 403 membership_inactive for a user without a membership', async () => {
    const { app, file } = await setup();
    await h.signUp(app, 'bob');
    expectError(await download(app, file.id, legacy('bob')), 403, 'membership_inactive');
  });

  it('SPEC 4.6: 403 membership_inactive once the membership has expired', async () => {
    const { app, file, auth } = await setup();
    h.clock.minutes(60);
    expectError(await download(app, file.id, auth), 403, 'membership_inactive');
  });

  it('SPEC 4.6: 403 banned for a banned user, IP or hardware ID', async () => {
    const { app, file, auth, userId } = await setup();
    await h.ban(app, 'ip', '192.0.2.44');
    expectError(await download(app, file.id, auth, '192.0.2.44'), 403, 'banned');
    await h.ban(app, 'hardware_id', 'hw-bad');
    expectError(await download(app, file.id, { ...auth, 'x-hardware-id': 'hw-bad' }), 403, 'banned');
    expect((await download(app, file.id, auth)).statusCode).toBe(200);
    await h.ban(app, 'user', userId);
    expectError(await download(app, file.id, auth), 403, 'banned');
  });

  it('SPEC 4.6: anonymous download when the app allows anonymous access', async () => {
    const app = await h.createApp({ anonymous_access_allowed: true });
    const content = randomBytes(300_000);
    const file = await upload(app, 'public.bin', content);
    const res = await download(app, file.id);
    expect(res.statusCode).toBe(200);
    expect(res.rawPayload.equals(content)).toBe(true);
  });

  it('SPEC 5.1: 401 invalid_app_credentials before the file is even looked up', async () => {
    const { app, file, auth } = await setup();
    const res = await h.inject({ method: 'GET', url: `/files/${file.id}/download`, headers: { 'x-api-key': app.apiKey, 'x-api-secret': 'wrong', ...auth } });
    expectError(res, 401, 'invalid_app_credentials');
    const bad = await h.inject({ method: 'GET', url: '/files/not-a-uuid/download', headers: { 'x-api-key': app.apiKey } });
    expectError(bad, 401, 'invalid_app_credentials');
  });
});
