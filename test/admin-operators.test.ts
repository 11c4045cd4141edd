import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LightMyRequestResponse } from 'fastify';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import { loadConfig } from '../src/config/index.js';
import type { AuditView } from '../src/domain/admin/audit.js';
import { createTollgate } from '../src/wiring.js';
import { ADMIN_TOKEN, fastHasher, harness, PASSWORD, STORE, type Harness, type TestApp, expectError } from './helpers.js';

/**
 * Operators' own records: named admin tokens (DECISIONS.md / docs/decisions.md
 * "Admin API"), the first-start bootstrap token, and the audit log of admin writes.
 */

let h: Harness;
beforeEach(async () => {
  h = await harness();
});
afterEach(async () => h.close());

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const ENV_ACTOR = 'env:TOLLGATE_ADMIN_TOKEN';
const sha256 = (data: string) => createHash('sha256').update(data).digest();

function expect422(res: LightMyRequestResponse, field: string) {
  const body = expectError(res, 422, 'validation_error');
  const fields = body.errors!.map((e) => e.field);
  expect(fields.some((f) => f === field || f.startsWith(`${field}.`)), `fields ${JSON.stringify(fields)} should name ${field}`).toBe(true);
}

/** An admin call with a given admin token. */
function as(token: string, method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, payload?: unknown) {
  return h.inject({ method, url: `/admin/v1${url}`, headers: { authorization: `Bearer ${token}` }, ...(payload !== undefined && { payload: payload as object }) });
}

