import type { FastifyInstance } from 'fastify';
import { listAppSeats, listUserSeats, releaseSeatById } from '../../../domain/admin/seats.js';
import type { Services } from '../../../domain/services.js';
import { acting, adminSecurity } from '../../admin-plugin.js';
import { errors, ref, uuid } from '../../schemas.js';

const tags = ['admin: seats'];

/** Live floating seats per app and per user, and releasing one (issue 25). */
export function seatAdminRoutes(app: FastifyInstance, s: Services): void {
  app.get<{ Params: { app_id: string }; Querystring: { limit: number } }>('/apps/:app_id/seats', {
    schema: {
      operationId: 'listSeats', tags, security: adminSecurity, summary: 'Live seats of the app, soonest to end first, and their count',
      params: { type: 'object', required: ['app_id'], properties: { app_id: uuid } },
      querystring: { type: 'object', properties: { limit: { type: 'integer', minimum: 1, maximum: 1000, default: 100 } } },
      response: { 200: { ...ref('SeatList'), description: 'Live seats' }, ...errors(401, 404, 422) },
    },
    handler: async (request) => listAppSeats(s, request.params.app_id, request.query.limit),
  });

  app.get<{ Params: { app_id: string; user_id: string } }>('/apps/:app_id/users/:user_id/seats', {
    schema: {
      operationId: 'listUserSeats', tags, security: adminSecurity, summary: 'Live seats of one user',
      params: { type: 'object', required: ['app_id', 'user_id'], properties: { app_id: uuid, user_id: uuid } },
      response: { 200: { ...ref('SeatList'), description: 'Live seats' }, ...errors(401, 404, 422) },
    },
    handler: async (request) => listUserSeats(s, request.params.app_id, request.params.user_id),
  });

  app.delete<{ Params: { app_id: string; seat_id: string } }>('/apps/:app_id/seats/:seat_id', {
    schema: {
      operationId: 'releaseAppSeat', tags, security: adminSecurity, summary: 'Release a live seat (its device’s next heartbeat answers 404 seat_not_found)',
      description: 'Frees the seat at once, even one an offline lease holds (which the user’s own release and reset cannot free before the lease ends): the operator is trusted.',
      params: { type: 'object', required: ['app_id', 'seat_id'], properties: { app_id: uuid, seat_id: uuid } },
      response: { 204: { type: 'null', description: 'Released' }, ...errors(401, 404, 422) },
    },
    handler: async (request, reply) => {
      await releaseSeatById(acting(s, request), request.params.app_id, request.params.seat_id);
      return reply.code(204).send();
    },
  });
}
