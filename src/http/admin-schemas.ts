import { WEBHOOK_SCHEMAS } from './routes/admin/webhooks.js';
/**
 * The named schemas of the admin API (components of the OpenAPI document), registered by
 * server.ts through registerSchemas. Request limits the domain checks are stated document-only
 * (see `documented` in schemas.ts); numbers are imported where the domain exports them.
 */
import { BAN_TYPES } from '../domain/admin/bans.js';
import { VARIABLE_NAME, VARIABLE_VALUE_MAX } from '../domain/admin/content.js';
import { documented, nullableTimestamp, ref, text, timestamp, uuid } from './schemas.js';

/** Application names and admin token names: 1 to 128 characters (src/domain/admin/apps.ts, tokens.ts check them). */
export const NAME_RULE = { min: 1, max: 128 };
/** File names: 1 to 255 characters, no path separator (src/domain/admin/content.ts). */
export const FILE_NAME = documented(text({ min: 1, max: 255 }, 'The file name clients see; no / or \\, and not . or ..'), { pattern: '^[^/\\\\]+$' });
/** Media types as src/domain/admin/content.ts accepts them. */
export const MIME_TYPE = documented({ type: 'string', description: 'A media type such as application/octet-stream' } as const, {
  pattern: '^[a-zA-Z0-9][a-zA-Z0-9!#$&^_.+-]{0,126}/[a-zA-Z0-9][a-zA-Z0-9!#$&^_.+-]{0,126}$',
});
export const variableName = text(VARIABLE_NAME, 'The variable name');
export const variableValue = documented({ type: 'string' } as const, { maxLength: VARIABLE_VALUE_MAX });

export const appSettings = {
  device_auth_enabled: { type: 'boolean' },
  anonymous_access_allowed: { type: 'boolean' },
  max_devices_per_user: { type: 'integer', minimum: 1, maximum: 1000 },
  session_ttl_seconds: { type: 'integer', minimum: 60, maximum: 31_536_000 },
  password_min_length: { type: 'integer', minimum: 1, maximum: 1024 },
  registration_open: { type: 'boolean' },
  max_sessions_per_user: { type: 'integer', minimum: 0, maximum: 10_000, description: 'Live sessions per user; a new login ends the oldest beyond it (0: no cap)' },
  rate_failures_per_identity: { type: 'integer', minimum: 1, maximum: 1_000_000, description: 'Failed credential attempts per (username, client address) or per license code per window; a username across all addresses may fail 10 times this' },
  rate_failures_per_identity_window_seconds: { type: 'integer', minimum: 1, maximum: 86_400 },
  rate_failures_per_ip: { type: 'integer', minimum: 1, maximum: 1_000_000, description: 'Failed credential attempts per client IP per window' },
  rate_failures_per_ip_window_seconds: { type: 'integer', minimum: 1, maximum: 86_400 },
  rate_signups_per_ip: { type: 'integer', minimum: 1, maximum: 1_000_000, description: 'Sign-ups per client IP per window' },
  rate_signups_per_ip_window_seconds: { type: 'integer', minimum: 1, maximum: 86_400 },
  rate_signups_per_app: { type: 'integer', minimum: 0, maximum: 100_000_000, description: 'Sign-ups per app per window; 0 for no app-wide cap' },
  rate_signups_per_app_window_seconds: { type: 'integer', minimum: 1, maximum: 86_400 },
  signatures: { type: 'string', enum: ['optional', 'required'], description: 'required: a client request without Tollgate-Nonce is 422 nonce_required (docs/signing.md)' },
  offline_grace_seconds: { type: 'integer', minimum: 0, maximum: 31_536_000, description: 'How long a lease keeps a client working offline (and its runtime budget); 0: no leases' },
  lease_renew_seconds: { type: 'integer', minimum: 60, maximum: 31_536_000, description: 'A client renews its lease online after this many seconds; at most offline_grace_seconds while leases are on (422 naming both otherwise)' },
  max_seats: { type: ['integer', 'null'], minimum: 1, maximum: 100_000, description: 'Floating seats: devices of one user running at once (POST /seats); null: no seats (a license template may still set them)' },
  heartbeat_seconds: { type: 'integer', minimum: 10, maximum: 86_400, description: 'A seat must be renewed (POST /seats/heartbeat) within this many seconds, plus seat_grace_seconds; a template may set its own' },
  seat_grace_seconds: { type: 'integer', minimum: 0, maximum: 86_400, description: 'How late a heartbeat may be before its seat is dead and its place free' },
  device_reset_cooldown_seconds: { type: 'integer', minimum: 0, maximum: 31_536_000, description: 'Users reset their own devices (POST /devices/reset) at most once per this many seconds; 0: self-reset off' },
  device_resets_per_year: { type: ['integer', 'null'], minimum: 1, maximum: 1000, description: 'At most this many self-resets by one user in any 365 days; null: no yearly cap' },
  trial_minutes: { type: 'integer', minimum: 0, maximum: 5_256_000, description: 'How long a trial (POST /trial) runs; 0: no trials' },
  trial_entitlements: documented({ type: 'array', items: { type: 'string' }, maxItems: 100, description: 'Entitlement codes a trial grants (^[a-z0-9][a-z0-9._-]{0,63}$); answered sorted, once each' }, { items: { type: 'string', pattern: '^[a-z0-9][a-z0-9._-]{0,63}$' } }),
  trial_blocked_domains: documented({ type: 'array', items: { type: 'string' }, maxItems: 10_000, description: 'Email domains refused for trials (disposable addresses); lower-cased, answered sorted' }, { items: { type: 'string', maxLength: 253 } }),
} as const;

