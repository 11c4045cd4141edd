import type { FastifyInstance } from 'fastify';
import {
  createMapping, deleteIntegration, deleteMapping, getIntegration, getOrder, listIntegrations, listMappings, listOrders, putIntegration,
  setIntegrationEnabled, updateMapping, type MappingInput,
} from '../../../domain/admin/integrations.js';
import type { Services } from '../../../domain/services.js';
import { PROVIDERS, type Provider } from '../../../domain/sales/receive.js';
import { acting, adminSecurity, cursorOf, page, pageQuery, pageSchema } from '../../admin-plugin.js';
import { errors, timestamp, uuid } from '../../schemas.js';

const provider = { type: 'string', enum: PROVIDERS } as const;
const tags = ['admin: integrations'];
const appParams = { type: 'object', required: ['app_id'], properties: { app_id: uuid } } as const;
const integrationParams = { type: 'object', required: ['app_id', 'provider'], properties: { app_id: uuid, provider } } as const;
const mappingParams = { type: 'object', required: ['app_id', 'provider', 'mapping_id'], properties: { app_id: uuid, provider, mapping_id: uuid } } as const;
const orderParams = { type: 'object', required: ['app_id', 'order_id'], properties: { app_id: uuid, order_id: uuid } } as const;
const nullableString = { type: ['string', 'null'] } as const;

const integration = {
  type: 'object', additionalProperties: false,
  required: ['provider', 'enabled', 'secret_hint', 'webhook_path', 'created_at', 'updated_at'],
  properties: {
    provider, enabled: { type: 'boolean' },
    secret_hint: { type: 'string', description: 'The last four characters of the signing secret; the secret itself is never shown again' },
    webhook_path: { type: 'string', description: 'Where the store must post its events, after the server’s public URL' },
    created_at: timestamp, updated_at: timestamp,
  },
} as const;

const mapping = {
  type: 'object', additionalProperties: false,
  required: ['id', 'product_key', 'minutes', 'lifetime', 'template_id', 'codes_per_unit', 'note', 'created_at', 'updated_at'],
  properties: {
    id: uuid, product_key: { type: 'string' }, minutes: { type: ['integer', 'null'] }, lifetime: { type: 'boolean' },
    template_id: { type: ['string', 'null'], description: 'The license template each code is made from (its duration, entitlements and limits); null: minutes or lifetime' },
    codes_per_unit: { type: 'integer' }, note: nullableString, created_at: timestamp, updated_at: timestamp,
  },
} as const;

const order = {
  type: 'object', additionalProperties: false,
  required: ['id', 'provider', 'order_ref', 'payment_ref', 'subscription_ref', 'event_id', 'buyer_email', 'customer_ref', 'status', 'created_at', 'updated_at'],
  properties: {
    id: uuid, provider, order_ref: { type: 'string', description: "The store's id of the order (Stripe Checkout Session or invoice, Paddle transaction, Lemon Squeezy order)" },
    payment_ref: nullableString, subscription_ref: nullableString, event_id: { type: 'string', description: 'The event that created the order' },
    buyer_email: nullableString, customer_ref: nullableString, status: { type: 'string', enum: ['active', 'cancelled', 'refunded'] },
    created_at: timestamp, updated_at: timestamp,
  },
} as const;

const orderWithLicenses = {
  ...order,
  required: [...order.required, 'licenses'],
  properties: {
    ...order.properties,
    licenses: {
      type: 'array',
      items: {
        type: 'object', additionalProperties: false, required: ['license_id', 'code', 'minutes', 'lifetime', 'renewal_minutes', 'state'],
        properties: {
          license_id: uuid, code: { type: 'string' }, minutes: { type: ['integer', 'null'] }, lifetime: { type: 'boolean' },
          renewal_minutes: { type: 'integer', description: 'Minutes renewals added (to the unredeemed code, or to the redeemer’s membership)' },
          state: { type: 'string', enum: ['issued', 'revoked'] },
        },
      },
    },
  },
} as const;

