import type { FastifyInstance } from 'fastify';
import type { Services } from '../../../domain/services.js';
import { startTrial, type TrialInput } from '../../../domain/trials.js';
import { appSecurity, errors, hardwareId, ref } from '../../schemas.js';

/** POST /trial (issue 24, /work/notes/contract.md): a verified trial for this device, answered as a login with its user. */
export function trialRoutes(app: FastifyInstance, s: Services): void {
  app.post<{ Body: TrialInput }>('/trial', {
    config: { limited: 'signup' },
    schema: {
      operationId: 'startTrial',
      tags: ['client'],
      summary: 'Start (or resume) the trial of this device; one per device and per email, ever',
      security: appSecurity,
      body: {
        type: 'object',
        required: ['hardware_id'],
        properties: { hardware_id: { ...hardwareId, description: 'Hardware ID of this device (required): the server keeps only its hash for the one-trial rule' }, email: { type: 'string', description: 'Optional: one trial per normalised address' } },
      },
      response: { 200: { ...ref('TrialSession'), description: 'The trial user and a session' }, ...errors(401, 403, 413, 422, 429) },
    },
    handler: (request) => startTrial(s, request.ctx, request.body),
  });
}