const appProperties = { id: uuid, name: { type: 'string' }, api_key: { type: 'string' }, ...appSettings, created_at: timestamp, updated_at: timestamp } as const;
const appRequired = ['id', 'name', 'api_key', ...Object.keys(appSettings), 'created_at', 'updated_at'];

const app = { $id: 'App', type: 'object', required: appRequired, properties: appProperties } as const;
const appWithSecret = {
  $id: 'AppWithSecret',
  description: 'An application as created: the only answer that shows its API secret',
  type: 'object',
  required: [...appRequired, 'api_secret'],
  properties: { ...appProperties, api_secret: { type: 'string' } },
} as const;
const appSecret = { $id: 'AppSecret', type: 'object', required: ['api_secret'], properties: { api_secret: { type: 'string' } } } as const;

const license = {
  $id: 'License',
  type: 'object',
  required: [
    'id', 'code', 'minutes', 'grants_lifetime_access', 'revokes_lifetime_access', 'note', 'expires_at', 'created_at', 'used_at', 'used_by_user_id',
    'template_id', 'entitlements', 'max_devices', 'max_seats', 'heartbeat_seconds',
  ],
  properties: {
    id: uuid, code: { type: 'string' }, minutes: { type: ['integer', 'null'] }, grants_lifetime_access: { type: 'boolean' },
    revokes_lifetime_access: { type: 'boolean' }, note: { type: ['string', 'null'] }, expires_at: nullableTimestamp, created_at: timestamp,
    used_at: nullableTimestamp, used_by_user_id: { type: ['string', 'null'] },
    template_id: { type: ['string', 'null'], description: 'The template the license was made from (null: made with minutes/lifetime directly, or the template was deleted)' },
    entitlements: { type: 'array', items: { type: 'string' }, description: 'Granted on redemption (copied from the template)' },
    max_devices: { type: ['integer', 'null'], description: 'Device limit while the user holds it (copied from the template)' },
    max_seats: { type: ['integer', 'null'] }, heartbeat_seconds: { type: ['integer', 'null'] },
  },
} as const;
const deletedLicenses = { $id: 'DeletedLicenses', type: 'object', required: ['deleted'], properties: { deleted: { type: 'integer', minimum: 0 } } } as const;
const licenseBatch = { $id: 'LicenseBatch', type: 'object', required: ['licenses'], properties: { licenses: { type: 'array', items: ref('License') } } } as const;

