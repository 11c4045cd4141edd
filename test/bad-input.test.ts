import type { LightMyRequestResponse } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { errorOf, harness, PASSWORD, type Harness, type TestApp } from './helpers.js';

/**
 * Bad input on the client interface: every answer is a 4xx in the error shape
 * of DECISIONS.md (never a 5xx), and nothing is stored.
 */

let h: Harness;
let app: TestApp;
/** An unused license code of `app`. */
let code: string;

beforeEach(async () => {
  h = await harness();
  app = await h.createApp({ name: 'Bad input' });
  await h.activeUser(app, 'alice');
  [code] = (await h.licenses(app)) as [string];
});
afterEach(async () => h.close());

const TABLES = ['apps', 'users', 'licenses', 'activations', 'devices', 'user_ips', 'sessions', 'variables', 'files', 'bans'] as const;

/** Row counts of every table the client interface could write, plus the licenses marked used. */
async function snapshot(): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  const db = h.tollgate.services.store.db;
  for (const t of TABLES) {
    const [row] = await db.all<{ n: number }>(`SELECT COUNT(*) AS n FROM ${t}`);
    out[t] = Number(row?.n);
  }
  const [used] = await db.all<{ n: number }>('SELECT COUNT(*) AS n FROM licenses WHERE used_at IS NOT NULL');
  out.used_licenses = Number(used?.n);
  const [ips] = await db.all<{ n: number }>('SELECT COALESCE(SUM(seen_count), 0) AS n FROM user_ips');
  out.ip_sightings = Number(ips?.n);
  return out;
}

/** POST with a raw payload (string or JSON-serialised value) and the given content type (null: no content-type header). */
function post(url: string, payload: string | undefined, contentType: string | null = 'application/json', headers: Record<string, string> = app.headers): Promise<LightMyRequestResponse> {
  const all: Record<string, string> = { ...headers };
  if (contentType !== null) all['content-type'] = contentType;
  return h.inject({ method: 'POST', url, headers: all, ...(payload !== undefined && { payload }) });
}

/** Asserts a 4xx in the error shape with the given status and code; returns the body. */
function expectError(res: LightMyRequestResponse, status: number, code: string) {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  const body = errorOf(res);
  expect(body.code).toBe(code);
  expect(body.detail.length).toBeGreaterThan(0);
  expect(res.body).not.toMatch(/\bat .+\.(ts|js):\d+/); // never a stack trace
  if (status === 422) {
    expect(Array.isArray(body.errors)).toBe(true);
    expect(body.errors!.length).toBeGreaterThan(0);
    for (const e of body.errors!) {
      expect(typeof e.field).toBe('string');
      expect(typeof e.message).toBe('string');
    }
  } else {
    expect(body.errors).toBeUndefined();
  }
  return body;
}

/** A 422 validation_error whose errors name `field` (or a field under it). */
function expect422(res: LightMyRequestResponse, field: string) {
  const body = expectError(res, 422, 'validation_error');
  const fields = body.errors!.map((e) => e.field);
  expect(fields.some((f) => f === field || f.startsWith(`${field}.`)), `fields ${JSON.stringify(fields)} should name ${field}`).toBe(true);
  return body;
}

/** Sends `payload` and asserts a 422 naming `field` with the store unchanged. */
async function rejected(url: string, payload: unknown, field: string, contentType: string | null = 'application/json'): Promise<void> {
  const before = await snapshot();
  const res = await post(url, typeof payload === 'string' ? payload : JSON.stringify(payload), contentType);
  expect422(res, field);
  expect(await snapshot()).toEqual(before);
}

// ---------------------------------------------------------------------------------------------
// The four POST endpoints and a valid body for each (built lazily: the code exists only per test).

type Endpoint = { url: string; valid: () => Record<string, unknown>; strings: string[] };

const ENDPOINTS: Endpoint[] = [
  { url: '/sign_up', valid: () => ({ username: 'newuser', password: PASSWORD }), strings: ['username', 'password', 'hardware_id'] },
  { url: '/sign_up_with_license_code', valid: () => ({ code }), strings: ['code', 'hardware_id'] },
  { url: '/auth/login', valid: () => ({ credentials: { username: 'alice', password: PASSWORD } }), strings: ['credentials.username', 'credentials.password', 'hardware_id'] },
  { url: '/activate_license', valid: () => ({ code, username: 'alice', password: PASSWORD }), strings: ['code', 'username', 'password', 'hardware_id'] },
];

