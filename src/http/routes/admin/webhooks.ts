import type { FastifyInstance, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault, RouteGenericInterface, RouteShorthandOptionsWithHandler } from 'fastify';
import { EVENT_CATALOGUE, EVENT_TYPES } from '../../../domain/outbox/catalogue.js';
import { listEvents } from '../../../domain/outbox/events.js';
import type { Services } from '../../../domain/services.js';
import {
  createEndpoint, deleteEndpoint, getEndpoint, listDeliveries, listEndpoints, replayDelivery, replayFailed, rotateEndpointSecret, sendTestEvent,
  updateEndpoint, webhookPublicKey, type EndpointInput, type Scope,
} from '../../../domain/webhooks/endpoints.js';
import { acting, adminSecurity, cursorOf, pageQuery } from '../../admin-plugin.js';
import { listPage, queryTime } from '../../admin-lists.js';
import { errors, nullableTimestamp, ref, timestamp, uuid } from '../../schemas.js';

const eventTypesSchema = {
  type: ['array', 'null'], minItems: 1, maxItems: EVENT_TYPES.length, uniqueItems: true, items: { type: 'string', enum: EVENT_TYPES },
  description: 'The event types sent to it; null (the default) sends every type',
} as const;

const endpointProperties = {
  id: uuid,
  app_id: { type: ['string', 'null'], format: 'uuid', description: 'null: a service-wide endpoint (every app’s events)' },
  url: { type: 'string', description: 'A Discord webhook’s token (the segment after webhooks/{id}/) is shown masked: …/webhooks/{id}/****abcd' },
  kind: { type: 'string', enum: ['standard', 'discord'], description: 'standard: Standard Webhooks JSON; discord: a Discord execute-webhook body (embeds)' },
  event_types: eventTypesSchema,
  description: { type: 'string' },
  enabled: { type: 'boolean' },
  disabled_reason: { type: ['string', 'null'], description: 'Why the service disabled it: the receiver answered 410 Gone, or every delivery failed for 24 hours' },
  failing_since: { ...nullableTimestamp, description: 'Since when every delivery to it failed; null after a success' },
  previous_secret_until: { ...nullableTimestamp, description: 'Until when the secret before the last rotation still signs beside the current one' },
  created_at: timestamp,
  updated_at: timestamp,
} as const;
const endpointRequired = Object.keys(endpointProperties);

const attempt = {
  type: 'object', required: ['at', 'status', 'error', 'body', 'duration_ms'],
  properties: {
    at: timestamp, status: { type: ['integer', 'null'], description: 'The answer’s HTTP status; null when none came' },
    error: { type: ['string', 'null'], description: 'Why no answer came (refused, timed out, the URL refused by the SSRF check)' },
    body: { type: ['string', 'null'], description: 'The first 2 KiB of the answer' }, duration_ms: { type: 'integer' },
  },
} as const;

export const WEBHOOK_SCHEMAS: readonly object[] = [
  { $id: 'WebhookEndpoint', type: 'object', required: endpointRequired, properties: endpointProperties },
  {
    $id: 'WebhookEndpointWithSecret', description: 'An endpoint as created: the only answer that shows its secret', type: 'object',
    required: [...endpointRequired, 'secret'], properties: { ...endpointProperties, secret: { type: 'string', description: 'whsec_…: the HMAC key of the v1 signatures' } },
  },
  {
    $id: 'WebhookDelivery', type: 'object',
    required: ['id', 'event_id', 'event_type', 'status', 'attempts', 'next_attempt_at', 'last_status', 'created_at', 'updated_at', 'attempt_log'],
    properties: {
      id: uuid, event_id: { ...uuid, description: 'The webhook-id header of every attempt' }, event_type: { type: 'string' },
      status: { type: 'string', enum: ['pending', 'delivered', 'failed'] }, attempts: { type: 'integer', description: 'Attempts since it was created or last replayed' },
      next_attempt_at: nullableTimestamp, last_status: { type: ['integer', 'null'] }, created_at: timestamp, updated_at: timestamp,
      attempt_log: { type: 'array', items: attempt },
    },
  },
  {
    $id: 'Event', type: 'object', required: ['id', 'type', 'occurred_at', 'app_id', 'data'],
    properties: {
      id: { ...uuid, description: 'UUIDv7' }, type: { type: 'string', enum: EVENT_TYPES, description: Object.entries(EVENT_CATALOGUE).map(([t, d]) => `${t}: ${d}`).join('\n') },
      occurred_at: timestamp, app_id: { type: ['string', 'null'], format: 'uuid' }, data: { type: 'object', additionalProperties: true, description: 'The object after the change; never a secret' },
    },
  },
  pageOf('WebhookEndpoint'), pageOf('WebhookDelivery'), pageOf('Event'),
];

