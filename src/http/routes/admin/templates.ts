import type { FastifyInstance } from 'fastify';
import { grantEntitlement, listTrials, resetTrial, revokeEntitlement } from '../../../domain/admin/entitlements.js';
import { applyTemplate, createTemplate, deleteTemplate, getTemplate, listTemplates, updateTemplate, type TemplateInput } from '../../../domain/admin/templates.js';
import type { Services } from '../../../domain/services.js';
import type { TrialStatus } from '../../../domain/records.js';
import { acting, adminSecurity, cursorOf, page, pageQuery } from '../../admin-plugin.js';
import { listPage, wantsTotal, withTotalQuery } from '../../admin-lists.js';
import { templateFields } from '../../admin-schemas.js';
import { errors, hardwareId, ref, uuid } from '../../schemas.js';

const appParams = { type: 'object', required: ['app_id'], properties: { app_id: uuid } } as const;
const templateParams = { type: 'object', required: ['app_id', 'template_id'], properties: { app_id: uuid, template_id: uuid } } as const;
type TemplateParams = { app_id: string; template_id: string };

/** License templates (issue 24): CRUD and the explicit, audited apply-to-existing action. */
export function templateRoutes(app: FastifyInstance, s: Services): void {
  const tags = ['admin: templates'];
  app.post<{ Params: { app_id: string }; Body: TemplateInput }>('/apps/:app_id/templates', {
    schema: {
      operationId: 'createTemplate', tags, security: adminSecurity, summary: 'Create a license template (minutes or lifetime, entitlements, limits, redeem window)', params: appParams,
      body: { type: 'object', required: ['name'], additionalProperties: false, properties: templateFields },
      response: { 201: { ...ref('Template'), description: 'Created' }, ...errors(401, 404, 409, 413, 422) },
    },
    handler: async (request, reply) => reply.code(201).send(await createTemplate(acting(s, request), request.params.app_id, request.body)),
  });

  app.get<{ Params: { app_id: string }; Querystring: { limit: number; cursor?: string } }>('/apps/:app_id/templates', {
    schema: {
      operationId: 'listTemplates', tags, security: adminSecurity, summary: 'List license templates, oldest first', params: appParams,
      querystring: { type: 'object', properties: pageQuery }, response: { 200: { ...ref('TemplatePage'), description: 'A page of templates' }, ...errors(401, 404, 422) },
    },
    handler: async (request) => page(await listTemplates(s, request.params.app_id, cursorOf(request.query.cursor), request.query.limit)),
  });

  app.get<{ Params: TemplateParams }>('/apps/:app_id/templates/:template_id', {
    schema: { operationId: 'getTemplate', tags, security: adminSecurity, summary: 'Get a license template', params: templateParams, response: { 200: { ...ref('Template'), description: 'The template' }, ...errors(401, 404, 422) } },
    handler: async (request) => getTemplate(s, request.params.app_id, request.params.template_id),
  });

  app.patch<{ Params: TemplateParams; Body: TemplateInput }>('/apps/:app_id/templates/:template_id', {
    schema: {
      operationId: 'updateTemplate', tags, security: adminSecurity, summary: 'Change a template: future licenses only (see apply)', params: templateParams,
      body: { type: 'object', additionalProperties: false, minProperties: 1, properties: templateFields },
      response: { 200: { ...ref('Template'), description: 'The template as changed' }, ...errors(401, 404, 409, 413, 422) },
    },
    handler: async (request) => updateTemplate(acting(s, request), request.params.app_id, request.params.template_id, request.body),
  });

  app.post<{ Params: TemplateParams }>('/apps/:app_id/templates/:template_id/apply', {
    schema: {
      operationId: 'applyTemplate', tags, security: adminSecurity, params: templateParams,
      summary: 'Copy the template’s current effects onto the licenses made from it (unused: all; used: entitlements and limits)',
      response: { 200: { ...ref('TemplateApplied'), description: 'What changed' }, ...errors(401, 404, 422) },
    },
    handler: async (request) => applyTemplate(acting(s, request), request.params.app_id, request.params.template_id),
  });

  app.delete<{ Params: TemplateParams }>('/apps/:app_id/templates/:template_id', {
    schema: {
      operationId: 'deleteTemplate', tags, security: adminSecurity, summary: 'Delete a template (its licenses keep what they copied)', params: templateParams,
      description: 'Refused with 409 while a store product mapping sells the template (docs/integrations.md).',
      response: { 204: { type: 'null', description: 'Deleted' }, ...errors(401, 404, 409, 422) },
    },
    handler: async (request, reply) => {
      await deleteTemplate(acting(s, request), request.params.app_id, request.params.template_id);
      return reply.code(204).send();
    },
  });
}