/** Every audit entry matching the query, following the cursor. */
async function auditAll(query = '', limit = 500): Promise<AuditView[]> {
  const out: AuditView[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 1000; pages++) {
    const res = await h.admin('GET', `/audit?limit=${limit}${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    out.push(...body.items);
    cursor = body.next_cursor;
    if (cursor === null) return out;
  }
  throw new Error('audit pagination did not end');
}

async function createToken(name: string): Promise<{ id: string; token: string }> {
  const res = await h.admin('POST', '/tokens', { name });
  expect(res.statusCode, res.body).toBe(201);
  return res.json();
}

function upload(appId: string, name: string, payload: string) {
  return h.inject({
    method: 'POST', url: `/admin/v1/apps/${appId}/files?name=${encodeURIComponent(name)}`,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/octet-stream' }, payload,
  });
}

function replaceContent(appId: string, fileId: string, payload: string) {
  return h.inject({
    method: 'PUT', url: `/admin/v1/apps/${appId}/files/${fileId}/content`,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/octet-stream' }, payload,
  });
}

// ---------------------------------------------------------------------------------------------

describe('admin tokens', () => {
  it('POST /tokens {name} → 201 with a tg_adm_ token shown once; GET /tokens never contains it', async () => {
    const res = await h.admin('POST', '/tokens', { name: 'ci deploy' });
    expect(res.statusCode, res.body).toBe(201);
    const created = res.json();
    expect(created).toMatchObject({ name: 'ci deploy', created_at: h.clock.iso(), last_used_at: null, revoked_at: null });
    expect(created.id).toMatch(UUID);
    expect(created.token).toMatch(/^tg_adm_[A-Za-z0-9_-]{43,}$/);
    // At least 256 random bits.
    expect(Buffer.from(created.token.slice('tg_adm_'.length), 'base64url').length).toBeGreaterThanOrEqual(32);

    const list = await h.admin('GET', '/tokens');
    expect(list.statusCode, list.body).toBe(200);
    const body = list.json();
    expect(body.next_cursor).toBeNull();
    expect(body.items).toEqual([{ id: created.id, name: 'ci deploy', role: 'owner', created_at: created.created_at, last_used_at: null, revoked_at: null, operator_id: null, operator_username: null }]);
    expect(list.body).not.toContain(created.token);
    expect(list.body).not.toContain(created.token.slice('tg_adm_'.length));
    expect(list.body).not.toContain(sha256(created.token).toString('hex'));
    expect(list.body).not.toContain(sha256(created.token).toString('base64url'));
    for (const item of body.items) expect(Object.keys(item).sort()).toEqual(['created_at', 'id', 'last_used_at', 'name', 'operator_id', 'operator_username', 'revoked_at', 'role']);
  });

  it('two tokens are different', async () => {
    const a = await createToken('a');
    const b = await createToken('b');
    expect(a.token).not.toBe(b.token);
    expect(a.id).not.toBe(b.id);
    expect((await h.admin('GET', '/tokens')).json().items.map((t: { name: string }) => t.name).sort()).toEqual(['a', 'b']);
  });

  it('the token is stored only as a digest', async () => {
    const { token } = await createToken('stored');
    const rows = await h.tollgate.services.store.db.all<Record<string, unknown>>('SELECT * FROM admin_tokens');
    const dump = JSON.stringify(rows);
    expect(dump).not.toContain(token);
    expect(dump).not.toContain(token.slice('tg_adm_'.length));
  });

  it('the new token authenticates admin calls, and last_used_at gets set', async () => {
    const { id, token } = await createToken('robot');
    h.clock.advance(5_000);
    const apps = await as(token, 'GET', '/apps');
    expect(apps.statusCode, apps.body).toBe(200);
    const created = await as(token, 'POST', '/apps', { name: 'Made by robot' });
    expect(created.statusCode, created.body).toBe(201);
    const usedAt = h.clock.iso();

    h.clock.advance(5_000);
    const listed = (await h.admin('GET', '/tokens')).json().items.find((t: { id: string }) => t.id === id);
    expect(listed.last_used_at).toBe(usedAt);
    expect(listed.revoked_at).toBeNull();
  });

  it('DELETE /tokens/:id revokes at once (401 invalid_admin_token); the env token keeps working; twice → 404', async () => {
    const { id, token } = await createToken('temporary');
    const other = await createToken('stays');
    expect((await as(token, 'GET', '/apps')).statusCode).toBe(200);

    h.clock.advance(1_000);
    const res = await h.admin('DELETE', `/tokens/${id}`);
    expect(res.statusCode, res.body).toBe(204);
    expect(res.body).toBe('');

    expectError(await as(token, 'GET', '/apps'), 401, 'invalid_admin_token');
    expectError(await as(token, 'POST', '/apps', { name: 'After revocation' }), 401, 'invalid_admin_token');
    expectError(await as(token, 'POST', '/tokens', { name: 'escalate' }), 401, 'invalid_admin_token');
    expect((await h.admin('GET', '/apps')).json().items).toEqual([]);
    expect((await h.admin('GET', '/apps')).statusCode).toBe(200);
    expect((await as(other.token, 'GET', '/apps')).statusCode).toBe(200);

    const listed = (await h.admin('GET', '/tokens')).json().items.find((t: { id: string }) => t.id === id);
    expect(listed.revoked_at).toBe(h.clock.iso());

    expectError(await h.admin('DELETE', `/tokens/${id}`), 404, 'not_found');
    expectError(await h.admin('DELETE', '/tokens/00000000-0000-4000-8000-000000000000'), 404, 'not_found');
    expectError(await h.admin('DELETE', '/tokens/not-a-uuid'), 422, 'validation_error');
  });

  it('GET /tokens is a list like every other: ?limit= pages with next_cursor, each token exactly once; limit over 500 → 422', async () => {
    const created: string[] = [];
    for (let i = 0; i < 5; i++) {
      created.push((await createToken(`t${i}`)).id);
      h.clock.advance(1);
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let pages = 0; pages < 10; pages++) {
      const res = await h.admin('GET', `/tokens?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(res.statusCode, res.body).toBe(200);
      const body = res.json();
      expect(body.items.length).toBeLessThanOrEqual(2);
      seen.push(...body.items.map((t: { id: string }) => t.id));
      cursor = body.next_cursor;
      if (cursor === null) break;
    }
    expect(seen.sort()).toEqual([...created].sort());
    expectError(await h.admin('GET', '/tokens?limit=501'), 422, 'validation_error');
  });

  it('a named token can revoke another named token', async () => {
    const boss = await createToken('boss');
    const minion = await createToken('minion');
    expect((await as(boss.token, 'DELETE', `/tokens/${minion.id}`)).statusCode).toBe(204);
    expectError(await as(minion.token, 'GET', '/tokens'), 401, 'invalid_admin_token');
    expect((await as(boss.token, 'GET', '/tokens')).statusCode).toBe(200);
  });

  it('POST /tokens: 422 on a missing, empty or over-long name or an unknown property; 401 without a token', async () => {
    expect422(await h.admin('POST', '/tokens', {}), 'body.name');
    expect422(await h.admin('POST', '/tokens', { name: '' }), 'body.name');
    expect422(await h.admin('POST', '/tokens', { name: 'x'.repeat(129) }), 'body.name');
    expectError(await h.admin('POST', '/tokens', { name: 'ok', scope: 'all' }), 422, 'validation_error');
    expectError(await h.admin('POST', '/tokens', { name: 42 }), 422, 'validation_error');
    expectError(await h.inject({ method: 'POST', url: '/admin/v1/tokens', payload: { name: 'anon' } }), 401, 'invalid_admin_token');
    expectError(await h.inject({ method: 'GET', url: '/admin/v1/tokens' }), 401, 'invalid_admin_token');
    expect((await h.admin('GET', '/tokens')).json().items).toEqual([]);
  });

  it('an admin token does not work as a client credential, and a session token is not an admin token', async () => {
    const app = await h.createApp();
    await h.activeUser(app, 'alice');
    const session = await h.login(app, 'alice');
    expectError(await as(session, 'GET', '/apps'), 401, 'invalid_admin_token');
    const { token } = await createToken('admin only');
    expect((await h.client(app, 'GET', '/app_context', undefined, { authorization: `Bearer ${token}` })).statusCode).toBe(401);
  });
});