const variable = {
  $id: 'Variable', type: 'object', required: ['name', 'value', 'updated_at'],
  properties: { name: { type: 'string' }, value: { type: 'string' }, updated_at: timestamp },
} as const;
const storedFile = {
  $id: 'StoredFile',
  type: 'object',
  required: ['id', 'name', 'mime_type', 'is_encrypted', 'size', 'sha256', 'created_at', 'updated_at'],
  properties: {
    id: uuid, name: { type: 'string' }, mime_type: { type: 'string' }, is_encrypted: { type: 'boolean' }, size: { type: 'integer', minimum: 0 },
    sha256: { type: 'string', pattern: '^[0-9a-f]{64}$', description: 'Hex SHA-256 of the content; the download’s ETag' }, created_at: timestamp, updated_at: timestamp,
  },
} as const;

const ban = {
  $id: 'Ban',
  type: 'object',
  required: ['id', 'type', 'value', 'reason', 'expires_at', 'created_at'],
  properties: { id: uuid, type: { type: 'string', enum: BAN_TYPES }, value: { type: 'string' }, reason: { type: ['string', 'null'] }, expires_at: nullableTimestamp, created_at: timestamp },
} as const;

const userSummaryProperties = {
  id: uuid, username: { type: 'string' }, membership: ref('Membership'), created_at: timestamp, password_set: { type: 'boolean' }, device_count: { type: 'integer', minimum: 0 },
} as const;
const userSummaryRequired = ['id', 'username', 'membership', 'created_at', 'password_set', 'device_count'];
const userSummary = { $id: 'UserSummary', type: 'object', required: userSummaryRequired, properties: userSummaryProperties } as const;
const nullableString = { type: ['string', 'null'] } as const;
const userDetail = {
  $id: 'UserDetail',
  type: 'object',
  required: [...userSummaryRequired, 'devices', 'ips', 'activations', 'sessions', 'signup_license_id', 'entitlement_grants', 'seats', 'self_resets'],
  properties: {
    ...userSummaryProperties,
    signup_license_id: nullableString,
    devices: { type: 'array', items: { type: 'object', properties: { id: uuid, hardware_id: { type: 'string' }, created_at: timestamp, last_seen_at: timestamp } } },
    ips: { type: 'array', items: { type: 'object', properties: { ip: { type: 'string' }, first_seen_at: timestamp, last_seen_at: timestamp, count: { type: 'integer' } } } },
    activations: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          id: uuid, license_id: uuid, occurred_at: timestamp, minutes: { type: ['integer', 'null'] },
          grants_lifetime_access: { type: 'boolean' }, revokes_lifetime_access: { type: 'boolean' },
        },
      },
    },
    sessions: { type: 'array', items: { type: 'object', properties: { id: uuid, hardware_id: nullableString, ip: nullableString, created_at: timestamp, expires_at: timestamp } } },
    entitlement_grants: {
      type: 'array',
      description: 'Every entitlement grant of the user, live or ended: from a redeemed license, a trial or the operator',
      items: {
        type: 'object',
        properties: {
          id: uuid, code: { type: 'string' }, source: { type: 'string', enum: ['license', 'operator', 'trial'] }, license_id: nullableString,
          until: nullableTimestamp, live: { type: 'boolean' }, created_at: timestamp,
        },
      },
    },
    seats: { type: 'array', description: 'Live floating seats (issue 25)', items: ref('Seat') },
    self_resets: {
      type: 'object', required: ['count', 'last_at'], description: 'The user’s own device resets (POST /devices/reset); the operator’s are not counted',
      properties: { count: { type: 'integer', minimum: 0 }, last_at: nullableTimestamp },
    },
  },
} as const;
const seat = {
  $id: 'Seat', type: 'object', required: ['id', 'user_id', 'hardware_id', 'checked_out_at', 'last_heartbeat_at', 'expires_at'],
  properties: { id: uuid, user_id: uuid, hardware_id: { type: 'string' }, checked_out_at: timestamp, last_heartbeat_at: timestamp, expires_at: timestamp },
} as const;
const seatList = {
  $id: 'SeatList', type: 'object', required: ['items', 'total'],
  properties: { items: { type: 'array', items: ref('Seat') }, total: { type: 'integer', minimum: 0, description: 'Every live seat, beyond the page too' } },
} as const;
const count = { type: 'integer', minimum: 0 } as const;
const activityStats = {
  $id: 'ActivityStats',
  description: 'An app’s activity per bucket in [from, to) (every bucket, zeros included; up to a few seconds behind), and its counts now',
  type: 'object',
  required: ['bucket', 'from', 'to', 'series', 'active_memberships', 'running_trials', 'licenses', 'top_ban_hits'],
  properties: {
    bucket: { type: 'string', enum: ['hour', 'day'] },
    from: timestamp,
    to: timestamp,
    series: {
      type: 'array',
      items: {
        type: 'object', required: ['at', 'sign_ups', 'logins', 'activations', 'failed_logins', 'trials'],
        properties: {
          at: { ...timestamp, description: 'Start of the bucket (UTC)' }, sign_ups: count, logins: count, activations: count, failed_logins: count,
          trials: { ...count, description: 'Trials started in the bucket (POST /trial; read from the trials themselves, not the flushed counters)' },
        },
      },
    },
    active_memberships: { ...count, description: 'Users with lifetime access or an expiry in the future' },
    running_trials: { ...count, description: 'Users on a running trial now' },
    licenses: { type: 'object', required: ['used', 'unused'], properties: { used: count, unused: count } },
    top_ban_hits: {
      type: 'array', description: 'The bans (still in place) that refused most requests in [from, to), at most 10',
      items: {
        type: 'object', required: ['ban_id', 'type', 'value', 'hits'],
        properties: { ban_id: uuid, type: { type: 'string', enum: BAN_TYPES }, value: { type: 'string' }, hits: count },
      },
    },
  },
} as const;
const revokedSessions = { $id: 'RevokedSessions', type: 'object', required: ['revoked'], properties: { revoked: { type: 'integer', minimum: 0 } } } as const;