function pageOf(item: string) {
  return {
    $id: `${item}Page`, type: 'object', required: ['items', 'next_cursor'],
    properties: { items: { type: 'array', items: ref(item) }, next_cursor: { type: ['string', 'null'], description: 'Pass as ?cursor= for the next page; null on the last' } },
  } as const;
}

const endpointBody = (required: string[]) => ({
  type: 'object', required, additionalProperties: false, minProperties: 1,
  properties: {
    url: { type: 'string', minLength: 1, maxLength: 2048, description: 'https only; every address its host resolves to must be public (WEBHOOK_ALLOW_HOSTS exempts hosts for development). On a change, the endpoint’s masked URL as shown (…/****abcd) keeps the stored one; any other masked URL is 422' },
    ...(required.includes('url') && { kind: endpointProperties.kind }),
    event_types: eventTypesSchema,
    description: { type: 'string', maxLength: 500 },
    enabled: { type: 'boolean' },
  },
}) as const;

type EndpointParams = { app_id?: string; endpoint_id: string };

/** A route's options with its handler typed by its request shape (registered under a literal path below). */
const route = <T extends RouteGenericInterface>(options: RouteShorthandOptionsWithHandler<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, T>) =>
  options as unknown as RouteShorthandOptionsWithHandler;

/** The options of each endpoint route, for one scope (the paths are written out below, once per scope). */
function endpointRoutes(s: Services, scoped: boolean) {
  const name = scoped ? 'App' : 'Service';
  const tags = ['admin: webhooks'];
  const scopeOf = (p: { app_id?: string }): Scope => (scoped ? p.app_id! : null);
  const scopeParams = scoped ? { app_id: uuid } : {};
  const params = { type: 'object', required: scoped ? ['app_id'] : [], properties: scopeParams } as const;
  const endpointParams = { type: 'object', required: [...(scoped ? ['app_id'] : []), 'endpoint_id'], properties: { ...scopeParams, endpoint_id: uuid } } as const;
  const what = scoped ? 'of an app' : 'service-wide (every app’s events)';

  return {
    create: route<{ Params: { app_id?: string }; Body: EndpointInput }>({
      schema: {
        operationId: `create${name}Webhook`, tags, security: adminSecurity, summary: `Create a webhook endpoint ${what} (its secret is shown only here)`, params,
        body: endpointBody(['url']), response: { 201: { ...ref('WebhookEndpointWithSecret'), description: 'Created' }, ...errors(401, 403, 404, 413, 422) },
      },
      handler: async (request, reply) => reply.code(201).send(await createEndpoint(acting(s, request), scopeOf(request.params), request.body)),
    }),
    list: route<{ Params: { app_id?: string }; Querystring: { limit: number; cursor?: string } }>({
      schema: {
        operationId: `list${name}Webhooks`, tags, security: adminSecurity, summary: `List the webhook endpoints ${what}`, params,
        querystring: { type: 'object', properties: { ...pageQuery } }, response: { 200: { ...ref('WebhookEndpointPage'), description: 'A page of endpoints' }, ...errors(401, 404, 422) },
      },
      handler: async (request) => listPage(await listEndpoints(s, scopeOf(request.params), cursorOf(request.query.cursor), request.query.limit)),
    }),
    get: route<{ Params: EndpointParams }>({
      schema: {
        operationId: `get${name}Webhook`, tags, security: adminSecurity, summary: 'One webhook endpoint', params: endpointParams,
        response: { 200: { ...ref('WebhookEndpoint'), description: 'The endpoint' }, ...errors(401, 404, 422) },
      },
      handler: async (request) => getEndpoint(s, scopeOf(request.params), request.params.endpoint_id),
    }),
    update: route<{ Params: EndpointParams; Body: Partial<EndpointInput> }>({
      schema: {
        operationId: `update${name}Webhook`, tags, security: adminSecurity, summary: 'Change a webhook endpoint (enabling it again clears why it was disabled)', params: endpointParams,
        body: endpointBody([]), response: { 200: { ...ref('WebhookEndpoint'), description: 'Changed' }, ...errors(401, 403, 404, 413, 422) },
      },
      handler: async (request) => updateEndpoint(acting(s, request), scopeOf(request.params), request.params.endpoint_id, request.body),
    }),
    remove: route<{ Params: EndpointParams }>({
      schema: {
        operationId: `delete${name}Webhook`, tags, security: adminSecurity, summary: 'Delete a webhook endpoint and its deliveries', params: endpointParams,
        response: { 204: { type: 'null', description: 'Deleted' }, ...errors(401, 403, 404, 422) },
      },
      handler: async (request, reply) => {
        await deleteEndpoint(acting(s, request), scopeOf(request.params), request.params.endpoint_id);
        return reply.code(204).send();
      },
    }),
    secret: route<{ Params: EndpointParams }>({
      schema: {
        operationId: `rotate${name}WebhookSecret`, tags, security: adminSecurity, summary: 'Replace the secret (shown only here); the old one keeps signing beside it for 24 hours', params: endpointParams,
        response: {
          200: { type: 'object', required: ['secret', 'previous_secret_until'], properties: { secret: { type: 'string' }, previous_secret_until: timestamp }, description: 'The new secret' },
          ...errors(401, 403, 404, 422),
        },
      },
      handler: async (request) => rotateEndpointSecret(acting(s, request), scopeOf(request.params), request.params.endpoint_id),
    }),
    test: route<{ Params: EndpointParams }>({
      schema: {
        operationId: `test${name}Webhook`, tags, security: adminSecurity, summary: 'Send a webhook.test event to this endpoint only', params: endpointParams,
        response: {
          202: { type: 'object', required: ['event_id', 'delivery_id'], properties: { event_id: uuid, delivery_id: uuid }, description: 'Queued: its first attempt goes at once' },
          ...errors(401, 403, 404, 409, 422),
        },
      },
      handler: async (request, reply) => reply.code(202).send(await sendTestEvent(acting(s, request), scopeOf(request.params), request.params.endpoint_id)),
    }),
    deliveries: route<{ Params: EndpointParams; Querystring: { limit: number; cursor?: string; status?: 'pending' | 'delivered' | 'failed' } }>({
      schema: {
        operationId: `list${name}WebhookDeliveries`, tags, security: adminSecurity, summary: 'The deliveries to an endpoint, newest first, each with its attempts and answers', params: endpointParams,
        querystring: { type: 'object', properties: { ...pageQuery, status: { type: 'string', enum: ['pending', 'delivered', 'failed'] } } },
        response: { 200: { ...ref('WebhookDeliveryPage'), description: 'A page of deliveries' }, ...errors(401, 404, 422) },
      },
      handler: async (request) => {
        const q = request.query;
        return listPage(await listDeliveries(s, scopeOf(request.params), request.params.endpoint_id, q.status, cursorOf(q.cursor), q.limit));
      },
    }),
    replayOne: route<{ Params: EndpointParams & { delivery_id: string } }>({
      schema: {
        operationId: `replay${name}WebhookDelivery`, tags, security: adminSecurity, summary: 'Send a delivery again from the start of the schedule (same webhook-id)',
        params: { type: 'object', required: [...endpointParams.required, 'delivery_id'], properties: { ...endpointParams.properties, delivery_id: uuid } },
        response: { 202: { type: 'null', description: 'Queued' }, ...errors(401, 403, 404, 409, 422) },
      },
      handler: async (request, reply) => {
        await replayDelivery(acting(s, request), scopeOf(request.params), request.params.endpoint_id, request.params.delivery_id);
        return reply.code(202).send();
      },
    }),
    replayFailed: route<{ Params: EndpointParams; Body: { since: string } }>({
      schema: {
        operationId: `replay${name}WebhookFailures`, tags, security: adminSecurity, summary: 'Send every failed delivery created since a time again', params: endpointParams,
        body: { type: 'object', required: ['since'], additionalProperties: false, properties: { since: { type: 'string', maxLength: 64, description: 'ISO 8601, inclusive' } } },
        response: { 200: { type: 'object', required: ['replayed'], properties: { replayed: { type: 'integer', minimum: 0 } }, description: 'How many were queued' }, ...errors(401, 403, 404, 413, 422) },
      },
      handler: async (request) => replayFailed(acting(s, request), scopeOf(request.params), request.params.endpoint_id, queryTime('body.since', request.body.since)!),
    }),
    key: route<{ Params: { app_id?: string } }>({
      schema: {
        operationId: `get${name}WebhookKey`, tags, security: adminSecurity, summary: `The public half of the Ed25519 key that signs the v1a signatures ${what}`, params,
        response: { 200: { type: 'object', required: ['public_key'], properties: { public_key: { type: 'string', description: 'whpk_ + base64 of the raw 32-byte key' } }, description: 'The key' }, ...errors(401, 404, 422) },
      },
      handler: async (request) => webhookPublicKey(s, scopeOf(request.params)),
    }),
  };
}

