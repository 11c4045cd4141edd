import type { FastifyInstance } from 'fastify';
import { createLicenses, deleteLicense, getLicense, listLicenses, MAX_BATCH, type CreateLicensesInput } from '../../../domain/admin/licenses.js';
import { parseBoolean } from '../../../domain/admin/content.js';
import type { Services } from '../../../domain/services.js';
import { acting, adminSecurity, cursorOf, page, pageQuery, pageSchema } from '../../admin-plugin.js';
import { errors, timestamp, uuid } from '../../schemas.js';

const nullableTimestamp = { type: ['string', 'null'], format: 'date-time' } as const;
export const licenseSchema = {
  type: 'object',
  required: ['id', 'code', 'minutes', 'grants_lifetime_access', 'revokes_lifetime_access', 'note', 'expires_at', 'created_at', 'used_at', 'used_by_user_id'],
  properties: {
    id: uuid, code: { type: 'string' }, minutes: { type: ['integer', 'null'] }, grants_lifetime_access: { type: 'boolean' },
    revokes_lifetime_access: { type: 'boolean' }, note: { type: ['string', 'null'] }, expires_at: nullableTimestamp, created_at: timestamp,
    used_at: nullableTimestamp, used_by_user_id: { type: ['string', 'null'] },
  },
} as const;

const appParams = { type: 'object', required: ['app_id'], properties: { app_id: uuid } } as const;
const licenseParams = { type: 'object', required: ['app_id', 'license_id'], properties: { app_id: uuid, license_id: uuid } } as const;
const tags = ['admin: licenses'];

export function licenseRoutes(app: FastifyInstance, s: Services): void {
  app.post<{ Params: { app_id: string }; Body: CreateLicensesInput }>('/apps/:app_id/licenses', {
    bodyLimit: 64 * 1024,
    schema: {
      tags, security: adminSecurity, summary: 'Create a batch of licenses in one transaction', params: appParams,
      body: {
        type: 'object', required: ['count'], additionalProperties: false,
        properties: {
          count: { type: 'integer', minimum: 1, maximum: MAX_BATCH },
          minutes: { type: 'integer', minimum: 1, maximum: 1_000_000_000 },
          lifetime: { type: 'boolean' },
          revokes_lifetime_access: { type: 'boolean' },
          mask: { type: 'string', minLength: 1, description: 'X = one random symbol of ABCDEFGHJKLMNPQRSTUVWXYZ23456789; anything else literal' },
          note: { type: 'string', maxLength: 1000 },
          expires_at: { type: 'string', description: 'The code cannot be redeemed after this time' },
        },
      },
      response: { 201: { type: 'object', required: ['licenses'], properties: { licenses: { type: 'array', items: licenseSchema } } }, ...errors(401, 404, 422) },
    },
    handler: async (request, reply) => reply.code(201).send({ licenses: await createLicenses(acting(s, request), request.params.app_id, request.body) }),
  });

  app.get<{ Params: { app_id: string }; Querystring: { limit: number; cursor?: string; used?: string; q?: string } }>('/apps/:app_id/licenses', {
    schema: {
      tags, security: adminSecurity, summary: 'List licenses (filter by used, search code or note)', params: appParams,
      querystring: { type: 'object', properties: { ...pageQuery, used: { type: 'string', enum: ['true', 'false'] }, q: { type: 'string', maxLength: 128 } } },
      response: { 200: pageSchema(licenseSchema), ...errors(401, 404, 422) },
    },
    handler: async (request) => {
      const { used, q, cursor, limit } = request.query;
      const filter: { used?: boolean; q?: string } = {};
      const usedFilter = parseBoolean('querystring.used', used);
      if (usedFilter !== undefined) filter.used = usedFilter;
      if (q) filter.q = q;
      return page(await listLicenses(s, request.params.app_id, filter, cursorOf(cursor), limit));
    },
  });

  app.get<{ Params: { app_id: string; license_id: string } }>('/apps/:app_id/licenses/:license_id', {
    schema: { tags, security: adminSecurity, summary: 'Get a license (who redeemed it and when)', params: licenseParams, response: { 200: licenseSchema, ...errors(401, 404, 422) } },
    handler: async (request) => getLicense(s, request.params.app_id, request.params.license_id),
  });

  app.delete<{ Params: { app_id: string; license_id: string } }>('/apps/:app_id/licenses/:license_id', {
    schema: {
      tags, security: adminSecurity, summary: 'Delete an unused license', params: licenseParams,
      response: { 204: { type: 'null', description: 'Deleted' }, ...errors(401, 404, 409, 422) },
    },
    handler: async (request, reply) => {
      await deleteLicense(acting(s, request), request.params.app_id, request.params.license_id);
      return reply.code(204).send();
    },
  });
}
