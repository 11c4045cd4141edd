import type { FastifyInstance } from 'fastify';
import { activateLicense, type ActivationInput } from '../../../domain/activation.js';
import type { Services } from '../../../domain/services.js';
import { signUp, signUpWithLicense, type LicenseSignUpInput, type SignUpInput } from '../../../domain/signup.js';
import type { RouteErrorConfig } from '../../errors.js';
import { activationSchema, appHeaders, errors, userSchema } from '../../schemas.js';

const hardwareId = { type: 'string', description: 'Required when device authentication is enabled' } as const;

/** POST /sign_up, /sign_up_with_license_code, /activate_license: credentials in the body (SPEC 4.1, 4.2, 4.7). */
export function accountRoutes(app: FastifyInstance, s: Services): void {
  app.post<{ Body: SignUpInput }>('/sign_up', {
    config: { limited: 'signup' },
    schema: {
      tags: ['client'],
      summary: 'Create a user with a username and password',
      documentedHeaders: appHeaders,
      body: {
        type: 'object',
        required: ['username', 'password'],
        properties: { username: { type: 'string' }, password: { type: 'string' }, hardware_id: hardwareId },
      },
      response: { 200: userSchema, ...errors(401, 403, 413, 422, 429) },
    },
    handler: (request) => signUp(s, request.ctx, request.body),
  });

  const licenseSignUpErrors: RouteErrorConfig = { statusOverrides: { invalid_license: 422, license_used: 422 }, limited: 'license_signup' };
  app.post<{ Body: LicenseSignUpInput }>('/sign_up_with_license_code', {
    config: licenseSignUpErrors,
    schema: {
      tags: ['client'],
      summary: 'Create a user from a license code (activated at once)',
      documentedHeaders: appHeaders,
      body: { type: 'object', required: ['code'], properties: { code: { type: 'string' }, hardware_id: hardwareId } },
      response: { 200: userSchema, ...errors(401, 403, 413, 422, 429) },
    },
    handler: (request) => signUpWithLicense(s, request.ctx, request.body),
  });

  app.post<{ Body: ActivationInput }>('/activate_license', {
    config: { limited: 'activation' },
    schema: {
      tags: ['client'],
      summary: "Activate a license code on an existing user's membership",
      documentedHeaders: appHeaders,
      body: {
        type: 'object',
        required: ['code', 'username', 'password'],
        properties: { code: { type: 'string' }, username: { type: 'string' }, password: { type: 'string' }, hardware_id: hardwareId },
      },
      response: { 200: activationSchema, ...errors(401, 403, 413, 422, 429) },
    },
    handler: (request) => activateLicense(s, request.ctx, request.body),
  });
}
