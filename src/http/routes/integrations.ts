import type { FastifyInstance } from 'fastify';
import { receiveSale } from '../../domain/sales/receive.js';
import type { Services } from '../../domain/services.js';
import { PROVIDERS, type Provider } from '../../domain/sales/receive.js';
import { errors, noSecurity, uuid } from '../schemas.js';

const saleAnswer = {
  type: 'object',
  required: ['received', 'event_id', 'outcome', 'order_id', 'licenses_created'],
  additionalProperties: false,
  properties: {
    received: { type: 'boolean', const: true },
    event_id: { type: 'string', description: "The store's event id (Lemon Squeezy sends none: its event name and object id)" },
    outcome: {
      type: 'string',
      enum: ['granted', 'renewed', 'linked', 'cancelled', 'refunded', 'partially_refunded', 'renewal_refunded', 'duplicate', 'unknown_product', 'unknown_order', 'unknown_subscription', 'already_ended', 'ignored'],
      description: 'duplicate: this event was applied before and nothing was done again; unknown_*: acknowledged and logged, nothing granted (see docs/integrations.md)',
    },
    order_id: { type: ['string', 'null'], description: "Tollgate's id of the order the event was about" },
    licenses_created: { type: 'integer', minimum: 0, description: 'How many licenses this delivery created; the codes are never in the answer' },
  },
} as const;

/**
 * The stores' webhooks. In a scope of their own: the body is kept as the raw bytes the store signed
 * (whatever its Content-Type) and verified before anything parses it; elsewhere JSON is parsed as usual.
 */
export async function integrationRoutes(app: FastifyInstance, s: Services): Promise<void> {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
  app.post<{ Params: { provider: Provider; app_id: string } }>('/integrations/:provider/:app_id', {
    bodyLimit: 512 * 1024,
    schema: {
      operationId: 'receiveStoreWebhook', tags: ['integrations'], security: noSecurity,
      summary: 'A store’s webhook (Stripe, Paddle Billing, Lemon Squeezy), verified by its own signature scheme',
      description: 'Authenticated by the store’s signature header over the raw body (Stripe-Signature, Paddle-Signature, X-Signature) with the signing secret set through the admin API. ' +
        'Unsigned, stale or mis-signed: 401 invalid_signature and nothing changes. A redelivered event answers 200 `duplicate` and grants nothing twice. docs/integrations.md.',
      params: { type: 'object', required: ['provider', 'app_id'], properties: { provider: { type: 'string', enum: PROVIDERS }, app_id: uuid } },
      documentedBody: { content: { 'application/json': { schema: { type: 'object', description: 'The store’s event, exactly as it signed it' } } } },
      response: { 200: { ...saleAnswer, description: 'Acknowledged (applied, or a redelivery, or nothing to do)' }, ...errors(401, 409, 413, 422) },
    },
    handler: async (request) => {
      const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
      return receiveSale(s, request.params.provider, request.params.app_id, request.headers, raw);
    },
  });
}