/**
 * Webhook endpoints of one app (/apps/{app_id}/webhooks) and service-wide ones (/webhooks): the same
 * routes, the scope taken from the path. Reading needs `read`; every change needs `apps`.
 */
export function webhookRoutes(app: FastifyInstance, s: Services): void {
  const a = endpointRoutes(s, true);
  const w = endpointRoutes(s, false);
  app.post('/apps/:app_id/webhooks', a.create);
  app.get('/apps/:app_id/webhooks', a.list);
  app.get('/apps/:app_id/webhooks/:endpoint_id', a.get);
  app.patch('/apps/:app_id/webhooks/:endpoint_id', a.update);
  app.delete('/apps/:app_id/webhooks/:endpoint_id', a.remove);
  app.post('/apps/:app_id/webhooks/:endpoint_id/secret', a.secret);
  app.post('/apps/:app_id/webhooks/:endpoint_id/test', a.test);
  app.get('/apps/:app_id/webhooks/:endpoint_id/deliveries', a.deliveries);
  app.post('/apps/:app_id/webhooks/:endpoint_id/deliveries/:delivery_id/replay', a.replayOne);
  app.post('/apps/:app_id/webhooks/:endpoint_id/replay', a.replayFailed);
  app.get('/apps/:app_id/webhook-key', a.key);
  app.post('/webhooks', w.create);
  app.get('/webhooks', w.list);
  app.get('/webhooks/:endpoint_id', w.get);
  app.patch('/webhooks/:endpoint_id', w.update);
  app.delete('/webhooks/:endpoint_id', w.remove);
  app.post('/webhooks/:endpoint_id/secret', w.secret);
  app.post('/webhooks/:endpoint_id/test', w.test);
  app.get('/webhooks/:endpoint_id/deliveries', w.deliveries);
  app.post('/webhooks/:endpoint_id/deliveries/:delivery_id/replay', w.replayOne);
  app.post('/webhooks/:endpoint_id/replay', w.replayFailed);
  app.get('/webhook-key', w.key);

  app.get<{ Querystring: { limit: number; cursor?: string; app_id?: string; type?: string; from?: string; to?: string } }>('/events', {
    schema: {
      operationId: 'listEvents', tags: ['admin: events'], security: adminSecurity, summary: 'The event outbox, newest first (kept for EVENT_RETENTION_DAYS)',
      querystring: {
        type: 'object',
        properties: {
          ...pageQuery, app_id: uuid,
          type: { type: 'string', maxLength: 1000, description: 'One event type, or several separated by commas' },
          from: { type: 'string', maxLength: 64, description: 'ISO 8601, inclusive' }, to: { type: 'string', maxLength: 64, description: 'ISO 8601, exclusive' },
        },
      },
      response: { 200: { ...ref('EventPage'), description: 'A page of events' }, ...errors(401, 422) },
    },
    handler: async (request) => {
      const q = request.query;
      const types = q.type?.split(',').map((t) => t.trim()).filter(Boolean);
      const from = queryTime('querystring.from', q.from);
      const to = queryTime('querystring.to', q.to);
      const filter = { ...(q.app_id && { appId: q.app_id }), ...(types?.length && { types }), ...(from !== undefined && { from }), ...(to !== undefined && { to }) };
      return listPage(await listEvents(s, filter, cursorOf(q.cursor), q.limit));
    },
  });
}
