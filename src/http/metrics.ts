import type { FastifyInstance } from 'fastify';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { DomainError } from '../domain/errors.js';
import type { Services } from '../domain/services.js';
import { PostgresDb } from '../store/postgres.js';
import { header } from './client-plugin.js';
import type { FinishedObserver } from './request-steps.js';
import { digest, digestMatches } from '../domain/tokens.js';

/**
 * Prometheus metrics at GET /metrics, only when a metrics token is configured
 * (the route does not exist otherwise): request counts and latency per route
 * and status, database pool usage, and the process metrics of prom-client.
 */
export function registerMetrics(app: FastifyInstance, s: Services, token: string): FinishedObserver {
  const db = s.store.db;
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'tollgate_' });
  const requests = new Counter({ name: 'tollgate_http_requests_total', help: 'HTTP requests', labelNames: ['method', 'route', 'status'], registers: [registry] });
  const latency = new Histogram({
    name: 'tollgate_http_request_duration_seconds', help: 'HTTP request latency', labelNames: ['method', 'route', 'status'],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10], registers: [registry],
  });
  if (db instanceof PostgresDb) {
    const pool = db.pool;
    new Gauge({ name: 'tollgate_db_pool_connections', help: 'PostgreSQL pool connections', labelNames: ['state'], registers: [registry], collect() {
      this.set({ state: 'total' }, pool.totalCount);
      this.set({ state: 'idle' }, pool.idleCount);
      this.set({ state: 'waiting' }, pool.waitingCount);
    } });
  }

  // 1 while every node shares its rate-limit counts (Redis or PostgreSQL), 0 while this node counts alone.
  new Gauge({ name: 'tollgate_rate_limits_shared', help: 'Rate-limit counts shared across nodes (1) or local to this node (0)', registers: [registry], collect() {
    this.set(s.limits.status() === 'shared' ? 1 : 0);
  } });

  /** One answered request, of either path (step `finished`, request-steps.ts): the route pattern, never the raw URL (ids in paths would make unbounded label sets). */
  const observe: FinishedObserver = ({ method, route, status }, seconds) => {
    const labels = { method, route, status: String(status) };
    requests.inc(labels);
    latency.observe(labels, seconds);
  };

  const expected = digest(token);
  app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
    const presented = /^Bearer\s+(\S+)$/i.exec(header(request, 'authorization') ?? '')?.[1];
    if (!presented || !digestMatches(presented, expected)) throw new DomainError('invalid_admin_token', 'Missing or invalid metrics token');
    return reply.type(registry.contentType).send(await registry.metrics());
  });
  return observe;
}
