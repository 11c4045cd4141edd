import { createHmac } from 'node:crypto';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import formatsPlugin from 'ajv-formats';
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { OPERATOR_PASSWORD, sessionFrom, totpCode } from './operator-helpers.js';
import { ADMIN_TOKEN, harness, PASSWORD, STORE, type Harness } from './helpers.js';
import { setUpKeys } from './signing-fixtures.js';
import { Receiver } from './webhook-receiver.js';

/**
 * Real answers against /openapi.json: every request this file makes (the fixtures' too) goes through
 * a wrapper around the server's inject that finds the operation in the document, and checks that the
 * status is declared, the body matches the declared schema of its media type (ajv, JSON Schema 2020-12),
 * every documented response header present matches its schema, and no signing or download header
 * is sent undocumented. Each test drives every operation of its part with a 2xx and a few errors.
 */

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
const pgMissing = STORE === 'postgres' && !inject('pgUrl');
const addFormats = formatsPlugin as unknown as (ajv: Ajv2020) => Ajv2020;
const NONCE = 'bm9uY2Utb2YtdGhlLXRlc3Q';

describe.skipIf(pgMissing)('answers match the OpenAPI document', () => {
  let h: Harness;
  let doc: Json;
  let ajv: Ajv2020;
  const compiled = new Map<string, ValidateFunction>();
  let routes: { method: string; template: string; pattern: RegExp; params: number }[] = [];
  let problems: string[] = [];
  let seen = new Map<string, Set<number>>();
  /** Signed answers whose Tollgate-Signature was checked against its documented pattern, by operation. */
  let signed = new Set<string>();

  /** The schema with the document's components beside it, so its '#/components/…' references resolve. */
  function validator(key: string, schema: Json): ValidateFunction {
    let v = compiled.get(key);
    if (!v) compiled.set(key, (v = ajv.compile({ components: doc.components, allOf: [schema] })));
    return v;
  }
  const deref = (node: Json): Json => (typeof node?.$ref === 'string' ? deref(node.$ref.slice(2).split('/').reduce((n: Json, k: string) => n[k], doc)) : node);

  function operationOf(method: string, url: string): { template: string; op: Json } | null {
    const path = url.split('?')[0]!;
    const match = routes.filter((r) => r.method === method && r.pattern.test(path)).sort((a, b) => a.params - b.params)[0];
    return match ? { template: match.template, op: doc.paths[match.template][method] } : null;
  }

  function record(opts: InjectOptions, res: LightMyRequestResponse): void {
    const method = String(opts.method ?? 'GET').toLowerCase();
    const found = operationOf(method, String(opts.url));
    if (!found) return; // /openapi.json, /docs: hidden on purpose
    const { template, op } = found;
    const where = `${method.toUpperCase()} ${template} → ${res.statusCode}`;
    seen.set(op.operationId, (seen.get(op.operationId) ?? new Set()).add(res.statusCode));
    const response = op.responses[String(res.statusCode)];
    if (!response) return void problems.push(`${where}: status not documented (${res.body.slice(0, 200)})`);
    const type = String(res.headers['content-type'] ?? '').split(';')[0]!.trim();
    if (!response.content) {
      if (res.body !== '') problems.push(`${where}: a body where the document declares none`);
    } else if (!response.content[type]) {
      problems.push(`${where}: media type ${type} not documented (${Object.keys(response.content).join(', ')})`);
    } else if (type === 'application/json') {
      const v = validator(`${op.operationId} ${res.statusCode}`, response.content[type].schema);
      if (!v(res.json())) problems.push(`${where}: ${ajv.errorsText(v.errors)} in ${res.body.slice(0, 300)}`);
    }
    const documented = Object.fromEntries(Object.entries(response.headers ?? {}).map(([name, header]) => [name.toLowerCase(), deref(header as Json)]));
    for (const [name, header] of Object.entries(documented)) {
      const value = res.headers[name];
      if (value === undefined) continue;
      const schema = header.schema as Json;
      const typed = schema.type === 'integer' ? Number(value) : value;
      const v = validator(`header ${name} ${JSON.stringify(schema)}`, schema);
      if (!v(typed)) problems.push(`${where}: header ${name}: ${String(value)} ${ajv.errorsText(v.errors)}`);
      else if (name === 'tollgate-signature') signed.add(op.operationId);
    }
    for (const name of ['tollgate-signature', 'tollgate-key-cert', 'content-range', 'etag', 'content-disposition', 'retry-after']) {
      if (res.headers[name] !== undefined && !documented[name]) problems.push(`${where}: header ${name} sent but not documented`);
    }
    // What was sent as JSON must be what the document accepts, for 2xx answers (the document is not stricter than the server).
    const body = opts.payload;
    if (res.statusCode < 300 && body !== undefined && typeof body === 'object' && !Buffer.isBuffer(body) && op.requestBody?.content?.['application/json']) {
      const v = validator(`${op.operationId} request`, op.requestBody.content['application/json'].schema);
      if (!v(body)) problems.push(`${where}: the document refuses a body the server accepted: ${ajv.errorsText(v.errors)}`);
    }
  }

  /** Whether the document's request schema accepts `body` (to show it refuses what the domain refuses). */
  function documentAccepts(operationId: string, body: unknown): boolean {
    const op = Object.values(doc.paths as Json).flatMap((item: Json) => Object.values(item)).find((o: Json) => o.operationId === operationId) as Json;
    return validator(`${operationId} request`, op.requestBody.content['application/json'].schema)(body) as boolean;
  }

  beforeAll(async () => {
    h = await harness({ env: { WEBHOOK_ALLOW_HOSTS: '127.0.0.1' } });
    doc = (await h.inject({ method: 'GET', url: '/openapi.json' })).json();
    ajv = addFormats(new Ajv2020({ strict: false, allErrors: true, formats: { binary: true } }));
    routes = Object.entries(doc.paths as Json).flatMap(([template, item]) =>
      Object.keys(item as Json).map((method) => ({
        method, template, params: (template.match(/\{/g) ?? []).length,
        pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`),
      })),
    );
    const real = h.inject;
    h.inject = async (opts: InjectOptions) => {
      const res = await real(opts);
      record(opts, res);
      return res;
    };
  });
  afterAll(async () => h?.close());
  beforeEach(() => {
    problems = [];
    seen = new Map();
    signed = new Set();
  });

  /** Every operation of the given tags was answered with a 2xx in this test. */
  function expectAllDriven(tag: (t: string) => boolean): void {
    const ops = Object.values(doc.paths as Json).flatMap((item: Json) => Object.values(item)).filter((o: Json) => o.tags.some(tag)) as Json[];
    const missing = ops.filter((o) => ![...(seen.get(o.operationId) ?? [])].some((s) => s >= 200 && s < 300)).map((o) => o.operationId);
    expect(missing, 'operations never answered with a 2xx here').toEqual([]);
  }

  it('client operations: happy paths, signed answers, and errors', async () => {
    const app = await h.createApp({ anonymous_access_allowed: true, offline_grace_seconds: 3600, trial_minutes: 60, trial_entitlements: ['pro'] } as never);
    await setUpKeys(h, app);
    const [code1, code2] = await h.licenses(app, { count: 2 });
    await h.activeUser(app, 'alice', PASSWORD, 'hw-1');
    await h.client(app, 'POST', '/sign_up_with_license_code', { code: code1, hardware_id: 'hw-2' });
    const token = await h.login(app, 'alice', PASSWORD, 'hw-1');
    await h.client(app, 'POST', '/auth/login', { credentials: { code: code2 } });
    await h.client(app, 'GET', '/app_context', undefined, { authorization: `Bearer ${token}`, 'x-hardware-id': 'hw-1' });
    await h.client(app, 'GET', '/app_context', undefined, { 'tollgate-nonce': NONCE });
    await h.client(app, 'GET', '/app_context', undefined, { 'x-api-username': 'alice', 'x-api-password': PASSWORD, 'x-hardware-id': 'hw-1', 'tollgate-nonce': NONCE });
    await h.client(app, 'GET', '/signing_keys', undefined, { 'tollgate-nonce': NONCE });
    await h.client(app, 'POST', '/lease', undefined, { authorization: `Bearer ${token}`, 'x-hardware-id': 'hw-1', 'tollgate-nonce': NONCE });
    const trialToken = (await h.client(app, 'POST', '/trial', { hardware_id: 'hw-trial', email: 'a@example.com' }, { 'tollgate-nonce': NONCE })).json().session_token;
    const [code3] = await h.licenses(app, { count: 1 });
    await h.client(app, 'POST', '/redeem', { code: code3 }, { authorization: `Bearer ${trialToken}`, 'tollgate-nonce': NONCE });
    await h.client(app, 'POST', '/redeem', { code: code3 }, { authorization: `Bearer ${trialToken}`, 'tollgate-nonce': NONCE });
    const up = await h.inject({ method: 'POST', url: `/admin/v1/apps/${app.id}/files?name=a.bin`, headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/octet-stream' }, payload: Buffer.alloc(100, 7) });
    const fileUrl = `/files/${up.json().id}/download`;
    const full = await h.client(app, 'GET', fileUrl, undefined, { 'tollgate-nonce': NONCE });
    await h.client(app, 'GET', fileUrl, undefined, { range: 'bytes=10-19', 'if-range': String(full.headers.etag) });
    await h.client(app, 'GET', fileUrl, undefined, { range: 'bytes=500-' });
    await h.client(app, 'POST', '/auth/logout', undefined, { authorization: `Bearer ${token}`, 'tollgate-nonce': NONCE });
    // Issue 25: seats (max 1, so the second device meets 409 seats_exhausted) and the user's own device reset.
    await h.admin('PATCH', `/apps/${app.id}`, { max_seats: 1, max_devices_per_user: 10 });
    const seatUser = { 'x-api-username': 'alice', 'x-api-password': PASSWORD, 'x-hardware-id': 'hw-1', 'tollgate-nonce': NONCE };
    await h.client(app, 'POST', '/seats', undefined, seatUser);
    await h.client(app, 'POST', '/seats', undefined, { ...seatUser, 'x-hardware-id': 'hw-9' });
    await h.client(app, 'POST', '/seats/heartbeat', undefined, seatUser);
    await h.client(app, 'POST', '/seats', undefined, { 'x-api-username': 'alice', 'x-api-password': PASSWORD });
    await h.inject({ method: 'DELETE', url: '/seats', headers: { ...app.headers, ...seatUser } });
    await h.client(app, 'POST', '/seats/heartbeat', undefined, seatUser);
    await h.client(app, 'POST', '/devices/reset', undefined, seatUser);
    await h.client(app, 'POST', '/devices/reset', undefined, seatUser);
    // Errors: 401, 403, 404, 422 (both credential forms, a malformed nonce), 413.
    await h.client(app, 'POST', '/auth/login', { credentials: { username: 'alice', password: 'wrong' } });
    await h.inject({ method: 'GET', url: '/app_context', headers: { 'x-api-key': app.apiKey, 'x-api-secret': 'nope' } });
    await h.client(app, 'GET', `/files/${'0'.repeat(8)}-0000-4000-8000-${'0'.repeat(12)}/download`);
    await h.client(app, 'POST', '/auth/login', { credentials: { username: 'alice', password: PASSWORD, code: 'X' } });
    await h.client(app, 'GET', '/app_context', undefined, { 'tollgate-nonce': 'short' });
    await h.client(app, 'POST', '/sign_up', { username: 'x'.repeat(65), password: PASSWORD });
    await h.client(app, 'POST', '/sign_up', 'x'.repeat(70_000) as never);
    await h.ban(app, 'user', (await h.client(app, 'POST', '/sign_up', { username: 'bob', password: PASSWORD })).json().id);
    await h.client(app, 'POST', '/auth/login', { credentials: { username: 'bob', password: PASSWORD } });
    expect(problems).toEqual([]);
    expectAllDriven((t) => t === 'client');
    for (const status of [401, 403, 404, 409, 413, 416, 422, 429]) expect([...seen.values()].some((s) => s.has(status)), `no ${status} seen`).toBe(true);
    expect([...signed].sort(), 'signed answers checked against the document').toEqual(expect.arrayContaining(['downloadFile', 'getAppContext', 'listSigningKeys', 'logout']));
  });

  it('the document refuses what the domain refuses: both credential forms, minutes with lifetime, a long username', () => {
    expect(documentAccepts('login', { credentials: { username: 'alice', password: PASSWORD } })).toBe(true);
    expect(documentAccepts('login', { credentials: { code: 'ABC' } })).toBe(true);
    expect(documentAccepts('login', { credentials: { username: 'alice', password: PASSWORD, code: 'ABC' } })).toBe(false);
    expect(documentAccepts('login', { credentials: {} })).toBe(false);
    expect(documentAccepts('signUp', { username: 'x'.repeat(65), password: PASSWORD })).toBe(false);
    expect(documentAccepts('signUp', { username: 'two words', password: PASSWORD })).toBe(false);
    expect(documentAccepts('createLicenses', { count: 1, minutes: 60 })).toBe(true);
    expect(documentAccepts('createLicenses', { count: 1, lifetime: true })).toBe(true);
    expect(documentAccepts('createLicenses', { count: 1, revokes_lifetime_access: true })).toBe(true);
    expect(documentAccepts('createLicenses', { count: 1 })).toBe(false);
    expect(documentAccepts('createLicenses', { count: 1, minutes: 60, lifetime: true })).toBe(false);
  });

  it('admin operations: happy paths and errors', async () => {
    const created = await h.admin('POST', '/apps', { name: 'Admin app' });
    const appId = created.json().id as string;
    const a = (url: string) => `/apps/${appId}${url}`;
    await h.admin('GET', '/apps');
    await h.admin('GET', `/apps/${appId}`);
    await h.admin('PATCH', `/apps/${appId}`, { registration_open: true });
    await h.admin('POST', a('/secret'));
    const lic = (await h.admin('POST', a('/licenses'), { count: 2, minutes: 30, note: 'n' })).json().licenses[0];
    await h.admin('GET', a('/licenses?used=false'));
    await h.admin('GET', a('/licenses/export'));
    await h.admin('GET', a('/licenses/export.csv?used=false'));
    await h.admin('GET', a('/stats?bucket=hour'));
    await h.admin('GET', a(`/licenses/${lic.id}`));
    await h.admin('DELETE', a(`/licenses/${lic.id}`));
    await h.admin('POST', a('/licenses/delete_unused'), { note: 'n' });
    await h.admin('PUT', a('/variables/greeting'), { value: 'hello' });
    await h.admin('GET', a('/variables'));
    await h.admin('GET', a('/variables/greeting'));
    await h.admin('DELETE', a('/variables/greeting'));
    const ban = (await h.admin('POST', a('/bans'), { type: 'ip', value: '192.0.2.0/24', reason: 'test' })).json();
    await h.admin('GET', a('/bans'));
    await h.admin('DELETE', a(`/bans/${ban.id}`));
    const headers = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/octet-stream' };
    const file = (await h.inject({ method: 'POST', url: `/admin/v1${a('/files?name=f.bin&mime_type=application/octet-stream')}`, headers, payload: Buffer.from('abc') })).json();
    await h.inject({ method: 'PUT', url: `/admin/v1${a(`/files/${file.id}/content`)}`, headers, payload: Buffer.from('abcd') });
    await h.admin('GET', a('/files'));
    await h.admin('GET', a(`/files/${file.id}`));
    await h.admin('PATCH', a(`/files/${file.id}`), { name: 'g.bin' });
    await h.admin('DELETE', a(`/files/${file.id}`));
    const app = { id: appId, name: 'Admin app', apiKey: created.json().api_key, apiSecret: '', headers: {} };
    const keys = await setUpKeys(h, app);
    await h.admin('GET', a('/root-key'));
    await h.admin('GET', a('/signing-keys'));
    await h.admin('GET', a(`/signing-keys/${keys.kid}`));
    await h.admin('POST', a(`/signing-keys/${keys.kid}/retire`));
    const secret = (await h.admin('POST', a('/secret'))).json().api_secret as string;
    const client = { ...app, apiSecret: secret, headers: { 'x-api-key': app.apiKey, 'x-api-secret': secret } };
    const userId = await h.activeUser(client, 'carol');
    await h.admin('GET', a('/users?q=car'));
    await h.admin('GET', a(`/users/${userId}`));
    await h.admin('PATCH', a(`/users/${userId}`), { extend_minutes: 10 });
    await h.admin('POST', a(`/users/${userId}/reset-devices`));
    await h.admin('POST', a(`/users/${userId}/revoke-sessions`));
    const tpl = (await h.admin('POST', a('/templates'), { name: 'Pro', minutes: 60, entitlements: ['pro'], max_seats: 2 })).json();
    await h.admin('GET', a('/templates'));
    await h.admin('GET', a(`/templates/${tpl.id}`));
    await h.admin('PATCH', a(`/templates/${tpl.id}`), { max_devices: 2 });
    await h.admin('POST', a('/licenses'), { count: 1, template_id: tpl.id });
    await h.admin('POST', a(`/templates/${tpl.id}/apply`));
    await h.admin('DELETE', a(`/templates/${tpl.id}`));
    await h.admin('POST', a(`/users/${userId}/entitlements`), { code: 'beta', until: h.clock.iso(60_000) });
    await h.admin('GET', a('/users?entitlement=beta&trial=false'));
    await h.admin('DELETE', a(`/users/${userId}/entitlements/beta`));
    await h.admin('PATCH', `/apps/${appId}`, { trial_minutes: 30, trial_entitlements: ['pro'], trial_blocked_domains: ['mailinator.com'] });
    await h.client(client, 'POST', '/trial', { hardware_id: 'hw-trial' });
    const trialRow = (await h.admin('GET', a('/trials?status=running&with_total=true'))).json().items[0];
    await h.admin('DELETE', a(`/trials/${trialRow.id}`));
    await h.admin('PATCH', `/apps/${appId}`, { max_seats: 2, max_devices_per_user: 10 });
    const seat = (await h.client(client, 'POST', '/seats', undefined, { 'x-api-username': 'carol', 'x-api-password': PASSWORD, 'x-hardware-id': 'hw-s' })).json().seat;
    await h.admin('GET', a('/seats?limit=10'));
    await h.admin('GET', a(`/users/${userId}/seats`));
    await h.admin('DELETE', a(`/seats/${seat.id}`));
    await h.admin('DELETE', `/apps/${appId}/users/${userId}`);
    const tok = (await h.admin('POST', '/tokens', { name: 'ci' })).json();
    await h.admin('GET', '/tokens');
    await h.admin('DELETE', `/tokens/${tok.id}`);
    await h.admin('GET', '/audit?limit=5');
    // Operators and the dashboard's session (cookie + CSRF token).
    const op = (await h.admin('POST', '/operators', { username: 'dash', password: OPERATOR_PASSWORD, role: 'support' })).json();
    await h.admin('GET', '/operators');
    await h.admin('PATCH', `/operators/${op.id}`, { role: 'admin' }); // never the last owner: that would be a 409
    await h.admin('POST', `/operators/${op.id}/reset_totp`);
    const signIn = await h.inject({ method: 'POST', url: '/admin/v1/session', payload: { username: 'dash', password: OPERATOR_PASSWORD } });
    const session = sessionFrom(h, signIn);
    await session.call('GET', '/session');
    await session.call('GET', '/whoami');
    const totp = (await session.call('POST', '/session/totp')).json();
    await session.call('POST', '/session/totp/confirm', { code: totpCode(totp.secret, h.clock.ms) });
    h.clock.advance(30_000);
    await session.call('DELETE', '/session/totp', { code: totpCode(totp.secret, h.clock.ms) });
    await session.call('DELETE', '/session');
    await h.admin('DELETE', `/operators/${op.id}`);
    // Webhooks (a loopback receiver: WEBHOOK_ALLOW_HOSTS above) and the event list.
    const receiver = await Receiver.start();
    try {
      for (const base of [a('/webhooks'), '/webhooks']) {
        const hook = (await h.admin('POST', base, { url: receiver.url, description: 'crm' })).json();
        await h.admin('GET', base);
        await h.admin('GET', `${base}/${hook.id}`);
        await h.admin('PATCH', `${base}/${hook.id}`, { event_types: ['user.created', 'webhook.test'] });
        await h.admin('POST', `${base}/${hook.id}/secret`);
        const test = (await h.admin('POST', `${base}/${hook.id}/test`)).json();
        const delivered = async () => (await h.admin('GET', `${base}/${hook.id}/deliveries`)).json().items.find((d: { id: string }) => d.id === test.delivery_id)?.status === 'delivered';
        for (let i = 0; !(await delivered()); i++) {
          if (i > 200) throw new Error(`test delivery not delivered: ${JSON.stringify((await h.admin('GET', `${base}/${hook.id}/deliveries`)).json())}`);
          await h.tollgate.outbox.worker.runOnce();
          await new Promise((r) => setTimeout(r, 20));
        }
        await h.admin('POST', `${base}/${hook.id}/deliveries/${test.delivery_id}/replay`);
        await h.admin('POST', `${base}/${hook.id}/replay`, { since: '2020-01-01T00:00:00Z' });
        await h.admin('GET', base.replace(/webhooks$/, 'webhook-key'));
        await h.admin('DELETE', `${base}/${hook.id}`);
      }
    } finally {
      await receiver.close();
    }
    await h.admin('GET', '/events?type=app.created');
    // Errors: 401, 404, 409, 413, 422 (a missing confirm, minutes with lifetime).
    await h.inject({ method: 'GET', url: '/admin/v1/apps', headers: { authorization: 'Bearer wrong' } });
    await h.admin('GET', `/apps/${'0'.repeat(8)}-0000-4000-8000-${'0'.repeat(12)}`);
    await h.admin('DELETE', a('/licenses/' + (await h.admin('GET', a('/licenses?used=true'))).json().items[0]?.id));
    await h.admin('POST', a('/licenses'), { count: 1, minutes: 5, lifetime: true });
    await h.admin('DELETE', `/apps/${appId}`);
    await h.inject({ method: 'POST', url: '/admin/v1/apps', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, payload: JSON.stringify({ name: 'x'.repeat(2 * 1024 * 1024) }) });
    await h.admin('DELETE', `/apps/${appId}?confirm=Admin%20app`);
    expect(problems).toEqual([]);
    // Store integrations have a test of their own below.
    expectAllDriven((t) => t.startsWith('admin') && t !== 'admin: integrations');
    for (const status of [401, 404, 409, 413, 422]) expect([...seen.values()].some((s) => s.has(status)), `no ${status} seen`).toBe(true);
  });

  it('store integrations: the admin side and the stores\' webhooks, happy paths and errors', async () => {
    const appId = (await h.admin('POST', '/apps', { name: 'Shop app' })).json().id as string;
    const a = (url: string) => `/apps/${appId}${url}`;
    const secret = 'lemon-signing-secret-1234';
    await h.admin('PUT', a('/integrations/lemonsqueezy'), { signing_secret: secret });
    await h.admin('GET', a('/integrations'));
    await h.admin('GET', a('/integrations/lemonsqueezy'));
    await h.admin('PATCH', a('/integrations/lemonsqueezy'), { enabled: true });
    const mapping = (await h.admin('POST', a('/integrations/lemonsqueezy/products'), { product_key: '1', minutes: 60 })).json();
    await h.admin('GET', a('/integrations/lemonsqueezy/products'));
    await h.admin('PATCH', a(`/integrations/lemonsqueezy/products/${mapping.id}`), { codes_per_unit: 2 });
    const body = Buffer.from(JSON.stringify({ meta: { event_name: 'order_created' }, data: { type: 'orders', id: '7', attributes: { status: 'paid', user_email: 'b@example.com', first_order_item: { variant_id: 1, product_id: 1, quantity: 1 } } } }));
    const sign = (bytes: Buffer) => createHmac('sha256', secret).update(bytes).digest('hex');
    const url = `/integrations/lemonsqueezy/${appId}`;
    const order = (await h.inject({ method: 'POST', url, headers: { 'content-type': 'application/json', 'x-signature': sign(body) }, payload: body })).json();
    await h.admin('GET', a('/orders'));
    await h.admin('GET', a(`/orders/${order.order_id}`));
    // Errors: 401 (unsigned), 409 (mapped twice; a subscription before its order), 422 (garbage with a good signature), 404, 413.
    await h.inject({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload: body });
    await h.admin('POST', a('/integrations/lemonsqueezy/products'), { product_key: '1', minutes: 60 });
    const early = Buffer.from(JSON.stringify({ meta: { event_name: 'subscription_created' }, data: { type: 'subscriptions', id: '9', attributes: { order_id: 99 } } }));
    await h.inject({ method: 'POST', url, headers: { 'content-type': 'application/json', 'x-signature': sign(early) }, payload: early });
    const garbage = Buffer.from('{"meta":');
    await h.inject({ method: 'POST', url, headers: { 'content-type': 'application/json', 'x-signature': sign(garbage) }, payload: garbage });
    await h.inject({ method: 'POST', url, headers: { 'content-type': 'application/json', 'x-signature': 'x' }, payload: Buffer.alloc(600 * 1024, 32) });
    await h.admin('GET', a('/integrations/stripe'));
    await h.admin('DELETE', a(`/integrations/lemonsqueezy/products/${mapping.id}`));
    await h.admin('DELETE', a('/integrations/lemonsqueezy'));
    expect(problems).toEqual([]);
    expectAllDriven((t) => t === 'admin: integrations' || t === 'integrations');
    for (const status of [401, 404, 409, 413, 422]) expect([...seen.values()].some((s) => s.has(status)), `no ${status} seen`).toBe(true);
  });

  it('health and readiness', async () => {
    await h.inject({ method: 'GET', url: '/healthz' });
    await h.inject({ method: 'GET', url: '/readyz' });
    expect(problems).toEqual([]);
    expectAllDriven((t) => t === 'meta');
  });
});
