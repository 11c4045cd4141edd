import type { FastifyInstance } from 'fastify';
import { redeemLicense, type RedeemInput } from '../../../domain/activation.js';
import type { Services } from '../../../domain/services.js';
import { userCredentials } from '../../client-plugin.js';
import { errors, licenseCode, ref, userAuthHeaders, userSecurity } from '../../schemas.js';

/** A user credential is required: the user-security alternatives without the anonymous one. */
const redeemSecurity = userSecurity.filter((alternative) => 'sessionToken' in alternative || 'licenseCode' in alternative || 'legacyUsername' in alternative);

/** POST /redeem (issue 24): the signed-in user (a trial user too, who has no password) redeems a license code. */
export function redeemRoutes(app: FastifyInstance, s: Services): void {
  app.post<{ Body: RedeemInput }>('/redeem', {
    config: { limited: 'activation' },
    schema: {
      operationId: 'redeemLicense',
      tags: ['client'],
      summary: 'Redeem a license code for the current user (a trial converts)',
      description:
        'User authentication as GET /app_context (all its checks, in its order) without its membership check: redeeming is how an ended ' +
        'membership (an expired trial) starts again, as on POST /activate_license. The redemption is that of POST /activate_license ' +
        '(a trial converts; the license’s time, entitlements and limits apply); its refusals too: 401 invalid_license or license_used, 403 banned.',
      security: redeemSecurity,
      documentedHeaders: userAuthHeaders,
      body: { type: 'object', required: ['code'], properties: { code: licenseCode } },
      response: { 200: { ...ref('Redemption'), description: 'The activation and the user after it' }, ...errors(401, 403, 413, 422, 429) },
    },
    handler: (request) => redeemLicense(s, request.ctx, userCredentials(request), request.body),
  });
}
