/**
 * JSON schemas shared by routes; the OpenAPI document is generated from these (src/http/openapi.ts).
 * Named schemas are registered once with `app.addSchema` and referenced as `ref('Name')`, so the
 * document holds one `#/components/schemas/Name` instead of an inline copy per route.
 */
import type { FastifyInstance } from 'fastify';
import { HARDWARE_ID, LICENSE_CODE, PASSWORD_MAX_BYTES, USERNAME, type TextRule } from '../domain/validation.js';
import { ERRORS } from './errors.js';

/** A reference to a named schema (a component of the document). */
export const ref = <N extends string>(name: N) => ({ $ref: `${name}#` }) as const;

export const timestamp = { type: 'string', format: 'date-time' } as const;
export const uuid = { type: 'string', format: 'uuid' } as const;
export const nullableTimestamp = { type: ['string', 'null'], format: 'date-time' } as const;

/**
 * Constraints shown in the document but not checked by Fastify's validator. The domain checks them
 * (src/domain/validation.ts, after NFKC normalisation, with its own 422 messages); validating them
 * here too would change those answers. `merge` adds keywords to the node, `replace` swaps it.
 */
export const DOC_ONLY = 'x-tollgate-document';
export function documented<T extends object>(schema: T, merge: object): T {
  return { ...schema, [DOC_ONLY]: { merge } };
}
export function documentedAs<T extends object>(schema: T, replace: object): T {
  return { ...schema, [DOC_ONLY]: { replace } };
}

/** A text rule of the domain as document-only length limits (and no whitespace where the rule says so). */
export function text(rule: TextRule, description?: string) {
  return documented(
    { type: 'string', ...(description && { description }) } as const,
    { minLength: rule.min, maxLength: rule.max, ...(rule.noWhitespace && { pattern: '^\\S+$' }) },
  );
}

export const username = text(USERNAME, `${USERNAME.min} to ${USERNAME.max} characters after NFKC normalisation, printable, no whitespace; unique per application regardless of case`);
export const licenseCode = text(LICENSE_CODE, 'A license code');
export const hardwareId = text(HARDWARE_ID, 'Hardware ID of this device; required when the application enables device authentication');
/** Passwords are limited in UTF-8 bytes, which no JSON Schema keyword counts: maxLength is the code-point bound it implies. */
export const password = (description: string) => documented({ type: 'string', description: `${description} At most ${PASSWORD_MAX_BYTES} UTF-8 bytes.` } as const, { maxLength: PASSWORD_MAX_BYTES });

const fieldError = {
  $id: 'FieldError',
  type: 'object',
  required: ['field', 'message'],
  properties: {
    field: { type: 'string', description: 'Where the problem is: body.credentials.username, querystring.limit, header.x-hardware-id…' },
    message: { type: 'string' },
  },
} as const;

/** Every answer that is not a 2xx (but /readyz's 503). `code` lists the one table of src/http/errors.ts, so none can be missing. */
const errorBody = {
  $id: 'ErrorBody',
  type: 'object',
  required: ['detail', 'code'],
  properties: {
    detail: { type: 'string', description: 'A sentence for people; may change between releases' },
    code: { type: 'string', enum: Object.keys(ERRORS), description: 'A stable machine-readable code' },
    errors: { type: 'array', items: ref('FieldError'), description: 'Only on 422: every field at fault' },
    ban_reason: { type: 'string', description: "Only on a signed 403 banned (the request sent Tollgate-Nonce), when the operator gave the ban a reason: that reason" },
    in_use: { type: 'integer', minimum: 0, description: 'Only on 409 seats_exhausted: seats in use' },
    max: { type: 'integer', minimum: 0, description: 'Only on 409 seats_exhausted: the seats this user may hold at once' },
    next_free_at: { type: 'string', format: 'date-time', description: 'Only on 409 seats_exhausted: when the soonest-ending live seat dies if not renewed (a release may free one sooner)' },
    retry_after: { type: 'integer', minimum: 0, description: 'Only on 429 reset_cooldown: seconds until a self-reset is allowed (also the Retry-After header)' },
    last_reset_at: { type: 'string', format: 'date-time', description: 'Only on 429 reset_cooldown: the last self-reset' },
    user_id: { type: 'string', format: 'uuid', description: 'Only on a signed refusal about a user the credentials identified (membership_inactive, device_mismatch, device_limit, a user or license ban): that user, so a client drops only that user\'s offline lease' },
  },
} as const;

