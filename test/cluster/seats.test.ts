import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { admin, call, startNode, stopNode, type Node } from './nodes.js';

/**
 * Issue 25 on three server processes sharing one PostgreSQL database: seats are counted by the
 * database under the user's row lock, so no node's view can give out more than max_seats; and 20
 * parallel self-resets spread over the nodes make one reset.
 */
const pgUrl = inject('pgUrl');

describe.skipIf(!pgUrl)('seats and self-resets on three nodes', () => {
  let nodes: Node[] = [];
  let appId: string;
  let appHeaders: Record<string, string>;
  const node = (i: number) => nodes[i % nodes.length]!.url;

  beforeAll(async () => {
    nodes = await Promise.all([0, 1, 2].map(() => startNode(pgUrl!)));
    const created = await admin(node(0), 'POST', '/apps', { name: 'Seats cluster app', max_devices_per_user: 1000, max_seats: 5, device_resets_per_year: 3 });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    appId = created.body.id;
    appHeaders = { 'x-api-key': created.body.api_key, 'x-api-secret': created.body.api_secret };
  }, 60_000);

  afterAll(async () => {
    await Promise.all(nodes.map((n) => stopNode(n)));
  });

  const client = (i: number, method: string, path: string, headers: Record<string, string> = {}, body?: unknown) =>
    call(node(i), method, path, { ...(body !== undefined && { body }), headers: { ...appHeaders, ...headers } });

  async function user(): Promise<{ token: string; id: string; username: string; password: string }> {
    const username = `u${randomBytes(5).toString('hex')}`;
    const password = 'cluster password';
    const signed = await client(0, 'POST', '/sign_up', {}, { username, password });
    expect(signed.status).toBe(200);
    const codes = await admin(node(1), 'POST', `/apps/${appId}/licenses`, { count: 1, lifetime: true });
    expect((await client(1, 'POST', '/activate_license', {}, { code: codes.body.licenses[0].code, username, password })).status).toBe(200);
    const login = await client(2, 'POST', '/auth/login', {}, { credentials: { username, password } });
    expect(login.status).toBe(200);
    return { token: login.body.session_token, id: signed.body.id, username, password };
  }

  it('100 parallel checkouts from 100 devices across the nodes with max_seats 5: exactly 5 seats', async () => {
    const { token, id } = await user();
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) => client(i, 'POST', '/seats', { authorization: `Bearer ${token}`, 'x-hardware-id': `hw-${i}` })),
    );
    expect(results.filter((r) => r.status >= 500)).toEqual([]);
    expect(results.filter((r) => r.status === 200)).toHaveLength(5);
    expect(results.filter((r) => r.status === 409 && r.body.code === 'seats_exhausted')).toHaveLength(95);
    const listed = await admin(node(1), 'GET', `/apps/${appId}/users/${id}/seats`);
    expect(listed.body.total).toBe(5);
    // Every node sees the same pool: a sixth device is refused by each.
    for (let i = 0; i < 3; i++) {
      expect((await client(i, 'POST', '/seats', { authorization: `Bearer ${token}`, 'x-hardware-id': 'hw-late' })).body.code).toBe('seats_exhausted');
    }
  });

  it('20 parallel self-resets by one user across the nodes: exactly one reset', async () => {
    const { username, password, id } = await user();
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => client(i, 'POST', '/devices/reset', { 'x-api-username': username, 'x-api-password': password })),
    );
    expect(results.filter((r) => r.status >= 500)).toEqual([]);
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    expect(results.filter((r) => r.status === 429 && r.body.code === 'reset_cooldown')).toHaveLength(19);
    expect((await admin(node(2), 'GET', `/apps/${appId}/users/${id}`)).body.self_resets.count).toBe(1);
  });
});
