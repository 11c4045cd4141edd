import type { FastifyInstance, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault, RouteShorthandOptionsWithHandler } from 'fastify';
import { Readable } from 'node:stream';
import { createLicenses, deleteLicense, deleteUnusedLicenses, exportLicensesCsv, getLicense, listLicenses, MAX_BATCH, type CreateLicensesInput } from '../../../domain/admin/licenses.js';
import { parseBoolean } from '../../../domain/admin/content.js';
import type { Services } from '../../../domain/services.js';
import { acting, adminSecurity, cursorOf, pageQuery } from '../../admin-plugin.js';
import { listPage, queryTime, wantsTotal, withTotalQuery } from '../../admin-lists.js';
import type { LicenseFilter } from '../../../domain/records.js';
import { documented, errors, ref, uuid } from '../../schemas.js';

/**
 * What src/domain/admin/licenses.ts requires beyond the shape: minutes unless lifetime or
 * revokes_lifetime_access is true, and never minutes with lifetime. Document-only: the domain
 * answers these with 422s naming body.minutes.
 */
const minutesRule = {
  allOf: [
    { anyOf: [{ required: ['minutes'] }, { required: ['template_id'] }, { required: ['lifetime'], properties: { lifetime: { const: true } } }, { required: ['revokes_lifetime_access'], properties: { revokes_lifetime_access: { const: true } } }] },
    { not: { required: ['minutes', 'lifetime'], properties: { minutes: {}, lifetime: { const: true } } } },
  ],
};

const appParams = { type: 'object', required: ['app_id'], properties: { app_id: uuid } } as const;
const licenseParams = { type: 'object', required: ['app_id', 'license_id'], properties: { app_id: uuid, license_id: uuid } } as const;
const tags = ['admin: licenses'];

type FilterQuery = { used?: string; q?: string; note?: string; created_from?: string; created_to?: string; template_id?: string };

/** The filters of the list, the export and the bulk delete: one definition, so they always agree. */
const filterQuery = {
  used: { type: 'string', enum: ['true', 'false'] },
  q: { type: 'string', maxLength: 128, description: 'Code or note contains it (any case)' },
  note: { type: 'string', maxLength: 1000, description: 'Note contains it (any case)' },
  created_from: { type: 'string', maxLength: 64, description: 'ISO 8601: created at or after' },
  created_to: { type: 'string', maxLength: 64, description: 'ISO 8601: created before' },
  template_id: { ...uuid, description: 'Made from this template' },
} as const;

function licenseFilter(query: FilterQuery): LicenseFilter {
  const filter: LicenseFilter = {};
  const used = parseBoolean('querystring.used', query.used);
  if (used !== undefined) filter.used = used;
  if (query.q) filter.search = query.q;
  if (query.note) filter.note = query.note;
  if (query.template_id) filter.templateId = query.template_id;
  const from = queryTime('querystring.created_from', query.created_from);
  const to = queryTime('querystring.created_to', query.created_to);
  if (from !== undefined) filter.createdFrom = from;
  if (to !== undefined) filter.createdTo = to;
  return filter;
}

type ExportRequest = { Params: { app_id: string }; Querystring: FilterQuery };

function exportRoute(s: Services, operationId: string): RouteShorthandOptionsWithHandler<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, ExportRequest> {
  return {
    schema: {
      operationId, tags, security: adminSecurity, summary: 'Every license matching the filters as CSV, streamed a page at a time', params: appParams,
      querystring: { type: 'object', properties: filterQuery },
      response: { 200: { description: 'CSV with a header row', content: { 'text/csv': { schema: { type: 'string' } } } }, ...errors(401, 404, 422) },
      documentedResponseHeaders: { 200: ['ContentDisposition'] },
    },
    handler: async (request, reply) => {
      const lines = exportLicensesCsv(s, request.params.app_id, licenseFilter(request.query));
      const first = await lines.next(); // surfaces a 404 before the 200 header is sent
      // Pulled as the socket drains (one page of 500 rows read ahead, not Readable.from's default 16), whatever the count.
      const stream = Readable.from((async function* () {
        if (!first.done) yield first.value;
        yield* lines;
      })(), { highWaterMark: 1 });
      return reply
        .type('text/csv; charset=utf-8')
        .header('content-disposition', `attachment; filename="licenses-${request.params.app_id}.csv"`)
        .send(stream);
    },
  };
}

