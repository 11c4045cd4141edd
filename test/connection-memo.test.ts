/**
 * What a connection presented last, kept with its socket (src/domain/connection-memo.ts): a keep-alive
 * connection that changes its Bearer token or its username and password, sends a bad one, sends one revoked or
 * changed meanwhile, or talks to two apps, is answered for what it sent, never for what it sent before; on both
 * of GET /app_context's paths (fast path on and off).
 */
import { Agent, request } from 'node:http';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { appHeaders, pair, type Pair } from './fast-path-pair.js';
import { PASSWORD } from './helpers.js';

const digests = vi.hoisted(() => ({ count: 0 }));
vi.mock('../src/domain/tokens.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../src/domain/tokens.js')>();
  return { ...real, digest: (token: string) => (digests.count++, real.digest(token)) };
});

const { digest } = await import('../src/domain/tokens.js');

interface Answer {
  status: number;
  body: { code?: string; user?: { username: string } | null };
  reused: boolean;
}

/** GET /app_context over the agent's one keep-alive connection. */
function get(agent: Agent, port: number, headers: Record<string, string>): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/app_context', agent, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Answer['body'], reused: req.reusedSocket }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

const outcome = (a: Answer) => [a.status, a.body.user?.username ?? a.body.code];
const PATHS = ['fast path on', 'fast path off'] as const;

describe('what a connection presented last', () => {
  let p: Pair | undefined;
  const agents: Agent[] = [];
  afterEach(async () => {
    for (const a of agents.splice(0)) a.destroy();
    await p?.close();
    p = undefined;
  });

  function oneConnection(): Agent {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    agents.push(agent);
    return agent;
  }

  it.each(PATHS)('Bearer tokens changing on one connection: each answer is for the token sent (%s)', async (which) => {
    p = await pair();
    const port = which === 'fast path on' ? p.fast : p.slow;
    const app = await p.h.createApp();
    await p.h.activeUser(app, 'ana');
    await p.h.activeUser(app, 'ben');
    const ana = await p.h.login(app, 'ana');
    const ben = await p.h.login(app, 'ben');
    const agent = oneConnection();
    const as = (token: string) => get(agent, port, { ...Object.fromEntries(appHeaders(app)), authorization: `Bearer ${token}` });

    const answers = [await as(ana), await as(ana), await as(ben), await as(ana), await as(`${ana.slice(0, -1)}x`), await as(ana), await as('tg_sess_nope')];
    expect(answers.map(outcome)).toEqual([
      [200, 'ana'], [200, 'ana'], [200, 'ben'], [200, 'ana'], [401, 'invalid_credentials'], [200, 'ana'], [401, 'invalid_credentials'],
    ]);
    expect(answers.slice(1).every((a) => a.reused), 'all on one connection').toBe(true);

    // Revoked on another connection: the same connection's same token is refused at once.
    expect((await p.h.client(app, 'POST', '/auth/logout', undefined, { authorization: `Bearer ${ana}` })).statusCode).toBe(204);
    const after = await as(ana);
    expect([...outcome(after), after.reused]).toEqual([401, 'invalid_credentials', true]);
    expect(outcome(await as(ben))).toEqual([200, 'ben']);
  });

  it.each(PATHS)('usernames and passwords changing on one connection, a password changed meanwhile, two apps (%s)', async (which) => {
    p = await pair();
    const port = which === 'fast path on' ? p.fast : p.slow;
    const app = await p.h.createApp();
    const other = await p.h.createApp();
    const anaId = await p.h.activeUser(app, 'ana');
    await p.h.activeUser(app, 'ben');
    await p.h.activeUser(other, 'ana', 'another password 1');
    const agent = oneConnection();
    const as = (username: string, password: string, to = app) =>
      get(agent, port, { ...Object.fromEntries(appHeaders(to)), 'x-api-username': username, 'x-api-password': password });

    const answers = [
      await as('ana', PASSWORD), await as('ana', PASSWORD), await as('ana', `${PASSWORD}x`), await as('ben', PASSWORD),
      await as('ana', `${PASSWORD}x`), await as('ana', PASSWORD), await as('ANA', PASSWORD), await as('ana', PASSWORD, other),
      await as('ana', 'another password 1', other), await as('ana', 'another password 1'), await as('ana', PASSWORD),
    ];
    expect(answers.map(outcome)).toEqual([
      [200, 'ana'], [200, 'ana'], [401, 'invalid_credentials'], [200, 'ben'],
      [401, 'invalid_credentials'], [200, 'ana'], [200, 'ana'], [401, 'invalid_credentials'],
      [200, 'ana'], [401, 'invalid_credentials'], [200, 'ana'],
    ]);
    expect(answers.slice(1).every((a) => a.reused), 'all on one connection').toBe(true);

    // The password changed by an operator: the same connection's old password is refused at once, the new one works.
    expect((await p.h.admin('PATCH', `/apps/${app.id}/users/${anaId}`, { password: 'a new password 2' })).statusCode).toBe(200);
    expect(outcome(await as('ana', PASSWORD))).toEqual([401, 'invalid_credentials']);
    expect(outcome(await as('ana', 'a new password 2'))).toEqual([200, 'ana']);
  });

  it('derives a session digest and password keys once per value a connection presents in a row; a wrong password is never kept', async () => {
    p = await pair();
    const app = await p.h.createApp();
    await p.h.activeUser(app, 'ana');
    const token = await p.h.login(app, 'ana');
    const keys = vi.spyOn(p.h.tollgate.services.credentials, 'key');
    const agent = oneConnection();
    const bearer = () => get(agent, p!.fast, { ...Object.fromEntries(appHeaders(app)), authorization: `Bearer ${token}` });
    const legacy = () => get(agent, p!.fast, { ...Object.fromEntries(appHeaders(app)), 'x-api-username': 'ana', 'x-api-password': PASSWORD });

    digests.count = 0;
    for (let i = 0; i < 5; i++) expect((await bearer()).status).toBe(200);
    expect(digests.count, 'one digest for five requests').toBe(1);
    for (let i = 0; i < 5; i++) expect((await legacy()).status).toBe(200);
    expect(keys, 'one credential key for five requests').toHaveBeenCalledTimes(1);
    expect((await bearer()).status).toBe(200);
    expect(digests.count, 'kept apart: the token is still known').toBe(1);
    // A wrong password is never kept (derived again each time) and clears what was kept.
    keys.mockClear();
    const wrong = () => get(agent, p!.fast, { ...Object.fromEntries(appHeaders(app)), 'x-api-username': 'ana', 'x-api-password': `${PASSWORD}x` });
    expect((await wrong()).status).toBe(401);
    expect((await wrong()).status).toBe(401);
    expect((await legacy()).status).toBe(200);
    expect((await legacy()).status).toBe(200);
    expect(keys, 'wrong, wrong, right (kept), right').toHaveBeenCalledTimes(3);
    // A second connection derives its own.
    expect((await get(oneConnection(), p.fast, { ...Object.fromEntries(appHeaders(app)), authorization: `Bearer ${token}` })).status).toBe(200);
    expect(digests.count).toBe(2);
    expect(digest(token)).toMatch(/^[0-9a-f]{64}$/);
  });
});
