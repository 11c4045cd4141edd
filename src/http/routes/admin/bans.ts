import type { FastifyInstance } from 'fastify';
import { BAN_TYPES, createBan, deleteBan, listBans, type BanInput } from '../../../domain/admin/bans.js';
import type { Services } from '../../../domain/services.js';
import type { BanType } from '../../../domain/records.js';
import { acting, adminSecurity, cursorOf, pageQuery, principalOf } from '../../admin-plugin.js';
import { listPage, wantsTotal, withTotalQuery } from '../../admin-lists.js';
import { documented, errors, ref, uuid } from '../../schemas.js';

const appParams = { type: 'object', required: ['app_id'], properties: { app_id: uuid } } as const;
const tags = ['admin: bans'];

export function banRoutes(app: FastifyInstance, s: Services): void {
  app.post<{ Params: { app_id: string }; Body: BanInput }>('/apps/:app_id/bans', {
    schema: {
      operationId: 'createBan', tags, security: adminSecurity, summary: 'Ban an IP address or CIDR range, a hardware ID, a license code or a user', params: appParams,
      body: {
        type: 'object', required: ['type', 'value'], additionalProperties: false,
        properties: {
          type: { type: 'string', enum: BAN_TYPES },
          value: { type: 'string', description: 'ip: an address or CIDR range; hardware_id: 1 to 256 characters; license: a license code (1 to 128); user: a user id' },
          // src/domain/admin/bans.ts: at most 512 characters.
          reason: documented({ type: 'string' }, { maxLength: 512 }),
          expires_at: documented({ type: 'string', description: 'ISO 8601 with a zone, in the future; the ban lifts itself then' }, { format: 'date-time' }),
        },
      },
      // 409: a ban of the same type and value is already in force (its id is in the detail).
      response: { 201: { ...ref('Ban'), description: 'Created' }, ...errors(401, 403, 404, 409, 413, 422) },
    },
    // support: only user and hardware_id bans (src/domain/admin/roles.ts requireBanType)
    handler: async (request, reply) => reply.code(201).send(await createBan(acting(s, request), request.params.app_id, request.body, principalOf(request).role)),
  });
  app.get<{ Params: { app_id: string }; Querystring: { limit: number; cursor?: string; type?: BanType; value?: string; with_total?: string } }>('/apps/:app_id/bans', {
    schema: {
      operationId: 'listBans', tags, security: adminSecurity, summary: 'List bans', params: appParams,
      querystring: {
        type: 'object',
        properties: {
          ...pageQuery, ...withTotalQuery, type: { type: 'string', enum: BAN_TYPES },
          value: { type: 'string', maxLength: 256, description: 'Exactly this stored value (a user id, an address or range as the ban shows it)' },
        },
      },
      response: { 200: { ...ref('BanPage'), description: 'A page of bans' }, ...errors(401, 404, 422) },
    },
    handler: async (request) => {
      const q = request.query;
      const filter = { ...(q.type && { type: q.type }), ...(q.value !== undefined && { value: q.type === 'user' ? q.value.toLowerCase() : q.value }) };
      return listPage(await listBans(s, request.params.app_id, cursorOf(q.cursor), q.limit, filter, wantsTotal(q)));
    },
  });
  app.delete<{ Params: { app_id: string; ban_id: string } }>('/apps/:app_id/bans/:ban_id', {
    schema: {
      operationId: 'deleteBan', tags, security: adminSecurity, summary: 'Lift a ban (access is restored at once)',
      params: { type: 'object', required: ['app_id', 'ban_id'], properties: { app_id: uuid, ban_id: uuid } },
      response: { 204: { type: 'null', description: 'Deleted' }, ...errors(401, 403, 404, 422) },
    },
    handler: async (request, reply) => {
      await deleteBan(acting(s, request), request.params.app_id, request.params.ban_id, principalOf(request).role);
      return reply.code(204).send();
    },
  });
}
