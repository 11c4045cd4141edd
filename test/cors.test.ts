import { afterEach, describe, expect, it } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { ADMIN_TOKEN, expectError, harness, type Harness } from './helpers.js';

/**
 * Issue 11, finding 9: with CORS_ORIGINS set, preflights were answered with
 * CORS headers on every path, /admin/v1/* and /metrics included, although the
 * decision is "never on the admin API". Only the client interface has CORS;
 * any other OPTIONS request is a plain 404 in the error shape.
 */
const ORIGIN = 'https://app.example.com';
const METRICS_TOKEN = 'metrics-token-0123456789';
const FILE_ID = '00000000-0000-4000-8000-000000000000';

function corsHeaders(res: LightMyRequestResponse): string[] {
  return Object.keys(res.headers).filter((name) => name.startsWith('access-control-'));
}

describe('CORS preflights', () => {
  let h: Harness;
  afterEach(async () => h?.close());

  const preflight = (url: string, method = 'GET', origin = ORIGIN) =>
    h.inject({ method: 'OPTIONS', url, headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': 'authorization,content-type' } });

  it('on the admin API, /metrics and the service pages: 404 in the error shape, no Access-Control-* header', async () => {
    h = await harness({ env: { CORS_ORIGINS: ORIGIN, METRICS_TOKEN } });
    const app = await h.createApp();
    for (const [url, method] of [
      ['/admin/v1/apps', 'GET'], ['/admin/v1/apps', 'POST'], [`/admin/v1/apps/${app.id}`, 'DELETE'], [`/admin/v1/apps/${app.id}/files?name=a`, 'POST'],
      ['/admin/v1/tokens', 'POST'], ['/metrics', 'GET'], ['/readyz', 'GET'], ['/healthz', 'GET'], ['/openapi.json', 'GET'], ['/docs', 'GET'],
      ['/docs/static/index.html', 'GET'], ['/', 'GET'], ['/no/such/path', 'POST'],
    ] as const) {
      const res = await preflight(url, method);
      expectError(res, 404, 'not_found');
      expect(corsHeaders(res), url).toEqual([]);
    }
  });

  it('an admin request from an allowed origin gets no CORS header either', async () => {
    h = await harness({ env: { CORS_ORIGINS: ORIGIN, METRICS_TOKEN } });
    const admin = await h.inject({ method: 'GET', url: '/admin/v1/apps', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, origin: ORIGIN } });
    expect(admin.statusCode).toBe(200);
    expect(corsHeaders(admin)).toEqual([]);
    const metrics = await h.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${METRICS_TOKEN}`, origin: ORIGIN } });
    expect(metrics.statusCode).toBe(200);
    expect(corsHeaders(metrics)).toEqual([]);
  });

  it('on client endpoints, preflights keep working for the listed origins', async () => {
    h = await harness({ env: { CORS_ORIGINS: ORIGIN } });
    for (const [url, method] of [['/auth/login', 'POST'], ['/sign_up', 'POST'], ['/app_context', 'GET'], [`/files/${FILE_ID}/download`, 'GET'], ['/app_context?x=1', 'GET']] as const) {
      const res = await preflight(url, method);
      expect(res.statusCode, url).toBe(204);
      expect(res.headers['access-control-allow-origin'], url).toBe(ORIGIN);
      expect(String(res.headers['access-control-allow-methods'])).toContain(method);
      expect(String(res.headers['access-control-allow-headers'])).toContain('x-api-secret');
    }
    const other = await preflight('/auth/login', 'POST', 'https://evil.example');
    expect(other.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('an OPTIONS request that is not a preflight is a 404 in the error shape (not a text/plain 400)', async () => {
    h = await harness({ env: { CORS_ORIGINS: ORIGIN } });
    for (const headers of [{ origin: ORIGIN }, { 'access-control-request-method': 'POST' }, {}]) {
      const res = await h.inject({ method: 'OPTIONS', url: '/auth/login', headers });
      expectError(res, 404, 'not_found');
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(corsHeaders(res)).toEqual([]);
    }
  });

  it('without CORS_ORIGINS, no path answers a preflight', async () => {
    h = await harness();
    for (const url of ['/auth/login', '/admin/v1/apps']) {
      const res = await preflight(url, 'POST');
      expectError(res, 404, 'not_found');
      expect(corsHeaders(res)).toEqual([]);
    }
  });
});
