import { afterEach, describe, expect, it } from 'vitest';
import { STORE, errorOf, harness, type Harness } from './helpers.js';
import { UNSEALED_WARNING } from '../src/http/routes/meta.js';

const METRICS_TOKEN = 'metrics-token-0123456789';

describe('GET /metrics (Prometheus)', () => {
  let h: Harness;
  afterEach(async () => h.close());

  it('does not exist unless METRICS_TOKEN is set', async () => {
    h = await harness();
    const res = await h.inject({ method: 'GET', url: '/metrics' });
    expect(res.statusCode).toBe(404);
    expect(errorOf(res).code).toBe('not_found');
  });

  it('needs the metrics token, then serves request counts and latencies per route pattern and status, and process metrics', async () => {
    h = await harness({ env: { METRICS_TOKEN } });
    const app = await h.createApp({ anonymous_access_allowed: true });
    await h.client(app, 'GET', '/app_context');
    await h.inject({ method: 'GET', url: '/files/00000000-0000-4000-8000-000000000000/download', headers: app.headers });
    expect((await h.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(401);
    expect((await h.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer wrong-token-0123456789' } })).statusCode).toBe(401);
    const res = await h.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toContain('text/plain');
    expect(res.body).toMatch(/tollgate_http_requests_total\{method="GET",route="\/app_context",status="200"\} 1/);
    // The route pattern, never the raw URL with its id.
    expect(res.body).toMatch(/route="\/files\/:file_id\/download",status="404"/);
    expect(res.body).not.toContain('00000000-0000-4000-8000-000000000000');
    expect(res.body).toContain('tollgate_http_request_duration_seconds_bucket');
    expect(res.body).toContain('tollgate_process_cpu_user_seconds_total');
    // Limits are off in the harness: nothing is shared.
    expect(res.body).toMatch(/^tollgate_rate_limits_shared 0$/m);
  });

  it('says whether rate-limit counts are shared by every node (PostgreSQL) or counted by this node alone (SQLite)', async () => {
    h = await harness({ env: { METRICS_TOKEN, RATE_LIMIT: 'on' } });
    const res = await h.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    expect(res.body).toMatch(new RegExp(`^tollgate_rate_limits_shared ${STORE === 'postgres' ? 1 : 0}$`, 'm'));
    expect((await h.inject({ method: 'GET', url: '/readyz' })).json()).toEqual({ status: 'ok', rate_limits: STORE === 'postgres' ? 'shared' : 'local', signing_key_seal: 'off', warnings: [UNSEALED_WARNING] });
  });

  it('counts the PostgreSQL pool\'s connections (total, idle, waiting); SQLite has no pool and no such gauge', async () => {
    h = await harness({ env: { METRICS_TOKEN } });
    await h.createApp();
    const res = await h.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    if (STORE === 'postgres') {
      const count = (state: string) => Number(new RegExp(`^tollgate_db_pool_connections\\{state="${state}"\\} (\\d+)$`, 'm').exec(res.body)?.[1]);
      // The harness's app was created through the pool, so it holds at least one connection; none waits now.
      expect(count('total')).toBeGreaterThanOrEqual(1);
      expect(count('idle')).toBeLessThanOrEqual(count('total'));
      expect(count('waiting')).toBe(0);
    } else {
      expect(res.body).not.toContain('tollgate_db_pool_connections');
    }
  });
});
