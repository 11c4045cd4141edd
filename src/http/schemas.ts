/** JSON schemas shared by routes; the OpenAPI document is generated from these. */
export const errorSchema = {
  type: 'object',
  required: ['detail', 'code'],
  properties: {
    detail: { type: 'string' },
    code: { type: 'string' },
    errors: {
      type: 'array',
      items: { type: 'object', required: ['field', 'message'], properties: { field: { type: 'string' }, message: { type: 'string' } } },
    },
  },
} as const;

/**
 * Response entries for the given error statuses, each in the error shape. Every route reads the
 * database, so every route may answer 503 service_unavailable (with Retry-After) while it is down.
 */
export function errors(...statuses: number[]): Record<number, typeof errorSchema & { description: string }> {
  const out: Record<number, typeof errorSchema & { description: string }> = {};
  for (const status of [...statuses, 503]) out[status] = { ...errorSchema, description: DESCRIPTIONS[status] ?? 'Error' };
  return out;
}

const DESCRIPTIONS: Record<number, string> = {
  401: 'Authentication failed',
  403: 'Forbidden: banned, inactive membership or closed registration',
  404: 'Not found',
  409: 'Conflict',
  413: 'Payload too large',
  416: 'Range not satisfiable',
  422: 'Validation error',
  429: 'Rate limited',
  503: 'Service unavailable: the database is down, timed out or full; retry after Retry-After seconds',
};

export const timestamp = { type: 'string', format: 'date-time' } as const;
export const uuid = { type: 'string', format: 'uuid' } as const;
const nullableTimestamp = { type: ['string', 'null'], format: 'date-time' } as const;

export const membershipSchema = {
  type: 'object',
  required: ['is_active', 'is_lifetime', 'active_until'],
  properties: { is_active: { type: 'boolean' }, is_lifetime: { type: 'boolean' }, active_until: nullableTimestamp },
} as const;

export const userSchema = {
  type: 'object',
  required: ['id', 'username', 'membership'],
  properties: { id: uuid, username: { type: 'string' }, membership: membershipSchema },
} as const;

export const applicationSchema = {
  type: 'object',
  required: ['id', 'name', 'variables', 'files'],
  properties: {
    id: uuid,
    name: { type: 'string' },
    variables: {
      type: 'array',
      items: { type: 'object', required: ['name', 'value'], properties: { name: { type: 'string' }, value: { type: 'string' } } },
    },
    files: {
      type: 'array',
      items: {
        type: 'object',
        required: ['id', 'name', 'mime_type', 'is_encrypted'],
        properties: { id: uuid, name: { type: 'string' }, mime_type: { type: 'string' }, is_encrypted: { type: 'boolean' } },
      },
    },
  },
} as const;

export const activationSchema = {
  type: 'object',
  required: ['id', 'occurred_at', 'minutes', 'grants_lifetime_access', 'revokes_lifetime_access', 'license_id', 'type'],
  properties: {
    id: uuid,
    occurred_at: timestamp,
    minutes: { type: ['integer', 'null'] },
    grants_lifetime_access: { type: 'boolean' },
    revokes_lifetime_access: { type: 'boolean' },
    license_id: uuid,
    type: { type: 'string', enum: ['license'] },
  },
} as const;

declare module 'fastify' {
  interface FastifySchema {
    /** Headers shown in the OpenAPI document but not validated by Fastify (see server.ts). */
    documentedHeaders?: unknown;
  }
}

/** Application headers of SPEC 5.1, declared for the document; the onRequest hook enforces them (step 1). */
export const appHeaders = {
  type: 'object',
  properties: {
    'x-api-key': { type: 'string', description: "The application's API key" },
    'x-api-secret': { type: 'string', description: "The application's API secret" },
  },
} as const;

/** User-authentication headers of SPEC 5.2 (optional or required by the app's anonymous-access setting). */
export const userAuthHeaders = {
  type: 'object',
  properties: {
    ...appHeaders.properties,
    authorization: { type: 'string', description: 'Bearer <session_token>' },
    'x-api-license-code': { type: 'string', description: 'Legacy: a license code' },
    'x-api-username': { type: 'string', description: 'Legacy: username' },
    'x-api-password': { type: 'string', description: 'Legacy: password' },
    'x-hardware-id': { type: 'string', description: 'Hardware ID (device authentication)' },
  },
} as const;
