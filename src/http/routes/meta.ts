import type { FastifyInstance } from 'fastify';
import type { Services } from '../../domain/services.js';
import { RETRY_AFTER_UNAVAILABLE_S, errorBody } from '../errors.js';
import { noSecurity } from '../schemas.js';
import { watchStore, within } from '../outage.js';

/**
 * How long /readyz waits for the database. Its own bound, shorter than the query timeouts: probes
 * give up after a few seconds, and a database that takes longer than this to say "SELECT 1" is not
 * one to send traffic to.
 */
const READY_WITHIN_MS = 1500;

export const UNSEALED_WARNING = 'SIGNING_KEY_SEAL is not set: signing private keys are stored unsealed in the database';

/** Health and readiness, with no application headers. */
export function metaRoutes(app: FastifyInstance, s: Services): void {
  // Probes, load balancers and clients retry while the database is down: log its changes of state, not each refusal.
  const outage = watchStore(app, () => s.store.db.ping(), s.store.db.bus);
  const status = { type: 'object', required: ['status'], properties: { status: { type: 'string' } } } as const;
  const ready = {
    ...status,
    properties: {
      ...status.properties,
      rate_limits: {
        type: 'string', enum: ['shared', 'local', 'off'],
        description: 'shared: counted in Redis or PostgreSQL by every node; local: this node counts alone (SQLite, or Redis unreachable); off: RATE_LIMIT=off',
      },
      signing_key_seal: {
        type: 'string', enum: ['on', 'rotating', 'off'],
        description: 'on: signing private keys are sealed under SIGNING_KEY_SEAL; rotating: SIGNING_KEY_SEAL_OLD also opens them; off: stored unsealed (see warnings)',
      },
      warnings: { type: 'array', items: { type: 'string' }, description: 'Conditions the operator should fix that do not make the node unready' },
    },
  } as const;
  app.get('/healthz', {
    schema: { operationId: 'getHealth', tags: ['meta'], security: noSecurity, summary: 'Liveness: the process serves', response: { 200: { ...status, description: 'The process serves' } } },
    handler: async () => ({ status: 'ok' }),
  });
  app.get('/readyz', {
    schema: {
      operationId: 'getReadiness', tags: ['meta'], security: noSecurity, summary: 'Readiness: the database answers and can take writes',
      response: {
        200: { ...ready, description: 'Ready to serve' },
        503: {
          ...status,
          description: 'The database does not answer within 1.5 s, or its disk is full (SQLite)',
          required: ['status', 'detail', 'code'],
          properties: { ...status.properties, detail: { type: 'string' }, code: { type: 'string' } },
        },
      },
    },
    handler: async (request, reply) => {
      // Redis down does not make a node unready (it limits on its own); the field lets an operator see it.
      if (await within(s.store.db.ping(), READY_WITHIN_MS)) {
        const seal = s.seal.mode;
        return { status: 'ok', rate_limits: s.limits.status(), signing_key_seal: seal, ...(seal === 'off' && { warnings: [UNSEALED_WARNING] }) };
      }
      outage.refused('readiness: the database does not answer or cannot take writes', request.id);
      return reply
        .code(503)
        .header('retry-after', String(RETRY_AFTER_UNAVAILABLE_S))
        .send({ status: 'unavailable', ...errorBody('service_unavailable', 'The database does not answer or cannot take writes') });
    },
  });
}
