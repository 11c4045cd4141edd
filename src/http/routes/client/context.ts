import type { FastifyInstance } from 'fastify';
import { appContextJson } from '../../../domain/app-context.js';
import type { Services } from '../../../domain/services.js';
import { userCredentials } from '../../client-plugin.js';
import { applicationSchema, errors, timestamp, userAuthHeaders, userSchema } from '../../schemas.js';

/** GET /app_context (SPEC 4.5). */
export function contextRoutes(app: FastifyInstance, s: Services): void {
  app.get('/app_context', {
    config: { limited: 'legacy_auth' },
    schema: {
      tags: ['client'],
      summary: 'The application (variables, files) and the current user',
      documentedHeaders: userAuthHeaders,
      response: {
        200: {
          type: 'object',
          required: ['application', 'user', 'server_time'],
          properties: { application: applicationSchema, user: { anyOf: [userSchema, { type: 'null' }] }, server_time: timestamp },
        },
        ...errors(401, 403, 422, 429),
      },
    },
    handler: async (request, reply) => {
      const json = await appContextJson(s, request.ctx, userCredentials(request));
      return reply.type('application/json; charset=utf-8').send(json);
    },
  });
}
