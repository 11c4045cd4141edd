import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { createOperator, deleteOperator, listOperators, patchOperator, resetOperatorTotp, OPERATOR_PASSWORD_MIN, type OperatorPatch } from '../../../domain/admin/operator-accounts.js';
import {
  confirmTotp, disableTotp, loginOperator, logoutOperator, sessionView, startTotp, SESSION_ABSOLUTE_MS,
} from '../../../domain/admin/operator-sessions.js';
import { ROLES, type Role } from '../../../domain/admin/roles.js';
import { DomainError } from '../../../domain/errors.js';
import type { Services } from '../../../domain/services.js';
import { PASSWORD_MAX_BYTES } from '../../../domain/validation.js';
import { acting, adminSecurity, cursorOf, page, pageQuery, pageSchema, principalOf, SESSION_COOKIE } from '../../admin-plugin.js';
import { errors, password, uuid } from '../../schemas.js';

const role = { type: 'string', enum: ROLES, description: 'owner: everything; admin: all but operators and signing keys; support: read, and act on users and bans; viewer: read only' } as const;
const totpCode = { type: 'string', pattern: '^[0-9]{6}$', description: 'The 6-digit code from the authenticator app' } as const;
const operatorSelf = {
  type: 'object', required: ['id', 'username', 'role', 'totp_enabled'], additionalProperties: false,
  properties: { id: uuid, username: { type: 'string' }, role, totp_enabled: { type: 'boolean' } },
} as const;
const sessionBody = {
  type: 'object', required: ['operator', 'csrf_token', 'idle_timeout_seconds'], additionalProperties: false,
  properties: {
    operator: operatorSelf,
    csrf_token: { type: 'string', description: 'Send as X-CSRF-Token on every request other than GET/HEAD/OPTIONS' },
    idle_timeout_seconds: { type: 'integer', description: 'The session ends after this long without a request (and 12 hours after sign-in in any case)' },
  },
} as const;
const operatorAccount = {
  type: 'object', required: ['id', 'username', 'role', 'totp_enabled', 'disabled', 'created_at', 'last_login_at'], additionalProperties: false,
  properties: {
    id: uuid, username: { type: 'string' }, role, totp_enabled: { type: 'boolean' }, disabled: { type: 'boolean' },
    created_at: { type: 'string', format: 'date-time' }, last_login_at: { type: ['string', 'null'], format: 'date-time' },
  },
} as const;
const operatorParams = { type: 'object', required: ['operator_id'], properties: { operator_id: uuid } } as const;
const newPassword = password(`At least ${OPERATOR_PASSWORD_MIN} characters.`);
const sessionTags = ['admin: session'];
const operatorTags = ['admin: operators'];

/**
 * The session cookie: HttpOnly (no script reads it), SameSite=Strict (no
 * other site's page sends it), Secure when the request came over HTTPS as
 * Fastify sees it (TRUST_PROXY's X-Forwarded-Proto included), so a plain-HTTP
 * local set-up still works and an HTTPS one never leaks it to HTTP.
 */
function sessionCookie(request: FastifyRequest, value: string, maxAgeSeconds: number): string {
  const secure = request.protocol === 'https' ? '; Secure' : '';
  return `${SESSION_COOKIE}=${value}; Path=/; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Strict${secure}`;
}