const REQUIRED: [string, string][] = [
  ['/sign_up', 'username'],
  ['/sign_up', 'password'],
  ['/sign_up_with_license_code', 'code'],
  ['/auth/login', 'credentials'],
  ['/activate_license', 'code'],
  ['/activate_license', 'username'],
  ['/activate_license', 'password'],
];

/** Sets a dotted path in a copy of the body. */
function withField(body: Record<string, unknown>, path: string, value: unknown): Record<string, unknown> {
  const copy = structuredClone(body);
  const parts = path.split('.');
  let target = copy;
  for (const p of parts.slice(0, -1)) target = target[p] as Record<string, unknown>;
  target[parts.at(-1)!] = value;
  return copy;
}

function withoutField(body: Record<string, unknown>, path: string): Record<string, unknown> {
  const copy = structuredClone(body);
  const parts = path.split('.');
  let target = copy;
  for (const p of parts.slice(0, -1)) target = target[p] as Record<string, unknown>;
  delete target[parts.at(-1)!];
  return copy;
}

const endpoint = (url: string): Endpoint => ENDPOINTS.find((e) => e.url === url)!;

describe('the valid bodies used below are accepted (control)', () => {
  it.each(ENDPOINTS.map((e) => [e.url]))('%s answers 200 with its valid body', async (url) => {
    const res = await post(url, JSON.stringify(endpoint(url).valid()));
    expect(res.statusCode, res.body).toBe(200);
  });
});

describe.each(ENDPOINTS.map((e) => [e.url]))('%s', (url) => {
  it('malformed JSON → 422 naming body, nothing stored', async () => {
    await rejected(url, '{"username":', 'body');
  });

  it('truncated JSON of a valid body → 422', async () => {
    await rejected(url, JSON.stringify(endpoint(url).valid()).slice(0, -1), 'body');
  });

  it('JSON with a trailing comma and single quotes → 422', async () => {
    await rejected(url, "{'code': 'x',}", 'body');
  });

  it('empty body with content-type application/json → 422 naming body', async () => {
    await rejected(url, '', 'body');
  });

  it('no body and no content-type → 422 naming body', async () => {
    const before = await snapshot();
    const res = await h.inject({ method: 'POST', url, headers: app.headers });
    expect422(res, 'body');
    expect(await snapshot()).toEqual(before);
  });

  it.each([['null'], ['[]'], ['"text"'], ['42'], ['true'], ['[{"username":"x"}]']])('a JSON %s instead of an object → 422 naming body', async (raw) => {
    await rejected(url, raw, 'body');
  });

  it.each(REQUIRED.filter(([u]) => u === url).map(([, f]) => [f]))('missing %s → 422 naming it', async (field) => {
    await rejected(url, withoutField(endpoint(url).valid(), field), `body.${field}`);
  });

  it('an empty object → 422, nothing stored', async () => {
    const before = await snapshot();
    const res = await post(url, '{}');
    const body = expect422(res, 'body');
    expect(body.errors!.every((e) => e.field.startsWith('body'))).toBe(true);
    expect(await snapshot()).toEqual(before);
  });

  describe.each(endpoint(url).strings.map((f) => [f]))('field %s', (field) => {
    it.each([
      ['a number', 12345],
      ['an array', ['a', 'b']],
      ['an object', { value: 'x' }],
      ['null', null],
      ['a boolean', true],
    ])('%s → 422 naming it', async (_label, value) => {
      await rejected(url, withField(endpoint(url).valid(), field, value), `body.${field}`);
    });
  });

  it('a body over 64 KiB → 413 payload_too_large, nothing stored', async () => {
    const before = await snapshot();
    const big = JSON.stringify({ ...endpoint(url).valid(), padding: 'x'.repeat(70 * 1024) });
    const res = await post(url, big);
    expectError(res, 413, 'payload_too_large');
    expect(await snapshot()).toEqual(before);
  });

  it('a __proto__ key → 422, nothing stored, no prototype pollution', async () => {
    const before = await snapshot();
    const valid = JSON.stringify(endpoint(url).valid());
    const raw = `{"__proto__":{"polluted":"yes","username":"proto"},${valid.slice(1)}`;
    const res = await post(url, raw);
    expect422(res, 'body');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(await snapshot()).toEqual(before);
  });

  it('a nested __proto__ key → 422, nothing stored', async () => {
    const before = await snapshot();
    const valid = JSON.stringify(endpoint(url).valid());
    const raw = `{"nested":{"__proto__":{"polluted":"yes"}},${valid.slice(1)}`;
    const res = await post(url, raw);
    expect422(res, 'body');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(await snapshot()).toEqual(before);
  });

  it.each([
    ['arrays', '['.repeat(30_000) + ']'.repeat(30_000)],
    ['objects', '{"a":'.repeat(10_000) + '1' + '}'.repeat(10_000)],
  ])('a field holding deeply nested %s (10,000+ levels, under 64 KiB) → 422 naming it, never 500, nothing stored', async (_label, deep) => {
    const field = endpoint(url).strings[0]!;
    const raw = JSON.stringify(withField(endpoint(url).valid(), field, '__DEEP__')).replace('"__DEEP__"', deep);
    expect(raw.length).toBeLessThan(64 * 1024);
    const before = await snapshot();
    const res = await post(url, raw);
    expect(res.statusCode, res.body).toBeLessThan(500);
    expect422(res, 'body');
    expect(await snapshot()).toEqual(before);
  });

  it('text/plain with a body that is not JSON → 422, nothing stored', async () => {
    await rejected(url, 'username=alice&password=x', 'body', 'text/plain');
  });

  it('bad app credentials + malformed body → 401 invalid_app_credentials (step 1 first)', async () => {
    const before = await snapshot();
    const res = await post(url, '{"username":', 'application/json', { 'x-api-key': app.apiKey, 'x-api-secret': 'tg_sec_wrong' });
    expectError(res, 401, 'invalid_app_credentials');
    expect(await snapshot()).toEqual(before);
  });

  it('no app headers + a body over 64 KiB → 401 invalid_app_credentials', async () => {
    const before = await snapshot();
    const res = await post(url, JSON.stringify({ padding: 'x'.repeat(70 * 1024) }), 'application/json', {});
    expectError(res, 401, 'invalid_app_credentials');
    expect(await snapshot()).toEqual(before);
  });

  it('bad app credentials + wrong types → 401 invalid_app_credentials', async () => {
    const res = await post(url, JSON.stringify({ username: 1, password: [], code: {}, credentials: null }), 'application/json', { 'x-api-key': 'tg_key_nope', 'x-api-secret': app.apiSecret });
    expectError(res, 401, 'invalid_app_credentials');
  });
});

