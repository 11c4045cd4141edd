import type { FastifyInstance } from 'fastify';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { DomainError } from '../domain/errors.js';
import type { Services } from '../domain/services.js';
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
  // Through the Db interface, not the PostgreSQL class: http knows no store (docs/layers.md).
  if (db.poolStats) {
    const poolStats = db.poolStats.bind(db);
    new Gauge({ name: 'tollgate_db_pool_connections', help: 'PostgreSQL pool connections', labelNames: ['state'], registers: [registry], collect() {
      const pool = poolStats();
      this.set({ state: 'total' }, pool.total);
      this.set({ state: 'idle' }, pool.idle);
      this.set({ state: 'waiting' }, pool.waiting);
    } });
  }

  // 1 while every node shares its rate-limit counts (Redis or PostgreSQL), 0 while this node counts alone.
  new Gauge({ name: 'tollgate_rate_limits_shared', help: 'Rate-limit counts shared across nodes (1) or local to this node (0)', registers: [registry], collect() {
    this.set(s.limits.status() === 'shared' ? 1 : 0);
  } });

  // Webhooks (docs/webhooks.md): this node's attempts by outcome, and the queue every node shares.
  new Counter({ name: 'tollgate_webhook_deliveries_total', help: 'Webhook delivery attempts on this node, by outcome', labelNames: ['outcome'], registers: [registry], collect() {
    this.reset();
    for (const [outcome, n] of Object.entries(s.outbox.outcomes)) this.inc({ outcome }, n);
  } });
  new Gauge({ name: 'tollgate_webhook_queue_depth', help: 'Pending webhook deliveries (every node)', registers: [registry], async collect() {
    this.set((await s.store.webhooks.queue()).pending);
  } });
  new Gauge({ name: 'tollgate_webhook_oldest_pending_seconds', help: 'Age of the oldest pending webhook delivery; 0 when none', registers: [registry], async collect() {
    const { oldestCreatedAt } = await s.store.webhooks.queue();
    this.set(oldestCreatedAt === null ? 0 : Math.max(0, (s.clock() - oldestCreatedAt) / 1000));
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
