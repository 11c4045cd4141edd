import type { FastifyInstance } from 'fastify';
import { issueLease } from '../../../domain/lease.js';
import type { Services } from '../../../domain/services.js';
import { HARDWARE_ID } from '../../../domain/validation.js';
import { header, userCredentials } from '../../client-plugin.js';
import { errors, text, userSecurity } from '../../schemas.js';

export const LEASE_CONTENT_TYPE = 'application/x-tollgate-lease';

/** A user credential is required: the user-security alternatives without the anonymous one (app credentials alone). */
const leaseSecurity = userSecurity.filter((alternative) => 'sessionToken' in alternative || 'licenseCode' in alternative || 'legacyUsername' in alternative);

/** POST /lease (docs/signing.md, "Offline leases"): a signed permit to run offline on one device for a while. */
export function leaseRoutes(app: FastifyInstance, s: Services): void {
  app.post('/lease', {
    config: { limited: 'legacy_auth' },
    schema: {
      operationId: 'createLease',
      tags: ['client'],
      summary: 'An offline lease for the current user on this device',
      description:
        'User authentication as GET /app_context (all its checks, in its order), with x-hardware-id and Tollgate-Nonce required; no body. ' +
        'The lease file is armoured base64url of {v, kid, cert, payload, sig} (docs/signing.md). ' +
        '403 leases_disabled when the app has offline_grace_seconds 0; 503 when the app has no usable signing key.',
      security: leaseSecurity,
      // The nonce becomes the document's TollgateNonceRequired parameter (src/http/openapi.ts); both are checked by the domain.
      documentedHeaders: {
        type: 'object',
        required: ['x-hardware-id', 'tollgate-nonce'],
        properties: {
          'x-hardware-id': text(HARDWARE_ID, 'Hardware ID of this device: the lease is bound to it. Required, device authentication on or off'),
          'tollgate-nonce': { type: 'string' },
        },
      },
      response: {
        200: {
          description: 'The lease file',
          content: { [LEASE_CONTENT_TYPE]: { schema: { type: 'string', description: '-----BEGIN TOLLGATE LEASE-----, base64url lines of 64 characters, -----END TOLLGATE LEASE-----' } } },
        },
        ...errors(401, 403, 422, 429),
      },
    },
    handler: async (request, reply) => {
      const lease = await issueLease(s, request.ctx, header(request, 'tollgate-nonce'), userCredentials(request));
      // A permit for this user alone: no shared cache may keep it.
      return reply.type(LEASE_CONTENT_TYPE).header('cache-control', 'private, no-store').send(lease);
    },
  });
}