// ---------------------------------------------------------------------------------------------
// Lengths and characters (DECISIONS: lengths in code points after NFKC; "printable" = no Cc, Cf, Zl, Zp).

const USERNAME_BODIES: [string, (u: string) => Record<string, unknown>, string][] = [
  ['/sign_up', (u) => ({ username: u, password: PASSWORD }), 'body.username'],
  ['/auth/login', (u) => ({ credentials: { username: u, password: PASSWORD } }), 'body.credentials.username'],
  ['/activate_license', (u) => ({ code, username: u, password: PASSWORD }), 'body.username'],
];

const CODE_BODIES: [string, (c: string) => Record<string, unknown>, string][] = [
  ['/sign_up_with_license_code', (c) => ({ code: c }), 'body.code'],
  ['/auth/login', (c) => ({ credentials: { code: c } }), 'body.credentials.code'],
  ['/activate_license', (c) => ({ code: c, username: 'alice', password: PASSWORD }), 'body.code'],
];

const PASSWORD_BODIES: [string, (p: string) => Record<string, unknown>, string][] = [
  ['/sign_up', (p) => ({ username: 'newuser', password: p }), 'body.password'],
  ['/auth/login', (p) => ({ credentials: { username: 'alice', password: p } }), 'body.credentials.password'],
  ['/activate_license', (p) => ({ code, username: 'alice', password: p }), 'body.password'],
];

const HARDWARE_BODIES: [string, (hw: string) => Record<string, unknown>][] = ENDPOINTS.map((e) => [e.url, (hw: string) => ({ ...e.valid(), hardware_id: hw })]);

