import type { FastifyInstance } from 'fastify';
import { BAN_TYPES, createBan, deleteBan, listBans, type BanInput } from '../../../domain/admin/bans.js';
import type { Services } from '../../../domain/services.js';
import type { BanType } from '../../../store/records.js';
import { acting, adminSecurity, cursorOf, page, pageQuery, pageSchema } from '../../admin-plugin.js';
import { errors, timestamp, uuid } from '../../schemas.js';

const banSchema = {
  type: 'object', required: ['id', 'type', 'value', 'reason', 'expires_at', 'created_at'],
  properties: {
    id: uuid, type: { type: 'string', enum: BAN_TYPES }, value: { type: 'string' }, reason: { type: ['string', 'null'] },
    expires_at: { type: ['string', 'null'], format: 'date-time' }, created_at: timestamp,
  },
} as const;
const appParams = { type: 'object', required: ['app_id'], properties: { app_id: uuid } } as const;
const tags = ['admin: bans'];

export function banRoutes(app: FastifyInstance, s: Services): void {
  app.post<{ Params: { app_id: string }; Body: BanInput }>('/apps/:app_id/bans', {
    schema: {
      tags, security: adminSecurity, summary: 'Ban an IP address or CIDR range, a hardware ID, a license code or a user', params: appParams,
      body: {
        type: 'object', required: ['type', 'value'], additionalProperties: false,
        properties: { type: { type: 'string', enum: BAN_TYPES }, value: { type: 'string' }, reason: { type: 'string' }, expires_at: { type: 'string' } },
      },
      response: { 201: banSchema, ...errors(401, 404, 422) },
    },
    handler: async (request, reply) => reply.code(201).send(await createBan(acting(s, request), request.params.app_id, request.body)),
  });
  app.get<{ Params: { app_id: string }; Querystring: { limit: number; cursor?: string; type?: BanType } }>('/apps/:app_id/bans', {
    schema: {
      tags, security: adminSecurity, summary: 'List bans', params: appParams,
      querystring: { type: 'object', properties: { ...pageQuery, type: { type: 'string', enum: BAN_TYPES } } },
      response: { 200: pageSchema(banSchema), ...errors(401, 404, 422) },
    },
    handler: async (request) => page(await listBans(s, request.params.app_id, cursorOf(request.query.cursor), request.query.limit, request.query.type)),
  });
  app.delete<{ Params: { app_id: string; ban_id: string } }>('/apps/:app_id/bans/:ban_id', {
    schema: {
      tags, security: adminSecurity, summary: 'Lift a ban (access is restored at once)',
      params: { type: 'object', required: ['app_id', 'ban_id'], properties: { app_id: uuid, ban_id: uuid } },
      response: { 204: { type: 'null', description: 'Deleted' }, ...errors(401, 404, 422) },
    },
    handler: async (request, reply) => {
      await deleteBan(acting(s, request), request.params.app_id, request.params.ban_id);
      return reply.code(204).send();
    },
  });
}
