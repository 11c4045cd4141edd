import { createHash } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ADMIN_TOKEN, harness, PASSWORD, STORE, type Harness, type TestApp } from './helpers.js';

/**
 * Property-based fuzzing of every client and admin endpoint with random and
 * malicious input. Every property holds for every request:
 *   - never a 5xx;
 *   - every 4xx is the error shape of DECISIONS.md (JSON, string `detail`,
 *     a stable string `code`; a 422 lists its fields in `errors`, nothing
 *     else does), with no stack trace;
 *   - the server still answers GET /healthz;
 *   - a rejected (4xx) request changes nothing stored: every table, the
 *     audit log included, but admin_tokens.last_used_at, which any
 *     authenticated admin call may touch. (Successful calls legitimately
 *     write, so only rejected ones are compared.)
 * The seed is fixed, so a run is reproducible; a failure prints the shrunk
 * counterexample.
 */

/** Fixed, so every run is the same run. (`FUZZ_SEED` explores other seeds by hand; never set it in CI.) */
const SEED = Number(process.env.FUZZ_SEED ?? 20261122);
const runs = (numRuns: number) => ({ seed: SEED, numRuns });
/** Generous: a passing run takes a fraction of this; a failing one needs time to shrink. */
const TIMEOUT = 180_000;
const pgMissing = STORE === 'postgres' && !inject('pgUrl');

// ---------------------------------------------------------------------------
// Requests, and how a counterexample prints (long values abridged)
// ---------------------------------------------------------------------------

type Headers = Record<string, string | string[]>;
interface Req {
  method: string;
  url: string;
  headers: Headers;
  payload?: string | Buffer;
}

function abridge(s: string): string {
  return s.length > 240 ? `${JSON.stringify(s.slice(0, 120))}…(${s.length} chars)` : JSON.stringify(s);
}

function show(r: Req): string {
  const headers = Object.entries(r.headers)
    .map(([k, v]) => `${k}: ${Array.isArray(v) ? `[${v.map(abridge).join(', ')}]` : abridge(v)}`)
    .join('; ');
  const payload = r.payload === undefined ? 'none' : Buffer.isBuffer(r.payload) ? `<${r.payload.length} bytes>` : abridge(r.payload);
  return `${r.method} ${abridge(r.url)} {${headers}} body=${payload}`;
}

function req(method: string, url: string, headers: Headers, payload?: string | Buffer): Req {
  const r: Req = { method, url, headers, ...(payload !== undefined && { payload }) };
  Object.defineProperty(r, fc.toStringMethod, { value: () => show(r), enumerable: false });
  return r;
}

// ---------------------------------------------------------------------------
// The checks
// ---------------------------------------------------------------------------

/** Every stable code of DECISIONS.md and docs/decisions.md that a 4xx may carry. */
const CODES = new Set([
  'invalid_app_credentials', 'invalid_admin_token', 'validation_error', 'username_taken', 'invalid_license', 'license_used',
  'invalid_credentials', 'session_expired', 'device_required', 'device_mismatch', 'device_limit', 'membership_inactive', 'banned',
  'anonymous_not_allowed', 'registration_closed', 'file_not_found', 'rate_limited', 'payload_too_large', 'not_found', 'conflict',
  'range_not_satisfiable',
]);

/** Throws unless the answer is acceptable; returns whether the request was rejected (4xx). */
function checkAnswer(r: Req, res: LightMyRequestResponse): boolean {
  const what = `${show(r)}\n  → ${res.statusCode} ${abridge(res.body)}`;
  if (res.statusCode >= 500) throw new Error(`5xx: ${what}`);
  if (res.statusCode < 400) return false;
  if (r.method === 'HEAD') return true; // no body to check
  if (!/^application\/json/.test(String(res.headers['content-type']))) throw new Error(`4xx not JSON: ${what}`);
  let body: unknown;
  try {
    body = JSON.parse(res.body);
  } catch {
    throw new Error(`4xx body does not parse: ${what}`);
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new Error(`4xx body not an object: ${what}`);
  const { detail, code, errors } = body as { detail?: unknown; code?: unknown; errors?: unknown };
  if (typeof detail !== 'string' || detail.length === 0) throw new Error(`4xx without a string detail: ${what}`);
  if (typeof code !== 'string' || !CODES.has(code)) throw new Error(`4xx without a stable code: ${what}`);
  if (res.statusCode === 422) {
    if (!Array.isArray(errors) || errors.length === 0) throw new Error(`422 without an errors list: ${what}`);
    for (const e of errors as unknown[]) {
      const fe = e as { field?: unknown; message?: unknown } | null;
      if (typeof fe !== 'object' || fe === null || typeof fe.field !== 'string' || typeof fe.message !== 'string') {
        throw new Error(`422 with a malformed errors entry: ${what}`);
      }
    }
  } else if (errors !== undefined) {
    throw new Error(`non-422 carrying errors: ${what}`);
  }
  // Stack frames and module paths, never echoed input (a detail may quote a field name the fuzz made up).
  if (/\.(?:ts|js|cjs|mjs):\d+:\d+\)|node:internal|node_modules\//.test(res.body)) throw new Error(`4xx leaks internals: ${what}`);
  return true;
}

const TABLES = [
  'apps', 'users', 'licenses', 'activations', 'devices', 'user_ips', 'sessions', 'variables', 'files', 'blobs', 'blob_chunks', 'bans', 'admin_tokens', 'audit_log',
] as const;
type Snapshot = Record<string, string>;

function canon(v: unknown): unknown {
  if (v === null || v === undefined) return null;
  if (v instanceof Uint8Array) return `bytes:${createHash('sha256').update(v).digest('hex')}`;
  if (typeof v === 'bigint') return v.toString();
  if (v instanceof Date) return v.toISOString();
  return v;
}

/** Per table: its row count and a digest of its rows (order-independent). */
async function snapshot(h: Harness): Promise<Snapshot> {
  const db = h.tollgate.services.store.db;
  const digests = await Promise.all(
    TABLES.map(async (t) => {
      const rows = await db.all<Record<string, unknown>>(`SELECT * FROM ${t}`);
      const lines = rows
        .map((row) => JSON.stringify(Object.keys(row).filter((k) => !(t === 'admin_tokens' && k === 'last_used_at')).sort().map((k) => [k, canon(row[k])])))
        .sort();
      return [t, `${rows.length} rows, ${createHash('sha256').update(lines.join('\n')).digest('hex').slice(0, 16)}`] as const;
    }),
  );
  return Object.fromEntries(digests);
}

/**
 * Sends fuzzed requests to one harness and checks every property. The
 * snapshot after a rejected request is the snapshot before the next one, so
 * most requests cost one snapshot.
 */
class Fuzzer {
  private last: Snapshot | null = null;
  /** Answers seen by the current property (`FUZZ_STATS=1` prints them: is the fuzz getting past validation?). */
  private seen = new Map<string, number>();
  constructor(readonly h: Harness) {}

  async send(r: Req): Promise<LightMyRequestResponse> {
    const before = this.last ?? (await snapshot(this.h));
    this.last = null; // unknown until this request is judged
    let res: LightMyRequestResponse;
    try {
      res = await this.h.inject({ method: r.method as 'GET', url: r.url, headers: r.headers, ...(r.payload !== undefined && { payload: r.payload }) });
    } catch (err) {
      // E.g. a streamed 200 whose stream then fails: the client gets a truncated body and a reset connection.
      throw new Error(`no complete answer (${(err as Error).message}): ${show(r)}`);
    }
    const rejected = checkAnswer(r, res);
    if (process.env.FUZZ_TRACE) process.stdout.write(`${show(r).slice(0, 300)}\n    → ${res.statusCode} ${res.body.slice(0, 200)}\n`);
    if (process.env.FUZZ_STATS) {
      const label = `${res.statusCode} ${rejected && r.method !== 'HEAD' ? (res.json() as { code: string }).code : ''}`;
      this.seen.set(label, (this.seen.get(label) ?? 0) + 1);
    }
    const health = await this.h.inject({ method: 'GET', url: '/healthz' });
    if (health.statusCode !== 200 || (health.json() as { status?: unknown }).status !== 'ok') throw new Error(`/healthz answers ${health.statusCode} ${health.body} after ${show(r)}`);
    if (rejected) {
      const after = await snapshot(this.h);
      const changed = TABLES.filter((t) => after[t] !== before[t]);
      if (changed.length > 0) {
        throw new Error(
          `a rejected request changed the store (${changed.map((t) => `${t}: ${before[t]} → ${after[t]}`).join('; ')}): ${show(r)}\n  → ${res.statusCode} ${abridge(res.body)}`,
        );
      }
      this.last = after;
    }
    return res;
  }

  /** After a change made outside `send` (a fixture built mid-test), the cached snapshot is stale. */
  forget(): void {
    this.last = null;
  }

  async property(arb: fc.Arbitrary<Req>, numRuns: number, check?: (r: Req, res: LightMyRequestResponse) => void): Promise<void> {
    this.seen.clear();
    await fc.assert(
      fc.asyncProperty(arb, async (r) => {
        const res = await this.send(r);
        check?.(r, res);
      }),
      runs(numRuns),
    );
    if (process.env.FUZZ_STATS) {
      const line = [...this.seen].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k}×${n}`).join(', ');
      process.stdout.write(`  [${expect.getState().currentTestName}] ${line}\n`);
    }
  }
}

// ---------------------------------------------------------------------------
// Arbitraries: strings, values, bodies, headers, path segments, query strings
// ---------------------------------------------------------------------------

/** Strings that have broken parsers, normalisers, databases and log lines before. */
const SPECIALS = [
  '', ' ', '  ', '\t', '\n', '\r\n', '\u0000', 'a\u0000b', '\u0000\u0000\u0000', '\u001b[31m', '\u007f', '\u0085',
  '\u202e', 'abc\u202edef', '\u202d', '\u2066', '\u200b', 'a\u200bb', '\u200c', '\u200d', '\u2060', '\ufeff', '\ufffe', '\uffff',
  'e\u0301', '\u0301', '\u0301\u0301\u0301\u0301', 'Z\u0351\u0352\u0353\u0354\u0355\u0356', '\ufdfa', '\ufb00', '\u2163', '\u212a', 'İ', 'ß', 'ǅ',
  '\u00a0', '\u3000', '\u2028', '\u2029', '\ud800', '\udfff', 'a\ud800b', '\udc00\ud800', '😀', '👩‍👩‍👧‍👦', '🏳️‍🌈', '𝔘𝔫𝔦𝔠𝔬𝔡𝔢', '\u{10ffff}', '\u{e0001}', '\u{f0000}',
  'مرحبا', 'שלום', 'ﷺ', '한국어', '日本語', 'Ω≈ç√∫', '%', '%%', '%00', '%s%n%x', '\\', '\\\\', '\\x00', '_', '*', '?', "'", '"', '`', '\'"`',
  "'; DROP TABLE users; --", "' OR '1'='1", '1; SELECT pg_sleep(10)', '../../../etc/passwd', '..\\..\\windows\\win.ini', '/', '//', '.', '..',
  '${jndi:ldap://x/a}', '{{7*7}}', '<script>alert(1)</script>', '__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty',
  'null', 'undefined', 'NaN', 'Infinity', 'true', 'false', '0', '-1', '1e400', '0x10', '[]', '{}', 'alice', 'ALICE', 'Alice', 'ａｌｉｃｅ',
];

const shortText = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.string({ unit: 'grapheme', maxLength: 6 }),
  fc.constantFrom(...SPECIALS),
);

/** Up to ~70 KB: past the 64 KiB client body limit, and around every field's length bounds. */
const hugeString = fc
  .tuple(
    fc.constantFrom('a', 'é', '😀', '\u0000', 'ﷺ', 'e\u0301', '\u200b', 'ab ', '\ud800', '\\', '"'),
    fc.oneof(fc.constantFrom(2, 3, 63, 64, 65, 127, 128, 129, 199, 200, 201, 255, 256, 257, 1024, 1025, 65_535, 65_536, 65_537), fc.integer({ min: 1, max: 70_000 })),
  )
  .map(([unit, n]) => unit.repeat(Math.ceil(n / unit.length)).slice(0, n));

const weirdString: fc.Arbitrary<string> = fc.oneof(
  { weight: 5, arbitrary: fc.array(shortText, { maxLength: 6 }).map((parts) => parts.join('')) },
  { weight: 3, arbitrary: fc.constantFrom(...SPECIALS) },
  { weight: 1, arbitrary: hugeString },
);

const weirdNumber = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.constantFrom(0, -0, -1, 1, 1.5, 59, 60, 1000, 1001, 1024, 1025, 10_001, 2 ** 31, 2 ** 53, 2 ** 53 + 2, -(2 ** 53), 1e21, 1e308, Number.MIN_VALUE),
);

const weirdValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: weirdString },
  { weight: 2, arbitrary: weirdNumber },
  { weight: 1, arbitrary: fc.boolean() },
  { weight: 1, arbitrary: fc.constant(null) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2, stringUnit: 'binary' }) },
  { weight: 1, arbitrary: fc.array(weirdString, { maxLength: 3 }) },
  { weight: 1, arbitrary: fc.dictionary(shortText, weirdString, { maxKeys: 3 }) },
);

function text(v: unknown): string {
  try {
    return JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? x.toString() : x)) ?? 'null';
  } catch {
    return 'null';
  }
}

const kv = (k: string, v: unknown) => `${JSON.stringify(k)}:${text(v)}`;

/** Text that is not (acceptable) JSON. */
const garbage = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom(
    '', ' ', '\n', 'null', 'true', '0', '-0', '1e999', 'NaN', '"str"', '[]', '[{}]', '{}{}', '{"a":1}{"b":2}', '{', '}', '{"a":', '{"a" 1}', "{'a':1}",
    '{"a":1,}', '{"a":1 /* c */}', '// c\n{}', '\ufeff{}', '{"a":"\u0000"}', '{"a":"\n"}', '{"a":"\\u00"}', '{"a":"\\ud800"}', '{"\\u0000":1}',
    '{"a":01}', '{"a":0x10}', '{"a":Infinity}', '{"a":undefined}', '\u0000', '\u0000{}', '{}\u0000', 'username=a&password=b', '<xml/>',
  ),
  fc.integer({ min: 1, max: 30_000 }).map((n) => '['.repeat(n) + ']'.repeat(n)),
  fc.integer({ min: 1, max: 12_000 }).map((n) => '{"a":'.repeat(n) + '1' + '}'.repeat(n)),
  fc.integer({ min: 1, max: 30_000 }).map((n) => '['.repeat(n)),
  fc.integer({ min: 65_000, max: 70_000 }).map((n) => `{"a":"${'x'.repeat(n)}"}`),
);

/** Field values of the right JSON type with odd content, for the typed bodies below. */
const intish = fc.oneof(
  fc.integer({ min: -5, max: 2000 }),
  fc.constantFrom(0, -1, 1, 59, 60, 61, 999, 1000, 1001, 1024, 1025, 10_001, 31_536_000, 31_536_001, 1_000_000_000, 1_000_000_001, 2 ** 31, 2 ** 53, 2 ** 53 + 2, 1e21),
  fc.double(),
  fc.constantFrom('1', '60', ' 1', '1e2', ''),
);
const boolish = fc.oneof({ weight: 3, arbitrary: fc.boolean() }, { weight: 1, arbitrary: fc.constantFrom('true', 'false', 0, 1, null, 'yes') });
const dateish = fc.oneof(
  fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
  fc.constantFrom(
    '2026-01-01T00:00:00Z', '2026-01-01T00:00:00.000Z', '2025-12-31', '2026-02-30T00:00:00Z', '2026-01-01T25:00:00Z', '2026-01-01T00:00:00+25:00',
    '+275760-09-13T00:00:00.000Z', '+275760-09-13T00:00:00.001Z', '-271821-04-20T00:00:00.000Z', '0000-01-01T00:00:00Z', '1970-01-01T00:00:00Z',
    '1e13', '0', '-1', 'now', 'yesterday', 'Thu, 01 Jan 2026 00:00:00 GMT', '2026', '2026-01-01T00:00:00Z\u0000', '',
  ),
  weirdString,
);

/**
 * JSON-ish request bodies for an endpoint whose fields are `keys`, around a
 * valid body `base` (so some inputs get past validation and reach the
 * domain), and with `typed` field values of the right type but odd content.
 */
function bodies(keys: readonly string[], base: Record<string, unknown>, typed: Record<string, fc.Arbitrary<unknown>> = {}): fc.Arbitrary<string | undefined> {
  const key = fc.constantFrom(...keys);
  const field = fc.oneof(weirdValue, weirdString);
  const fields = fc.record(Object.fromEntries(keys.map((k) => [k, field])), { requiredKeys: [] });
  const typedFields = fc.record(Object.fromEntries(keys.map((k) => [k, fc.oneof({ weight: 4, arbitrary: typed[k] ?? weirdString }, { weight: 1, arbitrary: field })])), { requiredKeys: [] });
  const baseText = Object.entries(base).map(([k, v]) => kv(k, v));
  const protoKey = fc.constantFrom('__proto__', 'constructor', 'prototype', '__defineGetter__', 'toString', 'valueOf', 'hasOwnProperty');
  const protoValue = fc.oneof(
    fc.constant({ isAdmin: true, polluted: 'yes' }),
    fc.constant({ prototype: { polluted: 'yes' } }),
    fc.dictionary(fc.constantFrom(...keys), weirdValue, { maxKeys: 3 }),
    weirdValue,
  );
  const w = (weight: number, arbitrary: fc.Arbitrary<string | undefined>) => ({ weight, arbitrary });
  return fc.oneof(
    // Arbitrary JSON values.
    w(1, fc.json({ maxDepth: 3, stringUnit: 'binary' })),
    w(1, fc.anything({ maxDepth: 2, withBoxedValues: true, withMap: true, withSet: true, withNullPrototype: true, withBigInt: true, withDate: true, withTypedArray: true, withSparseArray: true, stringUnit: 'binary' }).map(text)),
    // The right keys with wrong types or odd content, some missing.
    w(1, fields.map(text)),
    w(2, typedFields.map(text)),
    // A valid body with some fields replaced.
    w(1, fields.map((f) => text({ ...base, ...f }))),
    w(3, typedFields.map((f) => text({ ...base, ...f }))),
    // A valid body with exactly one field made odd: the likeliest to get deep into the domain.
    w(4, key.chain((k) => (typed[k] ?? field).map((v) => text({ ...base, [k]: v })))),
    // A valid body with an unknown extra field.
    w(1, fc.tuple(shortText, weirdValue).map(([k, v]) => `{${[...baseText, kv(k, v)].join(',')}}`)),
    // Duplicate keys in the raw text: which one wins must not matter to safety.
    w(1, fc.tuple(key, field, field).map(([k, a, b]) => `{${[kv(k, a), ...baseText, kv(k, b)].join(',')}}`)),
    // Prototype-pollution keys, at the top and nested.
    w(1, fc.tuple(protoKey, protoValue, fc.boolean()).map(([k, v, first]) => `{${(first ? [kv(k, v), ...baseText] : [...baseText, kv(k, v)]).join(',')}}`)),
    w(1, fc.tuple(key, protoKey, protoValue).map(([k, p, v]) => `{${[...baseText.filter((t) => !t.startsWith(JSON.stringify(k) + ':')), `${JSON.stringify(k)}:{${kv(p, v)}}`].join(',')}}`)),
    // Not JSON at all, a truncated valid body, nothing.
    w(1, garbage),
    w(1, fc.nat().map((n) => {
      const t = text(base);
      return t.slice(0, n % t.length);
    })),
    w(1, fc.constant(undefined)),
  );
}