const BAD_CHARACTERS: [string, string][] = [
  ['a NUL byte', 'ab\u0000cd'],
  ['a control character (BEL)', 'ab\u0007cd'],
  ['a newline', 'ab\ncd'],
  ['an escape (ESC)', 'ab\u001bcd'],
  ['DEL', 'ab\u007fcd'],
  ['a zero-width space (Cf)', 'ab\u200bcd'],
  ['a right-to-left override (Cf)', 'ab\u202ecd'],
  ['a line separator (Zl)', 'ab\u2028cd'],
];

describe('username', () => {
  it.each(USERNAME_BODIES.map(([u, b, f]) => [u, b, f] as const))('%s: 65 code points → 422, nothing stored', async (url, body, field) => {
    await rejected(url, body('u'.repeat(65)), field);
  });

  it.each(USERNAME_BODIES.map(([u, b, f]) => [u, b, f] as const))('%s: 65 astral code points (130 UTF-16 units) → 422', async (url, body, field) => {
    await rejected(url, body('😀'.repeat(65)), field);
  });

  for (const [url, body, field] of USERNAME_BODIES) {
    it.each(BAD_CHARACTERS)(`${url}: %s → 422, nothing stored`, async (_label, value) => {
      await rejected(url, body(value), field);
    });
  }

  it('/sign_up: 64 astral code points is within the limit (lengths count code points, not UTF-16 units)', async () => {
    const res = await post('/sign_up', JSON.stringify({ username: '😀'.repeat(64), password: PASSWORD }));
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().username).toBe('😀'.repeat(64));
  });

  it('/sign_up: 2 code points → 422', async () => {
    await rejected('/sign_up', { username: 'ab', password: PASSWORD }, 'body.username');
  });

  it('/sign_up: whitespace inside → 422', async () => {
    await rejected('/sign_up', { username: 'ab cd', password: PASSWORD }, 'body.username');
  });

  it('/sign_up: a NUL byte escaped as \\u0000 in the raw JSON → 422', async () => {
    await rejected('/sign_up', `{"username":"ali\\u0000ce","password":"${PASSWORD}"}`, 'body.username');
  });
});

describe('license code', () => {
  it.each(CODE_BODIES.map(([u, b, f]) => [u, b, f] as const))('%s: 129 code points → 422, nothing stored', async (url, body, field) => {
    await rejected(url, body('C'.repeat(129)), field);
  });

  it.each(CODE_BODIES.map(([u, b, f]) => [u, b, f] as const))('%s: an empty code → 422', async (url, body, field) => {
    await rejected(url, body(''), field);
  });

  for (const [url, body, field] of CODE_BODIES) {
    it.each(BAD_CHARACTERS)(`${url}: %s → 422, nothing stored`, async (_label, value) => {
      await rejected(url, body(value), field);
    });
  }

  it('/sign_up_with_license_code: the real code with a NUL appended → 422 and the license stays unused', async () => {
    await rejected('/sign_up_with_license_code', { code: `${code}\u0000` }, 'body.code');
  });

  it('/sign_up_with_license_code: 128 code points is within the limit (an unknown code → 422 invalid_license)', async () => {
    const before = await snapshot();
    const res = await post('/sign_up_with_license_code', JSON.stringify({ code: 'C'.repeat(128) }));
    expect(res.statusCode, res.body).toBe(422);
    expect(errorOf(res).code).toBe('invalid_license');
    expect(await snapshot()).toEqual(before);
  });
});

describe('hardware_id', () => {
  it.each(HARDWARE_BODIES.map(([u, b]) => [u, b] as const))('%s: 257 code points → 422 naming body.hardware_id, nothing stored', async (url, body) => {
    await rejected(url, body('h'.repeat(257)), 'body.hardware_id');
  });

  it.each(HARDWARE_BODIES.map(([u, b]) => [u, b] as const))('%s: an empty hardware_id → 422', async (url, body) => {
    await rejected(url, body(''), 'body.hardware_id');
  });

  for (const [url, body] of HARDWARE_BODIES) {
    it.each(BAD_CHARACTERS)(`${url}: %s → 422, nothing stored`, async (_label, value) => {
      await rejected(url, body(value), 'body.hardware_id');
    });
  }

  it('/sign_up: 256 code points is within the limit', async () => {
    const res = await post('/sign_up', JSON.stringify({ username: 'hwuser', password: PASSWORD, hardware_id: 'h'.repeat(256) }));
    expect(res.statusCode, res.body).toBe(200);
  });

  it.each([['/sign_up'], ['/sign_up_with_license_code'], ['/activate_license']])(
    '%s: missing hardware_id with device authentication on → 422 naming body.hardware_id',
    async (url) => {
      expect((await h.admin('PATCH', `/apps/${app.id}`, { device_auth_enabled: true })).statusCode).toBe(200);
      await rejected(url, endpoint(url).valid(), 'body.hardware_id');
    },
  );
});