export function licenseRoutes(app: FastifyInstance, s: Services): void {
  app.post<{ Params: { app_id: string }; Body: CreateLicensesInput }>('/apps/:app_id/licenses', {
    bodyLimit: 64 * 1024,
    schema: {
      operationId: 'createLicenses', tags, security: adminSecurity, summary: 'Create a batch of licenses in one transaction', params: appParams,
      body: documented({
        type: 'object', required: ['count'], additionalProperties: false,
        properties: {
          count: { type: 'integer', minimum: 1, maximum: MAX_BATCH },
          minutes: { type: 'integer', minimum: 1, maximum: 1_000_000_000 },
          lifetime: { type: 'boolean' },
          revokes_lifetime_access: { type: 'boolean' },
          mask: documented(
            { type: 'string', minLength: 1, description: 'X = one random symbol of ABCDEFGHJKLMNPQRSTUVWXYZ23456789; anything else literal; at least 13 X (64 random bits)' },
            { maxLength: 128, pattern: '(X[^X]*){13}' },
          ),
          note: { type: 'string', maxLength: 1000 },
          expires_at: documented({ type: 'string', description: 'ISO 8601 with a zone: the code cannot be redeemed after this time (default with a template: its redeem window)' }, { format: 'date-time' }),
          template_id: { ...uuid, description: 'Make the licenses from this template (its duration, entitlements, limits, redeem window); then no minutes or lifetime' },
        },
      }, minutesRule),
      response: { 201: { ...ref('LicenseBatch'), description: 'Created' }, ...errors(401, 404, 413, 422) },
    },
    handler: async (request, reply) => reply.code(201).send({ licenses: await createLicenses(acting(s, request), request.params.app_id, request.body) }),
  });

  app.get<{ Params: { app_id: string }; Querystring: { limit: number; cursor?: string; with_total?: string } & FilterQuery }>('/apps/:app_id/licenses', {
    schema: {
      operationId: 'listLicenses', tags, security: adminSecurity, summary: 'List licenses (filter by used, note, creation time; search code or note)', params: appParams,
      querystring: { type: 'object', properties: { ...pageQuery, ...withTotalQuery, ...filterQuery } },
      response: { 200: { ...ref('LicensePage'), description: 'A page of licenses' }, ...errors(401, 404, 422) },
    },
    handler: async (request) => {
      const { cursor, limit } = request.query;
      return listPage(await listLicenses(s, request.params.app_id, licenseFilter(request.query), cursorOf(cursor), limit, wantsTotal(request.query)));
    },
  });

  // The export under two names: /export (the CLI's, since the first admin API) and /export.csv (the dashboard contract's).
  app.get<ExportRequest>('/apps/:app_id/licenses/export', exportRoute(s, 'exportLicenses'));
  app.get<ExportRequest>('/apps/:app_id/licenses/export.csv', exportRoute(s, 'exportLicensesCsv'));

  app.post<{ Params: { app_id: string }; Body: { note?: string; created_from?: string; created_to?: string } }>('/apps/:app_id/licenses/delete_unused', {
    bodyLimit: 16 * 1024,
    // No body at all means no filter, as {} does (curl -X POST without -d).
    preValidation: async (request) => {
      request.body ??= {};
    },
    schema: {
      operationId: 'deleteUnusedLicenses', tags, security: adminSecurity,
      summary: 'Delete every unused license matching the filters (all unused ones without any); used ones stay', params: appParams,
      body: {
        type: 'object', additionalProperties: false,
        properties: { note: filterQuery.note, created_from: filterQuery.created_from, created_to: filterQuery.created_to },
      },
      response: { 200: { ...ref('DeletedLicenses'), description: 'How many were deleted' }, ...errors(401, 404, 413, 422) },
    },
    handler: async (request) => {
      const b = request.body ?? {};
      const from = queryTime('body.created_from', b.created_from);
      const to = queryTime('body.created_to', b.created_to);
      return deleteUnusedLicenses(acting(s, request), request.params.app_id, {
        ...(b.note && { note: b.note }), ...(from !== undefined && { createdFrom: from }), ...(to !== undefined && { createdTo: to }),
      });
    },
  });

  app.get<{ Params: { app_id: string; license_id: string } }>('/apps/:app_id/licenses/:license_id', {
    schema: { operationId: 'getLicense', tags, security: adminSecurity, summary: 'Get a license (who redeemed it and when)', params: licenseParams, response: { 200: { ...ref('License'), description: 'The license' }, ...errors(401, 404, 422) } },
    handler: async (request) => getLicense(s, request.params.app_id, request.params.license_id),
  });

  app.delete<{ Params: { app_id: string; license_id: string } }>('/apps/:app_id/licenses/:license_id', {
    schema: {
      operationId: 'deleteLicense', tags, security: adminSecurity, summary: 'Delete an unused license', params: licenseParams,
      response: { 204: { type: 'null', description: 'Deleted' }, ...errors(401, 404, 409, 422) },
    },
    handler: async (request, reply) => {
      await deleteLicense(acting(s, request), request.params.app_id, request.params.license_id);
      return reply.code(204).send();
    },
  });
}
