import type { FastifyInstance } from 'fastify';
import { selfResetDevices } from '../../../domain/device-reset.js';
import { checkoutSeat, heartbeatSeat, releaseSeat } from '../../../domain/seats.js';
import type { Services } from '../../../domain/services.js';
import { HARDWARE_ID } from '../../../domain/validation.js';
import { userCredentials } from '../../client-plugin.js';
import { errors, ref, text, userAuthHeaders, userSecurity } from '../../schemas.js';

/** A user credential is required: the user-security alternatives without the anonymous one. */
const seatSecurity = userSecurity.filter((alternative) => 'sessionToken' in alternative || 'licenseCode' in alternative || 'legacyUsername' in alternative);

const seatHeaders = {
  type: 'object',
  required: ['x-hardware-id'],
  properties: { 'x-hardware-id': text(HARDWARE_ID, 'Hardware ID of this device: the seat is held by it. Required (422 hardware_id_required)') },
} as const;

const USER_AUTH = 'User authentication as GET /app_context (all its checks, in its order). ';

/** Floating seats and the user's own device reset (issue 25); every answer signed like the others (docs/signing.md). */
export function seatRoutes(app: FastifyInstance, s: Services): void {
  app.post('/seats', {
    config: { limited: 'legacy_auth' },
    schema: {
      operationId: 'checkoutSeat',
      tags: ['client'],
      summary: 'Check a floating seat out for this device (idempotent: a device holding one keeps it, extended)',
      description: USER_AUTH + 'No body. 409 seats_exhausted (with in_use, max, next_free_at) when every seat is taken; 409 seats_not_enabled when no max_seats applies to the user.',
      security: seatSecurity,
      documentedHeaders: seatHeaders,
      response: { 200: { ...ref('SeatCheckout'), description: 'The seat' }, ...errors(401, 403, 409, 422, 429) },
    },
    handler: (request) => checkoutSeat(s, request.ctx, userCredentials(request)),
  });

  app.post('/seats/heartbeat', {
    config: { limited: 'legacy_auth' },
    schema: {
      operationId: 'heartbeatSeat',
      tags: ['client'],
      summary: 'Keep this device’s seat alive',
      description: USER_AUTH + 'No body. 404 seat_not_found when this device holds no live seat (it died, or the operator released it): the seat is lost; check out again.',
      security: seatSecurity,
      documentedHeaders: seatHeaders,
      response: { 200: { ...ref('SeatCheckout'), description: 'The seat, extended' }, ...errors(401, 403, 404, 409, 422, 429) },
    },
    handler: (request) => heartbeatSeat(s, request.ctx, userCredentials(request)),
  });

  app.delete('/seats', {
    config: { limited: 'legacy_auth' },
    schema: {
      operationId: 'releaseSeat',
      tags: ['client'],
      summary: 'Give this device’s seat back',
      description: USER_AUTH + 'A seat an offline lease holds is not given back before the lease ends (the signed lease stays valid offline): ' +
        'the answer is released false with held_until, the lease\'s exp, when the seat frees up; its heartbeats are no longer needed.',
      security: seatSecurity,
      documentedHeaders: seatHeaders,
      response: { 200: { ...ref('SeatRelease'), description: 'Whether a live seat was released' }, ...errors(401, 403, 422, 429) },
    },
    handler: (request) => releaseSeat(s, request.ctx, userCredentials(request)),
  });

  app.post('/devices/reset', {
    config: { limited: 'legacy_auth' },
    schema: {
      operationId: 'resetOwnDevices',
      tags: ['client'],
      summary: 'Forget every device of the current user (and end all their sessions, this one included)',
      description:
        'User authentication as GET /app_context without its device check (bans, credentials and membership apply). ' +
        'Does what the operator’s reset-devices does, except that a seat an offline lease holds stays taken until the lease ends. 429 reset_cooldown (retry_after, last_reset_at, Retry-After) inside device_reset_cooldown_seconds ' +
        'or past device_resets_per_year; 403 reset_disabled when the app’s cooldown is 0.',
      security: seatSecurity,
      documentedHeaders: userAuthHeaders,
      response: { 200: { ...ref('DeviceReset'), description: 'Reset' }, ...errors(401, 403, 422, 429) },
    },
    handler: (request) => selfResetDevices(s, request.ctx, userCredentials(request)),
  });
}
