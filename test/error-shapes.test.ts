import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { StoreMissing } from '../src/store/db.js';
import { ADMIN_TOKEN, PASSWORD, STORE, expectError, harness, type Harness } from './helpers.js';
import { requestsBegun, waitFor } from './wait.js';

/**
 * Issue 11, finding 12: every error a client can receive is `{detail, code}`
 * JSON, including those no route produces: unknown routes, bodies over a
 * limit, headers Node refuses (Fastify answered 431 and 400 as
 * `{error, message, statusCode}`, Node a bare 400 for a missing Host), and the
 * 503 of a server shutting down (Fastify's shape). 408 is in
 * http-timeouts.test.ts.
 */

/** Writes `request` on a fresh connection and resolves with everything received until the server closes it. */
function exchange(port: number, request: string | Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    const guard = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the server did not close the connection; received: ${JSON.stringify(received)}`));
    }, 10_000);
    socket.on('data', (d: Buffer) => (received += d.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(guard);
      resolve(received);
    });
    socket.write(request);
  });
}

interface Raw {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

function parse(raw: string): Raw {
  const end = raw.indexOf('\r\n\r\n');
  const [statusLine, ...lines] = raw.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine ?? '')?.[1]), headers, body: JSON.parse(raw.slice(end + 4)) };
}

function expectRawError(raw: string, status: number, code: string): Raw {
  const res = parse(raw);
  expect(res.status, raw).toBe(status);
  expect(res.headers['content-type'], raw).toMatch(/^application\/json/);
  expect(res.body, raw).toEqual({ detail: expect.any(String), code });
  return res;
}

describe('error shapes', () => {
  let h: Harness;
  afterEach(async () => h?.close());

  async function listen(env: Record<string, string> = {}): Promise<number> {
    h = await harness({ env });
    return Number(new URL(await h.tollgate.server.listen({ port: 0, host: '127.0.0.1' })).port);
  }

  it('unknown routes and wrong methods: 404 not_found in JSON', async () => {
    h = await harness();
    for (const [method, url, headers] of [
      ['GET', '/', {}], ['GET', '/nope', {}], ['POST', '/nope/deeper?x=1', {}], ['DELETE', '/sign_up', {}], ['GET', '/auth/login', {}],
      ['GET', '/admin/v1', {}], ['GET', '/admin/v1/nope', {}], ['PUT', '/admin/v1/apps', {}], ['PUT', '/admin/v1/apps', { authorization: `Bearer ${ADMIN_TOKEN}` }],
      ['GET', '/admin/v2/apps', {}], ['PATCH', '/healthz', {}],
    ] as const) {
      const res = await h.inject({ method, url, headers });
      expectError(res, 404, 'not_found');
      expect(res.headers['content-type'], `${method} ${url}`).toMatch(/^application\/json/);
    }
  });

  it('a database that vanished under the running node (dropped, file removed) is 503 service_unavailable, not 500', async () => {
    h = await harness();
    const app = await h.createApp();
    // What the store raises when the database it was opened on no longer exists (PostgreSQL 3D000).
    h.tollgate.services.store.users.existsByUsernameKey = async () => {
      throw new StoreMissing('postgres://u:***@db/tollgate', 'no PostgreSQL database at postgres://u:***@db/tollgate');
    };
    const res = await h.client(app, 'POST', '/sign_up', { username: 'alice', password: PASSWORD });
    expectError(res, 503, 'service_unavailable');
    expect(res.headers['retry-after']).toBe('2');
  });

  it('413 on client routes, admin JSON and uploads, in JSON', async () => {
    h = await harness({ env: { MAX_UPLOAD_BYTES: '1000' } });
    const app = await h.createApp();
    const client = await h.inject({ method: 'POST', url: '/sign_up', headers: { ...app.headers, 'content-type': 'application/json' }, payload: JSON.stringify({ username: 'big', password: PASSWORD, pad: 'x'.repeat(70_000) }) });
    expectError(client, 413, 'payload_too_large');
    const adminJson = await h.inject({ method: 'POST', url: '/admin/v1/apps', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, payload: JSON.stringify({ name: 'x'.repeat(2 * 1024 * 1024) }) });
    expectError(adminJson, 413, 'payload_too_large');
    const upload = await h.inject({ method: 'POST', url: `/admin/v1/apps/${app.id}/files?name=big.bin`, headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/octet-stream' }, payload: Buffer.alloc(5000) });
    expectError(upload, 413, 'payload_too_large');
    for (const res of [client, adminJson, upload]) expect(res.headers['content-type']).toMatch(/^application\/json/);
  });

  it.skipIf(STORE !== 'sqlite')('431 for oversized headers, over a raw socket: JSON {detail, code}, then closed (SQLite project only: the store plays no part)', async () => {
    const port = await listen();
    const raw = await exchange(port, `GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\nx-big: ${'a'.repeat(20_000)}\r\n\r\n`);
    const res = expectRawError(raw, 431, 'headers_too_large');
    expect(res.headers.connection).toBe('close');
    expect(Number(res.headers['content-length'])).toBe(Buffer.byteLength(JSON.stringify(res.body)));
  });

  it.skipIf(STORE !== 'sqlite')('400 for requests Node refuses (malformed header, conflicting lengths, no Host) in JSON (SQLite project only: the store plays no part)', async () => {
    const port = await listen();
    for (const request of [
      'GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\nno colon here\r\n\r\n',
      'POST /sign_up HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\nab',
      'POST /sign_up HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: 1\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n',
      'GET /healthz HTTP/1.1\r\n\r\n',
      'BREW /pot HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n',
      'GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\nx-nul: a\0b\r\n\r\n',
    ]) {
      expectRawError(await exchange(port, request), 400, 'bad_request');
    }
  });

  it.skipIf(STORE !== 'sqlite')('CONNECT is a 404 in JSON; an unknown Expect is ignored, not a bare 417 (SQLite project only: the store plays no part)', async () => {
    const port = await listen();
    expectRawError(await exchange(port, 'CONNECT example.com:443 HTTP/1.1\r\nhost: example.com:443\r\n\r\n'), 404, 'not_found');
    const expectation = parse(await exchange(port, 'GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\nexpect: coffee\r\nconnection: close\r\n\r\n'));
    expect(expectation.status).toBe(200);
    expect(expectation.body).toEqual({ status: 'ok' });
  });

  it.skipIf(STORE !== 'sqlite')('a valid request, then garbage or oversized headers on the same connection: the answer, then the error in JSON, then closed (SQLite project only: the store plays no part)', async () => {
    const port = await listen();
    const valid = 'GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n';
    for (const [next, status, code] of [
      ['NOT HTTP AT ALL\r\n\r\n', 400, 'bad_request'],
      [`GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\nx-big: ${'a'.repeat(20_000)}\r\n\r\n`, 431, 'headers_too_large'],
    ] as const) {
      // One write: Node parses the bad bytes while the first answer is still on its way (it was destroyed unanswered).
      const raw = await exchange(port, valid + next);
      const second = raw.indexOf('HTTP/1.1', 1);
      expect(raw.startsWith('HTTP/1.1 200'), JSON.stringify(raw)).toBe(true);
      expect(second, JSON.stringify(raw)).toBeGreaterThan(0);
      expect(JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4, second))).toEqual({ status: 'ok' });
      expectRawError(raw.slice(second), status, code);
    }
  });

  it('a request arriving while the server shuts down: 503 service_unavailable with Retry-After, then the connection closes', async () => {
    const port = await listen();
    // Half a request on an open connection before the shutdown begins (a connection busy with a request is not
    // closed as idle), the rest once the server has stopped listening.
    const socket = connect(port, '127.0.0.1');
    let received = '';
    socket.on('data', (d: Buffer) => (received += d.toString('latin1')));
    socket.on('error', () => undefined);
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    await new Promise<void>((resolve) => socket.write('GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n', () => resolve()));
    // Taken by the server (a connection is busy from its accept until its first request ends): one still in the
    // listen queue when the server stops listening would be reset, not answered.
    await waitFor('the server to take the connection', () => requestsBegun(h.tollgate.server.server) === 1);
    const closing = h.tollgate.close();
    const deadline = Date.now() + 10_000;
    while (h.tollgate.server.server.listening && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(h.tollgate.server.server.listening).toBe(false);
    socket.write('\r\n');
    await Promise.race([closed, new Promise((_, reject) => setTimeout(() => reject(new Error(`not closed; received ${JSON.stringify(received)}`)), 10_000))]);
    await closing;
    const res = expectRawError(received, 503, 'service_unavailable');
    expect(res.headers['retry-after']).toBe('2');
    expect(res.headers.connection).toBe('close');
  });
});
