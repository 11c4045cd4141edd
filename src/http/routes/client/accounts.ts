import type { FastifyInstance } from 'fastify';
import { activateLicense, type ActivationInput } from '../../../domain/activation.js';
import type { Services } from '../../../domain/services.js';
import { signUp, signUpWithLicense, type LicenseSignUpInput, type SignUpInput } from '../../../domain/signup.js';
import type { RouteErrorConfig } from '../../errors.js';
import { appSecurity, errors, hardwareId, licenseCode, password, ref, username } from '../../schemas.js';

/** POST /sign_up, /sign_up_with_license_code, /activate_license: credentials in the body (SPEC 4.1, 4.2, 4.7). */
export function accountRoutes(app: FastifyInstance, s: Services): void {
  app.post<{ Body: SignUpInput }>('/sign_up', {
    config: { limited: 'signup' },
    schema: {
      operationId: 'signUp',
      tags: ['client'],
      summary: 'Create a user with a username and password',
      security: appSecurity,
      body: {
        type: 'object',
        required: ['username', 'password'],
        properties: { username, password: password('At least the application’s password_min_length characters.'), hardware_id: hardwareId },
      },
      response: { 200: { ...ref('User'), description: 'The new user' }, ...errors(401, 403, 413, 422, 429) },
    },
    handler: (request) => signUp(s, request.ctx, request.body),
  });

  const licenseSignUpErrors: RouteErrorConfig = { statusOverrides: { invalid_license: 422, license_used: 422 }, limited: 'license_signup' };
  app.post<{ Body: LicenseSignUpInput }>('/sign_up_with_license_code', {
    config: licenseSignUpErrors,
    schema: {
      operationId: 'signUpWithLicenseCode',
      tags: ['client'],
      summary: 'Create a user from a license code (activated at once)',
      security: appSecurity,
      body: { type: 'object', required: ['code'], properties: { code: licenseCode, hardware_id: hardwareId } },
      response: { 200: { ...ref('User'), description: 'The new user, its license activated' }, ...errors(401, 403, 413, 422, 429) },
    },
    handler: (request) => signUpWithLicense(s, request.ctx, request.body),
  });

  app.post<{ Body: ActivationInput }>('/activate_license', {
    config: { limited: 'activation' },
    schema: {
      operationId: 'activateLicense',
      tags: ['client'],
      summary: "Activate a license code on an existing user's membership",
      security: appSecurity,
      body: {
        type: 'object',
        required: ['code', 'username', 'password'],
        properties: { code: licenseCode, username, password: password('The user’s password.'), hardware_id: hardwareId },
      },
      response: { 200: { ...ref('Activation'), description: 'The activation' }, ...errors(401, 403, 413, 422, 429) },
    },
    handler: (request) => activateLicense(s, request.ctx, request.body),
  });
}