/** The dashboard's sign-in and session, who am I, and the operator accounts (owner only). */
export function operatorAccountRoutes(app: FastifyInstance, s: Services, idleSeconds: number): void {
  app.post<{ Body: { username: string; password: string; totp?: string } }>('/session', {
    schema: {
      operationId: 'createOperatorSession', tags: sessionTags, security: [], summary: 'Sign in to the dashboard (sets the session cookie)',
      body: {
        type: 'object', required: ['username', 'password'], additionalProperties: false,
        properties: { username: { type: 'string', minLength: 1, maxLength: 64 }, password: { type: 'string', maxLength: PASSWORD_MAX_BYTES * 4 }, totp: { type: 'string', maxLength: 16 } },
      },
      response: { 200: { ...sessionBody, description: 'Signed in; Set-Cookie: tollgate_session' }, ...errors(400, 401, 413, 422, 429) },
    },
    handler: async (request, reply) => {
      const ip = request.server.clientAddress(request);
      if (ip === null) throw new DomainError('invalid_client_address');
      const signedIn = await loginOperator(s, ip, request.body, request.id);
      void reply.header('set-cookie', sessionCookie(request, signedIn.cookie, SESSION_ABSOLUTE_MS / 1000)).header('cache-control', 'no-store');
      return { operator: signedIn.operator, csrf_token: signedIn.csrf_token, idle_timeout_seconds: idleSeconds };
    },
  });
  app.get('/session', {
    schema: {
      operationId: 'getOperatorSession', tags: sessionTags, security: adminSecurity, summary: 'The signed-in operator and the CSRF token of this session',
      response: { 200: { ...sessionBody, description: 'The session' }, ...errors(401) },
    },
    handler: async (request, reply) => {
      void reply.header('cache-control', 'no-store');
      return sessionView(principalOf(request), idleSeconds);
    },
  });
  app.delete('/session', {
    schema: {
      operationId: 'deleteOperatorSession', tags: sessionTags, security: adminSecurity, summary: 'Sign out (ends the session, clears the cookie)',
      response: { 204: { type: 'null', description: 'Signed out' }, ...errors(401, 403) },
    },
    handler: async (request, reply) => {
      await logoutOperator(acting(s, request), principalOf(request));
      return reply.header('set-cookie', sessionCookie(request, '', 0)).code(204).send();
    },
  });
  app.post('/session/totp', {
    schema: {
      operationId: 'startOperatorTotp', tags: sessionTags, security: adminSecurity, summary: 'Start two-factor set-up: a secret and its QR code (on once confirmed)',
      response: {
        200: {
          type: 'object', required: ['secret', 'otpauth_uri', 'qr_svg'], additionalProperties: false, description: 'Scan the QR code, then confirm a code',
          properties: { secret: { type: 'string', description: 'Base32, for typing in by hand' }, otpauth_uri: { type: 'string' }, qr_svg: { type: 'string', description: 'An SVG document' } },
        },
        ...errors(401, 403, 409),
      },
    },
    handler: async (request, reply) => {
      void reply.header('cache-control', 'no-store');
      return startTotp(acting(s, request), principalOf(request));
    },
  });
  app.post<{ Body: { code: string } }>('/session/totp/confirm', {
    schema: {
      operationId: 'confirmOperatorTotp', tags: sessionTags, security: adminSecurity, summary: 'Turn two-factor authentication on with a code from the app',
      body: { type: 'object', required: ['code'], additionalProperties: false, properties: { code: totpCode } },
      response: { 200: { type: 'object', required: ['totp_enabled'], properties: { totp_enabled: { type: 'boolean' } }, description: 'On' }, ...errors(401, 403, 409, 413, 422) },
    },
    handler: async (request) => confirmTotp(acting(s, request), principalOf(request), request.body.code),
  });
  app.delete<{ Body: { code: string } }>('/session/totp', {
    schema: {
      operationId: 'disableOperatorTotp', tags: sessionTags, security: adminSecurity, summary: 'Turn two-factor authentication off (takes a current code)',
      body: { type: 'object', required: ['code'], additionalProperties: false, properties: { code: totpCode } },
      response: { 200: { type: 'object', required: ['totp_enabled'], properties: { totp_enabled: { type: 'boolean' } }, description: 'Off' }, ...errors(401, 403, 409, 413, 422, 429) },
    },
    handler: async (request) => {
      const ip = request.server.clientAddress(request);
      if (ip === null) throw new DomainError('invalid_client_address');
      return disableTotp(acting(s, request), principalOf(request), ip, request.body.code);
    },
  });
  app.get('/whoami', {
    schema: {
      operationId: 'whoami', tags: sessionTags, security: adminSecurity, summary: 'Who this request acts as, and with which role',
      response: {
        200: {
          type: 'object', required: ['kind', 'name', 'role'], additionalProperties: false, description: 'The caller',
          properties: { kind: { type: 'string', enum: ['operator', 'token'] }, name: { type: 'string' }, role },
        },
        ...errors(401),
      },
    },
    handler: async (request) => {
      const p = principalOf(request);
      return { kind: p.kind, name: p.name, role: p.role };
    },
  });

  app.get<{ Querystring: { limit: number; cursor?: string } }>('/operators', {
    schema: {
      operationId: 'listOperators', tags: operatorTags, security: adminSecurity, summary: 'List operator accounts (owner only)',
      querystring: { type: 'object', properties: pageQuery },
      response: { 200: { ...pageSchema(operatorAccount), description: 'A page of operators' }, ...errors(401, 403, 422) },
    },
    handler: async (request) => page(await listOperators(s, cursorOf(request.query.cursor), request.query.limit)),
  });
  app.post<{ Body: { username: string; password: string; role: Role } }>('/operators', {
    schema: {
      operationId: 'createOperator', tags: operatorTags, security: adminSecurity, summary: 'Create an operator account (owner only)',
      body: {
        type: 'object', required: ['username', 'password', 'role'], additionalProperties: false,
        properties: { username: { type: 'string', minLength: 3, maxLength: 64 }, password: newPassword, role },
      },
      response: { 201: { ...operatorAccount, description: 'Created' }, ...errors(401, 403, 409, 413, 422) },
    },
    handler: async (request, reply) => reply.code(201).send(await createOperator(acting(s, request), principalOf(request).role, request.body)),
  });
  app.patch<{ Params: { operator_id: string }; Body: OperatorPatch }>('/operators/:operator_id', {
    schema: {
      operationId: 'updateOperator', tags: operatorTags, security: adminSecurity, summary: 'Change an operator’s role, password or disabled flag (owner only)',
      params: operatorParams,
      body: { type: 'object', additionalProperties: false, minProperties: 1, properties: { role, password: newPassword, disabled: { type: 'boolean' } } },
      response: { 200: { ...operatorAccount, description: 'The operator as changed' }, ...errors(401, 403, 404, 409, 413, 422) },
    },
    handler: async (request) => patchOperator(acting(s, request), principalOf(request).role, request.params.operator_id, request.body),
  });
  app.delete<{ Params: { operator_id: string } }>('/operators/:operator_id', {
    schema: {
      operationId: 'deleteOperator', tags: operatorTags, security: adminSecurity, summary: 'Delete an operator account (owner only)',
      params: operatorParams, response: { 204: { type: 'null', description: 'Deleted' }, ...errors(401, 403, 404, 409, 422) },
    },
    handler: async (request, reply: FastifyReply) => {
      await deleteOperator(acting(s, request), request.params.operator_id);
      return reply.code(204).send();
    },
  });
  app.post<{ Params: { operator_id: string } }>('/operators/:operator_id/reset_totp', {
    schema: {
      operationId: 'resetOperatorTotp', tags: operatorTags, security: adminSecurity, summary: 'Turn an operator’s two-factor authentication off and end their sessions (owner only)',
      params: operatorParams, response: { 200: { ...operatorAccount, description: 'The operator' }, ...errors(401, 403, 404, 422) },
    },
    handler: async (request) => resetOperatorTotp(acting(s, request), request.params.operator_id),
  });
}