describe('password', () => {
  it.each(PASSWORD_BODIES.map(([u, b, f]) => [u, b, f] as const))('%s: 1025 bytes of ASCII → 422, nothing stored', async (url, body, field) => {
    await rejected(url, body('p'.repeat(1025)), field);
  });

  it.each(PASSWORD_BODIES.map(([u, b, f]) => [u, b, f] as const))('%s: 513 two-byte characters (1026 bytes UTF-8, 513 code points) → 422', async (url, body, field) => {
    await rejected(url, body('é'.repeat(513)), field);
  });

  it('/sign_up: exactly 1024 bytes UTF-8 is accepted', async () => {
    const res = await post('/sign_up', JSON.stringify({ username: 'longpass', password: 'é'.repeat(512) }));
    expect(res.statusCode, res.body).toBe(200);
  });

  it('/sign_up: shorter than password_min_length → 422', async () => {
    await rejected('/sign_up', { username: 'shortpass', password: 'short' }, 'body.password');
  });
});

describe('/auth/login credential forms', () => {
  it('both forms at once → 422 naming body.credentials', async () => {
    await rejected('/auth/login', { credentials: { username: 'alice', password: PASSWORD, code } }, 'body.credentials');
  });

  it('an empty credentials object → 422 naming body.credentials', async () => {
    await rejected('/auth/login', { credentials: {} }, 'body.credentials');
  });

  it('username without password → 422 naming body.credentials.password', async () => {
    await rejected('/auth/login', { credentials: { username: 'alice' } }, 'body.credentials.password');
  });

  it('password without username → 422 naming body.credentials.username', async () => {
    await rejected('/auth/login', { credentials: { password: PASSWORD } }, 'body.credentials.username');
  });
});

describe('every 422 carries errors[] (DECISIONS: "422 adds errors")', () => {
  it('/sign_up_with_license_code with an unknown code → 422 invalid_license with errors naming body.code', async () => {
    const res = await post('/sign_up_with_license_code', JSON.stringify({ code: 'NOPE-NOPE' }));
    expect422Code(res, 'invalid_license', 'body.code');
  });

  it('/sign_up_with_license_code with a used code → 422 license_used with errors naming body.code', async () => {
    const first = await post('/sign_up_with_license_code', JSON.stringify({ code }));
    expect(first.statusCode, first.body).toBe(200);
    const res = await post('/sign_up_with_license_code', JSON.stringify({ code }));
    expect422Code(res, 'license_used', 'body.code');
  });

  it('/sign_up with a taken username → 422 username_taken with errors naming body.username', async () => {
    const before = await snapshot();
    const res = await post('/sign_up', JSON.stringify({ username: 'ALICE', password: PASSWORD }));
    expect422Code(res, 'username_taken', 'body.username');
    expect(await snapshot()).toEqual(before);
  });
});

function expect422Code(res: LightMyRequestResponse, code: string, field: string): void {
  expect(res.statusCode, res.body).toBe(422);
  const body = errorOf(res);
  expect(body.code).toBe(code);
  expect(body.errors, `422 ${code} should carry errors[]: ${res.body}`).toEqual([expect.objectContaining({ field })]);
}

// ---------------------------------------------------------------------------------------------
// Content types.