const contentTypes = fc.constantFrom<string | undefined>(
  undefined, 'application/json', 'application/json', 'application/json', 'application/json; charset=utf-8', 'text/plain', 'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=----x', 'application/octet-stream', 'application/json; charset=utf-16le', '', ';', '*/*', 'application/json\u00e9', 'x'.repeat(2000),
);
/** The admin API parses JSON only when it is declared: mostly declare it, so the fuzz reaches the schemas. */
const jsonTypes = fc.oneof({ weight: 5, arbitrary: fc.constant<string | undefined>('application/json') }, { weight: 2, arbitrary: contentTypes });

/** What a client that sends UTF-8 bytes in a header looks like to Node (latin1), minus what HTTP itself forbids (CTLs). */
const asHeader = (s: string) => Buffer.from(s, 'utf8').toString('latin1').replace(/[^\t\x20-\x7e\x80-\xff]/g, '');

const oddHeader: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: weirdString.map((s) => asHeader(s).slice(0, 16_000)) },
  { weight: 1, arbitrary: fc.constantFrom('', ' ', '\t', 'null', 'undefined', ',', ', ,') },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 40 }).map((b) => asHeader(Buffer.from(b).toString('latin1'))) },
  { weight: 1, arbitrary: fc.integer({ min: 100, max: 16_000 }).map((n) => 'k'.repeat(n)) },
);

/** A header value: odd, or one of the given good values; sometimes sent twice (an array). */
function headerOf(...good: string[]): fc.Arbitrary<string | string[]> {
  const one = good.length > 0 ? fc.oneof(oddHeader, fc.constantFrom(...good)) : oddHeader;
  return fc.oneof({ weight: 4, arbitrary: one }, { weight: 1, arbitrary: fc.array(one, { minLength: 2, maxLength: 3 }) });
}

const schemes = fc.constantFrom('Bearer', 'bearer', 'BEARER', 'Basic', 'Digest', 'Token', 'Negotiate', 'Bearer\t', 'Bearer  ', '', 'Bearer:');
function authorizationOf(...tokens: string[]): fc.Arbitrary<string | string[]> {
  const variants = tokens.flatMap((t) => [`Bearer ${t}x`, `Bearer ${t.slice(0, -1)}`, `Bearer ${t} ${t}`, `Bearer ${t.toUpperCase()}`, `Basic ${Buffer.from(`admin:${t}`).toString('base64')}`]);
  return fc.oneof(
    fc.tuple(schemes, oddHeader).map(([s, v]) => `${s} ${v}`),
    fc.constantFrom('Bearer', 'Bearer ', 'Bearer tg_sess_', 'Bearer tg_adm_', 'Bearer tg_sess_AAAA', ...variants),
    headerOf(),
  );
}

/** Percent-encodes the UTF-8 bytes of `s` (lone surrogates become U+FFFD, as any client would send them). */
function pct(s: string): string {
  let out = '';
  for (const b of Buffer.from(s, 'utf8')) out += /[A-Za-z0-9\-._~]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  return out;
}

/** Path-segment tricks: traversal, NUL, odd encodings, near-UUIDs, very long, unicode. */
const pathTrick: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '..%2F..%2Fetc%2Fpasswd', '..%2f..%2f..%2fetc%2fshadow', ' ', 'a b', '..%2F', '%2e', '%2e%2e', '%2E%2E%2F', '.', '..', '%00', 'a%00b', '%20', '+', '%2F', '%5C', '%25', '%', '%zz', '%E0%A4%A',
    '%C0%AF', '%FF', '%FE%FF', '~', '*', '%2A', '', '%20%20', 'null', 'undefined', '0', '-1', '__proto__', 'constructor', 'prototype', 'hasOwnProperty',
    '00000000-0000-0000-0000-000000000000', 'ffffffff-ffff-ffff-ffff-ffffffffffff', '%7B00000000-0000-0000-0000-000000000000%7D',
    'urn%3Auuid%3A00000000-0000-0000-0000-000000000000', '%E2%80%AE', '%E2%80%8B', '%F0%9F%98%80', '%ED%A0%80',
  ),
  fc.uuid().map((u) => u.toUpperCase()),
  fc.uuid().map((u) => u.replace(/-/g, '')),
  fc.uuid().map((u) => `${u}%00`),
  fc.uuid().map((u) => `${u}%20`),
  fc.uuid().map((u) => `%20${u}`),
  fc.uuid().map((u) => `${u}.`),
  weirdString.map((s) => pct(s).slice(0, 4000)),
  fc.oneof(fc.constantFrom(199, 200, 201), fc.integer({ min: 150, max: 5000 })).map((n) => 'a'.repeat(n)),
);

/** A query string over `keys` (with good values `good`), with odd keys, values and encodings. */
function queryOf(keys: readonly string[], good: readonly string[] = []): fc.Arbitrary<string> {
  const key = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...(keys.length > 0 ? keys : ['q'])) },
    { weight: 1, arbitrary: fc.constantFrom('__proto__', 'constructor', '__proto__[x]', 'constructor[prototype][x]', 'a[]', 'a[b]', '', '%00', '%') },
    { weight: 1, arbitrary: shortText.map(pct) },
  );
  const value = fc.oneof(
    { weight: 3, arbitrary: weirdString.map((s) => pct(s).slice(0, 20_000)) },
    {
      weight: 3,
      arbitrary: fc.constantFrom(
        '', '0', '-1', '1', '50', '500', '501', '1e2', '0x10', '1.5', '%201', '1%20', 'true', 'false', 'TRUE', 'yes', '1', 'null', '%', '%zz', '%00', '%5C', '%25',
        '_', '%25%25', '%5C%5C', '9'.repeat(30), 'NaN', 'Infinity', '-Infinity', '2026-01-01T00%3A00%3A00Z', '%2B275760-09-13T00%3A00%3A00.000Z',
        '-271821-04-20', '0000-00-00', '9999-99-99T99%3A99%3A99Z', 'x'.repeat(201), 'a', 'ip', 'user', 'license', 'hardware_id',
      ),
    },
    ...(good.length > 0 ? [{ weight: 2, arbitrary: fc.constantFrom(...good.map(pct)) }] : []),
  );
  const pair = fc.oneof({ weight: 5, arbitrary: fc.tuple(key, value).map(([k, v]) => `${k}=${v}`) }, { weight: 1, arbitrary: key }, { weight: 1, arbitrary: value.map((v) => `=${v}`) });
  return fc.oneof(
    { weight: 1, arbitrary: fc.constantFrom('', '?', '?&&&', '??a=1', '?a=1#frag', '?=', '?&=&') },
    { weight: 5, arbitrary: fc.array(pair, { minLength: 1, maxLength: 5 }).map((ps) => `?${ps.join('&')}`) },
  );
}

/** Drops the absent entries of a generated header record. */
function headers(...parts: Array<Record<string, string | string[] | undefined | null>>): Headers {
  const out: Headers = {};
  for (const part of parts) for (const [k, v] of Object.entries(part)) if (v !== undefined && v !== null) out[k] = v;
  return out;
}

const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);

const opt = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: undefined });

// ---------------------------------------------------------------------------
// The client interface
// ---------------------------------------------------------------------------

