import { afterEach, describe, expect, it } from 'vitest';
import { PASSWORD, STORE, harness, noticesHeard, type Harness } from './helpers.js';
import { captureLog, fields, until, type LogCapture } from './log-capture.js';

/**
 * Issue 29, item 4: LOG_LEVEL=debug and trace print more than info. debug:
 * each cache load (a miss) by the cache's name with its time, and each change
 * notice heard from other nodes (PostgreSQL) by its kinds; trace adds each
 * cache hit through get(). Never a key: the keys are API keys, session
 * digests, license codes and usernames.
 */
const CACHES = ['appsByKey', 'bans', 'signingKeys', 'applications', 'sessions', 'users', 'userIdsByName', 'userIdsByCode'];

describe('debug and trace lines', () => {
  let h: Harness | undefined;
  let log: LogCapture;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  async function traffic(level: string): Promise<{ app: Awaited<ReturnType<Harness['createApp']>> }> {
    log = captureLog();
    h = await harness({ env: { LOG_LEVEL: level, ACCESS_LOG: 'off' }, logStream: log.stream });
    const app = await h.createApp();
    await h.signUp(app, 'dora', PASSWORD);
    // No membership: 403 membership_inactive, after the app, the user and the name were looked up.
    for (let i = 0; i < 3; i++) expect((await h.client(app, 'POST', '/auth/login', { credentials: { username: 'dora', password: PASSWORD } })).statusCode).toBe(403);
    return { app };
  }

  it('info: no cache or notice lines', async () => {
    await traffic('info');
    expect(log.lines.filter((l) => /^cache /.test(l.msg))).toEqual([]);
  });

  it('debug: each cache miss by name, with its time and whether it was kept; nothing of the key', async () => {
    const { app } = await traffic('debug');
    const misses = log.named('cache miss').map(fields);
    expect(misses.length).toBeGreaterThan(0);
    for (const m of misses) {
      expect(m).toEqual({ level: 20, msg: 'cache miss', cache: expect.any(String), ms: expect.any(Number), kept: expect.any(Boolean) });
      expect(CACHES).toContain(m.cache);
    }
    expect(misses.map((m) => m.cache)).toContain('appsByKey');
    expect(log.named('cache hit')).toEqual([]);
    for (const secret of [app.apiKey, app.apiSecret, 'dora', PASSWORD]) expect(log.text()).not.toContain(secret);
  });

  it('trace: cache hits too, by name only', async () => {
    await traffic('trace');
    const hits = log.named('cache hit').map(fields);
    expect(hits.length).toBeGreaterThan(0);
    for (const hit of hits) expect(hit).toEqual({ level: 10, msg: 'cache hit', cache: expect.any(String) });
    expect(hits.map((l) => l.cache)).toContain('appsByKey');
  });

  it.runIf(STORE === 'postgres')('debug on PostgreSQL: each change notice heard, by its kinds, never its values (PostgreSQL project only: the bus is LISTEN/NOTIFY)', async () => {
    const { app } = await traffic('debug');
    expect((await h!.admin('PATCH', `/apps/${app.id}`, { name: 'Renamed' })).statusCode).toBe(200);
    await noticesHeard(h!);
    await until(() => log.named('cache notice heard').some((l) => (l.kinds as string[]).includes('app')), 10_000);
    const heard = log.named('cache notice heard').map(fields);
    expect(heard.some((n) => (n.kinds as string[]).includes('app')), 'the app change was heard').toBe(true);
    for (const n of heard) expect(Object.keys(n).sort()).toEqual(['kinds', 'level', 'msg']);
    expect(log.text()).not.toContain(app.apiKey);
  });

  it('debug: each rate-limit refusal by its rule, limit and wait, never the address, username or code; nothing at info', async () => {
    for (const level of ['info', 'debug']) {
      log = captureLog();
      h = await harness({ env: { LOG_LEVEL: level, ACCESS_LOG: 'off', RATE_LIMIT: 'on' }, logStream: log.stream });
      const app = await h.createApp();
      await h.activeUser(app, 'erin');
      const wrong = () => h!.client(app, 'POST', '/auth/login', { credentials: { username: 'erin', password: 'not-the-password' } });
      for (let i = 0; i < 10; i++) expect((await wrong()).statusCode).toBe(401);
      expect((await wrong()).statusCode).toBe(429);
      const refused = log.named('rate limit refused').map(fields);
      if (level === 'info') expect(refused).toEqual([]);
      else {
        expect(refused).toEqual([{ level: 20, msg: 'rate limit refused', event: 'rate_limited', appId: app.id, rule: 'fail:pair', limit: 10, retryAfterSeconds: expect.any(Number) }]);
        for (const secret of ['erin', '127.0.0.1', 'not-the-password']) expect(JSON.stringify(refused)).not.toContain(secret);
        expect(log.text()).not.toContain('erin');
      }
      await h.close();
      h = undefined;
    }
  });
});
