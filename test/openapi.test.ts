import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { harness, STORE, type Harness } from './helpers.js';
import { ERRORS } from '../src/http/errors.js';
import { HARDWARE_ID, LICENSE_CODE, PASSWORD_MAX_BYTES, USERNAME } from '../src/domain/validation.js';
import { NONCE } from '../src/domain/signing/format.js';

/**
 * The OpenAPI 3.1 document at /openapi.json (DECISIONS.md, "Meta endpoints"):
 * valid, complete (every route the server registers, nothing else), consistent
 * (tags, summaries, the error shape, the admin security), and the /docs
 * reference served locally, with no CDN.
 */

type Json = Record<string, unknown>;
interface Operation {
  operationId?: string;
  parameters?: Json[];
  requestBody?: Json;
  tags?: string[];
  summary?: string;
  security?: Record<string, string[]>[];
  responses?: Record<string, Json>;
}
interface OpenApiDoc {
  openapi: string;
  info: { title: string; version: string };
  servers?: { url: string }[];
  paths: Record<string, Record<string, Operation>>;
  components?: { securitySchemes?: Record<string, Json>; schemas?: Record<string, Json>; parameters?: Record<string, Json>; headers?: Record<string, Json> };
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;
const ROUTES_DIR = resolve(import.meta.dirname, '../src/http/routes');

/**
 * Routes hidden from the document on purpose (schema.hide, or plugins that
 * serve the reference itself), by name. Anything else the server answers
 * must be documented.
 */
const HIDDEN = new Set([
  'GET /openapi.json',
  'GET /metrics', // only with METRICS_TOKEN; Prometheus text, not part of the API
  'GET /docs',
  'GET /docs/',
  'GET /docs/static/index.html',
  'GET /docs/static/swagger-initializer.js',
  'GET /docs/static/*',
  'GET /docs/*',
  'GET /docs/json',
  'GET /docs/yaml',
  'GET /dashboard', // the dashboard's pages and assets (src/http/dashboard.ts), not API
  'GET /dashboard*', // as printRoutes spells /dashboard/*
]);

const pgMissing = STORE === 'postgres' && !inject('pgUrl');

/** Every `app.<method>('<path>'` of src/http/routes/**, with /admin/v1 in front of the admin routes. */
function sourceRoutes(): { key: string; file: string }[] {
  const out: { key: string; file: string }[] = [];
  const files = readdirSync(ROUTES_DIR, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
  const pattern = /\bapp\.(get|post|put|patch|delete)\b\s*(?:<[^(]*?>)?\s*\(\s*(['"`])([^'"`]+)\2/g;
  for (const file of files) {
    const source = readFileSync(join(ROUTES_DIR, file), 'utf8');
    const prefix = file.split(sep)[0] === 'admin' ? '/admin/v1' : '';
    for (const match of source.matchAll(pattern)) {
      out.push({ key: `${match[1]!.toUpperCase()} ${prefix}${match[3]!}`, file: relative(resolve(ROUTES_DIR, '../../..'), join(ROUTES_DIR, file)) });
    }
  }
  return out;
}

/** '/apps/{app_id}' → '/apps/:app_id' */
const toFastify = (path: string) => path.replace(/\{([^}]+)\}/g, ':$1');

/**
 * The routes as Fastify's router prints them (`printRoutes({ commonPrefix: false })`):
 * a tree whose children extend their parent's path; HEAD routes are Fastify's own.
 */
function printedRoutes(tree: string): string[] {
  const stack: string[] = [];
  const out: string[] = [];
  for (const line of tree.split('\n')) {
    const m = /^((?:│ {3}| {4})*)(?:├── |└── )(.*?)(?: \(([^)]*)\))?$/.exec(line);
    if (!m) continue;
    const depth = m[1]!.length / 4;
    stack.length = depth;
    const path = (stack[depth - 1] ?? '') + m[2]!;
    stack.push(path);
    for (const method of (m[3] ?? '').split(',').map((s) => s.trim()).filter(Boolean)) out.push(`${method} ${path}`);
  }
  return out;
}

describe.skipIf(pgMissing)('OpenAPI document', () => {
  let h: Harness;
  let doc: OpenApiDoc;
  let raw: string;

  beforeAll(async () => {
    h = await harness();
    const res = await h.inject({ method: 'GET', url: '/openapi.json' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    raw = res.body;
    doc = JSON.parse(raw) as OpenApiDoc;
  });
  afterAll(async () => h?.close());

  /** Operations of the document as 'METHOD /path' with the operation. */
  function operations(): { key: string; method: string; path: string; op: Operation }[] {
    const out: { key: string; method: string; path: string; op: Operation }[] = [];
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        if (!(METHODS as readonly string[]).includes(method) && method !== 'head' && method !== 'options' && method !== 'trace') continue;
        out.push({ key: `${method.toUpperCase()} ${toFastify(path)}`, method: method.toUpperCase(), path, op });
      }
    }
    return out;
  }

  /** Follows local $refs ('#/components/...'). */
  function deref(node: unknown): Json {
    let current = node as Json;
    for (let i = 0; i < 20 && current && typeof current.$ref === 'string'; i++) {
      const ref = current.$ref as string;
      expect(ref.startsWith('#/'), `external $ref ${ref}`).toBe(true);
      current = ref
        .slice(2)
        .split('/')
        .reduce<unknown>((acc, part) => (acc as Json | undefined)?.[part.replace(/~1/g, '/').replace(/~0/g, '~')], doc) as Json;
      expect(current, `unresolvable $ref ${ref}`).toBeDefined();
    }
    return current;
  }

  it('validates against the OpenAPI 3.1 schema', async () => {
    const validator = new Validator();
    const result = await validator.validate(JSON.parse(raw) as Json);
    if (!result.valid) console.error('OpenAPI validation errors:\n' + JSON.stringify(result.errors, null, 2));
    expect(result.valid, `OpenAPI validation errors: ${JSON.stringify(result.errors, null, 2)}`).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it('is OpenAPI 3.1.x with info.version 1.9.11 (the client interface release)', () => {
    expect(doc.openapi).toMatch(/^3\.1\.\d+$/);
    expect(doc.info.version).toBe('1.9.11');
    expect(doc.info.title).toBe('Tollgate');
  });

  it('the source route list is read correctly (sanity check of the regex)', () => {
    const routes = sourceRoutes().map((r) => r.key);
    // A few routes from every file, so a broken pattern cannot pass silently as an empty list.
    for (const key of [
      'GET /healthz', 'GET /readyz', 'POST /sign_up', 'POST /sign_up_with_license_code', 'POST /activate_license', 'POST /auth/login',
      'POST /auth/logout', 'GET /app_context', 'GET /files/:file_id/download', 'POST /admin/v1/apps', 'PATCH /admin/v1/apps/:app_id',
      'POST /admin/v1/apps/:app_id/bans', 'PUT /admin/v1/apps/:app_id/variables/:name', 'PUT /admin/v1/apps/:app_id/files/:file_id/content',
      'GET /admin/v1/apps/:app_id/licenses/export', 'POST /admin/v1/apps/:app_id/users/:user_id/revoke-sessions', 'GET /admin/v1/audit',
      'DELETE /admin/v1/tokens/:token_id',
    ]) {
      expect(routes, key).toContain(key);
    }
    expect(new Set(routes).size, 'a route registered twice in the sources').toBe(routes.length);
  });

  it('documents every route of src/http/routes (forward direction)', () => {
    const documented = new Set(operations().map((o) => o.key));
    const missing = sourceRoutes().filter((r) => !HIDDEN.has(r.key) && !documented.has(r.key));
    expect(missing.map((r) => `${r.key} (${r.file})`), 'routes registered in the sources but missing from /openapi.json').toEqual([]);
  });

  it('documents only routes the server registers (reverse direction, hasRoute)', () => {
    const unknown = operations().filter((o) => !h.tollgate.server.hasRoute({ method: o.method as 'GET', url: toFastify(o.path) }));
    expect(unknown.map((o) => o.key), 'operations in /openapi.json the server does not answer').toEqual([]);
  });

  it('documents exactly the routes of the running router, minus the hidden ones and HEAD', () => {
    const printed = printedRoutes(h.tollgate.server.printRoutes({ commonPrefix: false }));
    expect(printed.length, 'printRoutes parsed to nothing').toBeGreaterThan(20);
    const registered = new Set(printed.filter((r) => !r.startsWith('HEAD ') && !HIDDEN.has(r)));
    const documented = new Set(operations().map((o) => o.key));
    expect([...registered].filter((r) => !documented.has(r)).sort(), 'registered but not documented').toEqual([]);
    expect([...documented].filter((r) => !registered.has(r)).sort(), 'documented but not registered').toEqual([]);
    // Hidden routes really are hidden.
    for (const path of Object.keys(doc.paths)) expect(path.startsWith('/docs') || path === '/openapi.json' || path === '/metrics', path).toBe(false);
  });

  it('every operation has tags and a summary', () => {
    const bad = operations()
      .filter((o) => !Array.isArray(o.op.tags) || o.op.tags.length === 0 || typeof o.op.summary !== 'string' || o.op.summary.trim() === '')
      .map((o) => o.key);
    expect(bad, 'operations without tags or summary').toEqual([]);
  });

  it('every non-2xx response uses the error shape {detail, code}', () => {
    // /readyz answers 503 {status: "unavailable"} for load balancers: the one deliberate exception, by name.
    const EXEMPT = new Set(['GET /readyz 503']);
    const bad: string[] = [];
    for (const o of operations()) {
      for (const [status, response] of Object.entries(o.op.responses ?? {})) {
        if (/^2/.test(status) || EXEMPT.has(`${o.key} ${status}`)) continue;
        const content = deref(response).content as Record<string, { schema?: unknown }> | undefined;
        const schema = content?.['application/json']?.schema ? deref(content['application/json'].schema) : undefined;
        const properties = schema?.properties as Json | undefined;
        const required = (schema?.required as string[] | undefined) ?? [];
        if (!properties?.detail || !properties.code || !required.includes('detail') || !required.includes('code')) bad.push(`${o.key} ${status}`);
      }
    }
    expect(bad, 'error responses not in the {detail, code} shape').toEqual([]);
  });

  it('client operations declare 401 and 422; downloads also 403 and 404', () => {
    const client = operations().filter((o) => o.op.tags?.includes('client'));
    const clientSources = sourceRoutes().filter((r) => r.file.split(/[\\/]/).includes('client')).map((r) => r.key);
    expect(client.map((o) => o.key).sort()).toEqual([...clientSources].sort());
    const missing: string[] = [];
    for (const o of client) {
      const declared = Object.keys(o.op.responses ?? {});
      const wanted = o.path.endsWith('/download') ? ['401', '403', '404', '422'] : ['401', '422'];
      for (const status of wanted) if (!declared.includes(status)) missing.push(`${o.key} ${status}`);
    }
    expect(missing, 'client responses not declared').toEqual([]);
  });

  it('POST /auth/logout does answer 422 to a malformed body (so the document must declare it)', async () => {
    const app = await h.createApp();
    const res = await h.inject({ method: 'POST', url: '/auth/logout', headers: { ...app.headers, 'content-type': 'application/json' }, payload: '{not json' });
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().code).toBe('validation_error');
  });

  it('admin operations declare 401 and carry the adminToken (HTTP bearer) security', () => {
    const scheme = doc.components?.securitySchemes?.adminToken;
    expect(scheme).toMatchObject({ type: 'http', scheme: 'bearer' });
    const admin = operations().filter((o) => o.path.startsWith('/admin/'));
    expect(admin.length).toBe(sourceRoutes().filter((r) => r.key.includes(' /admin/v1/')).length);
    const bad: string[] = [];
    for (const o of admin) {
      if (!Object.keys(o.op.responses ?? {}).includes('401')) bad.push(`${o.key}: no 401`);
      // The dashboard's sign-in is the one admin operation anyone may call: it is how a session starts.
      if (o.key !== 'POST /admin/v1/session' && !o.op.security?.some((req) => Object.keys(req).includes('adminToken'))) bad.push(`${o.key}: no adminToken security`);
      if (!o.op.tags?.some((t) => t.startsWith('admin'))) bad.push(`${o.key}: not tagged admin`);
    }
    expect(bad).toEqual([]);
    // And no other operation claims the admin token.
    for (const o of operations().filter((x) => !x.path.startsWith('/admin/'))) expect(JSON.stringify(o.op.security ?? []), o.key).not.toContain('adminToken');
  });

  it('every client operation requires the application key AND secret in every security alternative; meta says none', () => {
    const schemes = doc.components?.securitySchemes ?? {};
    expect(schemes.appKey).toEqual(expect.objectContaining({ type: 'apiKey', in: 'header', name: 'x-api-key' }));
    expect(schemes.appSecret).toEqual(expect.objectContaining({ type: 'apiKey', in: 'header', name: 'x-api-secret' }));
    expect(schemes.sessionToken).toMatchObject({ type: 'http', scheme: 'bearer' });
    for (const [name, header] of [['licenseCode', 'x-api-license-code'], ['legacyUsername', 'x-api-username'], ['legacyPassword', 'x-api-password']]) {
      expect(schemes[name!], name).toMatchObject({ type: 'apiKey', in: 'header', name: header });
    }
    const bad: string[] = [];
    for (const o of operations().filter((x) => x.op.tags?.includes('client'))) {
      const alternatives = o.op.security ?? [];
      if (alternatives.length === 0) bad.push(`${o.key}: no security`);
      for (const alt of alternatives) if (!('appKey' in alt && 'appSecret' in alt)) bad.push(`${o.key}: ${JSON.stringify(alt)} lacks the app credentials`);
    }
    expect(bad).toEqual([]);
    const byId = (id: string) => operations().find((o) => o.op.operationId === id)!.op.security;
    expect(byId('getAppContext')).toContainEqual({ appKey: [], appSecret: [], sessionToken: [] });
    expect(byId('getAppContext')).toContainEqual({ appKey: [], appSecret: [], legacyUsername: [], legacyPassword: [] });
    expect(byId('logout')).toEqual([{ appKey: [], appSecret: [], sessionToken: [] }]);
    for (const o of operations().filter((x) => x.op.tags?.includes('meta'))) expect(o.op.security, o.key).toEqual([]);
  });

  it('no credential is a header parameter (OpenAPI ignores an Authorization parameter; credentials are security schemes)', () => {
    const CREDENTIALS = ['authorization', 'x-api-key', 'x-api-secret', 'x-api-license-code', 'x-api-username', 'x-api-password'];
    const found = operations().flatMap((o) => (o.op.parameters ?? []).map((p) => deref(p)).filter((p) => p.in === 'header' && CREDENTIALS.includes(String(p.name).toLowerCase())).map((p) => `${o.key} ${String(p.name)}`));
    expect(found).toEqual([]);
  });

  it('every operation has a unique camelCase operationId, and the document names its server', () => {
    const ids = operations().map((o) => o.op.operationId);
    expect(ids.filter((id) => typeof id !== 'string' || !/^[a-z][a-zA-Z0-9]*$/.test(id)), 'missing or not camelCase').toEqual([]);
    expect(new Set(ids).size, 'duplicate operationId').toBe(ids.length);
    const byKey = Object.fromEntries(operations().map((o) => [o.key, o.op.operationId]));
    // Stable names generated clients call: renaming one breaks them.
    expect(byKey).toMatchObject({
      'POST /sign_up': 'signUp', 'POST /sign_up_with_license_code': 'signUpWithLicenseCode', 'POST /activate_license': 'activateLicense',
      'POST /auth/login': 'login', 'POST /auth/logout': 'logout', 'GET /app_context': 'getAppContext', 'GET /files/:file_id/download': 'downloadFile',
      'POST /admin/v1/apps': 'createApp', 'DELETE /admin/v1/apps/:app_id': 'deleteApp', 'POST /admin/v1/apps/:app_id/files': 'uploadFile',
    });
    expect(doc.servers).toEqual([expect.objectContaining({ url: '/' })]);
  });

  it('one ErrorBody, referenced everywhere, whose code lists every code of the error table', () => {
    const body = doc.components!.schemas!.ErrorBody as { properties: { code: { enum: string[] } } };
    expect([...body.properties.code.enum].sort()).toEqual(Object.keys(ERRORS).sort());
    // No inline copy left: every {detail, code} object outside the components is a $ref.
    const inline = (raw.match(/"detail":\{"type":"string"/g) ?? []).length;
    expect(inline, 'inline copies of the error schema (ErrorBody and /readyz 503 only)').toBe(2);
    for (const o of operations()) {
      for (const [status, response] of Object.entries(o.op.responses ?? {})) {
        if (/^2/.test(status) || `${o.key} ${status}` === 'GET /readyz 503') continue;
        expect((response.content as Json)['application/json'], `${o.key} ${status}`).toEqual({ schema: { $ref: '#/components/schemas/ErrorBody' } });
      }
    }
  });

  it('every admin operation with a body declares 413; uploads take application/octet-stream', () => {
    const missing = operations().filter((o) => o.path.startsWith('/admin/') && o.op.requestBody && !o.op.responses?.['413']).map((o) => o.key);
    expect(missing).toEqual([]);
    for (const id of ['uploadFile', 'replaceFileContent']) {
      const op = operations().find((o) => o.op.operationId === id)!.op;
      expect(op.requestBody, id).toMatchObject({ content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } });
    }
  });

  it('the download documents Range/If-Range, its response headers, 206 and 416', () => {
    const op = operations().find((o) => o.op.operationId === 'downloadFile')!.op;
    const names = (op.parameters ?? []).map((p) => String(deref(p).name).toLowerCase());
    expect(names).toEqual(expect.arrayContaining(['range', 'if-range', 'x-hardware-id', 'tollgate-nonce']));
    const headers = (status: string) => Object.keys((op.responses![status]!.headers ?? {}) as Json);
    expect(headers('200')).toEqual(expect.arrayContaining(['Content-Disposition', 'ETag', 'Accept-Ranges', 'Content-Length']));
    expect(headers('206')).toEqual(expect.arrayContaining(['Content-Range', 'ETag', 'Content-Length']));
    expect(headers('416')).toContain('Content-Range');
  });

  it('client operations reference the signing headers, defined once as components', () => {
    const components = doc.components!;
    expect(components.parameters!.TollgateNonce).toMatchObject({ name: 'Tollgate-Nonce', in: 'header', required: false, schema: { pattern: NONCE.source } });
    expect(Object.keys(components.headers!)).toEqual(expect.arrayContaining(['TollgateSignature', 'TollgateKeyCert']));
    const bad: string[] = [];
    for (const o of operations().filter((x) => x.op.tags?.includes('client'))) {
      if (!(o.op.parameters ?? []).some((p) => String(p.$ref).startsWith('#/components/parameters/TollgateNonce'))) bad.push(`${o.key}: no nonce`);
      for (const [status, response] of Object.entries(o.op.responses ?? {})) {
        const h = (response.headers ?? {}) as Record<string, Json>;
        if (h['Tollgate-Signature']?.$ref !== '#/components/headers/TollgateSignature' || h['Tollgate-Key-Cert']?.$ref !== '#/components/headers/TollgateKeyCert') bad.push(`${o.key} ${status}`);
      }
    }
    expect(bad).toEqual([]);
  });

  it('states the domain limits with the domain constants and the conditional requirements', () => {
    const s = doc.components!.schemas!;
    expect((s.PasswordCredentials as Json).properties).toMatchObject({ username: { minLength: USERNAME.min, maxLength: USERNAME.max }, password: { maxLength: PASSWORD_MAX_BYTES } });
    expect((s.CodeCredentials as Json).properties).toMatchObject({ code: { minLength: LICENSE_CODE.min, maxLength: LICENSE_CODE.max } });
    const body = (id: string) => deref((operations().find((o) => o.op.operationId === id)!.op.requestBody as Json).content as Json)['application/json'] as Json;
    expect(body('signUp').schema).toMatchObject({ properties: { hardware_id: { maxLength: HARDWARE_ID.max } } });
    expect(body('login').schema).toMatchObject({ properties: { credentials: { oneOf: [{ $ref: '#/components/schemas/PasswordCredentials' }, { $ref: '#/components/schemas/CodeCredentials' }] } } });
    expect(JSON.stringify((body('createLicenses').schema as Json).allOf)).toContain('"minutes"');
    const confirm = (operations().find((o) => o.op.operationId === 'deleteApp')!.op.parameters ?? []).find((p) => p.name === 'confirm');
    expect(confirm).toMatchObject({ in: 'query', required: true });
    // Document-only markers never leak into the document.
    expect(raw).not.toContain('x-tollgate-document');
  });

  describe('/docs', () => {
    const ASSET = /<(?:script|link|img|iframe)\b[^>]*?\b(?:src|href)\s*=\s*["']([^"']+)["']/gi;

    for (const url of ['/docs', '/docs/']) {
      it(`GET ${url} answers 200 HTML whose assets are all served locally (no CDN)`, async () => {
        const res = await h.inject({ method: 'GET', url });
        expect(res.statusCode, res.body).toBe(200);
        expect(res.headers['content-type']).toMatch(/^text\/html/);
        const html = res.body;
        const assets = [...html.matchAll(ASSET)].map((m) => m[1]!);
        expect(assets.length, 'the page loads no scripts or styles?').toBeGreaterThan(0);
        expect(assets.some((a) => /\.js$/.test(a)), 'no script').toBe(true);
        const base = new URL(url, 'http://tollgate.local');
        for (const asset of assets) {
          const target = new URL(asset, base);
          expect(target.origin, `${asset} is loaded from another origin`).toBe(base.origin);
          const got = await h.inject({ method: 'GET', url: target.pathname });
          expect(got.statusCode, `${target.pathname} is not served locally`).toBe(200);
        }
        // Belt and braces: no absolute or protocol-relative URL in any src/href at all.
        expect(html).not.toMatch(/\b(?:src|href)\s*=\s*["']?(?:https?:)?\/\//i);
      });
    }

    it('the UI loads the document from this server and calls no external validator', async () => {
      const init = await h.inject({ method: 'GET', url: '/docs/static/swagger-initializer.js' });
      expect(init.statusCode).toBe(200);
      expect(init.body).toMatch(/validatorUrl:\s*null/);
      expect(init.body).toMatch(/url:\s*resolveUrl\(['"]\.\/json['"]\)/);
      const json = await h.inject({ method: 'GET', url: '/docs/json' });
      expect(json.statusCode).toBe(200);
      expect(json.json()).toMatchObject({ openapi: doc.openapi, info: { version: '1.9.11' } });
      expect(Object.keys((json.json() as OpenApiDoc).paths).sort()).toEqual(Object.keys(doc.paths).sort());
    });
  });
});
