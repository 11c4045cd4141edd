import type { FastifyInstance } from 'fastify';
import { parseBoolean } from '../../../domain/admin/content.js';
import { createSigningKey, getKey, getRootKey, listKeys, retireKey, setRootKey, uploadCertificate } from '../../../domain/admin/keys.js';
import type { Services } from '../../../domain/services.js';
import { KID_PATTERN } from '../../../domain/signing/format.js';
import { acting, adminSecurity, cursorOf, page, pageQuery, pageSchema } from '../../admin-plugin.js';
import { errors, timestamp, uuid } from '../../schemas.js';

const nullableTimestamp = { type: ['string', 'null'], format: 'date-time' } as const;
const publicKey = { type: 'string', pattern: '^[A-Za-z0-9_-]{43}$', description: 'base64url (no padding) of the 32 raw bytes of an Ed25519 public key' } as const;
const kid = { type: 'string', pattern: KID_PATTERN } as const;

// Never a private key: the server keeps the signing keys' private halves to itself, and never sees the root's.
const keySchema = {
  type: 'object',
  required: ['kid', 'public_key', 'status', 'certificate', 'not_before', 'not_after', 'created_at', 'retired_at'],
  additionalProperties: false,
  properties: {
    kid,
    public_key: publicKey,
    status: { type: 'string', enum: ['pending', 'active', 'retired', 'expired'], description: 'pending until certified; expired: active but past not_after' },
    certificate: { type: ['string', 'null'], description: 'The tollgate/keycert/v1 certificate as sent to clients (docs/signing.md); null while pending' },
    not_before: nullableTimestamp,
    not_after: nullableTimestamp,
    created_at: timestamp,
    retired_at: nullableTimestamp,
  },
} as const;
const rootSchema = {
  type: 'object', required: ['app_id', 'public_key'], additionalProperties: false,
  properties: { app_id: uuid, public_key: publicKey, retired: { type: 'array', items: kid, description: 'Keys retired because the root that certified them was replaced' } },
} as const;
const rootStateSchema = {
  ...rootSchema,
  properties: { ...rootSchema.properties, public_key: { ...publicKey, type: ['string', 'null'], description: 'null: no root yet (only with allow_missing=true; otherwise that is a 404)' } },
} as const;
const appParams = { type: 'object', required: ['app_id'], properties: { app_id: uuid } } as const;
const keyParams = { type: 'object', required: ['app_id', 'kid'], properties: { app_id: uuid, kid } } as const;
const tags = ['admin: keys'];

/** The app's root public key and its signing keys (docs/signing.md "Keys"). */
export function keyRoutes(app: FastifyInstance, s: Services): void {
  app.get<{ Params: { app_id: string }; Querystring: { allow_missing?: string } }>('/apps/:app_id/root-key', {
    schema: {
      tags, security: adminSecurity, operationId: 'getRootKey', summary: 'The application’s root public key (what clients pin)', params: appParams,
      querystring: {
        type: 'object',
        properties: { allow_missing: { type: 'string', enum: ['true', 'false'], description: 'true: no root yet is 200 with `public_key: null` instead of 404' } },
      },
      response: { 200: rootStateSchema, ...errors(401, 404, 422) },
    },
    handler: async (request) => getRootKey(s, request.params.app_id, parseBoolean('querystring.allow_missing', request.query.allow_missing) === true),
  });

  app.put<{ Params: { app_id: string }; Body: { public_key: string; replace?: boolean } }>('/apps/:app_id/root-key', {
    schema: {
      tags, security: adminSecurity, operationId: 'setRootKey', params: appParams,
      summary: 'Set the root public key (the private root stays with the operator); replacing one retires every key it certified',
      body: {
        type: 'object', required: ['public_key'], additionalProperties: false,
        properties: { public_key: publicKey, replace: { type: 'boolean', default: false, description: 'Required to replace an existing root: every certificate it made stops verifying' } },
      },
      response: { 200: rootSchema, ...errors(401, 404, 409, 413, 422) },
    },
    handler: async (request) => setRootKey(acting(s, request), request.params.app_id, request.body),
  });

  app.post<{ Params: { app_id: string } }>('/apps/:app_id/signing-keys', {
    schema: {
      tags, security: adminSecurity, operationId: 'createSigningKey', params: appParams,
      summary: 'Create a signing key (the server generates it and keeps its private key); pending until certified',
      response: { 201: keySchema, ...errors(401, 404, 422) },
    },
    handler: async (request, reply) => reply.code(201).send(await createSigningKey(acting(s, request), request.params.app_id)),
  });

  app.get<{ Params: { app_id: string }; Querystring: { limit: number; cursor?: string } }>('/apps/:app_id/signing-keys', {
    schema: {
      tags, security: adminSecurity, operationId: 'listAppSigningKeys', summary: 'List signing keys, oldest first', params: appParams,
      querystring: { type: 'object', properties: pageQuery },
      response: { 200: pageSchema(keySchema), ...errors(401, 404, 422) },
    },
    handler: async (request) => page(await listKeys(s, request.params.app_id, cursorOf(request.query.cursor), request.query.limit)),
  });

  app.get<{ Params: { app_id: string; kid: string } }>('/apps/:app_id/signing-keys/:kid', {
    schema: {
      tags, security: adminSecurity, operationId: 'getSigningKey', summary: 'Get a signing key and its certificate', params: keyParams,
      response: { 200: keySchema, ...errors(401, 404, 422) },
    },
    handler: async (request) => getKey(s, request.params.app_id, request.params.kid),
  });

  app.put<{ Params: { app_id: string; kid: string }; Body: { certificate: string } }>('/apps/:app_id/signing-keys/:kid/certificate', {
    schema: {
      tags, security: adminSecurity, operationId: 'uploadSigningKeyCertificate', params: keyParams,
      summary: 'Upload the certificate the root key made for a pending signing key; it becomes active',
      body: {
        type: 'object', required: ['certificate'], additionalProperties: false,
        properties: { certificate: { type: 'string', minLength: 1, maxLength: 4096, description: 'base64url of the tollgate/keycert/v1 JSON (docs/signing.md)' } },
      },
      response: { 200: keySchema, ...errors(401, 404, 409, 413, 422) },
    },
    handler: async (request) => uploadCertificate(acting(s, request), request.params.app_id, request.params.kid, request.body.certificate),
  });

  app.post<{ Params: { app_id: string; kid: string } }>('/apps/:app_id/signing-keys/:kid/retire', {
    schema: {
      tags, security: adminSecurity, operationId: 'retireSigningKey', params: keyParams,
      summary: 'Retire a signing key: its private key is deleted, it never signs again, and clients learn to refuse it',
      response: { 200: keySchema, ...errors(401, 404, 409, 422) },
    },
    handler: async (request) => retireKey(acting(s, request), request.params.app_id, request.params.kid),
  });
}