const userParams = { type: 'object', required: ['app_id', 'user_id'], properties: { app_id: uuid, user_id: uuid } } as const;

/** The operator's direct grants on a user, and the trials of an app. */
export function entitlementRoutes(app: FastifyInstance, s: Services): void {
  app.post<{ Params: { app_id: string; user_id: string }; Body: { code: string; until?: string | null } }>('/apps/:app_id/users/:user_id/entitlements', {
    schema: {
      operationId: 'grantEntitlement', tags: ['admin: users'], security: adminSecurity, summary: 'Grant an entitlement to the user, until a time or for good', params: userParams,
      body: {
        type: 'object', required: ['code'], additionalProperties: false,
        properties: { code: { type: 'string', maxLength: 64, description: '^[a-z0-9][a-z0-9._-]{0,63}$' }, until: { type: ['string', 'null'], description: 'ISO 8601; absent or null: never ends' } },
      },
      response: { 201: { ...ref('EntitlementGrant'), description: 'Granted' }, ...errors(401, 404, 413, 422) },
    },
    handler: async (request, reply) => reply.code(201).send(await grantEntitlement(acting(s, request), request.params.app_id, request.params.user_id, request.body)),
  });

  app.delete<{ Params: { app_id: string; user_id: string; code: string } }>('/apps/:app_id/users/:user_id/entitlements/:code', {
    schema: {
      operationId: 'revokeEntitlement', tags: ['admin: users'], security: adminSecurity, summary: 'End every live grant of this code the user holds (license, trial or operator)',
      params: { type: 'object', required: ['app_id', 'user_id', 'code'], properties: { app_id: uuid, user_id: uuid, code: { type: 'string', maxLength: 64 } } },
      response: { 200: { ...ref('EntitlementRevoked'), description: 'How many grants ended' }, ...errors(401, 404, 422) },
    },
    handler: async (request) => revokeEntitlement(acting(s, request), request.params.app_id, request.params.user_id, request.params.code),
  });

  const tags = ['admin: trials'];
  app.get<{ Params: { app_id: string }; Querystring: { limit: number; cursor?: string; with_total?: string; status?: TrialStatus; hardware_id?: string; user_id?: string } }>('/apps/:app_id/trials', {
    schema: {
      operationId: 'listTrials', tags, security: adminSecurity, summary: 'List trials, oldest first (filter by status, device or user)', params: appParams,
      querystring: {
        type: 'object',
        properties: {
          ...pageQuery, ...withTotalQuery,
          status: { type: 'string', enum: ['running', 'ended', 'converted'] },
          hardware_id: { ...hardwareId, description: 'The hardware id a client sends: hashed, then compared' },
          user_id: uuid,
        },
      },
      response: { 200: { ...ref('TrialPage'), description: 'A page of trials' }, ...errors(401, 404, 422) },
    },
    handler: async (request) => {
      const q = request.query;
      const filter = { ...(q.status && { status: q.status }), ...(q.hardware_id !== undefined && { hardwareId: q.hardware_id }), ...(q.user_id && { userId: q.user_id }) };
      return listPage(await listTrials(s, request.params.app_id, filter, cursorOf(q.cursor), q.limit, wantsTotal(q)));
    },
  });

  app.delete<{ Params: { app_id: string; trial_id: string } }>('/apps/:app_id/trials/:trial_id', {
    schema: {
      operationId: 'resetTrial', tags, security: adminSecurity, summary: 'Reset a device’s trial: the device (and its email) may start a new one',
      params: { type: 'object', required: ['app_id', 'trial_id'], properties: { app_id: uuid, trial_id: uuid } },
      response: { 204: { type: 'null', description: 'Reset' }, ...errors(401, 404, 422) },
    },
    handler: async (request, reply) => {
      await resetTrial(acting(s, request), request.params.app_id, request.params.trial_id);
      return reply.code(204).send();
    },
  });
}
