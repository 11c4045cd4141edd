import type { FastifyInstance } from 'fastify';
import { appStats, type Bucket } from '../../../domain/admin/stats.js';
import type { Services } from '../../../domain/services.js';
import { queryTime } from '../../admin-lists.js';
import { adminSecurity } from '../../admin-plugin.js';
import { errors, ref, uuid } from '../../schemas.js';

export function statsRoutes(app: FastifyInstance, s: Services): void {
  app.get<{ Params: { app_id: string }; Querystring: { bucket: Bucket; from?: string; to?: string } }>('/apps/:app_id/stats', {
    schema: {
      operationId: 'getAppStats', tags: ['admin: stats'], security: adminSecurity,
      summary: 'Sign-ups, logins, activations and failed logins per hour or day; active memberships, licenses used and unused, top ban hits',
      params: { type: 'object', required: ['app_id'], properties: { app_id: uuid } },
      querystring: {
        type: 'object',
        properties: {
          bucket: { type: 'string', enum: ['hour', 'day'], default: 'hour' },
          from: { type: 'string', maxLength: 64, description: 'ISO 8601, rounded down to the bucket; default: 24 hours or 30 days before to' },
          to: { type: 'string', maxLength: 64, description: 'ISO 8601, exclusive, rounded up to the bucket; default: the end of the current bucket' },
        },
      },
      response: { 200: { ...ref('ActivityStats'), description: 'The series and the counts' }, ...errors(401, 404, 422) },
    },
    handler: async (request) => {
      const q = request.query;
      const from = queryTime('querystring.from', q.from);
      const to = queryTime('querystring.to', q.to);
      return appStats(s, request.params.app_id, { bucket: q.bucket, ...(from !== undefined && { from }), ...(to !== undefined && { to }) });
    },
  });
}