/**
 * Response entries for the given error statuses, each in the error shape. Every route reads the
 * database, so every route may answer 503 service_unavailable (with Retry-After) while it is down.
 */
export function errors(...statuses: number[]): Record<number, { $ref: string; description: string }> {
  const out: Record<number, { $ref: string; description: string }> = {};
  for (const status of [...statuses, 503]) out[status] = { ...ref('ErrorBody'), description: DESCRIPTIONS[status] ?? 'Error' };
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

/**
 * `entitlements` is in every answer, but is stated required in the document only: the serializer writes
 * required keys first, and the contract puts it last, after the optional is_trial.
 */
const membership = documented({
  $id: 'Membership',
  type: 'object',
  required: ['is_active', 'is_lifetime', 'active_until'],
  properties: {
    is_active: { type: 'boolean' },
    is_lifetime: { type: 'boolean' },
    active_until: nullableTimestamp,
    is_trial: { type: 'boolean', enum: [true], description: 'Present (true) only while the user is on a running trial (POST /trial)' },
    entitlements: { type: 'array', items: { type: 'string' }, description: 'The entitlement codes the user holds now, sorted by code point, without duplicates' },
  },
} as const, { required: ['is_active', 'is_lifetime', 'active_until', 'entitlements'] });
/** Inline form for the admin views, which extend it. */
export const membershipSchema = ref('Membership');

const user = {
  $id: 'User',
  type: 'object',
  required: ['id', 'username', 'membership'],
  properties: { id: uuid, username: { type: 'string' }, membership: ref('Membership') },
} as const;

const application = {
  $id: 'Application',
  type: 'object',
  required: ['id', 'name', 'variables', 'files'],
  properties: {
    id: uuid,
    name: { type: 'string' },
    variables: { type: 'array', items: ref('ApplicationVariable') },
    files: { type: 'array', items: ref('ApplicationFile') },
  },
} as const;
const applicationVariable = {
  $id: 'ApplicationVariable', type: 'object', required: ['name', 'value'], properties: { name: { type: 'string' }, value: { type: 'string' } },
} as const;
const applicationFile = {
  $id: 'ApplicationFile',
  type: 'object',
  required: ['id', 'name', 'mime_type', 'is_encrypted'],
  properties: { id: uuid, name: { type: 'string' }, mime_type: { type: 'string' }, is_encrypted: { type: 'boolean' } },
} as const;

const appContext = {
  $id: 'AppContext',
  type: 'object',
  required: ['application', 'user', 'server_time'],
  properties: {
    application: ref('Application'),
    user: { anyOf: [ref('User'), { type: 'null' }], description: 'null for an anonymous request (when the application allows it)' },
    server_time: timestamp,
  },
} as const;

const activation = {
  $id: 'Activation',
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

const session = {
  $id: 'Session', type: 'object', required: ['session_token'],
  properties: { session_token: { type: 'string', description: 'Send as Authorization: Bearer <session_token> (the sessionToken scheme)' } },
} as const;

const trialSession = {
  $id: 'TrialSession', type: 'object', required: ['session_token', 'user'],
  properties: { session_token: { type: 'string', description: 'Send as Authorization: Bearer <session_token>' }, user: ref('User') },
} as const;

/** POST /redeem (issue 24): the activation as /activate_license answers it, and the user after it. */
const redemption = {
  $id: 'Redemption', type: 'object', required: ['activation', 'user'],
  properties: { activation: ref('Activation'), user: ref('User') },
} as const;

/**
 * The two forms of login credentials: the document states them as a oneOf (so both complete forms at
 * once match twice and are refused); the domain checks them, and also refuses a code beside a lone username.
 */
const passwordCredentials = {
  $id: 'PasswordCredentials',
  type: 'object',
  required: ['username', 'password'],
  properties: { username, password: password('The user’s password.') },
} as const;
const codeCredentials = {
  $id: 'CodeCredentials',
  type: 'object',
  required: ['code'],
  properties: { code: licenseCode },
} as const;

/** POST /seats and POST /seats/heartbeat (issue 25). */
const seatCheckout = {
  $id: 'SeatCheckout',
  type: 'object',
  required: ['seat', 'seats', 'server_time'],
  properties: {
    seat: {
      type: 'object',
      required: ['id', 'checked_out_at', 'expires_at', 'heartbeat_seconds'],
      properties: {
        id: { type: 'string', format: 'uuid', description: 'The same while this device holds the seat; a new one after it died or was released' },
        checked_out_at: timestamp,
        expires_at: { ...timestamp, description: 'The seat is dead from then on unless a heartbeat (or a lease) extends it: the last heartbeat plus heartbeat_seconds plus the operator\'s grace, or a lease\'s exp' },
        heartbeat_seconds: { type: 'integer', minimum: 1, description: 'Send POST /seats/heartbeat well within this interval' },
      },
    },
    seats: { type: 'object', required: ['max', 'in_use'], properties: { max: { type: 'integer', minimum: 1 }, in_use: { type: 'integer', minimum: 0 } } },
    server_time: timestamp,
  },
} as const;
const seatRelease = {
  $id: 'SeatRelease', type: 'object', required: ['released', 'server_time'],
  properties: {
    released: { type: 'boolean', description: 'false when this device held no live seat, or when an offline lease holds it (then held_until is present)' },
    held_until: {
      ...timestamp,
      description: 'Only when an offline lease holds the seat: the seat stays taken until the lease ends (its exp), whatever the device says; its heartbeat part ended now',
    },
    server_time: timestamp,
  },
} as const;
const deviceReset = {
  $id: 'DeviceReset', type: 'object', required: ['reset_at', 'next_reset_at', 'devices_removed', 'server_time'],
  properties: {
    reset_at: timestamp,
    next_reset_at: { ...nullableTimestamp, description: 'The earliest time of the next self-reset (cooldown and yearly cap)' },
    devices_removed: { type: 'integer', minimum: 0 },
    server_time: timestamp,
  },
} as const;

/** Every named schema of the client API, registered by registerSchemas. */
const CLIENT_SCHEMAS = [
  fieldError, errorBody, membership, user, applicationVariable, applicationFile, application, appContext, activation, session, trialSession, redemption,
  passwordCredentials, codeCredentials, seatCheckout, seatRelease, deviceReset,
];

/** Registers the named schemas (before any route refers to them) so responses serialize through them and the document names them. */
export function registerSchemas(app: FastifyInstance, more: readonly object[] = []): void {
  for (const schema of [...CLIENT_SCHEMAS, ...more]) app.addSchema(schema);
}

declare module 'fastify' {
  interface FastifySchema {
    /** Headers shown in the OpenAPI document but not validated by Fastify (see openapi.ts). */
    documentedHeaders?: unknown;
    /** A request body shown in the document but not parsed by Fastify's validator (raw uploads, streamed by the route). */
    documentedBody?: unknown;
    /** Response headers per status, for the document (e.g. a download's Content-Range). */
    documentedResponseHeaders?: Record<number, readonly string[]>;
  }
}

/**
 * Security requirements (alternatives; each holds the application credentials, which every client
 * operation requires). The schemes themselves are defined in openapi.ts.
 */
type Security = Record<string, string[]>[];
export const appSecurity: Security = [{ appKey: [], appSecret: [] }];
/** A user credential: a session token, a license code, or the legacy username and password; or none when the app allows anonymous access. */
export const userSecurity: Security = [
  { appKey: [], appSecret: [], sessionToken: [] },
  { appKey: [], appSecret: [], licenseCode: [] },
  { appKey: [], appSecret: [], legacyUsername: [], legacyPassword: [] },
  { appKey: [], appSecret: [] },
];
export const sessionSecurity: Security = [{ appKey: [], appSecret: [], sessionToken: [] }];
/** Health and readiness: no credentials (an explicit empty list, so the document says so rather than forgetting). */
export const noSecurity: Security = [];

/** Application headers of SPEC 5.1: in the document they are the appKey and appSecret security schemes. */
export const appHeaders = { type: 'object', properties: {} } as const;

/** Headers of user authentication besides the credentials (which are security schemes): the device's hardware id. */
export const userAuthHeaders = {
  type: 'object',
  properties: { 'x-hardware-id': hardwareId },
} as const;
