/**
 * Attacks on GET /app_context's fast path (src/http/fast-path.ts): requests
 * the existing equivalence tests (test/fast-path.test.ts) do not send. Each
 * test holds the fast path's server to what Fastify alone answers
 * (`fastPath: false`, same services), byte for byte on the wire (`date` and
 * `server_time` aside), or to the safe behaviour where the two could not
 * differ by construction.
 *
 * Unlike the equivalence tests, most of these compare whole transcripts: every
 * byte a connection receives until the server closes it or goes quiet, so a
 * desync (an extra, missing or reordered answer) shows.
 */
import { connect } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { PASSWORD, type TestApp } from './helpers.js';
import { captureLog, until, type LogCapture } from './log-capture.js';
import { appHeaders, bearer, pair, pairEach, request, type HeaderValue, type Pair } from './fast-path-pair.js';
import { outcomesDuring, type Outcome } from './fast-path-outcomes.js';
import { setUpKeys } from './signing-fixtures.js';
import { waitFor } from './wait.js';

const seen = vi.hoisted(() => ({ outcomes: [] as string[] }));

vi.mock('../src/http/fast-path.js', async (importOriginal) => {
  const { recording } = await import('./fast-path-outcomes.js');
  return recording(await importOriginal(), seen.outcomes);
});

const outcomesOf = (during: () => Promise<unknown>) => outcomesDuring(seen.outcomes, during);

// ---------------------------------------------------------------------------------------------------------------
// Raw HTTP/1.1 over node:net: whole transcripts.