describe('content types', () => {
  it('/sign_up: JSON with no content-type header is parsed as JSON and the user is created', async () => {
    const before = await snapshot();
    const res = await post('/sign_up', JSON.stringify({ username: 'nocontenttype', password: PASSWORD }), null);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().username).toBe('nocontenttype');
    expect((await snapshot()).users).toBe(before.users! + 1);
  });

  it('/auth/login: JSON with no content-type header is parsed as JSON', async () => {
    const res = await post('/auth/login', JSON.stringify({ credentials: { username: 'alice', password: PASSWORD } }), null);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().session_token).toMatch(/^tg_sess_/);
  });

  it('/sign_up: malformed JSON with no content-type header → 422, nothing stored', async () => {
    await rejected('/sign_up', '{"username":', 'body', null);
  });

  it('/sign_up: text/plain carrying JSON is parsed as JSON (clients send JSON whatever they declare)', async () => {
    const res = await post('/sign_up', JSON.stringify({ username: 'plaintext', password: PASSWORD }), 'text/plain');
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().username).toBe('plaintext');
  });

  it('/sign_up: a form-encoded body → 422, nothing stored', async () => {
    await rejected('/sign_up', `username=formuser&password=${encodeURIComponent(PASSWORD)}`, 'body', 'application/x-www-form-urlencoded');
  });

  it('/sign_up: application/json; charset=utf-8 with a non-ASCII username is parsed as UTF-8', async () => {
    const res = await post('/sign_up', JSON.stringify({ username: 'zoë_ünïcode', password: PASSWORD }), 'application/json; charset=utf-8');
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().username).toBe('zoë_ünïcode');
  });
});

// ---------------------------------------------------------------------------------------------
// GET /files/{file_id}/download with ids that are not UUIDs.

describe('GET /files/:file_id/download with a bad id', () => {
  let token: string;
  beforeEach(async () => {
    token = await h.login(app, 'alice');
  });
  const get = (path: string) => h.inject({ method: 'GET', url: path, headers: { ...app.headers, authorization: `Bearer ${token}` } });

  it.each([
    ['abc', '/files/abc/download'],
    ['a path traversal (url-encoded)', `/files/${encodeURIComponent('../../etc/passwd')}/download`],
    ['a UUID with a trailing character', '/files/00000000-0000-4000-8000-000000000000x/download'],
    ['a UUID without dashes', '/files/00000000000040008000000000000000/download'],
    ['a SQL fragment', `/files/${encodeURIComponent("' OR 1=1 --")}/download`],
    ['a NUL byte', '/files/%00/download'],
  ])('%s → 422 naming params.file_id', async (_label, path) => {
    const res = await get(path);
    expect422(res, 'params.file_id');
  });

  it('a 150-character id → 422 naming params.file_id', async () => {
    const res = await get(`/files/${'a'.repeat(150)}/download`);
    expect422(res, 'params.file_id');
  });

  it('a 5000-character id → 4xx in the error shape (never 5xx)', async () => {
    const res = await get(`/files/${'a'.repeat(5000)}/download`);
    expect(res.statusCode).toBeGreaterThanOrEqual(400);
    expect(res.statusCode).toBeLessThan(500);
    const body = errorOf(res);
    expect(['not_found', 'validation_error']).toContain(body.code);
  });

  it('a well-formed UUID that is no file → 404 file_not_found', async () => {
    const res = await get('/files/00000000-0000-4000-8000-000000000000/download');
    expectError(res, 404, 'file_not_found');
  });

  it('a traversal that is not url-encoded does not reach a file → 404 not_found', async () => {
    const res = await h.inject({ method: 'GET', url: '/files/../../etc/passwd/download', headers: { ...app.headers, authorization: `Bearer ${token}` } });
    expectError(res, 404, 'not_found');
  });

  it('bad app credentials + a bad id → 401 invalid_app_credentials', async () => {
    const res = await h.inject({ method: 'GET', url: '/files/abc/download', headers: { 'x-api-key': app.apiKey, 'x-api-secret': 'nope' } });
    expectError(res, 401, 'invalid_app_credentials');
  });
});

// ---------------------------------------------------------------------------------------------
// Unknown routes and methods.

describe('unknown routes', () => {
  it.each([
    ['GET', '/nope'],
    ['POST', '/nope'],
    ['GET', '/sign_up'],
    ['PUT', '/sign_up'],
    ['POST', '/sign_up/extra'],
    ['GET', '/files/00000000-0000-4000-8000-000000000000'],
    ['POST', '/app_context'],
    ['DELETE', '/auth/login'],
    ['GET', '/v1/app_context'],
  ] as const)('%s %s → 404 not_found', async (method, url) => {
    const res = await h.inject({ method, url, headers: app.headers });
    expectError(res, 404, 'not_found');
  });

  it('an unknown route without any headers → 404 not_found', async () => {
    const res = await h.inject({ method: 'GET', url: '/definitely/not/here' });
    expectError(res, 404, 'not_found');
  });

  it('an unknown admin route → 404 not_found', async () => {
    const res = await h.admin('GET', '/nope');
    expectError(res, 404, 'not_found');
  });
});
