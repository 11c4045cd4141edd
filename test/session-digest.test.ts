/**
 * The session token's digest kept per connection (src/http/session-digest.ts): a keep-alive connection that
 * changes its Bearer token, sends a bad one, or sends one revoked meanwhile is answered for the token it
 * sent, never for the token it sent before; on both of GET /app_context's paths (fast path on and off).
 */
import { Agent, request } from 'node:http';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { appHeaders, pair, type Pair } from './fast-path-pair.js';

const digests = vi.hoisted(() => ({ count: 0 }));
vi.mock('../src/domain/tokens.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../src/domain/tokens.js')>();
  return { ...real, digest: (token: string) => (digests.count++, real.digest(token)) };
});

const { withSessionDigest } = await import('../src/http/session-digest.js');
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

describe('the session digest kept per connection', () => {
  let p: Pair | undefined;
  const agents: Agent[] = [];
  afterEach(async () => {
    for (const a of agents.splice(0)) a.destroy();
    await p?.close();
    p = undefined;
  });

  it.each(['fast path on', 'fast path off'])('one connection, tokens changing: each answer is for the token sent (%s)', async (which) => {
    p = await pair();
    const port = which === 'fast path on' ? p.fast : p.slow;
    const app = await p.h.createApp();
    await p.h.activeUser(app, 'ana');
    await p.h.activeUser(app, 'ben');
    const ana = await p.h.login(app, 'ana');
    const ben = await p.h.login(app, 'ben');
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    agents.push(agent);
    const as = (token: string) => get(agent, port, { ...Object.fromEntries(appHeaders(app)), authorization: `Bearer ${token}` });

    const answers = [await as(ana), await as(ana), await as(ben), await as(ana), await as(`${ana.slice(0, -1)}x`), await as(ana), await as('tg_sess_nope')];
    expect(answers.map((a) => [a.status, a.body.user?.username ?? a.body.code])).toEqual([
      [200, 'ana'], [200, 'ana'], [200, 'ben'], [200, 'ana'], [401, 'invalid_credentials'], [200, 'ana'], [401, 'invalid_credentials'],
    ]);
    expect(answers.slice(1).every((a) => a.reused), 'all on one connection').toBe(true);

    // Revoked on another connection: the same connection's same token is refused at once.
    expect((await p.h.client(app, 'POST', '/auth/logout', undefined, { authorization: `Bearer ${ana}` })).statusCode).toBe(204);
    const after = await as(ana);
    expect([after.status, after.body.code, after.reused]).toEqual([401, 'invalid_credentials', true]);
    expect((await as(ben)).body.user?.username).toBe('ben');
  });

  it('computes a digest once per token a connection sends in a row, and only for a token shaped as a session token', () => {
    const socket = {} as never;
    const token = `tg_sess_${'a'.repeat(43)}`;
    const other = `tg_sess_${'b'.repeat(43)}`;
    digests.count = 0;
    expect(withSessionDigest({ bearer: token }, socket).bearerDigest).toBe(digest(token));
    digests.count = 0;
    expect(withSessionDigest({ bearer: token }, socket).bearerDigest).toBe(digest(token));
    expect(withSessionDigest({ bearer: token }, socket).bearerDigest).toBe(digest(token));
    expect(digests.count, 'kept: only this test’s own digest() calls').toBe(2);
    digests.count = 0;
    expect(withSessionDigest({ bearer: other }, socket).bearerDigest).toBe(digest(other));
    expect(digests.count).toBe(2);
    // Another connection keeps its own.
    digests.count = 0;
    withSessionDigest({ bearer: token }, {} as never);
    expect(digests.count).toBe(1);
    // Not a session token, no token, no socket: nothing computed or kept.
    digests.count = 0;
    for (const bearer of ['', 'tg_sec_abc', `tg_sess_${'c'.repeat(200)}`, undefined]) expect(withSessionDigest({ bearer }, socket).bearerDigest).toBeUndefined();
    expect(withSessionDigest({ bearer: token }, null).bearerDigest).toBeUndefined();
    expect(digests.count).toBe(0);
  });
});
