import type { FastifyInstance } from 'fastify';
import { listAudit } from '../../../domain/admin/audit.js';
import { createAdminToken, listAdminTokens, revokeAdminToken } from '../../../domain/admin/tokens.js';
import { validationError } from '../../../domain/errors.js';
import type { AuditFilter } from '../../../domain/records.js';
import type { Services } from '../../../domain/services.js';
import { acting, adminSecurity, cursorOf, pageQuery, principalOf } from '../../admin-plugin.js';
import { ROLES, type Role } from '../../../domain/admin/roles.js';
import { listPage, queryTime, wantsTotal, withTotalQuery } from '../../admin-lists.js';
import { NAME_RULE } from '../../admin-schemas.js';
import { errors, ref, text, uuid } from '../../schemas.js';

type AuditQuery = {
  limit: number; cursor?: string; with_total?: string; app_id?: string; target_id?: string; action?: string; actor?: string;
  since?: string; until?: string; from?: string; to?: string;
};

/** `from`/`to` are the dashboard's names for `since`/`until`; one of each pair, not both. */
function auditFilter(q: AuditQuery): AuditFilter {
  if (q.from !== undefined && q.since !== undefined) throw validationError('querystring.from', 'cannot be combined with since (the same bound)');
  if (q.to !== undefined && q.until !== undefined) throw validationError('querystring.to', 'cannot be combined with until (the same bound)');
  const since = q.from !== undefined ? queryTime('querystring.from', q.from) : queryTime('querystring.since', q.since);
  const until = q.to !== undefined ? queryTime('querystring.to', q.to) : queryTime('querystring.until', q.until);
  return {
    ...(q.app_id && { appId: q.app_id }), ...(q.target_id && { targetId: q.target_id }), ...(q.action && { action: q.action }), ...(q.actor && { actor: q.actor }),
    ...(since !== undefined && { since }), ...(until !== undefined && { until }),
  };
}

/** Admin tokens and the audit log: the operators' own records. */
export function operatorRoutes(app: FastifyInstance, s: Services): void {
  app.post<{ Body: { name: string; role?: Role } }>('/tokens', {
    schema: {
      operationId: 'createAdminToken', tags: ['admin: tokens'], security: adminSecurity, summary: 'Create a named admin token (shown only here)',
      body: {
        type: 'object', required: ['name'], additionalProperties: false,
        properties: {
          name: text(NAME_RULE, 'Who or what uses the token'),
          role: { type: 'string', enum: ROLES, description: 'What the token may do; default and at most the creator’s own role' },
        },
      },
      response: { 201: { ...ref('AdminTokenWithSecret'), description: 'Created' }, ...errors(401, 403, 413, 422) },
    },
    handler: async (request, reply) => {
      const principal = principalOf(request);
      return reply.code(201).send(await createAdminToken(acting(s, request), request.body.name, {
        role: request.body.role, actorRole: principal.role, minter: principal.operator, via: principal.kind,
      }));
    },
  });
  app.get<{ Querystring: { limit: number; cursor?: string; with_total?: string } }>('/tokens', {
    schema: {
      operationId: 'listAdminTokens', tags: ['admin: tokens'], security: adminSecurity, summary: 'List admin tokens (never the tokens themselves)',
      querystring: { type: 'object', properties: { ...pageQuery, ...withTotalQuery } },
      response: { 200: { ...ref('AdminTokenPage'), description: 'A page of admin tokens' }, ...errors(401, 422) },
    },
    handler: async (request) => listPage(await listAdminTokens(s, cursorOf(request.query.cursor), request.query.limit, wantsTotal(request.query))),
  });
  app.delete<{ Params: { token_id: string } }>('/tokens/:token_id', {
    schema: {
      operationId: 'revokeAdminToken', tags: ['admin: tokens'], security: adminSecurity, summary: 'Revoke an admin token (effective at once)',
      params: { type: 'object', required: ['token_id'], properties: { token_id: uuid } },
      response: { 204: { type: 'null', description: 'Revoked' }, ...errors(401, 403, 404, 422) },
    },
    handler: async (request, reply) => {
      await revokeAdminToken(acting(s, request), request.params.token_id, principalOf(request).role);
      return reply.code(204).send();
    },
  });

  app.get<{ Querystring: AuditQuery }>('/audit', {
    schema: {
      operationId: 'listAuditEvents', tags: ['admin: audit'], security: adminSecurity, summary: 'The audit log of admin writes, newest first',
      querystring: {
        type: 'object',
        properties: {
          ...pageQuery, ...withTotalQuery, app_id: uuid, target_id: { type: 'string', maxLength: 200 }, action: { type: 'string', maxLength: 64 },
          actor: { type: 'string', maxLength: 200, description: 'The actor starts with it, any case (operator:alice, token:ci)' },
          since: { type: 'string', maxLength: 64, description: 'ISO 8601, inclusive' }, until: { type: 'string', maxLength: 64, description: 'ISO 8601, exclusive' },
          from: { type: 'string', maxLength: 64, description: 'ISO 8601, inclusive (the same as since)' }, to: { type: 'string', maxLength: 64, description: 'ISO 8601, exclusive (the same as until)' },
        },
      },
      response: { 200: { ...ref('AuditEventPage'), description: 'A page of audit events' }, ...errors(401, 422) },
    },
    handler: async (request) => listPage(await listAudit(s, auditFilter(request.query), cursorOf(request.query.cursor), request.query.limit, wantsTotal(request.query))),
  });
}
