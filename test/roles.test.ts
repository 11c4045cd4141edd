import Fastify from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { GRANTS } from '../src/domain/admin/roles.js';
import { requireAdmin } from '../src/http/admin-plugin.js';
import { handleError } from '../src/http/errors.js';
import { adminRoutes } from '../src/http/routes/admin/index.js';
import { permissionOf, ROUTE_PERMISSIONS } from '../src/http/roles.js';
import { ADMIN_TOKEN, expectError, harness, PASSWORD, type Harness, type TestApp } from './helpers.js';
import { makeOperator, signIn, withToken, type Method, type Session } from './operator-helpers.js';

/** Roles (issue 16): owner, admin, support, viewer, for dashboard sessions and admin tokens alike, enforced by one table. */

let h: Harness;
afterEach(async () => {
  const done = h;
  h = undefined as unknown as Harness; // a test without a harness must not close the previous one's again
  await done?.close();
});

describe('the role table', () => {
  it('lists every admin route the server registers (method and pattern); a route not in it would be refused', async () => {
    h = await harness();
    const registered: string[] = [];
    // A bare Fastify with the same admin plugin: its onRoute hook sees every route (no compilers needed to list them).
    const probe = Fastify();
    probe.setValidatorCompiler(() => () => true);
    probe.setSerializerCompiler(() => (data) => JSON.stringify(data));
    probe.addHook('onRoute', (route) => {
      for (const method of [route.method].flat()) if (method !== 'HEAD') registered.push(`${method} ${route.url}`);
    });
    await probe.register(adminRoutes, { prefix: '/admin/v1', services: h.tollgate.services, envToken: ADMIN_TOKEN, maxUploadBytes: 1024, sessionIdleSeconds: 1800 });
    await probe.ready();
    await probe.close();
    expect(registered.length).toBeGreaterThan(40);
    const missing = registered.filter((r) => !Object.hasOwn(ROUTE_PERMISSIONS, r));
    expect(missing, 'admin routes missing from src/http/roles.ts').toEqual([]);
    // And the real server answers them through the same table: HEAD is its GET.
    expect(permissionOf('HEAD', '/admin/v1/apps')).toBe('read');
    expect(permissionOf('GET', '/admin/v1/toString')).toBeUndefined();
  });

  it('fails closed: an admin route missing from the table is refused even to an owner token', async () => {
    h = await harness();
    const app = Fastify();
    app.setErrorHandler(handleError);
    await app.register(async (scope) => {
      requireAdmin(scope, h.tollgate.services, { envToken: ADMIN_TOKEN, sessionIdleSeconds: 1800 });
      scope.get('/not-in-the-table', async () => ({ leaked: true }));
    }, { prefix: '/admin/v1' });
    const res = await app.inject({ method: 'GET', url: '/admin/v1/not-in-the-table', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expectError(res, 403, 'forbidden');
    expect(res.body).not.toContain('leaked');
    expectError(await app.inject({ method: 'GET', url: '/admin/v1/not-in-the-table' }), 401, 'invalid_admin_token');
    await app.close();
  });

  it('the grants are the issue’s: owner everything, admin all but operators and keys, support reads and users/bans but deletes no user, viewer reads', () => {
    expect([...GRANTS.owner].sort()).toEqual(['apps', 'bans', 'content', 'delete_users', 'keys', 'licenses', 'operators', 'read', 'self', 'tokens', 'users']);
    expect([...GRANTS.admin].sort()).toEqual(['apps', 'bans', 'content', 'delete_users', 'licenses', 'read', 'self', 'tokens', 'users']);
    expect([...GRANTS.support].sort()).toEqual(['bans', 'read', 'self', 'users']);
    expect([...GRANTS.viewer].sort()).toEqual(['read', 'self']);
  });
});

type Caller = (method: Method, url: string, payload?: unknown) => ReturnType<Session['call']>;

interface World {
  app: TestApp;
  spare: TestApp;
  userId: string;
  spareUserId: string;
  licenseId: string;
}

async function world(): Promise<World> {
  const app = await h.createApp({ name: 'Main' });
  const spare = await h.createApp({ name: 'Spare' });
  const userId = await h.activeUser(app, 'customer', PASSWORD);
  const spareUserId = await h.activeUser(app, 'leaving', PASSWORD);
  const license = await h.license(app, { minutes: 60 });
  return { app, spare, userId, spareUserId, licenseId: license.id };
}

/** One action per permission, each from a fresh world's state; the status when allowed. */
function actions(w: World): { name: string; permission: string; run: (call: Caller) => ReturnType<Caller>; ok: number }[] {
  return [
    { name: 'list apps', permission: 'read', run: (c) => c('GET', '/apps'), ok: 200 },
    { name: 'read the audit log', permission: 'read', run: (c) => c('GET', '/audit'), ok: 200 },
    { name: 'list tokens', permission: 'read', run: (c) => c('GET', '/tokens'), ok: 200 },
    { name: 'read a user', permission: 'read', run: (c) => c('GET', `/apps/${w.app.id}/users/${w.userId}`), ok: 200 },
    { name: 'extend a user', permission: 'users', run: (c) => c('PATCH', `/apps/${w.app.id}/users/${w.userId}`, { extend_minutes: 60 }), ok: 200 },
    { name: 'reset devices', permission: 'users', run: (c) => c('POST', `/apps/${w.app.id}/users/${w.userId}/reset-devices`), ok: 204 },
    { name: 'revoke sessions', permission: 'users', run: (c) => c('POST', `/apps/${w.app.id}/users/${w.userId}/revoke-sessions`), ok: 200 },
    { name: 'delete a user', permission: 'delete_users', run: (c) => c('DELETE', `/apps/${w.app.id}/users/${w.spareUserId}`), ok: 204 },
    { name: 'ban', permission: 'bans', run: (c) => c('POST', `/apps/${w.app.id}/bans`, { type: 'hardware_id', value: 'HWID-STOLEN' }), ok: 201 },
    { name: 'create an app', permission: 'apps', run: (c) => c('POST', '/apps', { name: 'New' }), ok: 201 },
    { name: 'delete an app', permission: 'apps', run: (c) => c('DELETE', `/apps/${w.spare.id}?confirm=Spare`), ok: 204 },
    { name: 'create licenses', permission: 'licenses', run: (c) => c('POST', `/apps/${w.app.id}/licenses`, { count: 1, minutes: 5 }), ok: 201 },
    { name: 'delete a license', permission: 'licenses', run: (c) => c('DELETE', `/apps/${w.app.id}/licenses/${w.licenseId}`), ok: 204 },
    { name: 'set a variable', permission: 'content', run: (c) => c('PUT', `/apps/${w.app.id}/variables/motd`, { value: 'hi' }), ok: 200 },
    { name: 'make a signing key', permission: 'keys', run: (c) => c('POST', `/apps/${w.app.id}/signing-keys`), ok: 201 },
    { name: 'create a token', permission: 'tokens', run: (c) => c('POST', '/tokens', { name: 'made' }), ok: 201 },
    { name: 'list operators', permission: 'operators', run: (c) => c('GET', '/operators'), ok: 200 },
    { name: 'whoami', permission: 'self', run: (c) => c('GET', '/whoami'), ok: 200 },
  ];
}

const ROLES = ['owner', 'admin', 'support', 'viewer'] as const;

describe.each(['session', 'token'] as const)('each role through a %s', (via) => {
  it.each(ROLES)('%s: allowed actions succeed, the others are 403 forbidden naming the role, and change nothing', async (role) => {
    h = await harness();
    const w = await world();
    let call: Caller;
    if (via === 'session') {
      await makeOperator(h, `op-${role}`, role);
      const s = await signIn(h, `op-${role}`);
      call = s.call;
    } else {
      const token = (await h.admin('POST', '/tokens', { name: `t-${role}`, role })).json();
      expect(token.role).toBe(role);
      call = (m, u, p) => withToken(h, token.token, m, u, p);
    }
    for (const a of actions(w)) {
      const res = await a.run(call);
      if (GRANTS[role].has(a.permission as never)) {
        // signing keys need a root key first: 409/422 is "allowed but not possible", never a 403
        if (a.permission === 'keys') expect(res.statusCode, `${role} ${a.name}: ${res.body}`).not.toBe(403);
        else expect(res.statusCode, `${role} ${a.name}: ${res.body}`).toBe(a.ok);
      } else {
        const body = expectError(res, 403, 'forbidden');
        expect(body.detail, a.name).toContain(`The ${role} role may not`);
      }
    }
    if (!GRANTS[role].has('apps')) expect((await h.admin('GET', `/apps/${w.spare.id}`)).statusCode, 'the app survived').toBe(200);
    if (!GRANTS[role].has('delete_users')) expect((await h.admin('GET', `/apps/${w.app.id}/users/${w.spareUserId}`)).statusCode, 'the user survived').toBe(200);
  });
});

describe('specific refusals and escalation', () => {
  it('a support operator and a support token cannot delete an app (403), and it is still there', async () => {
    h = await harness();
    const app = await h.createApp({ name: 'Keep me' });
    await makeOperator(h, 'helpdesk', 'support');
    const s = await signIn(h, 'helpdesk');
    expect(expectError(await s.call('DELETE', `/apps/${app.id}?confirm=Keep%20me`), 403, 'forbidden').detail).toBe('The support role may not change apps');
    const token = (await h.admin('POST', '/tokens', { name: 'support bot', role: 'support' })).json().token;
    expectError(await withToken(h, token, 'DELETE', `/apps/${app.id}?confirm=Keep%20me`), 403, 'forbidden');
    expect((await h.admin('GET', `/apps/${app.id}`)).statusCode).toBe(200);
  });

  it('support acts on users but deletes none (the issue’s list stops at unban; deleting is irreversible): 403 through a session and a token, the user is still there', async () => {
    h = await harness();
    const app = await h.createApp({ name: 'Main' });
    const userId = await h.activeUser(app, 'customer', PASSWORD);
    await makeOperator(h, 'helpdesk', 'support');
    const s = await signIn(h, 'helpdesk');
    expect(expectError(await s.call('DELETE', `/apps/${app.id}/users/${userId}`), 403, 'forbidden').detail).toBe('The support role may not delete users');
    const token = (await h.admin('POST', '/tokens', { name: 'support bot', role: 'support' })).json().token;
    expectError(await withToken(h, token, 'DELETE', `/apps/${app.id}/users/${userId}`), 403, 'forbidden');
    expect((await s.call('PATCH', `/apps/${app.id}/users/${userId}`, { extend_minutes: 60 })).statusCode, 'acting on the user is still allowed').toBe(200);
    expect((await h.admin('GET', `/apps/${app.id}/users/${userId}`)).statusCode).toBe(200);
    await makeOperator(h, 'boss', 'admin');
    expect((await (await signIn(h, 'boss')).call('DELETE', `/apps/${app.id}/users/${userId}`)).statusCode, 'an admin may').toBe(204);
  });

  it('support bans users and devices only: an IP range (0.0.0.0/0 refuses every client) or a license ban is 403 naming the role and type, to create or to lift', async () => {
    h = await harness();
    const app = await h.createApp({ name: 'Main' });
    const userId = await h.activeUser(app, 'customer', PASSWORD);
    const code = (await h.license(app, { minutes: 60 })).code;
    await makeOperator(h, 'helpdesk', 'support');
    const s = await signIn(h, 'helpdesk');
    const token = (await h.admin('POST', '/tokens', { name: 'support bot', role: 'support' })).json().token;
    const bans = `/apps/${app.id}/bans`;
    for (const call of [s.call, (m: Method, u: string, p?: unknown) => withToken(h, token, m, u, p)]) {
      const wide = expectError(await call('POST', bans, { type: 'ip', value: '0.0.0.0/0' }), 403, 'forbidden');
      expect(wide.detail).toBe('The support role may not create bans of type ip, only of type user or hardware_id');
      expect(expectError(await call('POST', bans, { type: 'license', value: code }), 403, 'forbidden').detail).toContain('type license');
    }
    expect((await h.admin('GET', bans)).json().items, 'nothing was banned').toEqual([]);
    const userBan = await s.call('POST', bans, { type: 'user', value: userId, reason: 'chargeback' });
    expect(userBan.statusCode, userBan.body).toBe(201);
    const deviceBan = await withToken(h, token, 'POST', bans, { type: 'hardware_id', value: 'HWID-1' });
    expect(deviceBan.statusCode, deviceBan.body).toBe(201);
    // Lifting: support lifts user and device bans, not an admin's IP ban.
    const ipBan = (await h.admin('POST', bans, { type: 'ip', value: '198.51.100.0/24' })).json();
    expect(expectError(await s.call('DELETE', `${bans}/${ipBan.id}`), 403, 'forbidden').detail).toBe('The support role may not delete bans of type ip, only of type user or hardware_id');
    expectError(await withToken(h, token, 'DELETE', `${bans}/${ipBan.id}`), 403, 'forbidden');
    expect((await s.call('DELETE', `${bans}/${userBan.json().id}`)).statusCode).toBe(204);
    expect((await withToken(h, token, 'DELETE', `${bans}/${deviceBan.json().id}`)).statusCode).toBe(204);
    expectError(await s.call('DELETE', `${bans}/00000000-0000-4000-8000-000000000000`), 404, 'not_found');
    expect((await h.admin('GET', bans)).json().items.map((b: { id: string }) => b.id), 'the IP ban is still in force').toEqual([ipBan.id]);
    // An admin bans and lifts anything.
    await makeOperator(h, 'boss', 'admin');
    const boss = await signIn(h, 'boss');
    expect((await boss.call('POST', bans, { type: 'ip', value: '203.0.113.9' })).statusCode).toBe(201);
    expect((await boss.call('DELETE', `${bans}/${ipBan.id}`)).statusCode).toBe(204);
  });

  it('nobody grants a role above their own: tokens default to the creator’s role; admin cannot mint owner tokens or touch operators', async () => {
    h = await harness();
    await makeOperator(h, 'boss', 'admin');
    const s = await signIn(h, 'boss');
    expectError(await s.call('POST', '/tokens', { name: 'escalate', role: 'owner' }), 403, 'forbidden');
    const made = await s.call('POST', '/tokens', { name: 'default' });
    expect(made.json().role).toBe('admin');
    expect((await s.call('POST', '/tokens', { name: 'lower', role: 'viewer' })).json().role).toBe('viewer');
    expectError(await s.call('POST', '/operators', { username: 'mallory', password: 'a long enough password', role: 'owner' }), 403, 'forbidden');
    // An admin token cannot create an owner token either, nor create one through the token it made.
    const adminToken = made.json().token;
    expectError(await withToken(h, adminToken, 'POST', '/tokens', { name: 'x', role: 'owner' }), 403, 'forbidden');
    const listed = (await h.admin('GET', '/tokens')).json().items.map((t: { name: string; role: string }) => [t.name, t.role]);
    expect(listed.sort()).toEqual([['default', 'admin'], ['lower', 'viewer']]);
    expectError(await h.admin('POST', '/tokens', { name: 'bad', role: 'superuser' }), 422, 'validation_error');
  });

  it('nobody revokes a token above their own role: an admin session or admin token cannot cut an owner token, and it still works', async () => {
    h = await harness();
    const owner = (await h.admin('POST', '/tokens', { name: 'owner ci', role: 'owner' })).json();
    const peer = (await h.admin('POST', '/tokens', { name: 'admin peer', role: 'admin' })).json();
    const low = (await h.admin('POST', '/tokens', { name: 'viewer bot', role: 'viewer' })).json();
    await makeOperator(h, 'boss', 'admin');
    const s = await signIn(h, 'boss');
    const adminToken = (await h.admin('POST', '/tokens', { name: 'admin bot', role: 'admin' })).json().token;
    const bySession = expectError(await s.call('DELETE', `/tokens/${owner.id}`), 403, 'forbidden');
    expect(bySession.detail).toBe('The admin role may not revoke a token of the owner role');
    expectError(await withToken(h, adminToken, 'DELETE', `/tokens/${owner.id}`), 403, 'forbidden');
    expect((await withToken(h, owner.token, 'GET', '/apps')).statusCode, 'the owner token still works').toBe(200);
    const listed = (await h.admin('GET', '/tokens')).json().items.find((t: { id: string }) => t.id === owner.id);
    expect(listed.revoked_at).toBeNull();
    // At or below their own role they may: a peer admin's token, a viewer's.
    expect((await s.call('DELETE', `/tokens/${peer.id}`)).statusCode).toBe(204);
    expect((await withToken(h, adminToken, 'DELETE', `/tokens/${low.id}`)).statusCode).toBe(204);
    expect((await withToken(h, low.token, 'GET', '/apps')).statusCode).toBe(401);
    // An owner revokes an owner token; an unknown id is still 404, not a 403 that would tell it apart.
    expect((await h.admin('DELETE', `/tokens/${owner.id}`)).statusCode).toBe(204);
    expectError(await s.call('DELETE', '/tokens/00000000-0000-4000-8000-000000000000'), 404, 'not_found');
  });

  it('the last active owner operator cannot be demoted, disabled or deleted', async () => {
    h = await harness();
    const owner = await makeOperator(h, 'root', 'owner');
    expectError(await h.admin('PATCH', `/operators/${owner}`, { role: 'admin' }), 409, 'conflict');
    expectError(await h.admin('PATCH', `/operators/${owner}`, { disabled: true }), 409, 'conflict');
    expectError(await h.admin('DELETE', `/operators/${owner}`), 409, 'conflict');
    const second = await makeOperator(h, 'root2', 'owner');
    expect((await h.admin('PATCH', `/operators/${owner}`, { role: 'admin' })).json().role).toBe('admin');
    expectError(await h.admin('DELETE', `/operators/${second}`), 409, 'conflict');
  });

  it('operators: a username is unique case-insensitively; short passwords and unknown ids are refused', async () => {
    h = await harness();
    await makeOperator(h, 'Alice', 'viewer');
    expectError(await h.admin('POST', '/operators', { username: 'ALICE', password: 'a long enough password', role: 'viewer' }), 409, 'conflict');
    expectError(await h.admin('POST', '/operators', { username: 'bob', password: 'short', role: 'viewer' }), 422, 'validation_error');
    expectError(await h.admin('PATCH', '/operators/00000000-0000-4000-8000-000000000000', { role: 'viewer' }), 404, 'not_found');
    const list = (await h.admin('GET', '/operators')).json();
    expect(list.items.map((o: { username: string }) => o.username)).toEqual(['Alice']);
    expect(JSON.stringify(list)).not.toMatch(/argon2|password|secret/i);
  });
});
