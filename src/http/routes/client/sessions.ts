import type { FastifyInstance } from 'fastify';
import { login, logout, type LoginInput } from '../../../domain/login.js';
import type { Services } from '../../../domain/services.js';
import { userCredentials } from '../../client-plugin.js';
import { appHeaders, errors } from '../../schemas.js';

/** POST /auth/login (SPEC 4.3) and POST /auth/logout (DECISIONS). */
export function sessionRoutes(app: FastifyInstance, s: Services): void {
  app.post<{ Body: LoginInput }>('/auth/login', {
    config: { limited: 'login' },
    schema: {
      tags: ['client'],
      summary: 'Create a session; returns a session token',
      documentedHeaders: appHeaders,
      body: {
        type: 'object',
        required: ['credentials'],
        properties: {
          credentials: {
            type: 'object',
            description: 'Either {username, password} or {code}',
            properties: { username: { type: 'string' }, password: { type: 'string' }, code: { type: 'string' } },
          },
          hardware_id: { type: 'string', description: 'Required when device authentication is enabled' },
        },
      },
      response: {
        200: { type: 'object', required: ['session_token'], properties: { session_token: { type: 'string' } } },
        ...errors(401, 403, 413, 422, 429),
      },
    },
    handler: (request) => login(s, request.ctx, request.body),
  });

  app.post('/auth/logout', {
    schema: {
      tags: ['client'],
      summary: 'Revoke the Bearer session token',
      documentedHeaders: { type: 'object', properties: { ...appHeaders.properties, authorization: { type: 'string', description: 'Bearer <session_token>' } } },
      response: { 204: { type: 'null', description: 'Session revoked' }, ...errors(401, 413, 422) },
    },
    handler: async (request, reply) => {
      await logout(s, request.ctx, userCredentials(request).bearer);
      return reply.code(204).send();
    },
  });
}