const tokenProperties = { id: uuid, name: { type: 'string' }, role: { type: 'string', enum: ['owner', 'admin', 'support', 'viewer'] }, created_at: timestamp, last_used_at: nullableTimestamp, revoked_at: nullableTimestamp,
  operator_id: { type: ['string', 'null'], format: 'uuid', description: 'The operator who minted it (their tokens are revoked when they are deleted or disabled, capped when demoted); null when TOLLGATE_ADMIN_TOKEN, the local CLI or the first start did' },
  operator_username: { type: ['string', 'null'], description: 'That operator’s username when the token was minted (kept after the operator is deleted)' },
} as const;
const tokenRequired = ['id', 'name', 'role', 'created_at', 'last_used_at', 'revoked_at', 'operator_id', 'operator_username'];
const adminToken = { $id: 'AdminToken', type: 'object', required: tokenRequired, properties: tokenProperties } as const;
const adminTokenWithSecret = {
  $id: 'AdminTokenWithSecret',
  description: 'An admin token as created: the only answer that shows the token',
  type: 'object',
  required: [...tokenRequired, 'token'],
  properties: { ...tokenProperties, token: { type: 'string' } },
} as const;
const auditEvent = {
  $id: 'AuditEvent',
  type: 'object',
  required: ['id', 'at', 'actor', 'action', 'app_id', 'target_id', 'details'],
  properties: {
    id: uuid, at: timestamp, actor: { type: 'string' }, action: { type: 'string' }, app_id: { type: ['string', 'null'] },
    target_id: { type: ['string', 'null'] }, details: { type: 'object', additionalProperties: true },
  },
} as const;

