import type { FastifyInstance } from 'fastify';
import { listAudit } from '../../../domain/admin/audit.js';
import { createAdminToken, listAdminTokens, revokeAdminToken } from '../../../domain/admin/tokens.js';
import { validationError } from '../../../domain/errors.js';
import { parseTimestamp } from '../../../domain/validation.js';
import type { Services } from '../../../domain/services.js';
import { acting, adminSecurity, cursorOf, page, pageQuery } from '../../admin-plugin.js';
import { NAME_RULE } from '../../admin-schemas.js';
import { errors, ref, text, uuid } from '../../schemas.js';

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
      operationId: 'createAdminToken', tags: ['admin: tokens'], security: adminSecurity, summary: 'Create a named admin token (shown only here)',
      body: { type: 'object', required: ['name'], additionalProperties: false, properties: { name: text(NAME_RULE, 'Who or what uses the token') } },
      response: { 201: { ...ref('AdminTokenWithSecret'), description: 'Created' }, ...errors(401, 413, 422) },
    },
    handler: async (request, reply) => reply.code(201).send(await createAdminToken(acting(s, request), request.body.name)),
  });
  app.get<{ Querystring: { limit: number; cursor?: string } }>('/tokens', {
    schema: {
      operationId: 'listAdminTokens', tags: ['admin: tokens'], security: adminSecurity, summary: 'List admin tokens (never the tokens themselves)',
      querystring: { type: 'object', properties: pageQuery },
      response: { 200: { ...ref('AdminTokenPage'), description: 'A page of admin tokens' }, ...errors(401, 422) },
    },
    handler: async (request) => page(await listAdminTokens(s, cursorOf(request.query.cursor), request.query.limit)),
  });
  app.delete<{ Params: { token_id: string } }>('/tokens/:token_id', {
    schema: {
      operationId: 'revokeAdminToken', tags: ['admin: tokens'], security: adminSecurity, summary: 'Revoke an admin token (effective at once)',
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
      operationId: 'listAuditEvents', tags: ['admin: audit'], security: adminSecurity, summary: 'The audit log of admin writes, newest first',
      querystring: {
        type: 'object',
        properties: {
          ...pageQuery, app_id: uuid, target_id: { type: 'string', maxLength: 200 }, action: { type: 'string', maxLength: 64 },
          since: { type: 'string', description: 'ISO 8601, inclusive' }, until: { type: 'string', description: 'ISO 8601, exclusive' },
        },
      },
      response: { 200: { ...ref('AuditEventPage'), description: 'A page of audit events' }, ...errors(401, 422) },
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
