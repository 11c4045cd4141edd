/**
 * GET /app_context's fast path (src/http/fast-path.ts) answers on node:http
 * before Fastify sees the request. These tests hold it to Fastify's answer:
 * the same requests, over real sockets, to a server with the fast path and
 * to one without it over the same services, answer the same bytes (status
 * line, headers in order, body; `date` aside, and `server_time`), and what
 * the fast path skips (the access log, metrics, CORS, rate limits, ban events,
 * the 503 while closing) still happens.
 *
 * The fast path's factory is wrapped (vi.mock below, behaviour unchanged) to
 * record what it did with each request: answered it, handed a refusal or a
 * cache miss to the route, or passed it to Fastify untouched. Tests assert it,
 * so a case meant for the fast path cannot silently be answered by Fastify.
 */
import { createPublicKey, verify } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { PASSWORD, harness, noticesHeard, type Harness } from './helpers.js';
import { captureLog, fields, until, type LogLine } from './log-capture.js';
import { appHeaders, bearer, pair, pairEach, request, type Pair } from './fast-path-pair.js';
import { outcomesDuring, type Outcome } from './fast-path-outcomes.js';
import { rotateKey, setUpKeys } from './signing-fixtures.js';
import { requestsBegun, waitFor } from './wait.js';
import { credentialHeadersSha256, decodeCertificate, parseSignatureHeader, responseInput, sha256Hex } from '../src/domain/signing/format.js';

const seen = vi.hoisted(() => ({ outcomes: [] as string[], throwInClientAddress: 0 }));

// clientAddress is called by both paths; a test makes its next call (the fast path's) throw, as a bug there would.
vi.mock('../src/net/proxy.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../src/net/proxy.js')>();
  return {
    ...real,
    clientAddress: (...args: Parameters<typeof real.clientAddress>) => {
      if (seen.throwInClientAddress > 0) {
        seen.throwInClientAddress--;
        throw new Error('a bug in the fast path');
      }
      return real.clientAddress(...args);
    },
  };
});

vi.mock('../src/http/fast-path.js', async (importOriginal) => {
  const { recording } = await import('./fast-path-outcomes.js');
  return recording(await importOriginal(), seen.outcomes);
});

const outcomesOf = (during: () => Promise<unknown>) => outcomesDuring(seen.outcomes, during);

// ---------------------------------------------------------------------------------------------------------------
// Raw HTTP/1.1 over node:net.

interface Raw {
  statusLine: string;
  /** Header lines as sent: name as written, value. */
  headers: [string, string][];
  body: Buffer;
}

function headerOf(r: Raw, name: string): string | undefined {
  return r.headers.find(([n]) => n.toLowerCase() === name)?.[1];
}

/** One complete response at the start of `buf`, and how many bytes it took; null while incomplete. */
function parseOne(buf: Buffer, head: boolean, closed: boolean): { res: Raw; used: number } | null {
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const lines = buf.subarray(0, end).toString('latin1').split('\r\n');
  const headers = lines.slice(1).map((line): [string, string] => {
    const i = line.indexOf(':');
    return [line.slice(0, i), line.slice(i + 1).trim()];
  });
  const res: Raw = { statusLine: lines[0]!, headers, body: Buffer.alloc(0) };
  const status = Number(res.statusLine.split(' ')[1]);
  const start = end + 4;
  let length: number;
  if (head || status === 204 || status === 304) length = 0;
  else if (headerOf(res, 'content-length') !== undefined) length = Number(headerOf(res, 'content-length'));
  else if (!closed) return null; // read until the server closes
  else length = buf.length - start;
  if (buf.length < start + length) return null;
  res.body = buf.subarray(start, start + length);
  return { res, used: start + length };
}

/** A client connection: write bytes, read one whole response at a time. */
class Conn {
  private buf = Buffer.alloc(0);
  closed = false;
  private waiting: { head: boolean; resolve(r: Raw): void; reject(e: Error): void } | null = null;
  readonly closedPromise: Promise<void>;
  private constructor(readonly socket: Socket) {
    socket.on('data', (d: Buffer) => {
      this.buf = Buffer.concat([this.buf, d]);
      this.check();
    });
    socket.on('error', () => undefined);
    this.closedPromise = new Promise((resolve) => socket.on('close', () => {
      this.closed = true;
      this.check();
      resolve();
    }));
  }

  static open(port: number): Promise<Conn> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => resolve(new Conn(socket)));
      socket.once('error', reject);
    });
  }

  private check(): void {
    const w = this.waiting;
    if (!w) return;
    const one = parseOne(this.buf, w.head, this.closed);
    if (one) {
      this.buf = this.buf.subarray(one.used);
      this.waiting = null;
      w.resolve(one.res);
    } else if (this.closed) {
      this.waiting = null;
      w.reject(new Error(`connection closed; received ${JSON.stringify(this.buf.toString('latin1'))}`));
    }
  }

  /** The next response (of a request already written, or of `bytes`). */
  next(bytes?: Buffer | string, head = false): Promise<Raw> {
    return new Promise<Raw>((resolve, reject) => {
      const guard = setTimeout(() => reject(new Error(`no complete answer; received ${JSON.stringify(this.buf.toString('latin1'))}`)), 10_000);
      this.waiting = {
        head,
        resolve: (r) => (clearTimeout(guard), resolve(r)),
        reject: (e) => (clearTimeout(guard), reject(e)),
      };
      if (bytes !== undefined) this.socket.write(bytes);
      this.check();
    });
  }

  destroy(): void {
    this.socket.destroy();
  }
}

/** `bytes` on a fresh connection; its answer. */
async function exchange(port: number, bytes: Buffer | string, head = false): Promise<Raw> {
  const conn = await Conn.open(port);
  try {
    return await conn.next(bytes, head);
  } finally {
    conn.destroy();
  }
}


/**
 * What must be equal between the two paths: the status line, every header but `date` in order (a signature too: both
 * servers share one test clock, and Ed25519 is deterministic), and the body with server_time masked.
 */