const nullableInt = { type: ['integer', 'null'] } as const;
/** Template fields as the API takes them (create, change); ranges checked by Fastify, the rest by the domain. */
export const templateFields = {
  name: text(NAME_RULE, 'Unique per application'),
  minutes: { type: ['integer', 'null'], minimum: 1, maximum: 1_000_000_000, description: 'Minutes a license adds; required unless lifetime. They stack on the membership; each entitlement code, and the limits, gain them from that code’s (those limits’) own live end, never from the membership’s end' },
  lifetime: { type: 'boolean', description: 'Licenses grant lifetime access (then no minutes)' },
  entitlements: documented({ type: 'array', items: { type: 'string' }, maxItems: 100, description: 'Codes a redeemed license grants (^[a-z0-9][a-z0-9._-]{0,63}$); answered sorted, once each' }, { items: { type: 'string', pattern: '^[a-z0-9][a-z0-9._-]{0,63}$' } }),
  max_devices: { type: ['integer', 'null'], minimum: 1, maximum: 1000, description: 'Device limit for users holding it (overrides max_devices_per_user); null: the app’s' },
  redeem_within_minutes: { type: ['integer', 'null'], minimum: 1, maximum: 1_000_000_000, description: 'An unredeemed code made from it expires this long after creation; null: never' },
  max_seats: { type: ['integer', 'null'], minimum: 1, maximum: 100_000, description: 'Concurrent seats for users holding it (issue 25); null: no seats' },
  heartbeat_seconds: { type: ['integer', 'null'], minimum: 10, maximum: 86_400, description: 'Seat heartbeat interval (issue 25); null: the server’s default' },
} as const;
const template = {
  $id: 'Template',
  type: 'object',
  required: ['id', 'name', 'minutes', 'lifetime', 'entitlements', 'max_devices', 'redeem_within_minutes', 'max_seats', 'heartbeat_seconds', 'created_at', 'updated_at'],
  properties: {
    id: uuid, name: { type: 'string' }, minutes: nullableInt, lifetime: { type: 'boolean' }, entitlements: { type: 'array', items: { type: 'string' } },
    max_devices: nullableInt, redeem_within_minutes: nullableInt, max_seats: nullableInt, heartbeat_seconds: nullableInt, created_at: timestamp, updated_at: timestamp,
  },
} as const;
const templateApplied = {
  $id: 'TemplateApplied', type: 'object', required: ['unused_licenses', 'used_licenses', 'users'],
  properties: { unused_licenses: count, used_licenses: count, users: { ...count, description: 'Users whose grants were rewritten' } },
} as const;
const entitlementGrant = {
  $id: 'EntitlementGrant', type: 'object', required: ['id', 'code', 'until'], properties: { id: uuid, code: { type: 'string' }, until: nullableTimestamp },
} as const;
const entitlementRevoked = { $id: 'EntitlementRevoked', type: 'object', required: ['ended'], properties: { ended: { ...count, description: 'Live grants of the code that ended' } } } as const;
const trial = {
  $id: 'Trial',
  type: 'object',
  required: ['id', 'hwid_hash', 'email_key', 'user_id', 'started_at', 'ends_at', 'converted_at', 'status'],
  properties: {
    id: uuid, hwid_hash: { type: 'string', description: 'Hex SHA-256 of <app_id>\\n<hardware id>: the only form the device is kept in' },
    email_key: { type: ['string', 'null'], description: 'The normalised email it was started with' }, user_id: { type: ['string', 'null'], description: 'null once the trial user was deleted' },
    started_at: timestamp, ends_at: timestamp, converted_at: nullableTimestamp, status: { type: 'string', enum: ['running', 'ended', 'converted'] },
  },
} as const;

/** A page of a list: `next_cursor` is null on the last page. Named `<Item>Page`. `counted`: the list takes ?with_total=. */
function pageOf(item: string, counted = true) {
  return {
    $id: `${item}Page`,
    type: 'object',
    required: ['items', 'next_cursor'],
    properties: {
      items: { type: 'array', items: ref(item) },
      next_cursor: { type: ['string', 'null'], description: 'Pass as ?cursor= for the next page; null on the last' },
      ...(counted && { total: { type: 'integer', minimum: 0, description: 'With ?with_total=true only: every item matching the filters, on all pages' } }),
    },
  } as const;
}
/** Lists that are never paged (variables, files): one page, `next_cursor` always null. */
function listOf(item: string) {
  return {
    $id: `${item}List`,
    type: 'object',
    required: ['items', 'next_cursor'],
    properties: { items: { type: 'array', items: ref(item) }, next_cursor: { type: 'null' } },
  } as const;
}

export const ADMIN_SCHEMAS: readonly object[] = [
  app, appWithSecret, appSecret, license, licenseBatch, deletedLicenses, activityStats, variable, storedFile, ban, userSummary, userDetail, seat, seatList, revokedSessions,
  adminToken, adminTokenWithSecret, auditEvent, template, templateApplied, entitlementGrant, entitlementRevoked, trial,
  pageOf('Template', false), pageOf('Trial'), pageOf('App', false), pageOf('License'), pageOf('Ban'), pageOf('UserSummary'), pageOf('AdminToken'), pageOf('AuditEvent'),
  listOf('Variable'), listOf('StoredFile'), ...WEBHOOK_SCHEMAS,
];
