import type { FastifyInstance } from 'fastify';
import { listAudit } from '../../../domain/admin/audit.js';
import { createAdminToken, listAdminTokens, revokeAdminToken } from '../../../domain/admin/tokens.js';
import { validationError } from '../../../domain/errors.js';
import { parseTimestamp } from '../../../domain/validation.js';
import type { Services } from '../../../domain/services.js';
import { acting, adminSecurity, cursorOf, page, pageQuery, pageSchema } from '../../admin-plugin.js';
import { errors, timestamp, uuid } from '../../schemas.js';

const nullableTimestamp = { type: ['string', 'null'], format: 'date-time' } as const;
const tokenSchema = {
  type: 'object', required: ['id', 'name', 'created_at', 'last_used_at', 'revoked_at'],
  properties: { id: uuid, name: { type: 'string' }, created_at: timestamp, last_used_at: nullableTimestamp, revoked_at: nullableTimestamp },
} as const;
const auditSchema = {
  type: 'object', required: ['id', 'at', 'actor', 'action', 'app_id', 'target_id', 'details'],
  properties: {
    id: uuid, at: timestamp, actor: { type: 'string' }, action: { type: 'string' }, app_id: { type: ['string', 'null'] },
    target_id: { type: ['string', 'null'] }, details: { type: 'object', additionalProperties: true },
  },
} as const;

function time(field: string, raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const ms = parseTimestamp(raw);
  if (ms === null) throw validationError(field, 'must be an ISO 8601 timestamp such as 2027-03-05T12:00:00Z');
  return ms;
}

/** Admin tokens and the audit log: the operators' own records. */
export function operatorRoutes(app: FastifyInstance, s: Services): void {
  app.post<{ Body: { name: string } }>('/tokens', {
    schema: {
      tags: ['admin: tokens'], security: adminSecurity, summary: 'Create a named admin token (shown only here)',
      body: { type: 'object', required: ['name'], additionalProperties: false, properties: { name: { type: 'string' } } },
      response: { 201: { ...tokenSchema, required: [...tokenSchema.required, 'token'], properties: { ...tokenSchema.properties, token: { type: 'string' } } }, ...errors(401, 422) },
    },
    handler: async (request, reply) => reply.code(201).send(await createAdminToken(acting(s, request), request.body.name)),
  });
  app.get<{ Querystring: { limit: number; cursor?: string } }>('/tokens', {
    schema: {
      tags: ['admin: tokens'], security: adminSecurity, summary: 'List admin tokens (never the tokens themselves)',
      querystring: { type: 'object', properties: pageQuery },
      response: { 200: pageSchema(tokenSchema), ...errors(401, 422) },
    },
    handler: async (request) => page(await listAdminTokens(s, cursorOf(request.query.cursor), request.query.limit)),
  });
  app.delete<{ Params: { token_id: string } }>('/tokens/:token_id', {
    schema: {
      tags: ['admin: tokens'], security: adminSecurity, summary: 'Revoke an admin token (effective at once)',
      params: { type: 'object', required: ['token_id'], properties: { token_id: uuid } },
      response: { 204: { type: 'null', description: 'Revoked' }, ...errors(401, 404, 422) },
    },
    handler: async (request, reply) => {
      await revokeAdminToken(acting(s, request), request.params.token_id);
      return reply.code(204).send();
    },
  });

  app.get<{ Querystring: { limit: number; cursor?: string; app_id?: string; target_id?: string; action?: string; since?: string; until?: string } }>('/audit', {
    schema: {
      tags: ['admin: audit'], security: adminSecurity, summary: 'The audit log of admin writes, newest first',
      querystring: {
        type: 'object',
        properties: {
          ...pageQuery, app_id: uuid, target_id: { type: 'string', maxLength: 200 }, action: { type: 'string', maxLength: 64 },
          since: { type: 'string', description: 'ISO 8601, inclusive' }, until: { type: 'string', description: 'ISO 8601, exclusive' },
        },
      },
      response: { 200: pageSchema(auditSchema), ...errors(401, 422) },
    },
    handler: async (request) => {
      const q = request.query;
      const filter = {
        ...(q.app_id && { appId: q.app_id }), ...(q.target_id && { targetId: q.target_id }), ...(q.action && { action: q.action }),
        ...(q.since !== undefined && { since: time('querystring.since', q.since)! }), ...(q.until !== undefined && { until: time('querystring.until', q.until)! }),
      };
      return page(await listAudit(s, filter, cursorOf(q.cursor), q.limit));
    },
  });
}