function comparable(r: Raw): { statusLine: string; headers: [string, string][]; body: string } {
  return {
    statusLine: r.statusLine,
    headers: r.headers.filter(([n]) => n.toLowerCase() !== 'date'),
    body: r.body.toString('latin1').replace(/"server_time":"[^"]*"/, '"server_time":"<server_time>"'),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Two servers over the same services: the harness's (fast path on) and one built as src/wiring.ts builds it, fast path off.

/**
 * `bytes` to Fastify alone, then twice to the fast path's server (the first may load a cache; the second
 * meets a warm one), then again to Fastify; every answer must be the same. Returns the answers and what the
 * fast path did with the two it saw.
 */
async function both(p: Pair, bytes: Buffer, head = false, seen = 2): Promise<{ fast: Raw; slow: Raw; outcomes: Outcome[] }> {
  const slow = await exchange(p.slow, bytes, head);
  let fast1!: Raw;
  let fast2!: Raw;
  const outcomes = await outcomesOf(async () => {
    fast1 = await exchange(p.fast, bytes, head);
    fast2 = await exchange(p.fast, bytes, head);
  });
  const slow2 = await exchange(p.slow, bytes, head);
  expect(comparable(fast1), 'fast path (first) vs Fastify').toEqual(comparable(slow));
  expect(comparable(fast2), 'fast path (second) vs Fastify').toEqual(comparable(slow));
  expect(comparable(slow2), 'Fastify again').toEqual(comparable(slow));
  expect(outcomes).toHaveLength(seen);
  return { fast: fast2, slow, outcomes };
}

const statusOf = (r: Raw) => Number(r.statusLine.split(' ')[1]);
const codeOf = (r: Raw) => (JSON.parse(r.body.toString('utf8')) as { code?: string }).code;

// ---------------------------------------------------------------------------------------------------------------

describe('1. byte equivalence with Fastify over real sockets', () => {
  let p: Pair;
  beforeAll(async () => {
    p = await pair();
  });
  afterAll(async () => p?.close());

  it('a valid Bearer session: answered by the fast path, the same bytes (security headers in order, no others)', async () => {
    const app = await p.h.createApp({ name: 'bearer' });
    await p.h.activeUser(app, 'alice');
    const token = await p.h.login(app, 'alice');
    const r = await both(p, request([...appHeaders(app), bearer(token)]));
    expect(statusOf(r.fast)).toBe(200);
    expect(r.outcomes[1]).toBe('answered');
    expect(r.fast.headers.map(([n]) => n.toLowerCase())).toEqual(['x-content-type-options', 'x-frame-options', 'referrer-policy', 'content-type', 'content-length', 'date', 'connection', 'keep-alive']);
    expect(JSON.parse(r.fast.body.toString()).user.username).toBe('alice');
  });

  it('an unknown token, and a non-Bearer Authorization: the same 401', async () => {
    const app = await p.h.createApp({ name: 'tokens' });
    const unknown = await both(p, request([...appHeaders(app), bearer('no-such-token-0123456789abcdef')]));
    expect(statusOf(unknown.fast)).toBe(401);
    expect(unknown.outcomes.every((o) => o === 'refused' || o === 'pending'), unknown.outcomes.join()).toBe(true);
    const basic = await both(p, request([...appHeaders(app), ['Authorization', 'Basic YWxpY2U6cGFzc3dvcmQ=']]));
    expect(statusOf(basic.fast)).toBe(401);
    expect(basic.outcomes.every((o) => o === 'refused' || o === 'pending'), basic.outcomes.join()).toBe(true);
  });

  it('a license-code user (x-api-license-code)', async () => {
    const app = await p.h.createApp({ name: 'license code' });
    const { code } = await p.h.license(app);
    const signed = await p.h.client(app, 'POST', '/sign_up_with_license_code', { code });
    expect(signed.statusCode, signed.body).toBe(200);
    const r = await both(p, request([...appHeaders(app), ['X-Api-License-Code', code]]));
    expect(statusOf(r.fast)).toBe(200);
    expect(r.outcomes[1]).toBe('answered');
    // A wrong code: the same refusal.
    const wrong = await both(p, request([...appHeaders(app), ['X-Api-License-Code', 'NOT-A-CODE']]));
    expect(statusOf(wrong.fast)).toBe(401);
  });

  it('a username/password user, ASCII and a non-ASCII UTF-8 username sent as raw bytes; a wrong password', async () => {
    const app = await p.h.createApp({ name: 'legacy' });
    await p.h.activeUser(app, 'bob');
    const ascii = await both(p, request([...appHeaders(app), ['X-Api-Username', 'bob'], ['X-Api-Password', PASSWORD]]));
    expect(statusOf(ascii.fast)).toBe(200);
    expect(ascii.outcomes).not.toContain('passed');
    await p.h.activeUser(app, 'zoë-jürgen');
    const utf8 = await both(p, request([...appHeaders(app), ['X-Api-Username', Buffer.from('zoë-jürgen', 'utf8')], ['X-Api-Password', PASSWORD]]));
    expect(statusOf(utf8.fast), utf8.fast.body.toString()).toBe(200);
    expect(JSON.parse(utf8.fast.body.toString('utf8')).user.username).toBe('zoë-jürgen');
    expect(utf8.outcomes).not.toContain('passed');
    const wrong = await both(p, request([...appHeaders(app), ['X-Api-Username', 'bob'], ['X-Api-Password', 'not the password']]));
    expect(statusOf(wrong.fast)).toBe(401);
  });

  it('anonymous with anonymous_access_allowed on (answered) and off (refused)', async () => {
    const on = await p.h.createApp({ name: 'anon on', anonymous_access_allowed: true });
    const r = await both(p, request(appHeaders(on)));
    expect(statusOf(r.fast)).toBe(200);
    expect(r.outcomes[1]).toBe('answered');
    expect(JSON.parse(r.fast.body.toString()).user).toBeNull();
    const off = await p.h.createApp({ name: 'anon off', anonymous_access_allowed: false });
    const refused = await both(p, request(appHeaders(off)));
    expect(statusOf(refused.fast)).toBe(401);
    expect(refused.outcomes).toEqual(['refused', 'refused']);
  });

  it('a wrong API secret, an unknown API key, missing API headers: passed to Fastify, the same 401/422', async () => {
    const app = await p.h.createApp({ name: 'app creds', anonymous_access_allowed: true });
    const cases = [
      request([['X-Api-Key', app.apiKey], ['X-Api-Secret', 'not-the-secret']]),
      request([['X-Api-Key', 'no-such-key-0123456789'], ['X-Api-Secret', app.apiSecret]]),
      request([]),
      request([['X-Api-Key', app.apiKey]]),
    ];
    for (const bytes of cases) {
      const r = await both(p, bytes);
      expect(statusOf(r.fast), r.fast.body.toString()).toBeGreaterThanOrEqual(400);
      expect(r.outcomes).toEqual(['passed', 'passed']);
    }
  });

  it('a banned IP (127.0.0.1), a banned hardware id, a banned user: the same 403', async () => {
    const ipApp = await p.h.createApp({ name: 'ban ip' });
    await p.h.activeUser(ipApp, 'carol');
    const ipToken = await p.h.login(ipApp, 'carol');
    await p.h.ban(ipApp, 'ip', '127.0.0.1');
    const ip = await both(p, request([...appHeaders(ipApp), bearer(ipToken)]));
    expect([statusOf(ip.fast), codeOf(ip.fast)]).toEqual([403, 'banned']);
    expect(ip.outcomes).toEqual(['refused', 'refused']);

    const hwApp = await p.h.createApp({ name: 'ban hw' });
    await p.h.activeUser(hwApp, 'dan');
    const hwToken = await p.h.login(hwApp, 'dan');
    await p.h.ban(hwApp, 'hardware_id', 'hw-banned');
    const hw = await both(p, request([...appHeaders(hwApp), bearer(hwToken), ['X-Hardware-Id', 'hw-banned']]));
    expect([statusOf(hw.fast), codeOf(hw.fast)]).toEqual([403, 'banned']);
    expect(hw.outcomes).toEqual(['refused', 'refused']);

    const userApp = await p.h.createApp({ name: 'ban user' });
    const userId = await p.h.activeUser(userApp, 'erin');
    const userToken = await p.h.login(userApp, 'erin');
    await p.h.ban(userApp, 'user', userId);
    const user = await both(p, request([...appHeaders(userApp), bearer(userToken)]));
    expect(statusOf(user.fast)).toBeGreaterThanOrEqual(400);
    expect(user.outcomes.every((o) => o === 'refused' || o === 'pending'), user.outcomes.join()).toBe(true);
  });

  it('device auth on: the right x-hardware-id (answered), a wrong one, none', async () => {
    const app = await p.h.createApp({ name: 'devices', device_auth_enabled: true });
    await p.h.activeUser(app, 'frank', PASSWORD, 'hw-1');
    const token = await p.h.login(app, 'frank', PASSWORD, 'hw-1');
    const right = await both(p, request([...appHeaders(app), bearer(token), ['X-Hardware-Id', 'hw-1']]));
    expect(statusOf(right.fast)).toBe(200);
    expect(right.outcomes[1]).toBe('answered');
    const wrong = await both(p, request([...appHeaders(app), bearer(token), ['X-Hardware-Id', 'hw-2']]));
    expect([statusOf(wrong.fast), codeOf(wrong.fast)]).toEqual([401, 'device_mismatch']);
    const legacyNone = await both(p, request([...appHeaders(app), ['X-Api-Username', 'frank'], ['X-Api-Password', PASSWORD]]));
    expect([statusOf(legacyNone.fast), codeOf(legacyNone.fast)]).toEqual([401, 'device_required']);
    const bearerNone = await both(p, request([...appHeaders(app), bearer(token)]));
    expect(statusOf(bearerNone.fast)).toBe(200);
  });

  it('an inactive membership: never activated (username/password), and a Bearer session whose membership the operator ended', async () => {
    const app = await p.h.createApp({ name: 'inactive' });
    await p.h.signUp(app, 'gina');
    const never = await both(p, request([...appHeaders(app), ['X-Api-Username', 'gina'], ['X-Api-Password', PASSWORD]]));
    expect([statusOf(never.fast), codeOf(never.fast)], never.fast.body.toString()).toEqual([403, 'membership_inactive']);
    expect(never.outcomes).not.toContain('passed');

    const id = await p.h.activeUser(app, 'gwen');
    const token = await p.h.login(app, 'gwen');
    expect(statusOf(await exchange(p.fast, request([...appHeaders(app), bearer(token)])))).toBe(200);
    expect((await p.h.admin('PATCH', `/apps/${app.id}/users/${id}`, { active_until: '2020-01-01T00:00:00Z' })).statusCode).toBe(200);
    const ended = await both(p, request([...appHeaders(app), bearer(token)]));
    expect([statusOf(ended.fast), codeOf(ended.fast)], ended.fast.body.toString()).toEqual([403, 'membership_inactive']);
    expect(ended.outcomes[1]).toBe('refused');
  });

  it('what the fast path passes on: a query string, HEAD, /app_context/, no Host', async () => {
    const app = await p.h.createApp({ name: 'passed on', anonymous_access_allowed: true });
    await p.h.activeUser(app, 'hank');
    const token = await p.h.login(app, 'hank');
    const headers = [...appHeaders(app), bearer(token)];
    const query = await both(p, request(headers, { target: '/app_context?x=1' }));
    expect(statusOf(query.fast)).toBe(200);
    expect(query.outcomes).toEqual(['passed', 'passed']);

    const head = await both(p, request(headers, { method: 'HEAD' }), true);
    expect(statusOf(head.fast)).toBe(200);
    expect(head.fast.body.length).toBe(0);
    expect(head.outcomes).toEqual(['passed', 'passed']);

    const slash = await both(p, request(headers, { target: '/app_context/' }));
    expect(slash.outcomes).toEqual(['passed', 'passed']);

    const noHost = await both(p, request(headers, { host: false }));
    expect([statusOf(noHost.fast), codeOf(noHost.fast)]).toEqual([400, 'bad_request']);
    expect(noHost.outcomes).toEqual(['passed', 'passed']);
  });

  it('a Tollgate-Nonce: answered by the fast path, signed, the same bytes as Fastify (signature included)', async () => {
    const app = await p.h.createApp({ name: 'signed' });
    await setUpKeys(p.h, app);
    await p.h.activeUser(app, 'ivy');
    const token = await p.h.login(app, 'ivy');
    const r = await both(p, request([...appHeaders(app), bearer(token), ['Tollgate-Nonce', 'nonce-0123456789abcdef']]));
    expect(statusOf(r.fast), r.fast.body.toString()).toBe(200);
    expect(headerOf(r.fast, 'tollgate-signature')).toMatch(/^v1; kid=/);
    expect(headerOf(r.fast, 'tollgate-key-cert')).toBeDefined();
    expect(r.outcomes).toEqual(['answered', 'answered']);
  });

  it('Connection: close, and a duplicated Authorization header', async () => {
    const app = await p.h.createApp({ name: 'connection' });
    await p.h.activeUser(app, 'jack');
    const token = await p.h.login(app, 'jack');
    const close = await both(p, request([...appHeaders(app), bearer(token), ['Connection', 'close']]));
    expect(statusOf(close.fast)).toBe(200);
    expect(headerOf(close.fast, 'connection')).toBe('close');
    expect(close.outcomes[1]).toBe('answered');
    const twiceGoodFirst = await both(p, request([...appHeaders(app), bearer(token), ['Authorization', 'Bearer not-the-token']]));
    expect(twiceGoodFirst.outcomes).not.toContain('passed');
    const twiceBadFirst = await both(p, request([...appHeaders(app), ['Authorization', 'Bearer not-the-token'], bearer(token)]));
    expect(twiceBadFirst.outcomes).not.toContain('passed');
  });

  it('HTTP/1.0 (no Host needed; the connection closes) and HTTP/1.0 with keep-alive: answered, the same bytes', async () => {
    const app = await p.h.createApp({ name: 'http 1.0' });
    await p.h.activeUser(app, 'leo');
    const token = await p.h.login(app, 'leo');
    const plain = await both(p, request([...appHeaders(app), bearer(token)], { version: 'HTTP/1.0', host: false }));
    expect(plain.fast.statusLine).toBe('HTTP/1.1 200 OK');
    expect(plain.outcomes[1]).toBe('answered');
    const keep = await both(p, request([...appHeaders(app), bearer(token), ['Connection', 'keep-alive']], { version: 'HTTP/1.0' }));
    expect(statusOf(keep.fast)).toBe(200);
    expect(keep.outcomes[1]).toBe('answered');
  });

  it('pipelined on one keep-alive connection: a fast-path answer, one passed to Fastify, a refusal, then the fast path again, in order', async () => {
    const app = await p.h.createApp({ name: 'pipeline' });
    await p.h.activeUser(app, 'mia');
    const token = await p.h.login(app, 'mia');
    const good = request([...appHeaders(app), bearer(token)]);
    await exchange(p.fast, good); // warm
    const batch = Buffer.concat([good, request([...appHeaders(app), bearer(token)], { target: '/app_context?q=1' }), request([...appHeaders(app), bearer('wrong-token')]), good]);
    const run = async (port: number) => {
      const conn = await Conn.open(port);
      try {
        const first = await conn.next(batch);
        return [first, await conn.next(), await conn.next(), await conn.next()];
      } finally {
        conn.destroy();
      }
    };
    const slow = await run(p.slow);
    let fast!: Raw[];
    const outcomes = await outcomesOf(async () => {
      fast = await run(p.fast);
    });
    expect(outcomes[0]).toBe('answered');
    expect(outcomes[1]).toBe('passed');
    expect(outcomes[3]).toBe('answered');
    expect(fast.map(statusOf)).toEqual([200, 200, 401, 200]);
    expect(fast.map(comparable)).toEqual(slow.map(comparable));
  });

  it('an expired session (the clock moved past its TTL): the same 401', async () => {
    const app = await p.h.createApp({ name: 'expiry', session_ttl_seconds: 60 });
    await p.h.activeUser(app, 'kim');
    const token = await p.h.login(app, 'kim');
    const live = await both(p, request([...appHeaders(app), bearer(token)]));
    expect(statusOf(live.fast)).toBe(200);
    p.h.clock.advance(61_000);
    const expired = await both(p, request([...appHeaders(app), bearer(token)]));
    expect([statusOf(expired.fast), codeOf(expired.fast)]).toEqual([401, 'session_expired']);
    expect(expired.outcomes.every((o) => o === 'refused' || o === 'pending'), expired.outcomes.join()).toBe(true);
  });
});

describe('2. cache misses and refusals handed over to the route', () => {
  const pairs = pairEach();

  it('a user record not cached (an admin change to the user just dropped it): 200, the same body as Fastify', async () => {
    const p = await pairs.open();
    const app = await p.h.createApp();
    const id = await p.h.activeUser(app, 'lena');
    const token = await p.h.login(app, 'lena');
    const bytes = request([...appHeaders(app), bearer(token)]);
    expect(statusOf(await exchange(p.fast, bytes))).toBe(200); // warm
    const patched = await p.h.admin('PATCH', `/apps/${app.id}/users/${id}`, { active_until: '2027-01-01T00:00:00.000Z' });
    expect(patched.statusCode, patched.body).toBe(200);
    let cold!: Raw;
    const outcomes = await outcomesOf(async () => {
      cold = await exchange(p!.fast, bytes);
    });
    expect(outcomes).toEqual(['pending']);
    expect(statusOf(cold)).toBe(200);
    expect(JSON.parse(cold.body.toString()).user.membership.active_until).toBe('2027-01-01T00:00:00.000Z');
    const slow = await exchange(p.slow, bytes);
    expect(comparable(cold)).toEqual(comparable(slow));
  });

  it('the first request after start (nothing cached: app, bans, user, session): 200, the same bytes as Fastify', async () => {
    const p = await pairs.open();
    const app = await p.h.createApp();
    const id = await p.h.activeUser(app, 'mona');
    const token = await p.h.login(app, 'mona');
    const bytes = request([...appHeaders(app), bearer(token)]);
    // As after a start: every cache this request reads is dropped.
    await p.h.tollgate.services.caches.changed({ app: { id: app.id, apiKey: app.apiKey }, bans: app.id, content: app.id, user: id });
    // On PostgreSQL the node hears that change back later: heard after the first request, it would drop the app again.
    await noticesHeard(p.h);
    let first!: Raw;
    let second!: Raw;
    const outcomes = await outcomesOf(async () => {
      first = await exchange(p!.fast, bytes);
      // The app is cached now; the user alone is dropped: the fast path finds the miss and hands it over.
      await p!.h.tollgate.services.caches.changed({ user: id });
      await noticesHeard(p!.h);
      second = await exchange(p!.fast, bytes);
    });
    expect(outcomes).toEqual(['passed', 'pending']);
    const slow = await exchange(p.slow, bytes);
    expect(statusOf(first)).toBe(200);
    expect(comparable(first)).toEqual(comparable(slow));
    expect(comparable(second)).toEqual(comparable(slow));
  });

  it('a refusal found by the fast path (banned IP): one ban event line and one access line, with the same reqId', async () => {
    const logs = { fast: captureLog(), slow: captureLog() };
    const p = await pairs.open({ ACCESS_LOG: 'on', LOG_LEVEL: 'info' }, logs);
    const app = await p.h.createApp();
    await p.h.activeUser(app, 'nina');
    const token = await p.h.login(app, 'nina');
    await p.h.ban(app, 'ip', '127.0.0.1');
    const bytes = request([...appHeaders(app), bearer(token)]);
    expect(statusOf(await exchange(p.fast, bytes))).toBe(403); // the ban set is loaded; the next request is the fast path's refusal
    const before = logs.fast.lines.length;
    let res!: Raw;
    const outcomes = await outcomesOf(async () => {
      res = await exchange(p!.fast, bytes);
    });
    expect(outcomes).toEqual(['refused']);
    expect([statusOf(res), codeOf(res)]).toEqual([403, 'banned']);
    await until(() => logs.fast.lines.slice(before).some((l) => l.msg === 'request'));
    const lines = logs.fast.lines.slice(before);
    const bans = lines.filter((l) => l.event === 'ban_hit');
    const access = lines.filter((l) => l.msg === 'request');
    expect(bans).toHaveLength(1);
    expect(access).toHaveLength(1);
    expect(bans[0]!.reqId).toMatch(/^req-/);
    expect(access[0]!.reqId).toBe(bans[0]!.reqId);
    expect(fields(access[0]!)).toEqual({ level: 30, msg: 'request', reqId: bans[0]!.reqId, method: 'GET', route: '/app_context', status: 403, ms: expect.any(Number), ip: '127.0.0.1', appId: app.id, code: 'banned' });
    expect(fields(bans[0]!)).toMatchObject({ msg: 'ban hit', event: 'ban_hit', appId: app.id, ip: '127.0.0.1', ban: 'ip' });
    // Fastify alone writes the same two lines for the same request (its ban event goes to the services' log, the harness's).
    const beforeSlow = { fast: logs.fast.lines.length, slow: logs.slow.lines.length };
    await exchange(p.slow, bytes);
    await until(() => logs.slow.lines.slice(beforeSlow.slow).some((l) => l.msg === 'request'));
    const slowAccess = logs.slow.lines.slice(beforeSlow.slow).filter((l) => l.msg === 'request');
    expect(slowAccess).toHaveLength(1);
    const { reqId: _a, ms: _b, ...slowRest } = fields(slowAccess[0]!);
    const { reqId: _c, ms: _d, ...fastRest } = fields(access[0]!);
    expect(fastRest).toEqual(slowRest);
    expect(logs.fast.lines.slice(beforeSlow.fast).filter((l) => l.event === 'ban_hit')).toHaveLength(1);
  });
});

describe('3. access log parity', () => {
  const pairs = pairEach();

  it('a fast-path 200 writes one line with the fields, in the order, of Fastify\'s line', async () => {
    const logs = { fast: captureLog(), slow: captureLog() };
    const p = await pairs.open({ ACCESS_LOG: 'on', LOG_LEVEL: 'info' }, logs);
    const app = await p.h.createApp();
    await p.h.activeUser(app, 'olga');
    const token = await p.h.login(app, 'olga');
    const bytes = request([...appHeaders(app), bearer(token)]);
    await exchange(p.fast, bytes); // warm
    await until(() => logs.fast.named('request').length > 0);
    const before = logs.fast.named('request').length;
    const beforeAll = logs.fast.lines.length;
    const outcomes = await outcomesOf(() => exchange(p!.fast, bytes));
    expect(outcomes).toEqual(['answered']);
    await until(() => logs.fast.named('request').length > before);
    const slowBefore = logs.slow.named('request').length;
    await exchange(p.slow, bytes);
    await until(() => logs.slow.named('request').length > slowBefore);

    const fastLines = logs.fast.named('request').slice(before);
    const slowLines = logs.slow.named('request').slice(slowBefore);
    expect(fastLines).toHaveLength(1);
    expect(slowLines).toHaveLength(1);
    const expected = { level: 30, msg: 'request', reqId: expect.stringMatching(/^req-[0-9a-z]+$/), method: 'GET', route: '/app_context', status: 200, ms: expect.any(Number), ip: '127.0.0.1', appId: app.id };
    expect(fields(fastLines[0]!)).toEqual(expected);
    expect(fields(slowLines[0]!)).toEqual(expected);
    expect(Object.keys(fields(fastLines[0]!))).toEqual(Object.keys(fields(slowLines[0]!)));
    expect('code' in fastLines[0]!).toBe(false);
    expect(fastLines[0]!.ms as number).toBeGreaterThanOrEqual(0);
    // Nothing else was logged for it.
    expect(logs.fast.lines.slice(beforeAll).map((l: LogLine) => l.msg)).toEqual(['request']);
    // Fast path ids continue Fastify's sequence: distinct from every other request's.
    const ids = logs.fast.named('request').map((l) => l.reqId);
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe('4. metrics', () => {
  const pairs = pairEach();

  const METRICS_TOKEN = 'metrics-token-0123456789';
  const COUNTER = /^tollgate_http_requests_total\{method="GET",route="\/app_context",status="200"\} (\d+(?:\.\d+)?)$/m;

  async function count(port: number): Promise<number> {
    const res = await exchange(port, request([['Authorization', `Bearer ${METRICS_TOKEN}`]], { target: '/metrics' }));
    expect(statusOf(res)).toBe(200);
    const m = COUNTER.exec(res.body.toString());
    return m ? Number(m[1]) : 0;
  }

  it('N fast-path answers raise tollgate_http_requests_total{GET,/app_context,200} by N', async () => {
    const p = await pairs.open({ METRICS_TOKEN });
    const app = await p.h.createApp({ anonymous_access_allowed: true });
    await p.h.activeUser(app, 'pia');
    const token = await p.h.login(app, 'pia');
    const bytes = request([...appHeaders(app), bearer(token)]);
    await exchange(p.fast, bytes); // warm
    const before = await count(p.fast);
    const N = 7;
    const outcomes = await outcomesOf(async () => {
      for (let i = 0; i < N; i++) expect(statusOf(await exchange(p!.fast, i % 2 ? bytes : request(appHeaders(app))))).toBe(200);
    });
    expect(outcomes).toEqual(Array(N).fill('answered'));
    expect(await count(p.fast)).toBe(before + N);
  });
});

describe('5. CORS on', () => {
  const pairs = pairEach();

  const ORIGIN = 'https://app.example.com';

  it('with an Origin (allowed, and not): Fastify answers (no fast path while CORS is on), the same CORS headers', async () => {
    const p = await pairs.open({ CORS_ORIGINS: ORIGIN });
    const app = await p.h.createApp();
    await p.h.activeUser(app, 'quinn');
    const token = await p.h.login(app, 'quinn');
    const withOrigin = await both(p, request([...appHeaders(app), bearer(token), ['Origin', ORIGIN]]), false, 0);
    expect(statusOf(withOrigin.fast)).toBe(200);
    expect(headerOf(withOrigin.fast, 'access-control-allow-origin')).toBe(ORIGIN);
    expect(withOrigin.outcomes).toEqual([]);
    const otherOrigin = await both(p, request([...appHeaders(app), bearer(token), ['Origin', 'https://evil.example']]), false, 0);
    expect(statusOf(otherOrigin.fast)).toBe(200);
    expect(headerOf(otherOrigin.fast, 'access-control-allow-origin')).toBeUndefined();
    expect(otherOrigin.outcomes).toEqual([]);
  });

  // With CORS_ORIGINS set, @fastify/cors puts `vary: Origin` and `access-control-expose-headers` on every answer of
  // the client scope, Origin or not: the server has no fast path then (a shared cache must see Vary: Origin).
  it('without an Origin: the same bytes as Fastify (no fast path while CORS is on)', async () => {
    const p = await pairs.open({ CORS_ORIGINS: ORIGIN });
    const app = await p.h.createApp();
    await p.h.activeUser(app, 'rory');
    const token = await p.h.login(app, 'rory');
    const bytes = request([...appHeaders(app), bearer(token)]);
    const slow = await exchange(p.slow, bytes);
    expect(statusOf(slow)).toBe(200);
    await exchange(p.fast, bytes); // warm
    let fast!: Raw;
    const outcomes = await outcomesOf(async () => {
      fast = await exchange(p!.fast, bytes);
    });
    expect(outcomes).toEqual([]);
    expect(headerOf(fast, 'vary')).toBe('Origin');
    expect(comparable(fast)).toEqual(comparable(slow));
  });
});

describe('6. rate limits on', () => {
  const pairs = pairEach();

  it('legacy username/password with a wrong password is counted (step 2) and ends in 429, as on Fastify', async () => {
    const p = await pairs.open({ RATE_LIMIT: 'on' });
    const app = await p.h.createApp();
    await p.h.activeUser(app, 'rita');
    const wrong = request([...appHeaders(app), ['X-Api-Username', 'rita'], ['X-Api-Password', 'wrong password']]);
    const right = request([...appHeaders(app), ['X-Api-Username', 'rita'], ['X-Api-Password', PASSWORD]]);
    expect(statusOf(await exchange(p.fast, right))).toBe(200);
    const outcomes = await outcomesOf(async () => {
      for (let i = 0; i < 10; i++) {
        const res = await exchange(p!.fast, wrong);
        expect([statusOf(res), codeOf(res)], `attempt ${i + 1}`).toEqual([401, 'invalid_credentials']);
      }
    });
    expect(outcomes).toEqual(Array(10).fill('passed'));
    const limited = await exchange(p.fast, right);
    expect([statusOf(limited), codeOf(limited)]).toEqual([429, 'rate_limited']);
    expect(Number(headerOf(limited, 'retry-after'))).toBeGreaterThan(0);
    expect(headerOf(limited, 'ratelimit-remaining')).toBe('0');
    // Both paths answer the locked identity alike.
    const r = await both(p, right);
    expect(statusOf(r.fast)).toBe(429);
    // Another identity is not limited; a Bearer request is still the fast path's, never counted.
    await p.h.activeUser(app, 'rosa');
    const token = await p.h.login(app, 'rosa');
    const bearerBytes = request([...appHeaders(app), bearer(token)]);
    await exchange(p.fast, bearerBytes); // warm
    let ok!: Raw;
    expect(await outcomesOf(async () => {
      ok = await exchange(p!.fast, bearerBytes);
    })).toEqual(['answered']);
    expect(statusOf(ok)).toBe(200);
  });

  it('a wrong x-api-license-code is counted per IP (30 in 5 minutes) and ends in 429 on GET /app_context', async () => {
    const p = await pairs.open({ RATE_LIMIT: 'on' });
    const app = await p.h.createApp();
    const outcomes = await outcomesOf(async () => {
      for (let i = 0; i < 30; i++) {
        const res = await exchange(p!.fast, request([...appHeaders(app), ['X-Api-License-Code', `GUESS-${i}`]]));
        expect(statusOf(res), `attempt ${i + 1}: ${res.body.toString()}`).toBe(401);
      }
    });
    expect(outcomes).toEqual(Array(30).fill('passed'));
    const limited = await both(p, request([...appHeaders(app), ['X-Api-License-Code', 'GUESS-LAST']]));
    expect([statusOf(limited.fast), codeOf(limited.fast)]).toEqual([429, 'rate_limited']);
  });
});

describe('7. 200 at once', () => {
  const pairs = pairEach();

  async function many(port: number, bytes: Buffer, n = 200): Promise<Raw[]> {
    const conns = await Promise.all(Array.from({ length: n }, () => Conn.open(port)));
    try {
      return await Promise.all(conns.map((c) => c.next(bytes)));
    } finally {
      for (const c of conns) c.destroy();
    }
  }

  it('200 concurrent Bearer requests over 200 sockets: all 200, identical bodies (warm, then cold)', async () => {
    const p = await pairs.open();
    const app = await p.h.createApp();
    const id = await p.h.activeUser(app, 'sam');
    const token = await p.h.login(app, 'sam');
    const bytes = request([...appHeaders(app), bearer(token)]);
    const reference = comparable(await exchange(p.slow, bytes));
    await exchange(p.fast, bytes); // warm

    let warm!: Raw[];
    const warmOutcomes = await outcomesOf(async () => {
      warm = await many(p!.fast, bytes);
    });
    expect(warmOutcomes.filter((o) => o === 'answered')).toHaveLength(200);
    for (const r of warm) expect(comparable(r)).toEqual(reference);

    // Cold: an admin change drops the user; 200 requests meet the miss at once.
    expect((await p.h.admin('PATCH', `/apps/${app.id}/users/${id}`, { active_until: '2027-06-01T00:00:00.000Z' })).statusCode).toBe(200);
    const coldReference = comparable(await exchange(p.slow, bytes));
    expect(coldReference.body).toContain('2027-06-01T00:00:00.000Z');
    expect((await p.h.admin('PATCH', `/apps/${app.id}/users/${id}`, { active_until: '2027-07-01T00:00:00.000Z' })).statusCode).toBe(200);
    let cold!: Raw[];
    const coldOutcomes = await outcomesOf(async () => {
      cold = await many(p!.fast, bytes);
    });
    expect(coldOutcomes).toHaveLength(200);
    expect(coldOutcomes).toContain('pending');
    const after = comparable(await exchange(p.slow, bytes));
    expect(after.body).toContain('2027-07-01T00:00:00.000Z');
    for (const r of cold) expect(comparable(r)).toEqual(after);
  });
});

describe('8. closing', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close().catch(() => undefined);
    h = undefined;
  });

  it('a request on an open keep-alive connection while close() is in progress: 503 service_unavailable', async () => {
    h = await harness();
    const app = await h.createApp();
    await h.activeUser(app, 'tess');
    const token = await h.login(app, 'tess');
    const port = Number(new URL(await h.tollgate.server.listen({ port: 0, host: '127.0.0.1' })).port);
    const conn = await Conn.open(port);
    const bytes = request([...appHeaders(app), bearer(token)]);
    const ok = await conn.next(bytes);
    expect(statusOf(ok)).toBe(200);
    expect(headerOf(ok, 'connection')).toBe('keep-alive');
    // Half of the next request on the same connection (a connection with a request begun is not closed as idle).
    const cut = bytes.length - 2;
    await new Promise<void>((resolve) => conn.socket.write(bytes.subarray(0, cut), () => resolve()));
    await waitFor('the server to read the half request', () => requestsBegun(h!.tollgate.server.server) === 1);
    const closedHarness = h;
    h = undefined;
    const closing = closedHarness.close(); // tollgate.close(), then the database
    const deadline = Date.now() + 10_000;
    while (closedHarness.tollgate.server.server.listening && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(closedHarness.tollgate.server.server.listening).toBe(false);
    let res!: Raw;
    const outcomes = await outcomesOf(async () => {
      res = await conn.next(bytes.subarray(cut));
    });
    expect(outcomes).toEqual(['passed']);
    await Promise.race([conn.closedPromise, new Promise((_, reject) => setTimeout(() => reject(new Error('connection not closed')), 10_000))]);
    await closing;
    expect([statusOf(res), codeOf(res)]).toEqual([503, 'service_unavailable']);
    expect(headerOf(res, 'retry-after')).toBe('2');
    expect(headerOf(res, 'connection')).toBe('close');
    for (const [name, value] of [['x-content-type-options', 'nosniff'], ['x-frame-options', 'DENY'], ['referrer-policy', 'no-referrer']]) expect(headerOf(res, name!)).toBe(value);
  });
});

describe('9. a throw inside the fast path', () => {
  let p: Pair | undefined;
  afterEach(async () => {
    seen.throwInClientAddress = 0;
    await p?.close();
    p = undefined;
  });

  it('does not escape the request listener (which would end the process): Fastify answers the request from the start', async () => {
    p = await pair();
    const app = await p.h.createApp();
    await p.h.activeUser(app, 'sasha');
    const token = await p.h.login(app, 'sasha');
    const bytes = request([...appHeaders(app), bearer(token)]);
    const slow = await exchange(p.slow, bytes);
    seen.throwInClientAddress = 1;
    const fast = await exchange(p.fast, bytes);
    expect(seen.throwInClientAddress).toBe(0); // the fast path did meet the throw
    expect(statusOf(fast)).toBe(200);
    expect(comparable(fast)).toEqual(comparable(slow));
    // The server is still up and the fast path still answers.
    const outcomes = await outcomesOf(async () => expect(statusOf(await exchange(p!.fast, bytes))).toBe(200));
    expect(outcomes).toEqual(['answered']);
  });
});

describe('10. the answer’s length and encoding', () => {
  const pairs = pairEach();

  const utf8Body = (r: Raw) => JSON.parse(r.body.toString('utf8')) as { application: { variables: { name: string; value: string }[] }; user: { username: string } | null };

  it('all ASCII, non-ASCII in the application, in the user, in both: the same bytes as Fastify, Content-Length their count', async () => {
    const p = await pairs.open();
    const app = await p.h.createApp({ anonymous_access_allowed: true });
    await p.h.activeUser(app, 'ascii');
    await p.h.activeUser(app, 'zoë-jürgen');
    const ascii = await p.h.login(app, 'ascii');
    const accented = await p.h.login(app, 'zoë-jürgen');
    const check = async (token: string | null, expectAscii: boolean) => {
      const r = await both(p!, request([...appHeaders(app), ...(token ? [bearer(token)] : [])]));
      expect(r.outcomes).toEqual(['answered', 'answered']);
      expect(Number(headerOf(r.fast, 'content-length'))).toBe(r.fast.body.length);
      expect(r.fast.body.every((b) => b < 0x80)).toBe(expectAscii);
      return utf8Body(r.fast);
    };
    expect((await check(ascii, true)).user?.username).toBe('ascii');
    expect((await check(null, true)).user).toBeNull();
    expect((await check(accented, false)).user?.username).toBe('zoë-jürgen');
    // Non-ASCII in the application part: every answer of the app, anonymous included.
    expect((await p.h.admin('PUT', `/apps/${app.id}/variables/motd`, { value: 'héllo 🌍 — 世界' })).statusCode).toBe(200);
    expect((await check(ascii, false)).application.variables).toContainEqual({ name: 'motd', value: 'héllo 🌍 — 世界' });
    expect((await check(null, false)).application.variables).toContainEqual({ name: 'motd', value: 'héllo 🌍 — 世界' });
    expect((await check(accented, false)).user?.username).toBe('zoë-jürgen');
  });
});

describe('11. signed answers (Tollgate-Nonce) on the fast path', () => {
  const pairs = pairEach();
  const NONCE_HEADER: [string, string] = ['Tollgate-Nonce', 'nonce-0123456789abcdef'];

  /**
   * The answer's signature checked as a client checks it, with the reference layouts of src/domain/signing/format.ts
   * (not the fast path's own code): the key from the certificate, the request's credential headers as raw bytes.
   */
  function verifies(r: Raw, appId: string, credentials: [string, Buffer][]): boolean {
    const sig = parseSignatureHeader(headerOf(r, 'tollgate-signature') ?? '');
    const cert = decodeCertificate(headerOf(r, 'tollgate-key-cert') ?? '');
    if (!sig || !cert) return false;
    const raw = new Map(credentials.map(([n, v]) => [n.toLowerCase(), v]));
    const input = responseInput({
      kid: sig.kid, t: sig.t, nonce: NONCE_HEADER[1], appId, status: statusOf(r), method: 'GET', target: '/app_context',
      requestBodySha256: sha256Hex(new Uint8Array(0)), credentialsSha256: credentialHeadersSha256((n) => raw.get(n)), responseLine: sha256Hex(r.body),
    });
    const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: cert.public_key }, format: 'jwk' });
    return verify(null, input, key, sig.sig);
  }

  it('Bearer, license code, username/password (a non-ASCII username as raw bytes, padded values), anonymous: answered, signed, the same bytes as Fastify, verified', async () => {
    const p = await pairs.open();
    const app = await p.h.createApp({ name: 'signed kinds', anonymous_access_allowed: true });
    await setUpKeys(p.h, app);
    await p.h.activeUser(app, 'sig-bearer');
    const token = await p.h.login(app, 'sig-bearer');
    const code = (await p.h.licenses(app))[0]!;
    expect((await p.h.client(app, 'POST', '/sign_up_with_license_code', { code })).statusCode).toBe(200);
    await p.h.activeUser(app, 'zoë-jürgen');
    const kinds: [string, Buffer][][] = [
      [['Authorization', Buffer.from(`Bearer ${token}`)]],
      [['X-Api-License-Code', Buffer.from(code)]],
      [['X-Api-Username', Buffer.from('zoë-jürgen', 'utf8')], ['X-Api-Password', Buffer.from(PASSWORD)]],
      [['Authorization', Buffer.from(`Bearer ${token}  \t`)]],
      [],
    ];
    for (const credentials of kinds) {
      const r = await both(p, request([...appHeaders(app), ...credentials, NONCE_HEADER]));
      expect(statusOf(r.fast), r.fast.body.toString()).toBe(200);
      expect(r.outcomes).toEqual(['answered', 'answered']);
      expect(r.fast.headers.map(([n]) => n.toLowerCase())).toEqual([
        'x-content-type-options', 'x-frame-options', 'referrer-policy', 'content-type', 'tollgate-signature', 'tollgate-key-cert',
        'content-length', 'date', 'connection', 'keep-alive',
      ]);
      expect(verifies(r.fast, app.id, credentials.map(([n, v]) => [n, Buffer.from(v.toString('latin1').trim(), 'latin1')])), JSON.stringify(credentials.map(([n]) => n))).toBe(true);
    }
  });

  it('refusals (a banned user, an unknown token) and a user not cached: handed to the route, signed there, the same bytes as Fastify', async () => {
    const p = await pairs.open();
    const app = await p.h.createApp({ name: 'signed refusals' });
    await setUpKeys(p.h, app);
    const id = await p.h.activeUser(app, 'sig-ban');
    const token = await p.h.login(app, 'sig-ban');
    const bytes = request([...appHeaders(app), bearer(token), NONCE_HEADER]);
    expect(statusOf(await exchange(p.fast, bytes))).toBe(200); // warm
    await p.h.ban(app, 'user', id);
    const banned = await both(p, bytes);
    expect([statusOf(banned.fast), codeOf(banned.fast)]).toEqual([403, 'banned']);
    expect(banned.outcomes).toEqual(['refused', 'refused']);
    expect(headerOf(banned.fast, 'tollgate-signature')).toMatch(/^v1; kid=/);
    expect(verifies(banned.fast, app.id, [['authorization', Buffer.from(`Bearer ${token}`)]])).toBe(true);

    const unknown = await both(p, request([...appHeaders(app), bearer('tg_session_unknown'), NONCE_HEADER]));
    expect(statusOf(unknown.fast)).toBe(401);
    expect(unknown.outcomes).toEqual(['refused', 'refused']);
    expect(headerOf(unknown.fast, 'tollgate-signature')).toMatch(/^v1; kid=/);

    const other = await p.h.activeUser(app, 'sig-cold');
    const cold = await p.h.login(app, 'sig-cold');
    const coldBytes = request([...appHeaders(app), bearer(cold), NONCE_HEADER]);
    expect(statusOf(await exchange(p.fast, coldBytes))).toBe(200);
    expect((await p.h.admin('PATCH', `/apps/${app.id}/users/${other}`, { active_until: '2027-01-01T00:00:00.000Z' })).statusCode).toBe(200);
    let fast!: Raw;
    expect(await outcomesOf(async () => {
      fast = await exchange(p!.fast, coldBytes);
    })).toEqual(['pending']);
    const slow = await exchange(p.slow, coldBytes);
    expect(statusOf(fast)).toBe(200);
    expect(comparable(fast)).toEqual(comparable(slow));
    expect(verifies(fast, app.id, [['authorization', Buffer.from(`Bearer ${cold}`)]])).toBe(true);
  });

  it('what it passes on: a malformed nonce, two nonces, keys not cached yet, an app without a usable key; signatures required without a nonce', async () => {
    const p = await pairs.open();
    const app = await p.h.createApp({ name: 'signed passed', anonymous_access_allowed: true });
    const unsignedKeyless = await both(p, request([...appHeaders(app), NONCE_HEADER]));
    expect(statusOf(unsignedKeyless.fast)).toBe(200);
    expect(headerOf(unsignedKeyless.fast, 'tollgate-signature')).toBeUndefined(); // no key: the route answers unsigned (and warns)
    expect(unsignedKeyless.outcomes).toEqual(['passed', 'passed']);

    const { rootPrivateKey } = await setUpKeys(p.h, app);
    const short = await both(p, request([...appHeaders(app), ['Tollgate-Nonce', 'short']]));
    expect([statusOf(short.fast), codeOf(short.fast)]).toEqual([422, 'validation_error']);
    expect(short.outcomes).toEqual(['passed', 'passed']);
    const twice = await both(p, request([...appHeaders(app), NONCE_HEADER, NONCE_HEADER]));
    expect(statusOf(twice.fast)).toBe(422);
    expect(twice.outcomes).toEqual(['passed', 'passed']);

    // A key change drops the app's key ring: the first signed request after it is passed on (the route loads the ring).
    const kid = await rotateKey(p.h, app, rootPrivateKey);
    const signed = request([...appHeaders(app), NONCE_HEADER]);
    expect(await outcomesOf(() => exchange(p!.fast, signed))).toEqual(['passed']);
    const warm = await both(p, signed);
    expect(warm.outcomes).toEqual(['answered', 'answered']);
    expect(headerOf(warm.fast, 'tollgate-signature')).toContain(`kid=${kid};`);

    expect((await p.h.admin('PATCH', `/apps/${app.id}`, { signatures: 'required' })).statusCode).toBe(200);
    const required = await both(p, request(appHeaders(app)));
    expect([statusOf(required.fast), codeOf(required.fast)]).toEqual([422, 'nonce_required']);
    expect(required.outcomes).toEqual(['passed', 'passed']);
    const withNonce = await both(p, signed);
    expect(statusOf(withNonce.fast)).toBe(200);
    expect(withNonce.outcomes).toEqual(['answered', 'answered']);
  });
});
