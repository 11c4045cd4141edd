import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { admin, call, startNode, stopNode, within, type Node } from './nodes.js';

/**
 * Three server processes on one PostgreSQL database, requests spread across
 * them: they must behave as one service (issue: many nodes behave as one).
 */
const pgUrl = inject('pgUrl');

describe.skipIf(!pgUrl)('three nodes on one PostgreSQL database', () => {
  let nodes: Node[] = [];
  let appId: string;
  let appHeaders: Record<string, string>;
  const node = (i: number) => nodes[i % nodes.length]!.url;

  beforeAll(async () => {
    nodes = await Promise.all([0, 1, 2].map(() => startNode(pgUrl!, { RATE_LIMIT: 'on' })));
    // Every request comes from 127.0.0.1: lift the per-IP limits of this app (the rate-limit test uses an app with defaults).
    const created = await admin(node(0), 'POST', '/apps', {
      name: 'Cluster app', max_devices_per_user: 3, rate_failures_per_ip: 1_000_000, rate_signups_per_ip: 1_000_000, rate_failures_per_identity: 1_000_000,
    });
    expect(created.status).toBe(201);
    appId = created.body.id;
    appHeaders = { 'x-api-key': created.body.api_key, 'x-api-secret': created.body.api_secret };
  }, 60_000);

  afterAll(async () => {
    await Promise.all(nodes.map((n) => stopNode(n)));
  });

  const client = (i: number, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    call(node(i), method, path, { ...(body !== undefined && { body }), headers: { ...appHeaders, ...headers } });

  async function codes(count: number, body: Record<string, unknown> = { minutes: 60 }): Promise<string[]> {
    const res = await admin(node(0), 'POST', `/apps/${appId}/licenses`, { count, ...body });
    expect(res.status).toBe(201);
    return res.body.licenses.map((l: { code: string }) => l.code);
  }

  async function activeUser(i: number): Promise<{ username: string; password: string; id: string }> {
    const username = `u${randomBytes(5).toString('hex')}`;
    const password = 'cluster password';
    const signed = await client(i, 'POST', '/sign_up', { username, password });
    expect(signed.status).toBe(200);
    const [code] = await codes(1);
    expect((await client(i + 1, 'POST', '/activate_license', { code, username, password })).status).toBe(200);
    return { username, password, id: signed.body.id };
  }

  it('100 concurrent license sign-ups of one code across the nodes: exactly one succeeds, no 5xx', async () => {
    const [code] = await codes(1);
    const results = await Promise.all(Array.from({ length: 100 }, (_, i) => client(i, 'POST', '/sign_up_with_license_code', { code })));
    expect(results.filter((r) => r.status >= 500)).toEqual([]);
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    expect(results.filter((r) => r.status === 422 && r.body.code === 'license_used')).toHaveLength(99);
  });

  it('100 concurrent activations of one code by different users across the nodes: exactly one succeeds', async () => {
    const password = 'cluster password';
    const names = Array.from({ length: 100 }, () => `r${randomBytes(5).toString('hex')}`);
    for (let i = 0; i < names.length; i += 20) {
      const batch = await Promise.all(names.slice(i, i + 20).map((username, j) => client(i + j, 'POST', '/sign_up', { username, password })));
      expect(batch.every((r) => r.status === 200)).toBe(true);
    }
    const [code] = await codes(1);
    const results = await Promise.all(names.map((username, i) => client(i, 'POST', '/activate_license', { code, username, password })));
    expect(results.filter((r) => r.status >= 500)).toEqual([]);
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    expect(results.filter((r) => r.status === 401 && r.body.code === 'license_used')).toHaveLength(99);
  });

  it('a ban made through one node is enforced by every other node within 1 s, and lifting it too', async () => {
    const user = await activeUser(0);
    const legacy = { 'x-api-username': user.username, 'x-api-password': user.password };
    for (const i of [1, 2]) expect((await client(i, 'GET', '/app_context', undefined, legacy)).status).toBe(200);
    const ban = await admin(node(0), 'POST', `/apps/${appId}/bans`, { type: 'user', value: user.id });
    expect(ban.status).toBe(201);
    for (const i of [1, 2]) {
      const ms = await within(1000, async () => (await client(i, 'GET', '/app_context', undefined, legacy)).status === 403);
      expect(ms).toBeLessThanOrEqual(1000);
    }
    expect((await admin(node(0), 'DELETE', `/apps/${appId}/bans/${ban.body.id}`)).status).toBe(204);
    for (const i of [1, 2]) await within(1000, async () => (await client(i, 'GET', '/app_context', undefined, legacy)).status === 200);
  });

  it('an IP ban through one node applies on the others within 1 s (cached ban lists are invalidated across nodes)', async () => {
    // Warm every node's ban cache first, so only invalidation (not a cold load) can make the ban visible.
    for (const i of [0, 1, 2]) await client(i, 'POST', '/auth/login', { credentials: { username: 'nobody', password: 'whatever1' } });
    const ban = await admin(node(0), 'POST', `/apps/${appId}/bans`, { type: 'ip', value: '127.0.0.0/8' });
    try {
      for (const i of [1, 2]) {
        await within(1000, async () => (await client(i, 'POST', '/auth/login', { credentials: { username: 'nobody', password: 'whatever1' } })).status === 403);
      }
    } finally {
      await admin(node(0), 'DELETE', `/apps/${appId}/bans/${ban.body.id}`);
    }
    for (const i of [1, 2]) {
      await within(1000, async () => (await client(i, 'POST', '/auth/login', { credentials: { username: 'nobody', password: 'whatever1' } })).status === 401);
    }
  });

  it('a membership change through one node is seen by the others within 1 s', async () => {
    const user = await activeUser(0);
    const legacy = { 'x-api-username': user.username, 'x-api-password': user.password };
    const patched = await admin(node(0), 'PATCH', `/apps/${appId}/users/${user.id}`, { lifetime: true });
    expect(patched.status).toBe(200);
    for (const i of [1, 2]) {
      await within(1000, async () => (await client(i, 'GET', '/app_context', undefined, legacy)).body.user?.membership.is_lifetime === true);
    }
  });

  it('a variable and a file uploaded through one node are served by every node within 1 s', async () => {
    const user = await activeUser(0);
    const legacy = { 'x-api-username': user.username, 'x-api-password': user.password };
    // Warm the application caches of every node.
    for (const i of [0, 1, 2]) expect((await client(i, 'GET', '/app_context', undefined, legacy)).status).toBe(200);
    const value = randomBytes(8).toString('hex');
    expect((await admin(node(0), 'PUT', `/apps/${appId}/variables/build`, { value })).status).toBe(200);
    const content = randomBytes(600_000);
    const uploaded = await fetch(`${node(0)}/admin/v1/apps/${appId}/files?name=payload.bin`, {
      method: 'POST', body: content, headers: { authorization: `Bearer ${(await import('./nodes.js')).ADMIN_TOKEN}`, 'content-type': 'application/octet-stream' },
    });
    expect(uploaded.status).toBe(201);
    const fileId = ((await uploaded.json()) as { id: string }).id;
    for (const i of [1, 2]) {
      await within(1000, async () => {
        const ctx = (await client(i, 'GET', '/app_context', undefined, legacy)).body;
        return ctx.application.variables.some((v: { name: string; value: string }) => v.name === 'build' && v.value === value)
          && ctx.application.files.some((f: { id: string }) => f.id === fileId);
      });
      const res = await fetch(`${node(i)}/files/${fileId}/download`, { headers: { ...appHeaders, ...legacy } });
      expect(res.status).toBe(200);
      const bytes = Buffer.from(await res.arrayBuffer());
      expect(createHash('sha256').update(bytes).digest('hex')).toBe(createHash('sha256').update(content).digest('hex'));
    }
  });

  it('a session token issued by one node works on the others; logout on one is honoured by all within 1 s', async () => {
    const user = await activeUser(0);
    const login = await client(0, 'POST', '/auth/login', { credentials: { username: user.username, password: user.password } });
    expect(login.status).toBe(200);
    const bearer = { authorization: `Bearer ${login.body.session_token}` };
    for (const i of [1, 2]) expect((await client(i, 'GET', '/app_context', undefined, bearer)).status).toBe(200);
    expect((await client(2, 'POST', '/auth/logout', undefined, bearer)).status).toBe(204);
    // At once on the node that logged out; within 1 s on the others, which had the session cached.
    expect((await client(2, 'GET', '/app_context', undefined, bearer)).status).toBe(401);
    for (const i of [0, 1]) await within(1000, async () => (await client(i, 'GET', '/app_context', undefined, bearer)).status === 401);
  });

  it('rate-limit counters are shared: failures spread over the nodes add up, and the limit holds on every node', async () => {
    const created = await admin(node(0), 'POST', '/apps', { name: 'Limited', rate_failures_per_ip: 1_000_000 });
    const headers = { 'x-api-key': created.body.api_key, 'x-api-secret': created.body.api_secret };
    const attempt = (i: number) => call(node(i), 'POST', '/auth/login', { body: { credentials: { username: 'target', password: `wrong-${i}` } }, headers });
    for (let i = 0; i < 10; i++) expect((await attempt(i)).status).toBe(401);
    for (const i of [0, 1, 2]) {
      const res = await attempt(i);
      expect(res.status).toBe(429);
      expect(res.body.code).toBe('rate_limited');
    }
  });

  it('a rotated API secret stops working on every node within 1 s', async () => {
    const created = await admin(node(0), 'POST', '/apps', { name: 'Rotating', anonymous_access_allowed: true });
    const headers = { 'x-api-key': created.body.api_key, 'x-api-secret': created.body.api_secret };
    for (const i of [0, 1, 2]) expect((await call(node(i), 'GET', '/app_context', { headers })).status).toBe(200);
    expect((await admin(node(1), 'POST', `/apps/${created.body.id}/secret`)).status).toBe(200);
    for (const i of [0, 2]) await within(1000, async () => (await call(node(i), 'GET', '/app_context', { headers })).status === 401);
  });
});
