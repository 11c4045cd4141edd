import type { FastifyInstance } from 'fastify';
import type { Services } from '../../domain/services.js';

/** Health and readiness, with no application headers. */
export function metaRoutes(app: FastifyInstance, s: Services): void {
  const status = { type: 'object', required: ['status'], properties: { status: { type: 'string' } } } as const;
  app.get('/healthz', {
    schema: { tags: ['meta'], summary: 'Liveness: the process serves', response: { 200: status } },
    handler: async () => ({ status: 'ok' }),
  });
  app.get('/readyz', {
    schema: { tags: ['meta'], summary: 'Readiness: the database answers', response: { 200: status, 503: { ...status, description: 'The database does not answer' } } },
    handler: async (_request, reply) => {
      const ok = await s.store.db.ping();
      return reply.code(ok ? 200 : 503).send({ status: ok ? 'ok' : 'unavailable' });
    },
  });
}
