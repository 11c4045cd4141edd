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
    schema: {
      tags: ['meta'], summary: 'Readiness: the database answers',
      response: {
        200: status,
        503: { ...status, description: 'The database does not answer', required: ['status', 'detail', 'code'], properties: { ...status.properties, detail: { type: 'string' }, code: { type: 'string' } } },
      },
    },
    handler: async (request, reply) => {
      if (await s.store.db.ping()) return { status: 'ok' };
      request.log.error({ reqId: request.id }, 'readiness: the database does not answer');
      return reply.code(503).send({ status: 'unavailable', detail: 'The database does not answer', code: 'not_ready' });
    },
  });
}