describe('fuzz: the client interface', () => {
  let h: Harness;
  let fuzz: Fuzzer;
  /** Default settings: device authentication off, anonymous access off. */
  let appA: TestApp;
  /** Device authentication on (one device per user), anonymous access allowed. */
  let appB: TestApp;
  let aliceToken: string;
  let bobToken: string;
  /** A code that created a license-only account on appA (a credential for login {code} and x-api-license-code). */
  let accountCode: string;
  let unusedA: string[];
  let unusedB: string;
  let bannedCode: string;
  let fileA: string;
  let fileB: string;

  beforeAll(async () => {
    if (pgMissing) return;
    h = await harness({ env: { RATE_LIMIT: 'off' } });
    fuzz = new Fuzzer(h);
    appA = await h.createApp({ name: 'Fuzz A' });
    appB = await h.createApp({ name: 'Fuzz B', device_auth_enabled: true, anonymous_access_allowed: true, max_devices_per_user: 1 });
    await h.activeUser(appA, 'alice', PASSWORD, 'hw-alice');
    await h.signUp(appA, 'dave'); // inactive membership
    const carol = await h.activeUser(appA, 'carol');
    await h.ban(appA, 'user', carol);
    await h.ban(appA, 'hardware_id', 'banned-hw');
    await h.activeUser(appB, 'bob', PASSWORD, 'hw-bob');
    [accountCode] = (await h.licenses(appA)) as [string];
    const made = await h.client(appA, 'POST', '/sign_up_with_license_code', { code: accountCode });
    if (made.statusCode !== 200) throw new Error(`license sign-up: ${made.body}`);
    unusedA = await h.licenses(appA, { count: 3 });
    [unusedB] = (await h.licenses(appB)) as [string];
    [bannedCode] = (await h.licenses(appA)) as [string];
    await h.ban(appA, 'license', bannedCode);
    aliceToken = await h.login(appA, 'alice', PASSWORD, 'hw-alice');
    bobToken = await h.login(appB, 'bob', PASSWORD, 'hw-bob');
    const upload = async (app: TestApp, name: string, size: number) => {
      const res = await h.inject({
        method: 'POST', url: `/admin/v1/apps/${app.id}/files?name=${name}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/octet-stream' },
        payload: Buffer.alloc(size, 7),
      });
      if (res.statusCode !== 201) throw new Error(`upload: ${res.body}`);
      return res.json().id as string;
    };
    fileA = await upload(appA, 'a.bin', 300_000);
    fileB = await upload(appB, 'b.bin', 10);
    const v = await h.admin('PUT', `/apps/${appA.id}/variables/greeting`, { value: 'hello' });
    if (v.statusCode !== 200) throw new Error(`variable: ${v.body}`);
  });
  afterAll(async () => h?.close());

  // -- headers ---------------------------------------------------------------

  /** The application headers: mostly valid (so the fuzz reaches validation), sometimes fuzzed. */
  const appHeaders = (): fc.Arbitrary<Headers> =>
    fc.oneof(
      { weight: 6, arbitrary: fc.constant(appA.headers) },
      { weight: 2, arbitrary: fc.constant(appB.headers) },
      {
        weight: 2,
        arbitrary: fc
          .record({ key: opt(headerOf(appA.apiKey, appB.apiKey)), secret: opt(headerOf(appA.apiSecret, appB.apiSecret)) }, { requiredKeys: [] })
          .map(({ key, secret }) => headers({ 'x-api-key': key, 'x-api-secret': secret })),
      },
    );

  /** User-authentication headers of SPEC 5.2, each absent, good or odd. */
  const userHeaders = (withGoodTokens: boolean): fc.Arbitrary<Headers> =>
    fc
      .record(
        {
          authorization: fc.oneof(
            authorizationOf(aliceToken, bobToken),
            ...(withGoodTokens ? [fc.constantFrom(`Bearer ${aliceToken}`, `bearer   ${bobToken}  `, `Bearer ${bobToken}`)] : []),
          ),
          'x-api-license-code': headerOf(accountCode, bannedCode, unusedA[0]!),
          'x-api-username': headerOf('alice', 'bob', 'carol', 'dave', 'ALICE'),
          'x-api-password': headerOf(PASSWORD),
          'x-hardware-id': headerOf('hw-alice', 'hw-bob', 'banned-hw', 'hw-other'),
          range: headerOf('bytes=0-0', 'bytes=-1', 'bytes=5-2', 'bytes=999999-', 'bytes=0-1,2-3', 'bytes=-0', 'bytes=abc', 'bytes=0-99999999999999999999', 'bytes=262143-262145', 'bytes=-99999999'),
          'if-range': headerOf('"x"', 'W/"x"', 'Thu, 01 Jan 2026 00:00:00 GMT'),
          'x-forwarded-for': headerOf('203.0.113.9', '::ffff:127.0.0.1', 'unknown'),
        },
        { requiredKeys: [] },
      )
      .map((r) => headers(r));

  /** Body fields of the right type (strings), odd or good. */
  const typed = (): Record<string, fc.Arbitrary<unknown>> => {
    const username = fc.oneof(weirdString, fc.constantFrom('alice', 'ALICE', 'Alice', 'ａｌｉｃｅ', 'alice\u200b', 'dave', 'carol', 'bob', 'al', 'a'.repeat(64), 'a'.repeat(65), 'ali ce'));
    const password = fc.oneof(weirdString, fc.constantFrom(PASSWORD, 'x'.repeat(1024), 'x'.repeat(1025), 'é'.repeat(512), 'é'.repeat(513), '1234567', ''));
    const code = fc.oneof(
      weirdString,
      fc.constantFrom(accountCode, bannedCode, ...unusedA, unusedB, accountCode.toLowerCase(), ` ${unusedA[0]!}`, `${unusedA[0]!}\u0000`, 'X'.repeat(128), 'X'.repeat(129)),
    );
    const hardwareId = fc.oneof(weirdString, fc.constantFrom('hw-alice', 'hw-bob', 'banned-hw', 'hw-new', 'x'.repeat(256), 'x'.repeat(257), 'BANNED-HW'));
    return { username, password, code, hardware_id: hardwareId, credentials: fc.record({ username, password, code }, { requiredKeys: [] }) };
  };

  const post = (path: string, keys: readonly string[], base: () => Record<string, unknown>, withGoodTokens = false) =>
    fc
      .tuple(appHeaders(), userHeaders(withGoodTokens), contentTypes, bodies(keys, base(), typed()), queryOf(['code', 'username']))
      .map(([app, user, type, body, query]) => req('POST', `${path}${query}`, headers(user, app, { 'content-type': type }), body));

  // -- the endpoints -----------------------------------------------------------

  it('POST /sign_up', async ({ skip }) => {
    if (pgMissing) return skip();
    let n = 0;
    await fuzz.property(post('/sign_up', ['username', 'password', 'hardware_id'], () => ({ username: `fuzz${n++}`, password: PASSWORD, hardware_id: 'hw-fuzz' })), 120);
  }, TIMEOUT);

  it('POST /sign_up_with_license_code', async ({ skip }) => {
    if (pgMissing) return skip();
    await fuzz.property(post('/sign_up_with_license_code', ['code', 'hardware_id'], () => ({ code: unusedA[0], hardware_id: 'hw-fuzz' })), 120);
    await fuzz.property(post('/sign_up_with_license_code', ['code', 'hardware_id'], () => ({ code: bannedCode })), 30);
  }, TIMEOUT);

  it('POST /auth/login', async ({ skip }) => {
    if (pgMissing) return skip();
    await fuzz.property(post('/auth/login', ['credentials', 'hardware_id'], () => ({ credentials: { username: 'alice', password: PASSWORD }, hardware_id: 'hw-alice' })), 100);
    // The credentials object itself, fuzzed.
    const credentials = fc
      .tuple(appHeaders(), contentTypes, bodies(['username', 'password', 'code'], { username: 'bob', password: PASSWORD }, typed()), fc.constantFrom(undefined, 'hw-bob', 'hw-new', 'banned-hw'))
      .map(([app, type, creds, hw]) =>
        req('POST', '/auth/login', headers(app, { 'content-type': type }), `{"credentials":${creds ?? ''}${hw === undefined ? '' : `,"hardware_id":${JSON.stringify(hw)}`}}`),
      );
    await fuzz.property(credentials, 100);
  }, TIMEOUT);

  it('POST /activate_license', async ({ skip }) => {
    if (pgMissing) return skip();
    await fuzz.property(
      post('/activate_license', ['code', 'username', 'password', 'hardware_id'], () => ({ code: unusedA[1], username: 'alice', password: PASSWORD, hardware_id: 'hw-alice' })),
      120,
    );
  }, TIMEOUT);

  it('POST /auth/logout', async ({ skip }) => {
    if (pgMissing) return skip();
    // Never the live tokens (logging them out would only make the rest of the fuzz shallower).
    await fuzz.property(post('/auth/logout', ['token'], () => ({})), 100);
  }, TIMEOUT);

  it('GET /app_context', async ({ skip }) => {
    if (pgMissing) return skip();
    const arb = fc
      .tuple(appHeaders(), userHeaders(true), queryOf(['user', 'app_id', 'limit']), fc.option(fc.tuple(contentTypes, garbage), { nil: undefined }))
      .map(([app, user, query, body]) =>
        req('GET', `/app_context${query}`, headers(user, app, body ? { 'content-type': body[0] } : {}), body ? body[1] || undefined : undefined),
      );
    await fuzz.property(arb, 150);
  }, TIMEOUT);

  it('GET /files/:file_id/download', async ({ skip }) => {
    if (pgMissing) return skip();
    const id = fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom(fileA, fileB, fileA.toUpperCase()) },
      { weight: 1, arbitrary: fc.uuid() },
      { weight: 4, arbitrary: pathTrick },
    );
    const arb = fc
      .tuple(appHeaders(), userHeaders(true), id, queryOf(['range', 'download']), fc.oneof({ weight: 8, arbitrary: fc.constant('/download') }, { weight: 1, arbitrary: fc.constantFrom('/download/', '/download/..', '', '/', '/DOWNLOAD', '/download%00') }))
      .map(([app, user, fileId, query, tail]) => req('GET', `/files/${fileId}${tail}${query}`, headers(user, app)));
    await fuzz.property(arb, 150);
  }, TIMEOUT);

  it('fuzzed application credentials on every client endpoint are refused, and change nothing', async ({ skip }) => {
    if (pgMissing) return skip();
    const endpoint = fc.constantFrom(
      ['POST', '/sign_up'], ['POST', '/sign_up_with_license_code'], ['POST', '/auth/login'], ['POST', '/activate_license'], ['POST', '/auth/logout'],
      ['GET', '/app_context'], ['GET', `/files/${fileA}/download`],
    );
    const creds = fc
      .record({ key: opt(headerOf(appA.apiKey, appB.apiKey, appA.apiSecret)), secret: opt(headerOf(appB.apiSecret, appA.apiKey)) }, { requiredKeys: [] })
      // Not a valid pair, however it is sent (the first of repeated values is the one read).
      .filter(({ key, secret }) => {
        const k = first(key);
        const s = first(secret);
        return !(k?.startsWith(appA.apiKey) && s?.startsWith(appA.apiSecret)) && !(k?.startsWith(appB.apiKey) && s?.startsWith(appB.apiSecret));
      })
      .map(({ key, secret }) => headers({ 'x-api-key': key, 'x-api-secret': secret }));
    const validBody = JSON.stringify({ username: 'alice', password: PASSWORD, code: unusedA[2], credentials: { username: 'alice', password: PASSWORD } });
    const arb = fc
      .tuple(endpoint, creds, userHeaders(true))
      .map(([[method, url], app, user]) => req(method, url, headers(user, app, { 'content-type': 'application/json' }), method === 'POST' ? validBody : undefined));
    await fuzz.property(arb, 120, (r, res) => {
      if (res.statusCode !== 401 || res.json().code !== 'invalid_app_credentials') throw new Error(`expected 401 invalid_app_credentials: ${show(r)} → ${res.statusCode} ${abridge(res.body)}`);
    });
  }, TIMEOUT);

  /** Every string the client interface takes in a body, with a NUL byte in it: [where, valid body, the body with `v` in place]. */
  type NulTarget = [string, string, () => Record<string, unknown>, (v: string) => Record<string, unknown>];
  const signUp = () => ({ username: 'nuluser', password: PASSWORD });
  const login = () => ({ credentials: { username: 'alice', password: PASSWORD } });
  const activation = () => ({ code: unusedA[2], username: 'alice', password: PASSWORD });
  const CLIENT_NUL_TARGETS: NulTarget[] = [
    ['/sign_up', 'username', signUp, (v) => ({ username: v })],
    ['/sign_up', 'password', signUp, (v) => ({ password: `${PASSWORD}${v}` })],
    ['/sign_up', 'hardware_id', signUp, (v) => ({ hardware_id: v })],
    ['/sign_up_with_license_code', 'code', () => ({ code: unusedA[2] }), (v) => ({ code: v })],
    ['/sign_up_with_license_code', 'hardware_id', () => ({ code: bannedCode }), (v) => ({ hardware_id: v })],
    ['/auth/login', 'credentials.username', login, (v) => ({ credentials: { username: v, password: PASSWORD } })],
    ['/auth/login', 'credentials.password', login, (v) => ({ credentials: { username: 'alice', password: v } })],
    ['/auth/login', 'credentials.code', login, (v) => ({ credentials: { code: v } })],
    ['/auth/login', 'hardware_id', login, (v) => ({ hardware_id: v })],
    ...['code', 'username', 'password', 'hardware_id'].map((f): NulTarget => ['/activate_license', f, activation, (v) => ({ [f]: v })]),
  ];
  for (const [path, label, base, field] of CLIENT_NUL_TARGETS) {
    it(`NUL byte: POST ${path} body.${label}`, async ({ skip }) => {
      if (pgMissing) return skip();
      const nul = fc.tuple(fc.string({ maxLength: 6 }), fc.constantFrom('\u0000', 'a\u0000b'), fc.string({ maxLength: 6 }), fc.constantFrom(appA, appB));
      await fuzz.property(
        nul.map(([p, n, q, app]) => req('POST', path, headers(app.headers, { 'content-type': 'application/json' }), JSON.stringify({ ...base(), ...field(`nul${p}${n}${q}`) }))),
        8,
      );
    }, TIMEOUT);
  }
  it('NUL byte: GET /files/:file_id/download (in the id)', async ({ skip }) => {
    if (pgMissing) return skip();
    await fuzz.property(fc.constantFrom(`${fileA}%00`, `%00${fileA}`, '%00', `${fileA.slice(0, 35)}%00`).map((id) => req('GET', `/files/${id}/download`, headers(appA.headers, { authorization: `Bearer ${aliceToken}` }))), 8);
  }, TIMEOUT);

  it('any method on any path', async ({ skip }) => {
    if (pgMissing) return skip();
    const method = fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS');
    const path = fc.oneof(
      fc.constantFrom('/sign_up', '/auth/login', '/auth/logout', '/app_context', `/files/${fileA}/download`, '/activate_license', '/healthz', '/readyz', '/', '/admin', '/admin/v1'),
      fc.array(pathTrick, { minLength: 1, maxLength: 4 }).map((segs) => `/${segs.join('/')}`),
    );
    const arb = fc
      .tuple(method, path, queryOf(['a']), appHeaders(), contentTypes, fc.option(garbage, { nil: undefined }))
      .map(([m, p, q, app, type, body]) => req(m, `${p}${q}`, headers(app, { 'content-type': type }), m === 'GET' || m === 'HEAD' ? undefined : body || undefined));
    await fuzz.property(arb, 100);
  }, TIMEOUT);
});

// ---------------------------------------------------------------------------
// The admin API
// ---------------------------------------------------------------------------

describe('fuzz: the admin API', () => {
  let h: Harness;
  let fuzz: Fuzzer;
  const ids = {
    app: '', otherApp: '', appName: 'Fuzz admin', unusedLicense: '', usedLicense: '', otherLicense: '', user: '', otherUser: '',
    file: '', otherFile: '', ban: '', otherBan: '', token: '', authToken: '',
  };
  const MAX_UPLOAD = 300_000;

  beforeAll(async () => {
    if (pgMissing) return;
    h = await harness({ env: { RATE_LIMIT: 'off', MAX_UPLOAD_BYTES: String(MAX_UPLOAD) } });
    fuzz = new Fuzzer(h);
    const app = await h.createApp({ name: ids.appName, device_auth_enabled: true, max_devices_per_user: 2 });
    const other = await h.createApp({ name: 'Other app' });
    ids.app = app.id;
    ids.otherApp = other.id;
    ids.user = await h.activeUser(app, 'alice', PASSWORD, 'hw-alice');
    await h.login(app, 'alice', PASSWORD, 'hw-alice');
    ids.otherUser = await h.signUp(other, 'olive');
    const made = async (appId: string) => {
      const res = await h.admin('POST', `/apps/${appId}/licenses`, { count: 1, minutes: 60, note: 'fuzz' });
      if (res.statusCode !== 201) throw new Error(res.body);
      return res.json().licenses[0] as { id: string; code: string };
    };
    ids.unusedLicense = (await made(app.id)).id;
    ids.otherLicense = (await made(other.id)).id;
    const used = await made(app.id);
    const activated = await h.client(app, 'POST', '/activate_license', { code: used.code, username: 'alice', password: PASSWORD, hardware_id: 'hw-alice' });
    if (activated.statusCode !== 200) throw new Error(activated.body);
    ids.usedLicense = used.id;
    const upload = async (appId: string) => {
      const res = await h.inject({ method: 'POST', url: `/admin/v1/apps/${appId}/files?name=f.bin`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: Buffer.alloc(1000, 1) });
      if (res.statusCode !== 201) throw new Error(res.body);
      return res.json().id as string;
    };
    ids.file = await upload(app.id);
    ids.otherFile = await upload(other.id);
    ids.ban = await h.ban(app, 'ip', '203.0.113.7');
    ids.otherBan = await h.ban(other, 'hardware_id', 'hw-x');
    const v = await h.admin('PUT', `/apps/${app.id}/variables/greeting`, { value: 'hello' });
    if (v.statusCode !== 200) throw new Error(v.body);
    const t = await h.admin('POST', '/tokens', { name: 'fuzz' });
    if (t.statusCode !== 201) throw new Error(t.body);
    ids.token = t.json().id;
    // A database token (tg_adm_…) as well as the environment one: its last_used_at moves on every call.
    const auth = await h.admin('POST', '/tokens', { name: 'fuzz auth' });
    if (auth.statusCode !== 201) throw new Error(auth.body);
    ids.authToken = auth.json().token;
  });
  afterAll(async () => h?.close());

  const AUTH = { authorization: `Bearer ${ADMIN_TOKEN}` };
  /** A path id: mostly the real one (so the fuzz reaches bodies and queries), else another app's, a random UUID, or a trick. */
  const idOf = (...good: string[]) =>
    fc.oneof({ weight: 8, arbitrary: fc.constantFrom(...good) }, { weight: 1, arbitrary: fc.uuid() }, { weight: 2, arbitrary: pathTrick });
  const appId = () => idOf(ids.app, ids.app, ids.app, ids.otherApp);

  type M = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** A JSON admin call: path from `paths`, fuzzed query and body. */
  const call = (method: fc.Arbitrary<M>, path: fc.Arbitrary<string>, query: fc.Arbitrary<string>, body: fc.Arbitrary<string | undefined>) =>
    fc
      .tuple(method, path, query, jsonTypes, body, fc.boolean())
      .map(([m, p, q, type, b, db]) =>
        req(m, `/admin/v1${p}${q}`, headers(db ? { authorization: `Bearer ${ids.authToken}` } : AUTH, { 'content-type': b === undefined ? undefined : type }), b),
      );

  // Field values of the right type with odd content.
  const nameish = fc.oneof(weirdString, fc.constantFrom('x', 'Fuzz admin', 'Other app'));
  const settingsTyped = {
    name: nameish, device_auth_enabled: boolish, anonymous_access_allowed: boolish, registration_open: boolish,
    max_devices_per_user: intish, session_ttl_seconds: intish, password_min_length: intish,
  };
  const fileName = fc.oneof(weirdString, fc.constantFrom('a/b', 'a\\b', '.', '..', '../x', 'x'.repeat(255), 'x'.repeat(256), 'ok.bin', 'CON', 'x\u0000.bin'));
  const mimeish = fc.oneof(
    weirdString,
    fc.constantFrom('text/plain', 'a/b', 'a/', '/b', 'text/plain; charset=utf-8', 'text/plain;;', `${'x'.repeat(300)}/y`, 'text/\u0000', 'text/plain\r\nX: y', 'application/vnd.a+json'),
  );
  const settingsKeys = ['name', 'device_auth_enabled', 'anonymous_access_allowed', 'max_devices_per_user', 'session_ttl_seconds', 'password_min_length', 'registration_open'];
  const noQuery = queryOf([]);
  const pageKeys = ['limit', 'cursor'];

  const none = fc.constant<string | undefined>(undefined);
  /** A body nobody asked for, on routes that take none. */
  const stray = fc.option(garbage, { nil: undefined });
  const licenseKeys = ['count', 'minutes', 'lifetime', 'revokes_lifetime_access', 'mask', 'note', 'expires_at'];
  const content = fc.oneof(
    { weight: 4, arbitrary: fc.uint8Array({ maxLength: 2000 }).map((b) => Buffer.from(b)) },
    { weight: 1, arbitrary: fc.constantFrom(0, 1, 262_143, 262_144, 262_145, MAX_UPLOAD - 1, MAX_UPLOAD, MAX_UPLOAD + 1, 2 * MAX_UPLOAD).map((n) => Buffer.alloc(n, 0xab)) },
    { weight: 1, arbitrary: weirdString.map((s) => Buffer.from(s)) },
  );
  const banValues = () =>
    fc.oneof(
      fc.constantFrom('::ffff:10.0.0.1', '10.0.0.0/33', '10.0.0.0/-1', '::/0', '0.0.0.0/0', '1.2.3.4/32', '999.1.1.1', '1.2.3', 'fe80::1%eth0', '::', '[::1]', '1.2.3.4/08', ' 1.2.3.4'),
      fc.constantFrom(ids.user, ids.user.toUpperCase(), ids.otherUser, ` ${ids.user}`),
      weirdString,
    );
  const licensePath = () => fc.tuple(appId(), idOf(ids.unusedLicense, ids.usedLicense, ids.otherLicense)).map(([a, l]) => `/apps/${a}/licenses/${l}`);
  const variablePath = () =>
    fc.tuple(appId(), fc.oneof({ weight: 2, arbitrary: fc.constantFrom('greeting', 'new_var') }, { weight: 3, arbitrary: pathTrick })).map(([a, n]) => `/apps/${a}/variables/${n}`);
  const fileId = () => idOf(ids.file, ids.otherFile);
  const filePath = () => fc.tuple(appId(), fileId()).map(([a, f]) => `/apps/${a}/files/${f}`);
  const banPath = () => fc.tuple(appId(), idOf(ids.ban, ids.otherBan)).map(([a, b]) => `/apps/${a}/bans/${b}`);
  const userPath = () => fc.tuple(appId(), idOf(ids.user, ids.otherUser)).map(([a, u]) => `/apps/${a}/users/${u}`);
  const appPath = (tail = '') => appId().map((a) => `/apps/${a}${tail}`);
  let appCount = 0;

  /** One property per admin route. */
  const ROUTES: Array<[string, () => fc.Arbitrary<Req>, number]> = [
    ['POST /apps', () => call(fc.constant('POST'), fc.constant('/apps'), noQuery, bodies(settingsKeys, { name: `fuzz app ${appCount++}` }, settingsTyped)), 60],
    ['GET /apps', () => call(fc.constant('GET'), fc.constant('/apps'), queryOf(pageKeys), none), 50],
    ['GET /apps/:app_id', () => call(fc.constant('GET'), appPath(), queryOf(['confirm']), none), 30],
    ['PATCH /apps/:app_id', () => call(fc.constant('PATCH'), appPath(), noQuery, bodies(settingsKeys, { name: ids.appName }, settingsTyped)), 80],
    ['POST /apps/:app_id/secret', () => call(fc.constant('POST'), appPath('/secret'), noQuery, stray), 30],
    [
      'POST /apps/:app_id/licenses',
      () =>
        call(fc.constant('POST'), appPath('/licenses'), noQuery, bodies(licenseKeys, { count: 2, minutes: 60 }, {
          count: fc.oneof(fc.integer({ min: -2, max: 20 }), fc.constantFrom(0, 10_001, 1e9, 1.5, '1', null)),
          minutes: intish, lifetime: boolish, revokes_lifetime_access: boolish, note: weirdString, expires_at: dateish,
          mask: fc.oneof(
            weirdString,
            fc.constantFrom('X'.repeat(13), 'X'.repeat(12), 'XXXXX-XXXXX-XXXXX-XXXXX-XXXXX', 'A'.repeat(20), 'x'.repeat(20), 'X'.repeat(128), 'X'.repeat(1000), 'XXXXXX\u0000XXXXXXX', 'XXXXXXXXXXXXX😀', 'XXXXXXXXXXXXX ', ''),
            fc.tuple(fc.integer({ min: 0, max: 40 }), shortText).map(([n, t]) => 'X'.repeat(n) + t),
          ),
        }))
          // A valid batch of thousands would only slow the fuzz down: counts stay small or invalid.
          .filter((r) => !/"count":\s*([1-9]\d{2,4})\b/.test(String(r.payload ?? '')) || /"count":\s*(10001|\d{6,})/.test(String(r.payload))),
      100,
    ],
    ['GET /apps/:app_id/licenses', () => call(fc.constant('GET'), appPath('/licenses'), queryOf([...pageKeys, 'used', 'q'], ['%', '_', '\\', 'fuzz', 'A%_\\', '%00']), none), 80],
    ['GET /apps/:app_id/licenses/export', () => call(fc.constant('GET'), appPath('/licenses/export'), queryOf(['used', 'q'], ['%', '\\', '_', '%00']), none), 50],
    ['GET /apps/:app_id/licenses/:license_id', () => call(fc.constant('GET'), licensePath(), noQuery, none), 30],
    [
      'PUT /apps/:app_id/variables/:name',
      () =>
        call(fc.constant('PUT'), variablePath(), noQuery, bodies(['value'], { value: 'hello' }, {
          value: fc.oneof(weirdString, fc.constantFrom('x'.repeat(65_536), 'x'.repeat(65_537), '😀'.repeat(65_536), '😀'.repeat(65_537))),
        })),
      100,
    ],
    ['GET /apps/:app_id/variables', () => call(fc.constant('GET'), appPath('/variables'), queryOf(pageKeys), none), 20],
    ['GET /apps/:app_id/variables/:name', () => call(fc.constant('GET'), variablePath(), noQuery, none), 60],
    [
      'POST /apps/:app_id/files (upload)',
      () => {
        const typedQuery = fc
          .record(
            {
              name: fc.oneof(fc.constant('f.bin'), fileName).map(pct),
              mime_type: mimeish.map(pct),
              is_encrypted: fc.constantFrom('true', 'false', '1', '0', 'yes', 'TRUE', '', '%00'),
            },
            { requiredKeys: [] },
          )
          .map((r) => `?${Object.entries(r).map(([k, v]) => `${k}=${v.slice(0, 20_000)}`).join('&')}`);
        const query = fc.oneof(typedQuery, queryOf(['name', 'mime_type', 'is_encrypted'], ['f.bin', 'text/plain', 'true', '0']));
        return fc
          .tuple(appId(), query, contentTypes, content)
          .map(([a, q, type, body]) => req('POST', `/admin/v1/apps/${a}/files${q}`, headers(AUTH, { 'content-type': type }), body));
      },
      80,
    ],
    [
      'PUT /apps/:app_id/files/:file_id/content',
      () =>
        fc
          .tuple(appId(), fileId(), contentTypes, content, queryOf(['name']))
          .map(([a, f, type, body, q]) => req('PUT', `/admin/v1/apps/${a}/files/${f}/content${q}`, headers(AUTH, { 'content-type': type }), body)),
      60,
    ],
    ['GET /apps/:app_id/files', () => call(fc.constant('GET'), appPath('/files'), queryOf(pageKeys), none), 20],
    ['GET /apps/:app_id/files/:file_id', () => call(fc.constant('GET'), filePath(), noQuery, none), 30],
    [
      'PATCH /apps/:app_id/files/:file_id',
      () => call(fc.constant('PATCH'), filePath(), noQuery, bodies(['name', 'mime_type', 'is_encrypted'], { name: 'renamed.bin' }, { name: fileName, mime_type: mimeish, is_encrypted: boolish })),
      80,
    ],
    [
      'POST /apps/:app_id/bans',
      () =>
        fc
          .constantFrom<Record<string, unknown>>({ type: 'ip', value: '198.51.100.0/24' }, { type: 'hardware_id', value: 'hw-fuzz' }, { type: 'license', value: 'CODE' }, { type: 'user', value: ids.user })
          .chain((base) =>
            call(fc.constant('POST'), appPath('/bans'), noQuery, bodies(['type', 'value', 'reason', 'expires_at'], base, {
              type: fc.oneof(fc.constantFrom('ip', 'user', 'license', 'hardware_id', 'IP', 'ban'), weirdString), value: banValues(), reason: weirdString, expires_at: dateish,
            })),
          ),
      100,
    ],
    [
      'POST /apps/:app_id/bans (every type, odd values)',
      () =>
        fc
          .tuple(appId(), fc.constantFrom('ip', 'user', 'license', 'hardware_id'), banValues(), opt(weirdString), opt(dateish), jsonTypes)
          .map(([a, type, value, reason, expires, ct]) =>
            req('POST', `/admin/v1/apps/${a}/bans`, headers(AUTH, { 'content-type': ct }), text({ type, value, ...(reason !== undefined && { reason }), ...(expires !== undefined && { expires_at: expires }) })),
          ),
      60,
    ],
    ['GET /apps/:app_id/bans', () => call(fc.constant('GET'), appPath('/bans'), queryOf([...pageKeys, 'type']), none), 40],
    ['GET /apps/:app_id/users', () => call(fc.constant('GET'), appPath('/users'), queryOf([...pageKeys, 'q'], ['%', '_', '\\', 'ali', '%ali%', '%00']), none), 80],
    ['GET /apps/:app_id/users/:user_id', () => call(fc.constant('GET'), userPath(), noQuery, none), 30],
    [
      'PATCH /apps/:app_id/users/:user_id',
      () =>
        call(fc.constant('PATCH'), userPath(), noQuery, bodies(['extend_minutes', 'lifetime', 'active_until', 'password'], { extend_minutes: 1 }, {
          extend_minutes: intish, lifetime: boolish, active_until: fc.oneof(dateish, fc.constant(null)), password: fc.oneof(weirdString, fc.constant(PASSWORD)),
        })),
      100,
    ],
    ['POST /apps/:app_id/users/:user_id/reset-devices', () => call(fc.constant('POST'), userPath().map((p) => `${p}/reset-devices`), noQuery, stray), 30],
    ['POST /apps/:app_id/users/:user_id/revoke-sessions', () => call(fc.constant('POST'), userPath().map((p) => `${p}/revoke-sessions`), noQuery, stray), 30],
    ['POST /tokens', () => call(fc.constant('POST'), fc.constant('/tokens'), noQuery, bodies(['name'], { name: 'fuzz token' }, { name: weirdString })), 60],
    ['GET /tokens', () => call(fc.constant('GET'), fc.constant('/tokens'), queryOf(pageKeys), none), 15],
    [
      'GET /audit',
      () =>
        call(fc.constant('GET'), fc.constant('/audit'), queryOf([...pageKeys, 'app_id', 'target_id', 'action', 'since', 'until'], [ids.app, ids.user, 'app.create', '%', '\\', '%00', '2026-01-01', '2026-01-01T00:00:00Z']), none),
      80,
    ],
  ];

  /** A string with a NUL byte in it (PostgreSQL text cannot hold one: it must be refused, or kept out of SQL, never a 500). */
  const nul = fc
    .tuple(fc.string({ maxLength: 6 }), fc.constantFrom('\u0000', '\u0000\u0000', 'a\u0000b'), fc.string({ maxLength: 6 }))
    .map(([p, n, q]) => `fuzz${p}${n}${q}`);
  /** `route` names the path with `:app`, `:file`, `:user` standing for the fixture's ids. */
  const fixturePath = (route: string) => route.replace(':app', ids.app).replace(':file', ids.file).replace(':user', ids.user);
  const nulBody = (method: M, route: string, base: Record<string, unknown>, field: string): [string, () => fc.Arbitrary<Req>] => [
    `${method} ${route} body.${field}`,
    () => nul.map((v) => req(method, `/admin/v1${fixturePath(route)}`, headers(AUTH, { 'content-type': 'application/json' }), JSON.stringify({ ...base, [field]: v }))),
  ];
  const nulQuery = (route: string, field: string): [string, () => fc.Arbitrary<Req>] => [
    `GET ${route}?${field}=`,
    () => nul.map((v) => req('GET', `/admin/v1${fixturePath(route)}?${field}=${pct(v)}`, headers(AUTH))),
  ];
  const NUL_TARGETS: Array<[string, () => fc.Arbitrary<Req>]> = [
    nulBody('POST', '/apps', {}, 'name'),
    nulBody('PATCH', '/apps/:app', {}, 'name'),
    ...['note', 'mask', 'expires_at'].map((f) => nulBody('POST', '/apps/:app/licenses', { count: 1, minutes: 5 }, f)),
    nulQuery('/apps/:app/licenses', 'q'),
    nulQuery('/apps/:app/licenses', 'cursor'),
    nulQuery('/apps/:app/licenses/export', 'q'),
    nulBody('PUT', '/apps/:app/variables/greeting', {}, 'value'),
    ...(['PUT', 'GET', 'DELETE'] as const).map((m): [string, () => fc.Arbitrary<Req>] => [
      `${m} /apps/:app/variables/:name (in the name)`,
      () => nul.map((v) => req(m, `/admin/v1/apps/${ids.app}/variables/${pct(v)}`, headers(AUTH, m === 'PUT' ? { 'content-type': 'application/json' } : {}), m === 'PUT' ? '{"value":"v"}' : undefined)),
    ]),
    ...['name', 'mime_type'].map((f): [string, () => fc.Arbitrary<Req>] => [
      `POST /apps/:app/files?${f}=`,
      () => nul.map((v) => req('POST', `/admin/v1/apps/${ids.app}/files?${f === 'name' ? '' : 'name=f.bin&'}${f}=${pct(v)}`, headers(AUTH), Buffer.from('content'))),
    ]),
    ...['name', 'mime_type'].map((f) => nulBody('PATCH', '/apps/:app/files/:file', {}, f)),
    ...['ip', 'hardware_id', 'license', 'user'].map((t) => nulBody('POST', '/apps/:app/bans', { type: t }, 'value')),
    ...['reason', 'expires_at'].map((f) => nulBody('POST', '/apps/:app/bans', { type: 'hardware_id', value: 'hw-nul' }, f)),
    nulQuery('/apps/:app/bans', 'type'),
    nulQuery('/apps/:app/users', 'q'),
    nulQuery('/apps/:app/users', 'cursor'),
    ...['password', 'active_until'].map((f) => nulBody('PATCH', '/apps/:app/users/:user', {}, f)),
    nulBody('POST', '/tokens', {}, 'name'),
    ...['action', 'target_id', 'since', 'until', 'app_id', 'cursor'].map((f) => nulQuery('/audit', f)),
    ['DELETE /apps/:app?confirm=', () => nul.map((v) => req('DELETE', `/admin/v1/apps/${ids.app}?confirm=${pct(v)}`, headers(AUTH)))],
  ];

  /** Deletions last, so that they do not hollow out the fuzz of the routes before them. */
  const DELETIONS: Array<[string, () => fc.Arbitrary<Req>, number]> = [
    ['DELETE /apps/:app_id/variables/:name', () => call(fc.constant('DELETE'), variablePath(), noQuery, stray), 40],
    ['DELETE /apps/:app_id/licenses/:license_id', () => call(fc.constant('DELETE'), licensePath(), noQuery, stray), 40],
    ['DELETE /apps/:app_id/files/:file_id', () => call(fc.constant('DELETE'), filePath(), noQuery, stray), 40],
    ['DELETE /apps/:app_id/bans/:ban_id', () => call(fc.constant('DELETE'), banPath(), noQuery, stray), 40],
    ['DELETE /tokens/:token_id', () => call(fc.constant('DELETE'), idOf(ids.token).map((t) => `/tokens/${t}`), noQuery, stray), 40],
    ['DELETE /apps/:app_id/users/:user_id', () => call(fc.constant('DELETE'), userPath(), noQuery, stray), 30],
    // Never with the exact name of the main app: deleting it would leave nothing to fuzz.
    ['DELETE /apps/:app_id', () => call(fc.constant('DELETE'), appPath(), queryOf(['confirm'], ['fuzz admin', `${ids.appName} `, 'Other app', '']), stray), 60],
  ];

  for (const [name, arb, numRuns] of ROUTES) {
    it(name, async ({ skip }) => {
      if (pgMissing) return skip();
      await fuzz.property(arb(), numRuns);
    }, TIMEOUT);
  }

  for (const [name, arb] of NUL_TARGETS) {
    it(`NUL byte: ${name}`, async ({ skip }) => {
      if (pgMissing) return skip();
      await fuzz.property(arb(), 8);
    }, TIMEOUT);
  }

  it('membership changes at the edges of time never break a user (PATCH extend_minutes|lifetime|active_until, license activation)', async ({ skip }) => {
    if (pgMissing) return skip();
    // An app of its own: a user broken here must not break the other properties.
    const app = await h.createApp({ name: 'Fuzz membership' });
    const minutes = fc.oneof(fc.constantFrom(1, 60, 1_000_000_000), fc.integer({ min: 1, max: 1_000_000_000 }));
    const edge = fc.oneof(
      fc.constantFrom(
        '+275760-09-13T00:00:00.000Z', '+275760-09-12T23:59:59.999Z', '+275000-01-01T00:00:00.000Z', '-271821-04-20T00:00:00.000Z', '-271821-04-20T00:00:00.001Z',
        '1970-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z', '9999-12-31T23:59:59.999Z',
      ),
      fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
      fc.constant(null),
    );
    type Op = { patch: Record<string, unknown> } | { activate: Record<string, unknown> };
    const op: fc.Arbitrary<Op> = fc.oneof(
      minutes.map((m) => ({ patch: { extend_minutes: m } })),
      fc.boolean().map((l) => ({ patch: { lifetime: l } })),
      edge.map((d) => ({ patch: { active_until: d } })),
      fc.oneof(minutes.map((m) => ({ minutes: m })), fc.constant({ lifetime: true }), fc.constant({ revokes_lifetime_access: true })).map((l) => ({ activate: l })),
    );
    let n = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 5 }), async (ops) => {
        const name = `edge${n++}`;
        const id = await h.signUp(app, name);
        fuzz.forget();
        for (const o of ops) {
          if ('patch' in o) {
            await fuzz.send(req('PATCH', `/admin/v1/apps/${app.id}/users/${id}`, headers(AUTH, { 'content-type': 'application/json' }), JSON.stringify(o.patch)));
          } else {
            const made = await fuzz.send(req('POST', `/admin/v1/apps/${app.id}/licenses`, headers(AUTH, { 'content-type': 'application/json' }), JSON.stringify({ count: 1, ...o.activate })));
            if (made.statusCode !== 201) throw new Error(`a valid license batch was refused: ${JSON.stringify(o.activate)} → ${made.statusCode} ${abridge(made.body)}`);
            const code = (made.json() as { licenses: { code: string }[] }).licenses[0]!.code;
            await fuzz.send(req('POST', '/activate_license', headers(app.headers, { 'content-type': 'application/json' }), JSON.stringify({ code, username: name, password: PASSWORD })));
          }
        }
        // The user can still be read, by the operator and by the client.
        await fuzz.send(req('GET', `/admin/v1/apps/${app.id}/users/${id}`, headers(AUTH)));
        await fuzz.send(req('GET', `/admin/v1/apps/${app.id}/users?q=${name}`, headers(AUTH)));
        await fuzz.send(req('GET', '/app_context', headers(app.headers, { 'x-api-username': name, 'x-api-password': PASSWORD })));
      }),
      runs(40),
    );
  }, TIMEOUT);

  it('an upload or replacement over MAX_UPLOAD_BYTES is 413 payload_too_large and stores nothing', async ({ skip }) => {
    if (pgMissing) return skip();
    const arb = fc
      // Well-formed content types only: a malformed Content-Type is refused (422) before the body is read.
      .tuple(fc.integer({ min: MAX_UPLOAD + 1, max: MAX_UPLOAD + 300_000 }), fc.boolean(), fc.constantFrom(undefined, 'application/octet-stream', 'application/json', 'text/plain', 'image/png'))
      .map(([n, replace, type]) =>
        req(
          replace ? 'PUT' : 'POST',
          `/admin/v1/apps/${ids.app}/files${replace ? `/${ids.file}/content` : '?name=big.bin'}`,
          headers(AUTH, { 'content-type': type }),
          Buffer.alloc(n, 0xcd),
        ),
      );
    await fuzz.property(arb, 8, (r, res) => {
      if (res.statusCode !== 413) throw new Error(`expected 413: ${show(r)} → ${res.statusCode} ${abridge(res.body)}`);
    });
  }, TIMEOUT);

  for (const [name, arb, numRuns] of DELETIONS) {
    it(name, async ({ skip }) => {
      if (pgMissing) return skip();
      await fuzz.property(arb(), numRuns);
    }, TIMEOUT);
  }

  it('a missing, wrong or odd admin token is refused on every admin route, and changes nothing', async ({ skip }) => {
    if (pgMissing) return skip();
    const route = fc.constantFrom<[M, string, string | undefined]>(
      ['POST', '/apps', '{"name":"x"}'], ['GET', '/apps', undefined], ['GET', `/apps/${ids.app}`, undefined], ['PATCH', `/apps/${ids.app}`, '{"name":"x"}'],
      ['DELETE', `/apps/${ids.app}?confirm=${encodeURIComponent(ids.appName)}`, undefined], ['POST', `/apps/${ids.app}/secret`, undefined],
      ['POST', `/apps/${ids.app}/licenses`, '{"count":1,"minutes":5}'], ['GET', `/apps/${ids.app}/licenses`, undefined], ['GET', `/apps/${ids.app}/licenses/export`, undefined],
      ['DELETE', `/apps/${ids.app}/licenses/${ids.unusedLicense}`, undefined], ['PUT', `/apps/${ids.app}/variables/x`, '{"value":"v"}'],
      ['DELETE', `/apps/${ids.app}/variables/greeting`, undefined], ['POST', `/apps/${ids.app}/files?name=x.bin`, 'content'],
      ['PUT', `/apps/${ids.app}/files/${ids.file}/content`, 'content'], ['PATCH', `/apps/${ids.app}/files/${ids.file}`, '{"name":"y"}'],
      ['DELETE', `/apps/${ids.app}/files/${ids.file}`, undefined], ['POST', `/apps/${ids.app}/bans`, '{"type":"ip","value":"1.2.3.4"}'],
      ['DELETE', `/apps/${ids.app}/bans/${ids.ban}`, undefined], ['GET', `/apps/${ids.app}/users/${ids.user}`, undefined],
      ['PATCH', `/apps/${ids.app}/users/${ids.user}`, '{"lifetime":true}'], ['POST', `/apps/${ids.app}/users/${ids.user}/reset-devices`, undefined],
      ['POST', `/apps/${ids.app}/users/${ids.user}/revoke-sessions`, undefined], ['DELETE', `/apps/${ids.app}/users/${ids.user}`, undefined],
      ['POST', '/tokens', '{"name":"x"}'], ['GET', '/tokens', undefined], ['DELETE', `/tokens/${ids.token}`, undefined], ['GET', '/audit', undefined],
    );
    const authorization = opt(
      fc.oneof(
        authorizationOf(ADMIN_TOKEN),
        fc.constantFrom(`Bearer ${ADMIN_TOKEN}\t`.replace('\t', '\u00a0'), `Bearer ${ADMIN_TOKEN.slice(1)}`, ADMIN_TOKEN, `${ADMIN_TOKEN} Bearer`),
        fc.constant<string[]>([`Bearer wrong-token-0123456789`, `Bearer ${ADMIN_TOKEN}`]),
      ),
    );
    const valid = new RegExp(`^Bearer\\s+${ADMIN_TOKEN}\\s*$`, 'i');
    const arb = fc
      .tuple(route, authorization, fc.constantFrom(undefined, 'application/json', 'application/octet-stream'))
      // Not the admin token, however it is sent (the first of repeated Authorization headers is the one read).
      .filter(([, auth]) => !valid.test(first(auth) ?? ''))
      .map(([[m, path, body], auth, type]) => req(m, `/admin/v1${path}`, headers({ authorization: auth, 'content-type': body === undefined ? undefined : type }), body));
    await fuzz.property(arb, 120, (r, res) => {
      if (res.statusCode !== 401 || res.json().code !== 'invalid_admin_token') throw new Error(`expected 401 invalid_admin_token: ${show(r)} → ${res.statusCode} ${abridge(res.body)}`);
    });
  }, TIMEOUT);
});
