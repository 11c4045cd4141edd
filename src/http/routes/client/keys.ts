import type { FastifyInstance } from 'fastify';
import type { Services } from '../../../domain/services.js';
import { KID_PATTERN } from '../../../domain/signing/format.js';
import { clientKeyList } from '../../../domain/signing/keys.js';
import { appHeaders, errors } from '../../schemas.js';

const kid = { type: 'string', pattern: KID_PATTERN } as const;

/** GET /signing_keys (docs/signing.md): what an SDK needs to trust a new kid and to refuse retired ones. */
export function keyListRoutes(app: FastifyInstance, s: Services): void {
  app.get('/signing_keys', {
    schema: {
      tags: ['client'],
      operationId: 'listSigningKeys',
      summary: 'The application’s certified signing keys not yet expired, and every retired kid',
      // The application key and secret (the security schemes of src/http/schemas.ts: appSecurity), no user.
      security: [{ appKey: [], appSecret: [] }],
      documentedHeaders: appHeaders,
      response: {
        200: {
          type: 'object',
          required: ['keys', 'retired'],
          properties: {
            keys: {
              type: 'array',
              items: {
                type: 'object',
                required: ['kid', 'certificate', 'status'],
                properties: { kid, certificate: { type: 'string', description: 'tollgate/keycert/v1, verified by the pinned root' }, status: { type: 'string', enum: ['active'] } },
              },
            },
            retired: { type: 'array', items: kid, description: 'Kids to refuse from now on (the set only grows)' },
          },
        },
        ...errors(401, 422),
      },
    },
    handler: (request) => clientKeyList(s, request.ctx.app.id, request.ctx.now),
  });
}
