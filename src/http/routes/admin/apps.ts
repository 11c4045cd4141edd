import type { FastifyInstance } from 'fastify';
import { createApp, deleteApp, getApp, listApps, rotateSecret, updateApp, viewApp, type AppSettingsInput } from '../../../domain/admin/apps.js';
import type { Services } from '../../../domain/services.js';
import { acting, adminSecurity, cursorOf, page, pageQuery, pageSchema } from '../../admin-plugin.js';
import { errors, timestamp, uuid } from '../../schemas.js';

const settings = {
  device_auth_enabled: { type: 'boolean' },
  anonymous_access_allowed: { type: 'boolean' },
  max_devices_per_user: { type: 'integer', minimum: 1, maximum: 1000 },
  session_ttl_seconds: { type: 'integer', minimum: 60, maximum: 31_536_000 },
  password_min_length: { type: 'integer', minimum: 1, maximum: 1024 },
  registration_open: { type: 'boolean' },
  max_sessions_per_user: { type: 'integer', minimum: 0, maximum: 10_000, description: 'Live sessions per user; a new login ends the oldest beyond it (0: no cap)' },
  rate_failures_per_identity: { type: 'integer', minimum: 1, maximum: 1_000_000, description: 'Failed credential attempts per username or license code per window' },
  rate_failures_per_identity_window_seconds: { type: 'integer', minimum: 1, maximum: 86_400 },
  rate_failures_per_ip: { type: 'integer', minimum: 1, maximum: 1_000_000, description: 'Failed credential attempts per client IP per window' },
  rate_failures_per_ip_window_seconds: { type: 'integer', minimum: 1, maximum: 86_400 },
  rate_signups_per_ip: { type: 'integer', minimum: 1, maximum: 1_000_000, description: 'Sign-ups per client IP per window' },
  rate_signups_per_ip_window_seconds: { type: 'integer', minimum: 1, maximum: 86_400 },
  rate_signups_per_app: { type: 'integer', minimum: 0, maximum: 100_000_000, description: 'Sign-ups per app per window; 0 for no app-wide cap' },
  rate_signups_per_app_window_seconds: { type: 'integer', minimum: 1, maximum: 86_400 },
  signatures: { type: 'string', enum: ['optional', 'required'], description: 'required: a client request without Tollgate-Nonce is 422 nonce_required (docs/signing.md)' },
  offline_grace_seconds: { type: 'integer', minimum: 0, maximum: 31_536_000, description: 'How long a lease keeps a client working offline (and its runtime budget); 0: no leases' },
  lease_renew_seconds: { type: 'integer', minimum: 60, maximum: 31_536_000, description: 'A client renews its lease online after this many seconds' },
} as const;

export const appSchema = {
  type: 'object',
  required: ['id', 'name', 'api_key', ...Object.keys(settings), 'created_at', 'updated_at'],
  properties: { id: uuid, name: { type: 'string' }, api_key: { type: 'string' }, ...settings, created_at: timestamp, updated_at: timestamp },
} as const;

const appParams = { type: 'object', required: ['app_id'], properties: { app_id: uuid } } as const;
const tags = ['admin: apps'];

export function appRoutes(app: FastifyInstance, s: Services): void {
  app.post<{ Body: AppSettingsInput & { name: string } }>('/apps', {
    schema: {
      tags, security: adminSecurity, summary: 'Create an application (the API secret is shown only here)',
      body: { type: 'object', required: ['name'], additionalProperties: false, properties: { name: { type: 'string' }, ...settings } },
      response: { 201: { ...appSchema, required: [...appSchema.required, 'api_secret'], properties: { ...appSchema.properties, api_secret: { type: 'string' } } }, ...errors(401, 422) },
    },
    handler: async (request, reply) => reply.code(201).send(await createApp(acting(s, request), request.body)),
  });

  app.get<{ Querystring: { limit: number; cursor?: string } }>('/apps', {
    schema: { tags, security: adminSecurity, summary: 'List applications', querystring: { type: 'object', properties: pageQuery }, response: { 200: pageSchema(appSchema), ...errors(401, 422) } },
    handler: async (request) => page(await listApps(s, cursorOf(request.query.cursor), request.query.limit)),
  });

  app.get<{ Params: { app_id: string } }>('/apps/:app_id', {
    schema: { tags, security: adminSecurity, summary: 'Get an application', params: appParams, response: { 200: appSchema, ...errors(401, 404, 422) } },
    handler: async (request) => viewApp(await getApp(s, request.params.app_id)),
  });

  app.patch<{ Params: { app_id: string }; Body: AppSettingsInput }>('/apps/:app_id', {
    schema: {
      tags, security: adminSecurity, summary: 'Change an application’s name or settings', params: appParams,
      body: { type: 'object', additionalProperties: false, properties: { name: { type: 'string' }, ...settings } },
      response: { 200: appSchema, ...errors(401, 404, 422) },
    },
    handler: async (request) => updateApp(acting(s, request), request.params.app_id, request.body),
  });

  app.delete<{ Params: { app_id: string }; Querystring: { confirm?: string } }>('/apps/:app_id', {
    schema: {
      tags, security: adminSecurity, summary: 'Delete an application and everything it owns (confirm with its name)', params: appParams,
      querystring: { type: 'object', properties: { confirm: { type: 'string', description: 'The application name' } } },
      response: { 204: { type: 'null', description: 'Deleted' }, ...errors(401, 404, 422) },
    },
    handler: async (request, reply) => {
      await deleteApp(acting(s, request), request.params.app_id, request.query.confirm);
      return reply.code(204).send();
    },
  });

  app.post<{ Params: { app_id: string } }>('/apps/:app_id/secret', {
    schema: {
      tags, security: adminSecurity, summary: 'Rotate the API secret (the old one stops working at once)', params: appParams,
      response: { 200: { type: 'object', required: ['api_secret'], properties: { api_secret: { type: 'string' } } }, ...errors(401, 404, 422) },
    },
    handler: async (request) => rotateSecret(acting(s, request), request.params.app_id),
  });
}
