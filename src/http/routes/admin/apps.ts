import type { FastifyInstance } from 'fastify';
import { createApp, deleteApp, getApp, listApps, rotateSecret, updateApp, viewApp, type AppSettingsInput } from '../../../domain/admin/apps.js';
import type { Services } from '../../../domain/services.js';
import { acting, adminSecurity, cursorOf, page, pageQuery } from '../../admin-plugin.js';
import { appSettings, NAME_RULE } from '../../admin-schemas.js';
import { documented, errors, ref, text, uuid } from '../../schemas.js';

const settings = appSettings;
const name = text(NAME_RULE, 'The application name');

const appParams = { type: 'object', required: ['app_id'], properties: { app_id: uuid } } as const;
const tags = ['admin: apps'];

export function appRoutes(app: FastifyInstance, s: Services): void {
  app.post<{ Body: AppSettingsInput & { name: string } }>('/apps', {
    schema: {
      operationId: 'createApp', tags, security: adminSecurity, summary: 'Create an application (the API secret is shown only here)',
      body: { type: 'object', required: ['name'], additionalProperties: false, properties: { name, ...settings } },
      response: { 201: { ...ref('AppWithSecret'), description: 'Created' }, ...errors(401, 413, 422) },
    },
    handler: async (request, reply) => reply.code(201).send(await createApp(acting(s, request), request.body)),
  });

  app.get<{ Querystring: { limit: number; cursor?: string } }>('/apps', {
    schema: { operationId: 'listApps', tags, security: adminSecurity, summary: 'List applications', querystring: { type: 'object', properties: pageQuery }, response: { 200: { ...ref('AppPage'), description: 'A page of applications' }, ...errors(401, 422) } },
    handler: async (request) => page(await listApps(s, cursorOf(request.query.cursor), request.query.limit)),
  });

  app.get<{ Params: { app_id: string } }>('/apps/:app_id', {
    schema: { operationId: 'getApp', tags, security: adminSecurity, summary: 'Get an application', params: appParams, response: { 200: { ...ref('App'), description: 'The application' }, ...errors(401, 404, 422) } },
    handler: async (request) => viewApp(await getApp(s, request.params.app_id)),
  });

  app.patch<{ Params: { app_id: string }; Body: AppSettingsInput }>('/apps/:app_id', {
    schema: {
      operationId: 'updateApp', tags, security: adminSecurity, summary: 'Change an application’s name or settings', params: appParams,
      body: { type: 'object', additionalProperties: false, properties: { name, ...settings } },
      response: { 200: { ...ref('App'), description: 'The application as changed' }, ...errors(401, 404, 413, 422) },
    },
    handler: async (request) => updateApp(acting(s, request), request.params.app_id, request.body),
  });

  app.delete<{ Params: { app_id: string }; Querystring: { confirm?: string } }>('/apps/:app_id', {
    schema: {
      operationId: 'deleteApp', tags, security: adminSecurity, summary: 'Delete an application and everything it owns (confirm with its name)', params: appParams,
      // Required in the document; the domain answers its absence with a 422 naming querystring.confirm.
      querystring: documented({ type: 'object', properties: { confirm: { type: 'string', description: 'The application name, repeated to confirm' } } }, { required: ['confirm'] }),
      response: { 204: { type: 'null', description: 'Deleted' }, ...errors(401, 404, 422) },
    },
    handler: async (request, reply) => {
      await deleteApp(acting(s, request), request.params.app_id, request.query.confirm);
      return reply.code(204).send();
    },
  });

  app.post<{ Params: { app_id: string } }>('/apps/:app_id/secret', {
    schema: {
      operationId: 'rotateAppSecret', tags, security: adminSecurity, summary: 'Rotate the API secret (the old one stops working at once)', params: appParams,
      response: { 200: { ...ref('AppSecret'), description: 'The new secret' }, ...errors(401, 404, 422) },
    },
    handler: async (request) => rotateSecret(acting(s, request), request.params.app_id),
  });
}
