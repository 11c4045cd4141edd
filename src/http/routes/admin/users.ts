import type { FastifyInstance } from 'fastify';
import { deleteUser, listUsers, patchUser, resetDevices, revokeSessions, userDetail, type UserPatch } from '../../../domain/admin/users.js';
import { parseBoolean } from '../../../domain/admin/content.js';
import type { Services } from '../../../domain/services.js';
import { acting, adminSecurity, cursorOf, pageQuery } from '../../admin-plugin.js';
import { listPage, wantsTotal, withTotalQuery } from '../../admin-lists.js';
import { errors, password, ref, uuid } from '../../schemas.js';

const userParams = { type: 'object', required: ['app_id', 'user_id'], properties: { app_id: uuid, user_id: uuid } } as const;
const tags = ['admin: users'];
type Params = { app_id: string; user_id: string };

export function userRoutes(app: FastifyInstance, s: Services): void {
  app.get<{ Params: { app_id: string }; Querystring: { limit: number; cursor?: string; q?: string; with_total?: string; entitlement?: string; trial?: string } }>('/apps/:app_id/users', {
    schema: {
      operationId: 'listUsers', tags, security: adminSecurity, summary: 'Search and page through users (q matches username or id)',
      params: { type: 'object', required: ['app_id'], properties: { app_id: uuid } },
      querystring: {
        type: 'object',
        properties: {
          ...pageQuery, ...withTotalQuery, q: { type: 'string', maxLength: 128, description: 'Username contains it (compared as usernames are: any case, NFKC), or the user id' },
          entitlement: { type: 'string', maxLength: 64, description: 'Only users holding this entitlement now' },
          trial: { type: 'string', enum: ['true', 'false'], description: 'true: only users on a running trial; false: only the others' },
        },
      },
      response: { 200: { ...ref('UserSummaryPage'), description: 'A page of users' }, ...errors(401, 404, 422) },
    },
    handler: async (request) => {
      const q = request.query;
      const trial = parseBoolean('querystring.trial', q.trial);
      const only = { ...(q.entitlement !== undefined && { entitlement: q.entitlement }), ...(trial !== undefined && { trial }) };
      return listPage(await listUsers(s, request.params.app_id, q.q || null, cursorOf(q.cursor), q.limit, wantsTotal(q), only));
    },
  });

  app.get<{ Params: Params }>('/apps/:app_id/users/:user_id', {
    schema: { operationId: 'getUser', tags, security: adminSecurity, summary: 'A user with membership, devices, IP history, activations and live sessions', params: userParams, response: { 200: { ...ref('UserDetail'), description: 'The user' }, ...errors(401, 404, 422) } },
    handler: async (request) => userDetail(s, request.params.app_id, request.params.user_id),
  });

  app.patch<{ Params: Params; Body: UserPatch }>('/apps/:app_id/users/:user_id', {
    schema: {
      operationId: 'updateUser', tags, security: adminSecurity, summary: 'Extend by minutes, grant or revoke lifetime, set the expiry or the password', params: userParams,
      body: {
        type: 'object', additionalProperties: false, minProperties: 1,
        properties: {
          extend_minutes: { type: 'integer', minimum: 1, maximum: 1_000_000_000 },
          lifetime: { type: 'boolean', description: 'true grants lifetime access, false revokes it' },
          active_until: { type: ['string', 'null'], description: 'Set the expiry outright (ISO 8601), or null' },
          password: password('At least the application’s password_min_length characters.'),
        },
      },
      response: { 200: { ...ref('UserSummary'), description: 'The user as changed' }, ...errors(401, 404, 413, 422) },
    },
    handler: async (request) => patchUser(acting(s, request), request.params.app_id, request.params.user_id, request.body),
  });

  app.post<{ Params: Params }>('/apps/:app_id/users/:user_id/reset-devices', {
    schema: { operationId: 'resetUserDevices', tags, security: adminSecurity, summary: 'Forget the user’s devices (and end their sessions)',
      description: 'Also frees every seat of the user at once, those offline leases hold included (the user’s own reset keeps those until the lease ends).',
      params: userParams, response: { 204: { type: 'null', description: 'Done' }, ...errors(401, 404, 422) } },
    handler: async (request, reply) => {
      await resetDevices(acting(s, request), request.params.app_id, request.params.user_id);
      return reply.code(204).send();
    },
  });

  app.post<{ Params: Params }>('/apps/:app_id/users/:user_id/revoke-sessions', {
    schema: {
      operationId: 'revokeUserSessions', tags, security: adminSecurity, summary: 'End every session of the user', params: userParams,
      response: { 200: { ...ref('RevokedSessions'), description: 'How many sessions ended' }, ...errors(401, 404, 422) },
    },
    handler: async (request) => revokeSessions(acting(s, request), request.params.app_id, request.params.user_id),
  });

  app.delete<{ Params: Params }>('/apps/:app_id/users/:user_id', {
    schema: { operationId: 'deleteUser', tags, security: adminSecurity, summary: 'Delete the user and everything that is theirs', params: userParams, response: { 204: { type: 'null', description: 'Deleted' }, ...errors(401, 404, 422) } },
    handler: async (request, reply) => {
      await deleteUser(acting(s, request), request.params.app_id, request.params.user_id);
      return reply.code(204).send();
    },
  });
}