/** Every byte one connection receives after `bytes` is written, until the server closes it or it stays quiet `quietMs`. */
async function transcript(port: number, bytes: Buffer | Buffer[], opts: { quietMs?: number; gapMs?: number; maxMs?: number } = {}): Promise<{ text: string; closed: boolean }> {
  const quietMs = opts.quietMs ?? 250;
  const socket = connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  let buf = Buffer.alloc(0);
  let closed = false;
  let last = Date.now();
  socket.on('data', (d: Buffer) => {
    buf = Buffer.concat([buf, d]);
    last = Date.now();
  });
  socket.on('error', () => undefined);
  socket.on('close', () => {
    closed = true;
  });
  const parts = Array.isArray(bytes) ? bytes : [bytes];
  for (const [i, part] of parts.entries()) {
    if (i > 0 && opts.gapMs) await sleep(opts.gapMs);
    if (!socket.destroyed) socket.write(part);
  }
  last = Date.now();
  const deadline = Date.now() + (opts.maxMs ?? 10_000);
  while (!closed && Date.now() - last < quietMs && Date.now() < deadline) await sleep(10);
  socket.destroy();
  return { text: buf.toString('latin1'), closed };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A transcript with what legitimately differs masked: the date, and server_time in bodies (same length). */
function masked(text: string): string {
  return text.replace(/\r\ndate: [^\r]*/gi, '\r\ndate: <date>').replace(/"server_time":"[^"]*"/g, '"server_time":"<t>"');
}

/** The status lines of a transcript, in order. */
const statusLines = (text: string) => text.match(/HTTP\/1\.[01] \d{3}[^\r]*/g) ?? [];


// ---------------------------------------------------------------------------------------------------------------
// Two servers over the same services (as test/fast-path.test.ts builds them).

/**
 * `bytes` on a fresh connection to Fastify alone, then twice to the fast path's server (cold, then warm), then
 * Fastify again: all four transcripts must be equal. Returns one of each and what the fast path did.
 */
async function same(p: Pair, bytes: Buffer | Buffer[], opts: { quietMs?: number; gapMs?: number } = {}): Promise<{ fast: string; slow: string; closed: boolean; outcomes: Outcome[] }> {
  const slow = await transcript(p.slow, bytes, opts);
  let fast1!: { text: string; closed: boolean };
  let fast2!: { text: string; closed: boolean };
  const outcomes = await outcomesOf(async () => {
    fast1 = await transcript(p.fast, bytes, opts);
    fast2 = await transcript(p.fast, bytes, opts);
  });
  const slow2 = await transcript(p.slow, bytes, opts);
  expect(masked(fast1.text), 'fast path (first) vs Fastify').toBe(masked(slow.text));
  expect(masked(fast2.text), 'fast path (second) vs Fastify').toBe(masked(slow.text));
  expect(masked(slow2.text), 'Fastify again').toBe(masked(slow.text));
  expect(fast2.closed, 'the fast path closes the connection when Fastify does').toBe(slow.closed);
  return { fast: fast2.text, slow: slow.text, closed: slow.closed, outcomes };
}

const bodyOf = (text: string) => text.slice(text.indexOf('\r\n\r\n') + 4);
const codeOf = (text: string) => (JSON.parse(bodyOf(text)) as { code?: string }).code;

// ---------------------------------------------------------------------------------------------------------------

describe('A. request targets, methods and header oddities', () => {
  let p: Pair;
  let app: TestApp;
  let token: string;
  beforeAll(async () => {
    p = await pair();
    app = await p.h.createApp({ name: 'targets', anonymous_access_allowed: true });
    await p.h.activeUser(app, 'ada');
    token = await p.h.login(app, 'ada');
  });
  afterAll(async () => p?.close());

  it('absolute-form, percent-encoded, doubled-slash, fragment, matrix and case variants of /app_context: passed on, answered as Fastify answers', async () => {
    const targets = [
      'http://tollgate.test/app_context',
      'http://evil.example/app_context',
      '/%61pp_context',
      '/app%5Fcontext',
      '/app_context%2F',
      '/%2Fapp_context',
      '//app_context',
      '/app_context#frag',
      '/app_context;x=1',
      '/APP_CONTEXT',
      '/app_context?',
      '/./app_context',
      '/x/../app_context',
    ];
    for (const target of targets) {
      const r = await same(p, request([...appHeaders(app), bearer(token)], { target }));
      expect(r.outcomes.every((o) => o === 'passed'), `${target}: ${r.outcomes.join()}`).toBe(true);
      expect(statusLines(r.fast).length, `${target}: ${r.fast}`).toBe(1);
    }
  });

  it('odd methods (lowercase, mixed case, unknown, POST/PUT/DELETE/OPTIONS): never answered by the fast path; the same answer as Fastify', async () => {
    for (const method of ['get', 'GeT', 'GETX', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH', 'TRACE']) {
      const body = method === 'GET' ? undefined : '';
      const r = await same(p, request([...appHeaders(app), bearer(token), ['Content-Length', '0']], { method, ...(body !== undefined && { body }) }));
      expect(r.outcomes.filter((o) => o !== 'passed'), method).toEqual([]);
    }
  });

  it('repeated, padded and case-varied credential headers: the same answer as Fastify', async () => {
    const cases: [string, HeaderValue][][] = [
      // Repeated app headers: Node joins them with ", " (no longer the key).
      [...appHeaders(app), ['X-Api-Key', app.apiKey], bearer(token)],
      [...appHeaders(app), ['X-Api-Secret', app.apiSecret], bearer(token)],
      // Optional whitespace and tabs around values (Node trims them).
      [['X-Api-Key', `  ${app.apiKey}\t`], ['X-Api-Secret', `\t${app.apiSecret}  `], ['Authorization', `  Bearer ${token}  `]],
      [...appHeaders(app), ['Authorization', `bearer\t${token}`]],
      [...appHeaders(app), ['Authorization', `Bearer  ${token} extra`]],
      [...appHeaders(app), ['Authorization', 'Bearer']],
      [...appHeaders(app), ['Authorization', '']],
      [['x-api-key', app.apiKey], ['X-API-SECRET', app.apiSecret], ['authorization', `Bearer ${token}`]],
      // A repeated Host (Node keeps the first), an empty Host.
      [...appHeaders(app), bearer(token), ['Host', 'other.example']],
      // Repeated user headers: the first is read on both paths.
      [...appHeaders(app), ['X-Api-Username', 'ada'], ['X-Api-Username', 'eve'], ['X-Api-Password', PASSWORD]],
      [...appHeaders(app), bearer(token), ['X-Hardware-Id', 'hw-1'], ['X-Hardware-Id', 'hw-2']],
      // Latin-1 / invalid UTF-8 bytes in every header the fast path reads.
      [['X-Api-Key', Buffer.from([0xff, 0xfe, 0x80])], ['X-Api-Secret', app.apiSecret]],
      [...appHeaders(app), ['Authorization', Buffer.concat([Buffer.from('Bearer '), Buffer.from([0xc3, 0x28, 0xff])])]],
      [...appHeaders(app), ['X-Api-Username', Buffer.from([0xc3, 0x28])], ['X-Api-Password', Buffer.from([0xff])]],
      [...appHeaders(app), ['X-Api-License-Code', Buffer.from([0xe2, 0x82])]],
      [...appHeaders(app), bearer(token), ['X-Hardware-Id', Buffer.from([0xf0, 0x9f, 0x98])]],
      // Over-long values.
      [['X-Api-Key', 'k'.repeat(5000)], ['X-Api-Secret', app.apiSecret]],
      [...appHeaders(app), ['Authorization', `Bearer ${'t'.repeat(8000)}`]],
      [...appHeaders(app), ['X-Api-Username', 'u'.repeat(4000)], ['X-Api-Password', 'p'.repeat(4000)]],
      // An empty Tollgate-Nonce still asks for a signed answer (passed on, refused as malformed on both).
      [...appHeaders(app), bearer(token), ['Tollgate-Nonce', '']],
    ];
    for (const headers of cases) {
      const r = await same(p, request(headers));
      expect(statusLines(r.fast).length, JSON.stringify(headers).slice(0, 200)).toBe(1);
    }
  });

  it('an empty Host on HTTP/1.1, and HTTP/1.1 requests with Host absent but an absolute-form target', async () => {
    await same(p, request([...appHeaders(app), bearer(token), ['Host', '']], { host: false }));
    const r = await same(p, request([...appHeaders(app), bearer(token)], { host: false, target: 'http://tollgate.test/app_context' }));
    expect(r.outcomes.every((o) => o === 'passed')).toBe(true);
  });

  it('obs-fold, a header without a colon, a NUL in a value, a space before the colon: refused alike (Node\'s parser), never answered', async () => {
    const base = request([...appHeaders(app), bearer(token)]).toString('latin1').replace(/\r\n\r\n$/, '\r\n');
    for (const extra of ['X-Fold: a\r\n b\r\n', 'NoColon\r\n', 'X-Nul: a\u0000b\r\n', 'X-Api-Key : x\r\n', 'X-Bad\u007fName: 1\r\n']) {
      const r = await same(p, Buffer.from(`${base}${extra}\r\n`, 'latin1'));
      expect(r.outcomes, JSON.stringify(extra)).toEqual([]);
    }
  });

  it('headers just under Node\'s 16 KiB limit (answered, same bytes) and over it (431 from Node, never the fast path)', async () => {
    const under = await same(p, request([...appHeaders(app), bearer(token), ['X-Filler', 'a'.repeat(15_000)]]));
    expect(statusLines(under.fast)).toEqual(['HTTP/1.1 200 OK']);
    expect(under.outcomes).toEqual(['answered', 'answered']);
    const over = await same(p, request([...appHeaders(app), bearer(token), ['X-Filler', 'a'.repeat(17_000)]]));
    expect(statusLines(over.fast)).toEqual(['HTTP/1.1 431 Request Header Fields Too Large']);
    expect(over.outcomes).toEqual([]);
    // Many small headers (Node's header count limit is 2000 by default: past it, headers are dropped, not refused).
    const many: [string, string][] = Array.from({ length: 2100 }, (_, i) => [`X-H${i}`, '1']);
    const r = await same(p, request([...many, ...appHeaders(app), bearer(token)]));
    expect(statusLines(r.fast).length).toBeLessThanOrEqual(1);
  });

  it('Expect: 100-continue and an unknown Expect on GET: the same interim and final answers as Fastify', async () => {
    const cont = await same(p, request([...appHeaders(app), bearer(token), ['Expect', '100-continue']]));
    expect(statusLines(cont.fast)).toEqual(['HTTP/1.1 100 Continue', 'HTTP/1.1 200 OK']);
    const unknown = await same(p, request([...appHeaders(app), bearer(token), ['Expect', 'x-unknown']]));
    expect(statusLines(unknown.fast)).toEqual(['HTTP/1.1 200 OK']);
  });

  it('Connection: Upgrade (websocket) on GET /app_context: the same answer as Fastify', async () => {
    await same(p, request([...appHeaders(app), bearer(token), ['Connection', 'Upgrade'], ['Upgrade', 'websocket']]));
  });
});

describe('B. bodies on GET and pipelining after them (desync)', () => {
  let p: Pair;
  let app: TestApp;
  let token: string;
  let good: Buffer;
  beforeAll(async () => {
    p = await pair();
    app = await p.h.createApp({ name: 'smuggling' });
    await p.h.activeUser(app, 'bob');
    token = await p.h.login(app, 'bob');
    good = request([...appHeaders(app), bearer(token)]);
  });
  afterAll(async () => p?.close());

  // A request hidden in a GET's body: must be skipped as body bytes, never answered.
  const hidden = () => request([...appHeaders(app), ['Authorization', 'Bearer smuggled-token-0123456789']], { target: '/app_context?smuggled=1' });

  it('Content-Length body holding a whole request, then a real pipelined request: two answers, in order, as Fastify', async () => {
    const inner = hidden();
    const r = await same(p, Buffer.concat([request([...appHeaders(app), bearer(token), ['Content-Length', String(inner.length)]], { body: inner }), good]));
    expect(statusLines(r.fast)).toEqual(['HTTP/1.1 200 OK', 'HTTP/1.1 200 OK']);
    expect(r.outcomes).toEqual(['answered', 'answered', 'answered', 'answered']);
  });

  it('chunked body holding a whole request, then a real pipelined request: two answers, in order, as Fastify', async () => {
    const inner = hidden();
    const chunked = Buffer.concat([Buffer.from(`${inner.length.toString(16)}\r\n`), inner, Buffer.from('\r\n0\r\n\r\n')]);
    const r = await same(p, Buffer.concat([request([...appHeaders(app), bearer(token), ['Transfer-Encoding', 'chunked']], { body: chunked }), good]));
    expect(statusLines(r.fast)).toEqual(['HTTP/1.1 200 OK', 'HTTP/1.1 200 OK']);
  });

  it('CL.TE, TE.CL, two Content-Lengths, Transfer-Encoding variants: refused or answered exactly as Fastify', async () => {
    const inner = hidden();
    const variants: [string, string][][] = [
      [['Content-Length', '4'], ['Transfer-Encoding', 'chunked']],
      [['Transfer-Encoding', 'chunked'], ['Content-Length', '4']],
      [['Content-Length', '4'], ['Content-Length', '5']],
      [['Content-Length', '4, 4']],
      [['Transfer-Encoding', 'chunked, identity']],
      [['Transfer-Encoding', ' chunked']],
      [['Transfer-Encoding', 'xchunked']],
      [['Content-Length', '+4']],
      [['Content-Length', '-1']],
    ];
    for (const extra of variants) {
      const r = await same(p, Buffer.concat([request([...appHeaders(app), bearer(token), ...extra], { body: `0\r\n\r\n${inner.toString('latin1')}` }), good]));
      // Never more answers than requests the bytes hold (with a valid chunked body the "hidden" one is a real third).
      expect(statusLines(r.fast).length, JSON.stringify(extra)).toBeLessThanOrEqual(3);
    }
  });

  it('a body announced but sent late, in pieces: one answer, then the next pipelined request answered after the body, as Fastify', async () => {
    const r = await same(p, [
      request([...appHeaders(app), bearer(token), ['Content-Length', '20']], { body: 'x'.repeat(5) }),
      Buffer.from('y'.repeat(15)),
      good,
    ], { gapMs: 100, quietMs: 400 });
    expect(statusLines(r.fast)).toEqual(['HTTP/1.1 200 OK', 'HTTP/1.1 200 OK']);
  });

  it('a big GET body (2 MiB, over every body limit) then a pipelined request: the same answers as Fastify', async () => {
    const big = Buffer.alloc(2 * 1024 * 1024, 0x41);
    const r = await same(p, Buffer.concat([request([...appHeaders(app), bearer(token), ['Content-Length', String(big.length)]], { body: big }), good]), { quietMs: 500 });
    expect(statusLines(r.fast)).toEqual(['HTTP/1.1 200 OK', 'HTTP/1.1 200 OK']);
  });

  it('pipelined: a Connection: close request, then more: the server stops after the close, as Fastify', async () => {
    const close = request([...appHeaders(app), bearer(token), ['Connection', 'close']]);
    const r = await same(p, Buffer.concat([good, close, good, good]));
    expect(statusLines(r.fast)).toEqual(['HTTP/1.1 200 OK', 'HTTP/1.1 200 OK']);
    expect(r.closed).toBe(true);
  });

  it('pipelined: a fast-path answer, then garbage: the answer is whole, then a 400, as Fastify', async () => {
    const r = await same(p, Buffer.concat([good, Buffer.from('NOT HTTP AT ALL\r\n\r\n')]));
    expect(statusLines(r.fast)).toEqual(['HTTP/1.1 200 OK', 'HTTP/1.1 400 Bad Request']);
  });

  it('pipelined: 50 fast-path requests mixed with cache misses and refusals on one connection: the same 50 answers in order', async () => {
    const wrong = request([...appHeaders(app), bearer('wrong-token-0123456789abcdef')]);
    const query = request([...appHeaders(app), bearer(token)], { target: '/app_context?a=1' });
    const list = Array.from({ length: 50 }, (_, i) => (i % 7 === 3 ? wrong : i % 5 === 2 ? query : good));
    const r = await same(p, Buffer.concat(list), { quietMs: 500 });
    expect(statusLines(r.fast)).toHaveLength(50);
  });
});

describe('C. clients that go away', () => {
  const pairs = pairEach();

  it('200 clients that send a request and reset at once (warm and cold caches, with pipelined requests): the server lives on and answers', async () => {
    const p = await pairs.open();
    const app = await p.h.createApp({ name: 'aborts' });
    const id = await p.h.activeUser(app, 'cyd');
    const token = await p.h.login(app, 'cyd');
    const good = request([...appHeaders(app), bearer(token)]);
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown) => unhandled.push(e);
    process.on('unhandledRejection', onUnhandled);
    try {
      for (const cold of [false, true]) {
        if (cold) await p.h.tollgate.services.caches.changed({ app: { id: app.id, apiKey: app.apiKey }, bans: app.id, user: id });
        await Promise.all(Array.from({ length: 200 }, async (_, i) => {
          const socket = connect(p!.fast, '127.0.0.1');
          socket.on('error', () => undefined);
          await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
          socket.write(i % 2 ? Buffer.concat([good, good, good]) : good);
          if (i % 3 === 0) socket.resetAndDestroy();
          else if (i % 3 === 1) socket.destroy();
          else setImmediate(() => socket.destroy());
        }));
        await sleep(200); // a while for the aborted connections' work to run down; the answer below must be a 200 either way
        const after = await transcript(p.fast, good, { quietMs: 2000 });
        expect(statusLines(after.text), `cold: ${cold}`).toEqual(['HTTP/1.1 200 OK']);
      }
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});

describe('D. X-Forwarded-For with TRUST_PROXY', () => {
  let p: Pair;
  let app: TestApp;
  let token: string;
  beforeAll(async () => {
    p = await pair({ TRUST_PROXY: 'loopback' });
    app = await p.h.createApp({ name: 'proxied', anonymous_access_allowed: true });
    await p.h.activeUser(app, 'dil');
    token = await p.h.login(app, 'dil');
    await p.h.ban(app, 'ip', '203.0.113.66');
    await p.h.ban(app, 'ip', '2001:db8::66');
  });
  afterAll(async () => p?.close());

  it('the forwarded client is the one banned or served, as on Fastify, whatever the form of the header', async () => {
    const cases: [string, [string, string][], number][] = [
      ['banned client', [['X-Forwarded-For', '203.0.113.66']], 403],
      ['banned client with a port', [['X-Forwarded-For', '203.0.113.66:5555']], 403],
      ['banned IPv6 client, other spelling', [['X-Forwarded-For', '[2001:DB8:0::66]:443']], 403],
      ['banned client, IPv4-mapped', [['X-Forwarded-For', '::ffff:203.0.113.66']], 403],
      ['spoofed left part, banned client on the right', [['X-Forwarded-For', '198.51.100.1, 203.0.113.66']], 403],
      ['banned client behind a trusted hop', [['X-Forwarded-For', '203.0.113.66, 127.0.0.5']], 403],
      ['two header lines (joined)', [['X-Forwarded-For', '198.51.100.1'], ['X-Forwarded-For', '203.0.113.66']], 403],
      ['two header lines, banned first', [['X-Forwarded-For', '203.0.113.66'], ['X-Forwarded-For', '198.51.100.1']], 200],
      ['an unbanned client', [['X-Forwarded-For', '198.51.100.1']], 200],
      ['spoofed banned address on the left', [['X-Forwarded-For', '203.0.113.66, 198.51.100.1']], 200],
      ['garbage hop', [['X-Forwarded-For', 'garbage']], 400],
      ['empty header', [['X-Forwarded-For', '']], 400],
      ['trailing comma', [['X-Forwarded-For', '198.51.100.1,']], 400],
      ['zone id', [['X-Forwarded-For', 'fe80::1%eth0']], 400],
      ['unspecified', [['X-Forwarded-For', '0.0.0.0']], 400],
      ['all hops trusted', [['X-Forwarded-For', '127.0.0.9, ::1']], 200],
      ['very many hops', [['X-Forwarded-For', Array.from({ length: 1000 }, (_, i) => `127.0.${i >> 8}.${i & 255}`).join(',')]], 200],
    ];
    for (const [name, xff, status] of cases) {
      const r = await same(p, request([...appHeaders(app), bearer(token), ...xff]));
      expect(statusLines(r.fast), `${name}: ${r.fast}`).toEqual([expect.stringContaining(`HTTP/1.1 ${status} `)]);
      if (status === 400) expect(codeOf(r.fast), name).toBe('invalid_client_address');
    }
  });

  it('a forwarded client under an IP ban: the refusal is logged against the forwarded address on both paths (same reqId as the access line)', async () => {
    const logs = { fast: captureLog(), slow: captureLog() };
    const q = await pair({ TRUST_PROXY: 'loopback', ACCESS_LOG: 'on', LOG_LEVEL: 'info' }, logs);
    try {
      const a = await q.h.createApp({ name: 'proxied log' });
      await q.h.activeUser(a, 'dora');
      const t = await q.h.login(a, 'dora');
      await q.h.ban(a, 'ip', '203.0.113.77');
      const bytes = request([...appHeaders(a), bearer(t), ['X-Forwarded-For', '203.0.113.77']]);
      await transcript(q.fast, bytes); // loads the ban set
      const before = logs.fast.lines.length;
      const outcomes = await outcomesOf(() => transcript(q.fast, bytes));
      expect(outcomes).toEqual(['refused']);
      await until(() => logs.fast.lines.slice(before).some((l) => l.msg === 'request'));
      const lines = logs.fast.lines.slice(before);
      const access = lines.find((l) => l.msg === 'request')!;
      const ban = lines.find((l) => l.event === 'ban_hit')!;
      expect(access).toMatchObject({ status: 403, ip: '203.0.113.77', code: 'banned' });
      expect(ban).toMatchObject({ ip: '203.0.113.77', reqId: access.reqId });
    } finally {
      await q.close();
    }
  });
});

describe('E. the app changes while cached', () => {
  const pairs = pairEach();

  it('secret rotation: the old secret is refused by the next request on the fast path, the new one answered', async () => {
    const p = await pairs.open();
    const app = await p.h.createApp({ name: 'rotation', anonymous_access_allowed: true });
    const old = request(appHeaders(app));
    expect(await outcomesOf(async () => {
      expect(statusLines((await transcript(p!.fast, old)).text)).toEqual(['HTTP/1.1 200 OK']);
      expect(statusLines((await transcript(p!.fast, old)).text)).toEqual(['HTTP/1.1 200 OK']);
    })).toEqual(['passed', 'answered']);
    const rotated = await p.h.admin('POST', `/apps/${app.id}/secret`);
    expect(rotated.statusCode, rotated.body).toBe(200);
    const secret = rotated.json().api_secret as string;
    expect(typeof secret).toBe('string');
    const r = await same(p, old);
    expect(statusLines(r.fast)).toEqual(['HTTP/1.1 401 Unauthorized']);
    expect(codeOf(r.fast)).toBe('invalid_app_credentials');
    expect(r.outcomes).toEqual(['passed', 'passed']);
    const fresh = await same(p, request([['X-Api-Key', app.apiKey], ['X-Api-Secret', secret]]));
    expect(statusLines(fresh.fast)).toEqual(['HTTP/1.1 200 OK']);
    expect(fresh.outcomes[1]).toBe('answered');
  });

  it('a rotation on a keep-alive connection mid-pipeline: the old secret is refused from the next request on', async () => {
    const p = await pairs.open();
    const app = await p.h.createApp({ name: 'rotation keep-alive', anonymous_access_allowed: true });
    const old = request(appHeaders(app));
    const socket = connect(p.fast, '127.0.0.1');
    let buf = '';
    socket.on('data', (d: Buffer) => (buf += d.toString('latin1')));
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write(Buffer.concat([old, old]));
    await until(() => statusLines(buf).length === 2);
    expect((await p.h.admin('POST', `/apps/${app.id}/secret`)).statusCode).toBe(200);
    socket.write(old);
    await until(() => statusLines(buf).length === 3);
    socket.destroy();
    expect(statusLines(buf)).toEqual(['HTTP/1.1 200 OK', 'HTTP/1.1 200 OK', 'HTTP/1.1 401 Unauthorized']);
  });

  it('app deletion: its key is refused at once on the fast path', async () => {
    const p = await pairs.open();
    const app = await p.h.createApp({ name: 'doomed', anonymous_access_allowed: true });
    const bytes = request(appHeaders(app));
    await transcript(p.fast, bytes);
    expect(await outcomesOf(() => transcript(p!.fast, bytes))).toEqual(['answered']);
    const deleted = await p.h.admin('DELETE', `/apps/${app.id}?confirm=${encodeURIComponent('doomed')}`);
    expect(deleted.statusCode, deleted.body).toBe(204);
    const r = await same(p, bytes);
    expect(statusLines(r.fast)).toEqual(['HTTP/1.1 401 Unauthorized']);
    expect(r.outcomes).toEqual(['passed', 'passed']);
  });

  it('signatures made required while cached: the fast path stops answering unsigned at once (nonce_required, as Fastify)', async () => {
    const p = await pairs.open();
    const app = await p.h.createApp({ name: 'sig required', anonymous_access_allowed: true });
    await setUpKeys(p.h, app);
    const bytes = request(appHeaders(app));
    await transcript(p.fast, bytes);
    expect(await outcomesOf(() => transcript(p!.fast, bytes))).toEqual(['answered']);
    const patched = await p.h.admin('PATCH', `/apps/${app.id}`, { signatures: 'required' });
    expect(patched.statusCode, patched.body).toBe(200);
    const r = await same(p, bytes);
    expect(codeOf(r.fast)).toBe('nonce_required');
    expect(r.outcomes).toEqual(['passed', 'passed']);
    // With a nonce: signed on both (answered by the fast path since issue 26).
    const signed = await transcript(p.fast, request([...appHeaders(app), ['Tollgate-Nonce', 'nonce-0123456789abcdef']]));
    expect(statusLines(signed.text)).toEqual(['HTTP/1.1 200 OK']);
    expect(signed.text.toLowerCase()).toContain('tollgate-signature: v1; kid=');
  });

  it('anonymous access turned off while cached: refused at once on the fast path', async () => {
    const p = await pairs.open();
    const app = await p.h.createApp({ name: 'anon toggled', anonymous_access_allowed: true });
    const bytes = request(appHeaders(app));
    await transcript(p.fast, bytes);
    expect(await outcomesOf(() => transcript(p!.fast, bytes))).toEqual(['answered']);
    expect((await p.h.admin('PATCH', `/apps/${app.id}`, { anonymous_access_allowed: false })).statusCode).toBe(200);
    const r = await same(p, bytes);
    expect(statusLines(r.fast)).toEqual(['HTTP/1.1 401 Unauthorized']);
  });
});

describe('F. rate limits on: a Bearer token and legacy headers at once', () => {
  const pairs = pairEach();

  /** 15 requests with a valid Bearer and a wrong legacy password; then the legacy identity alone with the right one. */
  async function scenario(port: number, q: Pair, name: string): Promise<string[]> {
    const app = await q.h.createApp({ name });
    await q.h.activeUser(app, 'eli');
    const token = await q.h.login(app, 'eli');
    const both = request([...appHeaders(app), bearer(token), ['X-Api-Username', 'eli'], ['X-Api-Password', 'wrong password']]);
    const basic = request([...appHeaders(app), ['Authorization', 'Basic ZWxpOndyb25n'], ['X-Api-Username', 'eli'], ['X-Api-Password', 'wrong password']]);
    const out: string[] = [];
    for (let i = 0; i < 15; i++) out.push(...statusLines((await transcript(port, both)).text));
    for (let i = 0; i < 15; i++) out.push(...statusLines((await transcript(port, basic)).text));
    const legacy = await transcript(port, request([...appHeaders(app), ['X-Api-Username', 'eli'], ['X-Api-Password', PASSWORD]]));
    out.push(...statusLines(legacy.text));
    return out;
  }

  it('the token wins: answered by the fast path, never counted against the username; the same statuses as on Fastify', async () => {
    const p = await pairs.open({ RATE_LIMIT: 'on' });
    const slow = await scenario(p.slow, p, 'rl slow');
    let fast!: string[];
    const outcomes = await outcomesOf(async () => {
      fast = await scenario(p!.fast, p!, 'rl fast');
    });
    expect(fast).toEqual(slow);
    expect(fast.slice(0, 15)).toEqual(Array(15).fill('HTTP/1.1 200 OK'));
    expect(fast.at(-1)).toBe('HTTP/1.1 200 OK');
    // The first requests meet cold caches (passed on, then pending loads); once warm, every one is the fast path's.
    expect(outcomes.slice(10, 15)).toEqual(Array(5).fill('answered'));
  });
});

describe('G. request ids and the access log under a mix of outcomes', () => {
  it('every request gets one access line with a distinct reqId; handed-over events carry the line\'s reqId', async () => {
    const logs = { fast: captureLog(), slow: captureLog() };
    const p = await pair({ ACCESS_LOG: 'on', LOG_LEVEL: 'info' }, logs);
    try {
      const app = await p.h.createApp({ name: 'ids' });
      const id = await p.h.activeUser(app, 'flo');
      const token = await p.h.login(app, 'flo');
      const banned = await p.h.createApp({ name: 'ids banned' });
      await p.h.activeUser(banned, 'gus');
      const bannedToken = await p.h.login(banned, 'gus');
      await p.h.ban(banned, 'ip', '127.0.0.1');
      const good = request([...appHeaders(app), bearer(token)]);
      const refused = request([...appHeaders(banned), bearer(bannedToken)]);
      const passed = request([...appHeaders(app), bearer(token)], { target: '/app_context?x' });
      await transcript(p.fast, good);
      await transcript(p.fast, refused);
      await until(() => logs.fast.named('request').length >= 2);
      const before = logs.fast.named('request').length;
      const N = 60;
      const outcomes = await outcomesOf(async () => {
        const list: Buffer[] = [];
        for (let i = 0; i < N; i++) {
          if (i % 10 === 5) await p.h.tollgate.services.caches.changed({ user: id });
          list.push(i % 3 === 0 ? good : i % 3 === 1 ? refused : passed);
        }
        await Promise.all([0, 1, 2].map((k) => transcript(p.fast, Buffer.concat(list.slice(k * 20, k * 20 + 20)), { quietMs: 400 })));
      });
      expect(outcomes).toHaveLength(N);
      await until(() => logs.fast.named('request').length >= before + N);
      const lines = logs.fast.named('request');
      expect(lines.length).toBe(before + N);
      const ids = lines.map((l) => l.reqId);
      expect(new Set(ids).size, 'request ids are unique').toBe(ids.length);
      for (const ban of logs.fast.lines.filter((l) => l.event === 'ban_hit')) expect(ids).toContain(ban.reqId);
    } finally {
      await p.close();
    }
  });
});

describe('H. timeouts around a fast-path answer', () => {
  const pairs = pairEach();

  it('a GET answered early whose announced body then trickles: one 200, then the connection is closed at the request timeout, as Fastify', async () => {
    const p = await pairs.open({ REQUEST_TIMEOUT_MS: '1000', HEADERS_TIMEOUT_MS: '500' });
    const app = await p.h.createApp({ name: 'trickle', anonymous_access_allowed: true });
    const bytes = request([...appHeaders(app), ['Content-Length', '1000']], { body: 'x' });
    const run = async (port: number) => {
      const socket = connect(port, '127.0.0.1');
      let buf = '';
      let closed = false;
      socket.on('data', (d: Buffer) => (buf += d.toString('latin1')));
      socket.on('error', () => undefined);
      socket.on('close', () => (closed = true));
      await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
      socket.write(bytes);
      const timer = setInterval(() => !closed && socket.write('x'), 200);
      const started = Date.now();
      await until(() => closed, 8000);
      clearInterval(timer);
      socket.destroy();
      return { lines: statusLines(buf), closed, ms: Date.now() - started };
    };
    await run(p.fast); // warm
    const slow = await run(p.slow);
    const fast = await run(p.fast);
    expect(fast.lines).toEqual(slow.lines);
    expect(fast.lines).toEqual(['HTTP/1.1 200 OK']);
    expect(fast.closed).toBe(true);
  });

  it('a fast-path answer, then the next request\'s headers trickle on the same connection: 408 after the answer, as Fastify', async () => {
    const p = await pairs.open({ REQUEST_TIMEOUT_MS: '1000', HEADERS_TIMEOUT_MS: '500' });
    const app = await p.h.createApp({ name: 'slow headers', anonymous_access_allowed: true });
    const good = request(appHeaders(app));
    const r = await same(p, [good, Buffer.from('GET /app_context HTTP/1.1\r\nHost: x\r\n')], { gapMs: 50, quietMs: 3000 });
    expect(statusLines(r.fast)).toEqual(['HTTP/1.1 200 OK', 'HTTP/1.1 408 Request Timeout']);
    expect(r.closed).toBe(true);
  });
});

describe('I. a throw inside the fast path after its answer was written', () => {
  it('the access log line fails once: the 200 arrives whole and a request pipelined behind it is still answered on the same connection, as on Fastify', async () => {
    const logs = { fast: captureLog(), slow: captureLog() };
    const p = await pair({ ACCESS_LOG: 'on', LOG_LEVEL: 'info' }, logs);
    try {
      const app = await p.h.createApp({ name: 'log throws', anonymous_access_allowed: true });
      const bytes = request(appHeaders(app));
      await transcript(p.fast, bytes);
      await transcript(p.slow, bytes);
      // The access line (fast-path.ts writes it on the answer's 'finish') throws once on each server.
      const failOnce = (server: FastifyInstance) => {
        const log = server.log as unknown as { info: (...args: unknown[]) => unknown };
        const info = log.info;
        let fail = 1;
        log.info = function (this: unknown, ...args: unknown[]) {
          if (args[1] === 'request' && fail-- > 0) throw new Error('the access log failed');
          return info.apply(this, args);
        };
        return () => {
          log.info = info;
        };
      };
      const restoreSlow = failOnce(p.other);
      const slow = await transcript(p.slow, Buffer.concat([bytes, bytes]), { quietMs: 400 });
      restoreSlow();
      const restoreFast = failOnce(p.h.tollgate.server);
      let fast!: { text: string; closed: boolean };
      const outcomes = await outcomesOf(async () => {
        fast = await transcript(p.fast, Buffer.concat([bytes, bytes]), { quietMs: 400 });
      });
      restoreFast();
      expect(outcomes[0]).toBe('answered'); // the line is written after the answer, where a throw cannot reach it
      expect(statusLines(slow.text), 'Fastify alone').toEqual(['HTTP/1.1 200 OK', 'HTTP/1.1 200 OK']);
      expect(statusLines(fast.text), 'the fast path: the pipelined request is answered too').toEqual(statusLines(slow.text));
      expect(fast.closed).toBe(slow.closed);
      // The server still serves.
      expect(statusLines((await transcript(p.fast, bytes)).text)).toEqual(['HTTP/1.1 200 OK']);
    } finally {
      await p.close();
    }
  });
});

/** An anonymous app whose /app_context answer is over 6 MiB (100 variables of 64 KiB): its request, already answered once on the fast path. */
async function bigAnswer(p: Pair, name: string): Promise<Buffer> {
  const app = await p.h.createApp({ name, anonymous_access_allowed: true });
  const value = 'v'.repeat(65_536);
  for (let i = 0; i < 100; i++) {
    const res = await p.h.admin('PUT', `/apps/${app.id}/variables/var_${i}`, { value });
    expect(res.statusCode, res.body).toBeLessThan(300);
  }
  const bytes = request(appHeaders(app));
  await transcript(p.fast, bytes, { quietMs: 500 }); // warm
  return bytes;
}

describe('J. a throw after the answer began, with a big answer the client reads slowly', () => {
  it('the access log line fails once while a 6 MiB answer is still buffered: the client still receives the whole body (Fastify logs only after the last byte)', async () => {
    const logs = { fast: captureLog(), slow: captureLog() };
    const p = await pair({ ACCESS_LOG: 'on', LOG_LEVEL: 'info' }, logs);
    try {
      const bytes = await bigAnswer(p, 'big answer');
      const read = async (port: number, server: FastifyInstance) => {
        const log = server.log as unknown as { info: (...args: unknown[]) => unknown };
        const info = log.info;
        let fail = 1;
        log.info = function (this: unknown, ...args: unknown[]) {
          if (args[1] === 'request' && fail-- > 0) throw new Error('the access log failed');
          return info.apply(this, args);
        };
        try {
          const socket = connect(port, '127.0.0.1');
          socket.on('error', () => undefined);
          await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
          socket.pause(); // a slow reader: the answer stays in the server's buffers a while
          socket.write(bytes);
          await sleep(500); // the point: the client reads nothing for a while
          let buf = Buffer.alloc(0);
          socket.on('data', (d: Buffer) => (buf = Buffer.concat([buf, d])));
          let closed = false;
          socket.on('close', () => (closed = true));
          socket.resume();
          const deadline = Date.now() + 10_000;
          const complete = () => {
            const end = buf.indexOf('\r\n\r\n');
            if (end < 0) return false;
            const length = Number(/content-length: (\d+)/i.exec(buf.subarray(0, end).toString('latin1'))?.[1]);
            return buf.length >= end + 4 + length;
          };
          while (!complete() && !closed && Date.now() < deadline) await sleep(20);
          socket.destroy();
          const end = buf.indexOf('\r\n\r\n');
          const length = Number(/content-length: (\d+)/i.exec(buf.subarray(0, end).toString('latin1'))?.[1]);
          return { announced: length, received: buf.length - end - 4 };
        } finally {
          log.info = info;
        }
      };
      const slow = await read(p.slow, p.other);
      expect(slow.received, 'Fastify alone').toBe(slow.announced);
      const fast = await read(p.fast, p.h.tollgate.server);
      expect(fast.announced).toBeGreaterThan(6_000_000);
      expect(fast.received, 'the fast path: body bytes received of those announced').toBe(fast.announced);
    } finally {
      await p.close();
    }
  });
});

describe('K. a client that closes mid-answer', () => {
  it('a 6 MiB answer read slowly and abandoned after 1 MiB: one access line, as Fastify\'s (status, and a duration covering the write, which the latency histogram shares)', async () => {
    const logs = { fast: captureLog(), slow: captureLog() };
    const p = await pair({ ACCESS_LOG: 'on', LOG_LEVEL: 'info' }, logs);
    try {
      const bytes = await bigAnswer(p, 'abandoned');
      await transcript(p.slow, bytes, { quietMs: 500 });
      const abandon = async (port: number, log: LogCapture) => {
        const before = log.named('request').length;
        const socket = connect(port, '127.0.0.1');
        socket.on('error', () => undefined);
        await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
        socket.pause();
        socket.write(bytes);
        await sleep(300); // the point: 300 ms unread, which the durations below must cover
        let got = 0;
        socket.on('data', (d: Buffer) => {
          got += d.length;
          if (got > 1024 * 1024) socket.resetAndDestroy();
        });
        socket.resume();
        await waitFor('the abandoned answer\'s access line', () => log.named('request').length > before);
        await sleep(1500); // and no second line for it: nothing to wait for but a while
        return log.named('request').slice(before).map((l) => ({ status: l.status, route: l.route, ms: l.ms as number }));
      };
      const slow = await abandon(p.slow, logs.slow);
      const fast = await abandon(p.fast, logs.fast);
      expect(fast.map(({ ms: _, ...rest }) => rest)).toEqual(slow.map(({ ms: _, ...rest }) => rest));
      expect(slow).toHaveLength(1);
      // Fastify's line is written at 'finish' (reply.elapsedTime): its duration covers the 300 ms the client did not read.
      expect(slow[0]!.ms, 'Fastify alone').toBeGreaterThanOrEqual(250);
      // The fast path writes its line right after res.end(), while most of the answer is still buffered.
      expect(fast[0]!.ms, 'the fast path: the duration in its access line').toBeGreaterThanOrEqual(250);
    } finally {
      await p.close();
    }
  });
});

describe('L. signed requests (Tollgate-Nonce): the fast path signs only what the route signs, byte for byte', () => {
  let p: Pair;
  let app: TestApp;
  let token: string;
  beforeAll(async () => {
    p = await pair();
    app = await p.h.createApp({ name: 'signed attacks', anonymous_access_allowed: true });
    await setUpKeys(p.h, app);
    await p.h.activeUser(app, 'sia');
    token = await p.h.login(app, 'sia');
  });
  afterAll(async () => p?.close());

  it('odd nonces, credentials that fail, a wrong secret, repeated and padded credential headers, non-ASCII bytes: the same transcript as Fastify (signatures included)', async () => {
    const nonce = 'nonce-0123456789abcdef';
    const cases: [string, HeaderValue][][] = [
      // Nonces the pattern refuses (422 on both, never answered by the fast path) and ones it takes.
      [...appHeaders(app), bearer(token), ['Tollgate-Nonce', 'n'.repeat(15)]],
      [...appHeaders(app), bearer(token), ['Tollgate-Nonce', 'n'.repeat(65)]],
      [...appHeaders(app), bearer(token), ['Tollgate-Nonce', 'nonce+0123456789abcdef']],
      [...appHeaders(app), bearer(token), ['Tollgate-Nonce', Buffer.from('nonce-0123456789abcdé', 'utf8')]],
      [...appHeaders(app), bearer(token), ['Tollgate-Nonce', nonce], ['tollgate-nonce', nonce]],
      [...appHeaders(app), bearer(token), ['Tollgate-Nonce', `  ${nonce}\t`]],
      [...appHeaders(app), bearer(token), ['TOLLGATE-NONCE', 'n'.repeat(64)]],
      // Credentials that fail, a wrong secret, an unknown key: refusals (signed by the route when the app is known).
      [...appHeaders(app), bearer('tg_session_forged'), ['Tollgate-Nonce', nonce]],
      [['X-Api-Key', app.apiKey], ['X-Api-Secret', 'wrong'], bearer(token), ['Tollgate-Nonce', nonce]],
      [['X-Api-Key', 'unknown'], ['X-Api-Secret', app.apiSecret], ['Tollgate-Nonce', nonce]],
      // Repeated and padded credential headers: the first, trimmed, is what is signed over on both.
      [...appHeaders(app), bearer(token), ['Authorization', 'Bearer other'], ['Tollgate-Nonce', nonce]],
      [...appHeaders(app), ['Authorization', `\t Bearer ${token}  `], ['Tollgate-Nonce', nonce]],
      [...appHeaders(app), bearer(token), ['X-Hardware-Id', 'hw-1'], ['X-Hardware-Id', 'hw-2'], ['Tollgate-Nonce', nonce]],
      // Latin-1 / invalid UTF-8 in credential headers beside a nonce (422 naming the header, unsigned or signed as the route does).
      [...appHeaders(app), ['X-Api-Username', Buffer.from([0xc3, 0x28])], ['X-Api-Password', Buffer.from([0xff])], ['Tollgate-Nonce', nonce]],
      [...appHeaders(app), bearer(token), ['X-Hardware-Id', Buffer.from('hw-é', 'latin1')], ['Tollgate-Nonce', nonce]],
      // Anonymous, and a license code that does not exist.
      [...appHeaders(app), ['Tollgate-Nonce', nonce]],
      [...appHeaders(app), ['X-Api-License-Code', 'NOPE-NOPE'], ['Tollgate-Nonce', nonce]],
    ];
    for (const headers of cases) {
      const r = await same(p, request(headers));
      const label = JSON.stringify(headers.map(([n, v]) => [n, String(v).slice(0, 30)]));
      expect(statusLines(r.fast).length, label).toBe(1);
      // What the fast path answered itself is a 200 the route also signs: never a refusal of its own.
      if (r.outcomes.includes('answered')) expect(statusLines(r.fast)[0], label).toBe('HTTP/1.1 200 OK');
    }
  });

  it('a nonce on a pipelined keep-alive connection mixed with unsigned requests: every answer signed or not as on Fastify, in order', async () => {
    const signed = request([...appHeaders(app), bearer(token), ['Tollgate-Nonce', 'nonce-pipelined-000001']]);
    const plain = request([...appHeaders(app), bearer(token)]);
    const refused = request([...appHeaders(app), bearer('tg_session_forged'), ['Tollgate-Nonce', 'nonce-pipelined-000002']]);
    const r = await same(p, Buffer.concat([signed, plain, refused, signed, plain]));
    expect(statusLines(r.fast)).toEqual(['HTTP/1.1 200 OK', 'HTTP/1.1 200 OK', 'HTTP/1.1 401 Unauthorized', 'HTTP/1.1 200 OK', 'HTTP/1.1 200 OK']);
    expect(r.fast.match(/tollgate-signature: v1; kid=/gi)?.length).toBe(3);
    expect(r.outcomes.filter((o) => o === 'answered').length).toBeGreaterThanOrEqual(6);
  });
});
