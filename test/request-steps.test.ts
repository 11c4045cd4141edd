/**
 * The one list of per-request steps (src/http/request-steps.ts, issue 22 item 4): every hook that GET /app_context's
 * Fastify route runs is a step of REQUEST_STEPS, which says how the fast path (src/http/fast-path.ts) takes it. A new
 * global header or hook on the route fails the first test until it is a step in the list, with its fast-path side.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REQUEST_STEPS, stepHook } from '../src/http/request-steps.js';
import { harness, type Harness } from './helpers.js';

/** The hooks a route runs, by lifecycle phase, as Fastify lists them (printRoutes with includeHooks: the functions' names). */
function routeHooks(app: FastifyInstance, method: string, url: string): { phase: string; name: string }[] {
  const lines = app.printRoutes({ includeHooks: true, commonPrefix: false, method }).split('\n');
  const at = lines.findIndex((l) => l.includes(`${url} (${method})`));
  if (at < 0) throw new Error(`no route ${method} ${url} in:\n${lines.join('\n')}`);
  const hooks: { phase: string; name: string }[] = [];
  for (const line of lines.slice(at + 1)) {
    const m = /• \((\w+)\) (\[.*\])$/.exec(line);
    if (!m) break; // the next route
    for (const fn of JSON.parse(m[2]!) as string[]) hooks.push({ phase: m[1]!, name: fn.replace(/\(\)$/, '') });
  }
  return hooks;
}

/** The route's hooks that are not steps of REQUEST_STEPS (each a step the fast path would lack). */
function unlisted(app: FastifyInstance, method: string, url: string): string[] {
  return routeHooks(app, method, url).filter(({ name }) => !Object.hasOwn(REQUEST_STEPS, name)).map(({ phase, name }) => `${phase}: ${name}`);
}

describe('the per-request steps of GET /app_context', () => {
  let h: Harness;
  beforeAll(async () => {
    // Everything on that adds a hook: the access log, metrics, rate limits.
    h = await harness({ env: { ACCESS_LOG: 'on', LOG_LEVEL: 'info', METRICS_TOKEN: 'tg_metrics_steps_test_token_0123456789', RATE_LIMIT: 'on' } });
  });
  afterAll(async () => h?.close());

  it('every hook of the route is a step of the one list (and the fast path takes each step)', () => {
    expect(unlisted(h.tollgate.server, 'GET', '/app_context')).toEqual([]);
  });

  it('every step of the list is a hook of the route, in the lifecycle order the list gives', () => {
    const names = routeHooks(h.tollgate.server, 'GET', '/app_context').map((x) => x.name);
    expect(names).toEqual(['gate', 'application', 'limit', 'errorCode', 'sign', 'finished']);
    expect(Object.keys(REQUEST_STEPS)).toEqual(names);
  });

  it('a hook added to the route that is not in the list is reported (what the first test fails on)', async () => {
    const app = Fastify();
    app.addHook('onRequest', stepHook('gate', (_request: unknown, _reply: unknown, done: () => void) => done()));
    app.addHook('onRequest', function addsAHeader(_request, reply, done) {
      void reply.header('x-new', '1');
      done();
    });
    app.get('/app_context', async () => ({}));
    await app.ready();
    expect(unlisted(app, 'GET', '/app_context')).toEqual(['onRequest: addsAHeader']);
    await app.close();
  });
});