const grantProperties = {
  minutes: { type: 'integer', minimum: 1, maximum: 1_000_000_000, description: 'Minutes each code adds to a membership (and each renewal adds again)' },
  lifetime: { type: 'boolean', description: 'Each code grants lifetime access instead of minutes' },
  template_id: { ...uuid, description: 'A license template of this app: each code is made from it (its duration, entitlements, device and seat limits; not its redeem window: a sold code never expires unredeemed), and a renewal extends by its duration; then no minutes or lifetime' },
  codes_per_unit: { type: 'integer', minimum: 1, maximum: 100, default: 1, description: 'Codes per unit bought (a quantity of 3 makes 3 × this)' },
  note: { type: ['string', 'null'], maxLength: 1000 },
} as const;

export function integrationRoutes(app: FastifyInstance, s: Services): void {
  app.get<{ Params: { app_id: string } }>('/apps/:app_id/integrations', {
    schema: { operationId: 'listIntegrations', tags, security: adminSecurity, summary: 'The stores this app sells through', params: appParams, response: { 200: { type: 'object', required: ['items'], properties: { items: { type: 'array', items: integration } } }, ...errors(401, 404, 422) } },
    handler: async (request) => ({ items: await listIntegrations(s, request.params.app_id) }),
  });

  app.get<{ Params: { app_id: string; provider: Provider } }>('/apps/:app_id/integrations/:provider', {
    schema: { operationId: 'getIntegration', tags, security: adminSecurity, summary: 'One store integration (the secret masked)', params: integrationParams, response: { 200: integration, ...errors(401, 404, 422) } },
    handler: async (request) => getIntegration(s, request.params.app_id, request.params.provider),
  });

  app.put<{ Params: { app_id: string; provider: Provider }; Body: { signing_secret: string; enabled?: boolean } }>('/apps/:app_id/integrations/:provider', {
    bodyLimit: 16 * 1024,
    schema: {
      operationId: 'putIntegration', tags, security: adminSecurity, params: integrationParams,
      summary: 'Set or replace the store’s webhook signing secret (Stripe whsec_…, Paddle pdl_ntfset_…, the Lemon Squeezy secret you chose)',
      body: {
        type: 'object', required: ['signing_secret'], additionalProperties: false,
        properties: { signing_secret: { type: 'string', minLength: 6, maxLength: 512, description: 'Sealed at rest; never shown again (only its last four characters)' }, enabled: { type: 'boolean' } },
      },
      response: { 200: integration, ...errors(401, 404, 413, 422) },
    },
    handler: async (request) => putIntegration(acting(s, request), request.params.app_id, request.params.provider, request.body),
  });

  app.patch<{ Params: { app_id: string; provider: Provider }; Body: { enabled: boolean } }>('/apps/:app_id/integrations/:provider', {
    bodyLimit: 16 * 1024,
    schema: {
      operationId: 'updateIntegration', tags, security: adminSecurity, params: integrationParams, summary: 'Turn a store integration off (its webhooks are refused with 401) or on',
      body: { type: 'object', required: ['enabled'], additionalProperties: false, properties: { enabled: { type: 'boolean' } } },
      response: { 200: integration, ...errors(401, 404, 413, 422) },
    },
    handler: async (request) => setIntegrationEnabled(acting(s, request), request.params.app_id, request.params.provider, request.body.enabled),
  });

  app.delete<{ Params: { app_id: string; provider: Provider } }>('/apps/:app_id/integrations/:provider', {
    schema: { operationId: 'deleteIntegration', tags, security: adminSecurity, summary: 'Remove a store integration and its product mappings (orders stay)', params: integrationParams, response: { 204: { type: 'null', description: 'Deleted' }, ...errors(401, 404, 422) } },
    handler: async (request, reply) => {
      await deleteIntegration(acting(s, request), request.params.app_id, request.params.provider);
      return reply.code(204).send();
    },
  });

  app.get<{ Params: { app_id: string; provider: Provider } }>('/apps/:app_id/integrations/:provider/products', {
    schema: { operationId: 'listProductMappings', tags, security: adminSecurity, summary: 'What each mapped product or price grants', params: integrationParams, response: { 200: { type: 'object', required: ['items'], properties: { items: { type: 'array', items: mapping } } }, ...errors(401, 404, 422) } },
    handler: async (request) => ({ items: await listMappings(s, request.params.app_id, request.params.provider) }),
  });

  app.post<{ Params: { app_id: string; provider: Provider }; Body: MappingInput }>('/apps/:app_id/integrations/:provider/products', {
    bodyLimit: 16 * 1024,
    schema: {
      operationId: 'createProductMapping', tags, security: adminSecurity, params: integrationParams,
      summary: 'Map a store product or price id to what a purchase grants (minutes, lifetime or a license template; codes per unit)',
      body: {
        type: 'object', required: ['product_key'], additionalProperties: false,
        properties: { product_key: { type: 'string', minLength: 1, maxLength: 255, pattern: '^\\S+$', description: 'Stripe price_…/prod_…/plink_… (or your metadata.tollgate_product), Paddle pri_…/pro_…, Lemon Squeezy variant or product id' }, ...grantProperties },
      },
      description: 'Exactly one of minutes, lifetime: true or template_id. A template_id that is not a template of this app is 422.',
      response: { 201: mapping, ...errors(401, 404, 409, 413, 422) },
    },
    handler: async (request, reply) => reply.code(201).send(await createMapping(acting(s, request), request.params.app_id, request.params.provider, request.body)),
  });

  app.patch<{ Params: { app_id: string; provider: Provider; mapping_id: string }; Body: Partial<Omit<MappingInput, 'product_key'>> }>('/apps/:app_id/integrations/:provider/products/:mapping_id', {
    bodyLimit: 16 * 1024,
    schema: {
      operationId: 'updateProductMapping', tags, security: adminSecurity, params: mappingParams, summary: 'Change what future sales of a product grant (codes already sold keep theirs)',
      body: { type: 'object', additionalProperties: false, properties: grantProperties },
      response: { 200: mapping, ...errors(401, 404, 413, 422) },
    },
    handler: async (request) => updateMapping(acting(s, request), request.params.app_id, request.params.provider, request.params.mapping_id, request.body),
  });

  app.delete<{ Params: { app_id: string; provider: Provider; mapping_id: string } }>('/apps/:app_id/integrations/:provider/products/:mapping_id', {
    schema: { operationId: 'deleteProductMapping', tags, security: adminSecurity, summary: 'Unmap a product (its later sales are acknowledged as unknown_product)', params: mappingParams, response: { 204: { type: 'null', description: 'Deleted' }, ...errors(401, 404, 422) } },
    handler: async (request, reply) => {
      await deleteMapping(acting(s, request), request.params.app_id, request.params.provider, request.params.mapping_id);
      return reply.code(204).send();
    },
  });

  app.get<{ Params: { app_id: string }; Querystring: { limit: number; cursor?: string } }>('/apps/:app_id/orders', {
    schema: { operationId: 'listOrders', tags, security: adminSecurity, summary: 'Orders received from stores, oldest first', params: appParams, querystring: { type: 'object', properties: pageQuery }, response: { 200: pageSchema(order), ...errors(401, 404, 422) } },
    handler: async (request) => page(await listOrders(s, request.params.app_id, cursorOf(request.query.cursor), request.query.limit)),
  });

  app.get<{ Params: { app_id: string; order_id: string } }>('/apps/:app_id/orders/:order_id', {
    schema: { operationId: 'getOrder', tags, security: adminSecurity, summary: 'An order with the licenses it created and their state', params: orderParams, response: { 200: orderWithLicenses, ...errors(401, 404, 422) } },
    handler: async (request) => getOrder(s, request.params.app_id, request.params.order_id),
  });
}