// ---------------------------------------------------------------------------------------------

/** A database of its own, outside the harness (the bootstrap needs a start without TOLLGATE_ADMIN_TOKEN). */
async function ownDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  if (STORE === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-boot-'));
    return { url: `sqlite:${join(dir, 'tollgate.db')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const base = inject('pgUrl');
  if (!base) throw new Error('PostgreSQL is not reachable (this test should have been skipped)');
  const schema = `boot_${randomBytes(6).toString('hex')}`;
  const client = new pg.Client({ connectionString: base });
  await client.connect();
  await client.query(`CREATE SCHEMA ${schema}`);
  const url = new URL(base);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return {
    url: url.toString(),
    drop: async () => {
      await client.query(`DROP SCHEMA ${schema} CASCADE`);
      await client.end();
    },
  };
}

describe('first-start bootstrap', () => {
  it('no TOLLGATE_ADMIN_TOKEN and an empty database: an initial tg_adm_ token that works; a second start returns null', async () => {
    const db = await ownDatabase();
    try {
      const config = loadConfig({ DATABASE_URL: db.url, LOG_LEVEL: 'silent', RATE_LIMIT: 'off' });
      const first = await createTollgate(config, { hasher: fastHasher });
      let initial: string;
      try {
        await first.server.ready();
        expect(first.initialAdminToken).toMatch(/^tg_adm_[A-Za-z0-9_-]{43,}$/);
        initial = first.initialAdminToken!;
        const auth = { authorization: `Bearer ${initial}` };
        const apps = await first.server.inject({ method: 'GET', url: '/admin/v1/apps', headers: auth });
        expect(apps.statusCode, apps.body).toBe(200);
        const created = await first.server.inject({ method: 'POST', url: '/admin/v1/apps', headers: auth, payload: { name: 'Bootstrapped' } });
        expect(created.statusCode, created.body).toBe(201);
        const tokens = await first.server.inject({ method: 'GET', url: '/admin/v1/tokens', headers: auth });
        expect(tokens.json().items).toHaveLength(1);
        expect(tokens.json().items[0].name).toBe('initial');
        expect(tokens.body).not.toContain(initial);
        // The creation is in the audit log, by the system, without the token.
        const audit = await first.server.inject({ method: 'GET', url: '/admin/v1/audit?action=admin_token.create', headers: auth });
        expect(audit.json().items).toHaveLength(1);
        expect(audit.json().items[0]).toMatchObject({ actor: 'system', target_id: tokens.json().items[0].id, app_id: null });
        expect(audit.body).not.toContain(initial);
        // Nothing else is accepted.
        const wrong = await first.server.inject({ method: 'GET', url: '/admin/v1/apps', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
        expect(wrong.statusCode).toBe(401);
      } finally {
        await first.close();
      }

      const second = await createTollgate(config, { hasher: fastHasher });
      try {
        await second.server.ready();
        expect(second.initialAdminToken).toBeNull();
        const apps = await second.server.inject({ method: 'GET', url: '/admin/v1/apps', headers: { authorization: `Bearer ${initial}` } });
        expect(apps.statusCode, apps.body).toBe(200);
        expect(apps.json().items.map((a: { name: string }) => a.name)).toEqual(['Bootstrapped']);
        const tokens = await second.server.inject({ method: 'GET', url: '/admin/v1/tokens', headers: { authorization: `Bearer ${initial}` } });
        expect(tokens.json().items).toHaveLength(1);
      } finally {
        await second.close();
      }
    } finally {
      await db.drop();
    }
  });

  it('with TOLLGATE_ADMIN_TOKEN set, no initial token is created', async () => {
    expect(h.tollgate.initialAdminToken).toBeNull();
    expect((await h.admin('GET', '/tokens')).json().items).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------

describe('audit log', () => {
  it('records every admin write, newest first, with the right app_id and target_id; reads are not recorded', async () => {
    const secrets: string[] = [];
    const expected: { action: string; app_id: string | null; target_id: string | null; at: string }[] = [];
    const step = (action: string, app_id: string | null, target_id: string | null) => {
      expected.push({ action, app_id, target_id, at: h.clock.iso() });
      h.clock.advance(1_000);
    };
    const ok = (res: LightMyRequestResponse, status: number) => {
      expect(res.statusCode, res.body).toBe(status);
      return res;
    };
    const reads = async (appId: string) => {
      // Reads sprinkled in between: none of them may appear in the log.
      await h.admin('GET', '/apps');
      await h.admin('GET', `/apps/${appId}`);
      await h.admin('GET', `/apps/${appId}/licenses`);
      await h.admin('GET', `/apps/${appId}/users`);
      await h.admin('GET', `/apps/${appId}/bans`);
      await h.admin('GET', `/apps/${appId}/variables`);
      await h.admin('GET', `/apps/${appId}/files`);
      await h.admin('GET', `/apps/${appId}/licenses/export`);
      await h.admin('GET', '/tokens');
      await h.admin('GET', '/audit');
    };

    const created = ok(await h.admin('POST', '/apps', { name: 'Audited' }), 201).json();
    const appId: string = created.id;
    secrets.push(created.api_secret);
    step('app.create', appId, appId);
    await reads(appId);

    ok(await h.admin('PATCH', `/apps/${appId}`, { name: 'Audited 2', max_devices_per_user: 1, registration_open: false }), 200);
    step('app.update', appId, appId);
    ok(await h.admin('PATCH', `/apps/${appId}`, { registration_open: true }), 200);
    step('app.update', appId, appId);
    secrets.push(ok(await h.admin('POST', `/apps/${appId}/secret`), 200).json().api_secret);
    step('app.rotate_secret', appId, appId);

    const licenses = ok(await h.admin('POST', `/apps/${appId}/licenses`, { count: 3, minutes: 60, note: 'batch one' }), 201).json().licenses as { id: string; code: string }[];
    secrets.push(...licenses.map((l) => l.code));
    step('licenses.create', appId, null);
    const lifetime = ok(await h.admin('POST', `/apps/${appId}/licenses`, { count: 2, lifetime: true, mask: 'LIFE-XXXXXXXXXXXXXXXX' }), 201).json().licenses as { id: string; code: string }[];
    secrets.push(...lifetime.map((l) => l.code));
    step('licenses.create', appId, null);
    ok(await h.admin('DELETE', `/apps/${appId}/licenses/${licenses[2]!.id}`), 204);
    step('license.delete', appId, licenses[2]!.id);

    ok(await h.admin('PUT', `/apps/${appId}/variables/motd`, { value: 'hello' }), 200);
    step('variable.put', appId, 'motd');
    ok(await h.admin('DELETE', `/apps/${appId}/variables/motd`), 204);
    step('variable.delete', appId, 'motd');

    const file = ok(await upload(appId, 'app.bin', 'first content'), 201).json();
    step('file.create', appId, file.id);
    ok(await replaceContent(appId, file.id, 'second, longer content'), 200);
    step('file.replace_content', appId, file.id);
    ok(await h.admin('PATCH', `/apps/${appId}/files/${file.id}`, { name: 'renamed.bin' }), 200);
    step('file.update', appId, file.id);
    ok(await h.admin('DELETE', `/apps/${appId}/files/${file.id}`), 204);
    step('file.delete', appId, file.id);

    const ban = ok(await h.admin('POST', `/apps/${appId}/bans`, { type: 'ip', value: '198.51.100.0/24', reason: 'abuse' }), 201).json();
    step('ban.create', appId, ban.id);
    ok(await h.admin('DELETE', `/apps/${appId}/bans/${ban.id}`), 204);
    step('ban.delete', appId, ban.id);

    // A client sign-up and activation are not admin writes.
    const app: TestApp = { id: appId, name: 'Audited 2', apiKey: created.api_key, apiSecret: secrets[1]!, headers: { 'x-api-key': created.api_key, 'x-api-secret': secrets[1]! } };
    const userId = await h.signUp(app, 'alice');
    ok(await h.client(app, 'POST', '/activate_license', { code: licenses[0]!.code, username: 'alice', password: PASSWORD }), 200);
    await h.login(app, 'alice');
    await reads(appId);

    ok(await h.admin('PATCH', `/apps/${appId}/users/${userId}`, { extend_minutes: 30, password: 'operator chosen pw' }), 200);
    secrets.push('operator chosen pw');
    step('user.update', appId, userId);
    ok(await h.admin('POST', `/apps/${appId}/users/${userId}/reset-devices`), 204);
    step('user.reset_devices', appId, userId);
    ok(await h.admin('POST', `/apps/${appId}/users/${userId}/revoke-sessions`), 200);
    step('user.revoke_sessions', appId, userId);
    ok(await h.admin('DELETE', `/apps/${appId}/users/${userId}`), 204);
    step('user.delete', appId, userId);

    const token = await createToken('auditor');
    secrets.push(token.token);
    step('admin_token.create', null, token.id);
    ok(await h.admin('DELETE', `/tokens/${token.id}`), 204);
    step('admin_token.revoke', null, token.id);

    ok(await h.admin('DELETE', `/apps/${appId}?confirm=${encodeURIComponent('Audited 2')}`), 204);
    step('app.delete', appId, appId);
    await h.admin('GET', '/apps');
    await h.admin('GET', '/audit');

    const res = await h.admin('GET', '/audit?limit=500');
    expect(res.statusCode, res.body).toBe(200);
    const items = res.json().items as AuditView[];
    expect(res.json().next_cursor).toBeNull();
    // Exactly the writes, newest first; the app's history outlives the app.
    expect(items.map((i) => ({ action: i.action, app_id: i.app_id, target_id: i.target_id, at: i.at }))).toEqual([...expected].reverse());
    for (const item of items) {
      expect(item.id).toMatch(UUID);
      expect(item.at).toMatch(ISO);
      expect(item.actor).toBe(ENV_ACTOR);
      expect(typeof item.details).toBe('object');
    }
    expect(new Set(items.map((i) => i.id)).size).toBe(items.length);

    // No secret of any kind is written to the log: API secrets, license codes, passwords, admin tokens.
    for (const secret of secrets) expect(res.body, `the audit log leaks ${secret}`).not.toContain(secret);
    for (const l of [...licenses, ...lifetime]) expect(res.body).not.toContain(l.code.replace(/-/g, ''));
    expect(res.body).not.toContain(ADMIN_TOKEN);
  });

  it('app.update details hold only the fields that changed, before and after', async () => {
    const app = await h.createApp({ name: 'Before' });
    h.clock.advance(1_000);
    const res = await h.admin('PATCH', `/apps/${app.id}`, { name: 'After', max_devices_per_user: 1, device_auth_enabled: false, session_ttl_seconds: 3600 });
    expect(res.statusCode, res.body).toBe(200);
    const [entry] = await auditAll('&action=app.update');
    expect(entry).toMatchObject({ app_id: app.id, target_id: app.id, actor: ENV_ACTOR, at: h.clock.iso() });
    expect(entry!.details).toEqual({ before: { name: 'Before', session_ttl_seconds: 86400 }, after: { name: 'After', session_ttl_seconds: 3600 } });
  });

  it('app.create is recorded with the new app’s id and its settings; the secret is not in it', async () => {
    const res = await h.admin('POST', '/apps', { name: 'Fresh', max_devices_per_user: 3 });
    const created = res.json();
    const [entry] = await auditAll('&action=app.create');
    expect(entry).toMatchObject({ action: 'app.create', app_id: created.id, target_id: created.id, actor: ENV_ACTOR });
    expect(JSON.stringify(entry!.details)).toContain('Fresh');
    expect((entry!.details.after as Record<string, unknown>).max_devices_per_user).toBe(3);
    expect(JSON.stringify(entry)).not.toContain(created.api_secret);
    expect(JSON.stringify(entry)).not.toContain(created.api_secret.slice('tg_sec_'.length));
  });

  it('licenses.create never carries a license code, not even for a large batch with a custom mask', async () => {
    const app = await h.createApp();
    const res = await h.admin('POST', `/apps/${app.id}/licenses`, { count: 200, minutes: 5, mask: 'VIP-XXXX-XXXX-XXXX-XXXX', note: 'promo' });
    expect(res.statusCode, res.body).toBe(201);
    const codes = (res.json().licenses as { code: string; id: string }[]);
    const entries = await auditAll('&action=licenses.create');
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ app_id: app.id, actor: ENV_ACTOR });
    expect(entries[0]!.details).toMatchObject({ count: 200, minutes: 5 });
    const dump = JSON.stringify(await auditAll());
    for (const { code } of codes) {
      expect(dump).not.toContain(code);
      expect(dump).not.toContain(code.slice(4)); // without the literal prefix
    }
  });

  it('the actor is env:TOLLGATE_ADMIN_TOKEN for the env token and names a named token', async () => {
    const { id, token } = await createToken('deploy-bot');
    const res = await as(token, 'POST', '/apps', { name: 'By the bot' });
    expect(res.statusCode, res.body).toBe(201);
    const appId = res.json().id;
    expect((await as(token, 'PUT', `/apps/${appId}/variables/v`, { value: '1' })).statusCode).toBe(200);
    expect((await h.admin('PUT', `/apps/${appId}/variables/v`, { value: '2' })).statusCode).toBe(200);

    const entries = await auditAll(`&app_id=${appId}`);
    const byBot = entries.filter((e) => e.actor !== ENV_ACTOR);
    expect(byBot.map((e) => e.action).sort()).toEqual(['app.create', 'variable.put']);
    for (const e of byBot) {
      expect(e.actor).toContain('deploy-bot');
      expect(e.actor).toBe(`token:deploy-bot (${id})`);
      expect(e.actor).not.toContain(token);
    }
    expect(entries.filter((e) => e.actor === ENV_ACTOR).map((e) => e.action)).toEqual(['variable.put']);
    const [tokenEntry] = await auditAll('&action=admin_token.create');
    expect(tokenEntry).toMatchObject({ actor: ENV_ACTOR, target_id: id, app_id: null });
  });

  it('a rejected write is not recorded', async () => {
    const app = await h.createApp();
    const before = (await auditAll()).length;
    await h.admin('PATCH', `/apps/${app.id}`, { max_device_per_user: 3 });
    await h.admin('POST', `/apps/${app.id}/licenses`, { count: 0, minutes: 1 });
    await h.admin('DELETE', `/apps/${app.id}?confirm=wrong`);
    await h.admin('DELETE', `/apps/${app.id}/bans/00000000-0000-4000-8000-000000000000`);
    await h.admin('POST', '/tokens', {});
    await h.inject({ method: 'POST', url: '/admin/v1/apps', payload: { name: 'No token' } });
    expect((await auditAll()).length).toBe(before);
  });

  it('filters: app_id, target_id, action, since (inclusive) and until (exclusive), combined', async () => {
    const t0 = h.clock.ms;
    const a = await h.createApp({ name: 'A' }); // t0
    h.clock.advance(1_000);
    const b = await h.createApp({ name: 'B' }); // t0 + 1 s
    h.clock.advance(1_000);
    await h.admin('PUT', `/apps/${a.id}/variables/x`, { value: '1' }); // t0 + 2 s
    h.clock.advance(1_000);
    await h.admin('PUT', `/apps/${b.id}/variables/x`, { value: '1' }); // t0 + 3 s
    h.clock.advance(1_000);
    await h.admin('PUT', `/apps/${a.id}/variables/y`, { value: '1' }); // t0 + 4 s
    h.clock.advance(1_000);
    const tok = await createToken('t'); // t0 + 5 s

    const actions = async (q: string) => (await auditAll(q)).map((e) => `${e.action}:${e.app_id === a.id ? 'A' : e.app_id === b.id ? 'B' : '-'}:${e.target_id === null ? '' : e.target_id.length > 8 ? 'id' : e.target_id}`);
    expect(await actions(`&app_id=${a.id}`)).toEqual(['variable.put:A:y', 'variable.put:A:x', 'app.create:A:id']);
    expect(await actions(`&app_id=${b.id}`)).toEqual(['variable.put:B:x', 'app.create:B:id']);
    expect(await actions('&target_id=x')).toEqual(['variable.put:B:x', 'variable.put:A:x']);
    expect(await actions(`&target_id=${tok.id}`)).toEqual(['admin_token.create:-:id']);
    expect(await actions('&action=variable.put')).toEqual(['variable.put:A:y', 'variable.put:B:x', 'variable.put:A:x']);
    expect(await actions('&action=app.create')).toEqual(['app.create:B:id', 'app.create:A:id']);
    expect(await actions('&action=nothing.like.this')).toEqual([]);
    expect(await actions(`&app_id=${a.id}&target_id=x`)).toEqual(['variable.put:A:x']);

    const iso = (ms: number) => new Date(ms).toISOString();
    expect(await actions(`&since=${iso(t0 + 2_000)}`)).toEqual(['admin_token.create:-:id', 'variable.put:A:y', 'variable.put:B:x', 'variable.put:A:x']);
    expect(await actions(`&until=${iso(t0 + 2_000)}`)).toEqual(['app.create:B:id', 'app.create:A:id']);
    expect(await actions(`&since=${iso(t0 + 1_000)}&until=${iso(t0 + 3_000)}`)).toEqual(['variable.put:A:x', 'app.create:B:id']);
    expect(await actions(`&since=${iso(t0 + 2_000)}&action=variable.put&app_id=${a.id}`)).toEqual(['variable.put:A:y', 'variable.put:A:x']);
    // Another ISO 8601 form of the same instant (an offset) means the same.
    expect(await actions(`&since=${encodeURIComponent('2026-01-01T02:00:04+02:00')}`)).toEqual(['admin_token.create:-:id', 'variable.put:A:y']);
    expect(await actions(`&since=${iso(t0 + 60_000)}`)).toEqual([]);
  });

  it('a bad since/until, app_id or cursor → 422; no token → 401', async () => {
    expect422(await h.admin('GET', '/audit?since=yesterday'), 'querystring.since');
    expect422(await h.admin('GET', '/audit?until=not-a-date'), 'querystring.until');
    expect422(await h.admin('GET', '/audit?since='), 'querystring.since');
    expectError(await h.admin('GET', '/audit?app_id=not-a-uuid'), 422, 'validation_error');
    expectError(await h.admin('GET', '/audit?cursor=garbage'), 422, 'validation_error');
    expectError(await h.admin('GET', '/audit?limit=501'), 422, 'validation_error');
    expectError(await h.inject({ method: 'GET', url: '/admin/v1/audit' }), 401, 'invalid_admin_token');
  });

  it('since/until must be ISO 8601: "12" or "1/2/2026" → 422 (not silently read as some date)', async () => {
    for (const bad of ['12', '1/2/2026', 'March 5, 2026']) {
      expect422(await h.admin('GET', `/audit?since=${encodeURIComponent(bad)}`), 'querystring.since');
      expect422(await h.admin('GET', `/audit?until=${encodeURIComponent(bad)}`), 'querystring.until');
    }
  });

  it('cursor pagination returns each entry exactly once, newest first, also when entries share a timestamp', async () => {
    const app = await h.createApp();
    h.clock.advance(1);
    for (let i = 0; i < 40; i++) {
      await h.admin('PUT', `/apps/${app.id}/variables/v${i}`, { value: String(i) });
      if (i % 4 === 3) h.clock.advance(1); // groups of four share their timestamp
    }
    const all = await auditAll('', 500);
    expect(all).toHaveLength(41);
    for (const limit of [1, 3, 7, 40]) {
      const paged = await auditAll('', limit);
      expect(paged.map((e) => e.id)).toEqual(all.map((e) => e.id));
    }
    const paged = await auditAll(`&action=variable.put&app_id=${app.id}`, 6);
    expect(paged).toHaveLength(40);
    expect(new Set(paged.map((e) => e.target_id)).size).toBe(40);
    for (let i = 1; i < all.length; i++) expect(Date.parse(all[i - 1]!.at)).toBeGreaterThanOrEqual(Date.parse(all[i]!.at));
    // The newest group comes first, the app's creation last.
    expect(all.at(-1)!.action).toBe('app.create');
    expect(all.slice(0, 4).map((e) => e.target_id).sort()).toEqual(['v36', 'v37', 'v38', 'v39']);
  });

  it('entries written within the same millisecond still come newest first (write order, not a random tie-break)', async () => {
    // The test clock stands still: every write below shares one timestamp, as quick scripted writes can.
    const app = await h.createApp();
    for (let i = 0; i < 12; i++) await h.admin('PUT', `/apps/${app.id}/variables/v${String(i).padStart(2, '0')}`, { value: 'x' });
    const all = await auditAll('', 5);
    expect(all.map((e) => e.target_id)).toEqual([...Array.from({ length: 12 }, (_, i) => `v${String(11 - i).padStart(2, '0')}`), app.id]);
  });
});
