import type { FastifyInstance } from 'fastify';
import { login, logout, type LoginInput } from '../../../domain/login.js';
import type { Services } from '../../../domain/services.js';
import { userCredentials } from '../../client-plugin.js';
import { appSecurity, documentedAs, errors, hardwareId, ref, sessionSecurity } from '../../schemas.js';

/** POST /auth/login (SPEC 4.3) and POST /auth/logout (DECISIONS). */
export function sessionRoutes(app: FastifyInstance, s: Services): void {
  app.post<{ Body: LoginInput }>('/auth/login', {
    config: { limited: 'login' },
    schema: {
      operationId: 'login',
      tags: ['client'],
      summary: 'Create a session; returns a session token',
      security: appSecurity,
      body: {
        type: 'object',
        required: ['credentials'],
        properties: {
          // The domain tells the two forms apart with its own 422 messages (src/domain/login.ts); the document states them as a oneOf.
          credentials: documentedAs(
            { type: 'object', properties: { username: { type: 'string' }, password: { type: 'string' }, code: { type: 'string' } } },
            { description: 'Either {username, password} or {code}, not both', oneOf: [ref('PasswordCredentials'), ref('CodeCredentials')] },
          ),
          hardware_id: hardwareId,
        },
      },
      response: { 200: { ...ref('Session'), description: 'The session' }, ...errors(401, 403, 413, 422, 429) },
    },
    handler: (request) => login(s, request.ctx, request.body),
  });

  app.post('/auth/logout', {
    schema: {
      operationId: 'logout',
      tags: ['client'],
      summary: 'Revoke the Bearer session token',
      security: sessionSecurity,
      response: { 204: { type: 'null', description: 'Session revoked' }, ...errors(401, 413, 422) },
    },
    handler: async (request, reply) => {
      await logout(s, request.ctx, userCredentials(request).bearer);
      return reply.code(204).send();
    },
  });
}
