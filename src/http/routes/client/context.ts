import type { FastifyInstance } from 'fastify';
import { appContextAnswer } from '../../../domain/app-context.js';
import type { Services } from '../../../domain/services.js';
import { run } from '../../../domain/steps.js';
import { userCredentials } from '../../client-plugin.js';
import { handedOver } from '../../hand-over.js';
import { errors, ref, userAuthHeaders, userSecurity } from '../../schemas.js';

const JSON_UTF8 = 'application/json; charset=utf-8';

/** GET /app_context (SPEC 4.5). */
export function contextRoutes(app: FastifyInstance, s: Services): void {
  app.get('/app_context', {
    config: { limited: 'legacy_auth' },
    schema: {
      operationId: 'getAppContext',
      tags: ['client'],
      summary: 'The application (variables, files) and the current user',
      security: userSecurity,
      documentedHeaders: userAuthHeaders,
      response: { 200: { ...ref('AppContext'), description: 'The application and the user (null when anonymous)' }, ...errors(401, 403, 422, 429) },
    },
    // Not an async function: when every record is cached the answer is sent at once, without a promise
    // (measured: an async handler here cost ~20% of the route's throughput). Errors thrown go to the error handler alike.
    handler: (request, reply) => {
      // What the fast path (src/http/fast-path.ts) handed over: the check ran there, refused or is waiting.
      const handed = handedOver(request.raw);
      if (handed !== undefined && handed.pending === undefined) throw handed.error;
      const answer = handed?.pending ?? run(appContextAnswer(s, request.ctx, userCredentials(request, request.raw.socket)));
      if (answer instanceof Promise) {
        return answer.then(({ json }) => {
          void reply.type(JSON_UTF8);
          return json;
        });
      }
      void reply.type(JSON_UTF8).send(answer.json);
      return undefined;
    },
  });
}
