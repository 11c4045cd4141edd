import type { AuditAction } from '../admin/actions.js';

/**
 * The one catalogue of event types (STYLE.md: audit, outbox and webhooks share
 * it). Each type says what its `data` is; docs/webhooks.md and the OpenAPI
 * document are written from this list, and a test proves every one fires.
 */
export const EVENT_CATALOGUE = {
  'user.created': 'A user signed up (password or license code). data: the user, as the admin API shows it.',
  'user.updated': 'A user\'s membership or password changed (extended, lifetime granted or revoked, a license redeemed). data: the user after it.',
  'user.deleted': 'A user was deleted. data: the user before it.',
  'user.sessions_revoked': 'Every session of a user was ended by an operator. data: user_id, revoked.',
  'license.created': 'Licenses were created: one event per batch. data: licenses (each with its code, to the app\'s own standard endpoints only), count; for a sale also email (the buyer\'s, or null), order_id, order_ref, subscription_ref, provider.',
  'license.redeemed': 'A license was redeemed by a user (activation or license sign-up). data: license (without its code), user_id.',
  'license.revoked': 'A license was revoked (a refund or cancellation of the sale that made it). data: license (without its code), order_id, provider, reason (refund or cancellation), deleted (true: it was unredeemed and is gone), user_id (the redeemer whose grant was taken back, or null).',
  'license.deleted': 'Unused licenses were deleted. data: license_ids.',
  'license.extended': 'An unredeemed license sold with a subscription gained the minutes of a renewal. data: license (without its code), minutes_added, order_id, provider.',
  'device.registered': 'A device took a slot of a user. data: user_id, device_id, hardware_id.',
  'devices.reset': 'Every device of a user was freed (and their sessions and seats ended). data: user_id, devices_removed, seats_released, by (operator, or user for POST /devices/reset).',
  'seat.checked_out': 'A device took a floating seat of a user (POST /seats, or POST /lease under a seat policy). data: the seat.',
  'seat.released': 'A live seat was given back. data: the seat, by (user: DELETE /seats; operator; reset: a device reset).',
  'seat.expired': 'A seat died: its heartbeat (or lease) came too late; found by a checkout of the same user or the periodic sweep, once per seat. data: the seat.',
  'ban.created': 'A ban was created. data: the ban (a hardware id or code value as the admin API shows it).',
  'ban.deleted': 'A ban was lifted. data: the ban before it.',
  'app.created': 'An application was created. data: its settings (never its API secret).',
  'app.updated': 'An application\'s settings changed. data: its settings after the change.',
  'app.secret_rotated': 'An application\'s API secret was replaced. data: app_id (never the secret).',
  'app.deleted': 'An application and everything it owned was deleted. data: app_id, name.',
  'signing_key.created': 'A signing key was made, pending its certificate. data: the key (public half only).',
  'signing_key.rotated': 'A signing key was certified and signs answers from now on. data: the key (public half only).',
  'signing_key.retired': 'A signing key was retired and signs nothing again. data: the key (public half only).',
  'root_key.set': 'The application\'s root public key was set or replaced. data: public_key, retired (kids).',
  'variable.updated': 'A variable was created or changed. data: name, value.',
  'variable.deleted': 'A variable was deleted. data: name.',
  'file.created': 'A file was uploaded. data: the file\'s metadata.',
  'file.updated': 'A file was renamed or its content replaced. data: the file\'s metadata after it.',
  'file.deleted': 'A file was deleted. data: the file\'s metadata before it.',
  'membership.expired': 'A user\'s membership reached its end (found by a periodic sweep, once per expiry). data: user_id, expired_at.',
  'template.created': 'A license template was created. data: the template.',
  'template.updated': 'A license template was changed (future licenses only). data: the template after it.',
  'template.applied': 'A template\'s current effects were copied onto the licenses made from it. data: template, unused_licenses, used_licenses, users.',
  'template.deleted': 'A license template was deleted (its licenses keep what they copied). data: the template before it.',
  'entitlement.granted': 'The operator granted an entitlement to a user directly. data: user_id, code, until (null: never).',
  'entitlement.revoked': 'The operator ended every live grant of an entitlement of a user. data: user_id, code, ended.',
  'trial.started': 'A device started a trial (POST /trial): a trial user was created. data: the trial (id, email_key, user_id, started_at, ends_at, status; never the device or its hash).',
  'trial.converted': 'A trial user redeemed a license: the trial ended, the license applies. data: user_id, license_id, converted_at.',
  'webhook.test': 'Sent by "send a test event" to one endpoint only. data: endpoint_id, message.',
} as const;

export type EventType = keyof typeof EVENT_CATALOGUE;

export const EVENT_TYPES = Object.keys(EVENT_CATALOGUE) as EventType[];

export const isEventType = (t: string): t is EventType => Object.hasOwn(EVENT_CATALOGUE, t);

/**
 * Which event an audited admin action emits, where one does (the operators' own
 * records, tokens, sign-ins and operator accounts, are not app events). The write
 * that audits the action emits the event in the same unit of work.
 */
export const AUDIT_EVENTS: Readonly<Partial<Record<AuditAction, EventType>>> = {
  'app.create': 'app.created',
  'app.update': 'app.updated',
  'app.rotate_secret': 'app.secret_rotated',
  'app.delete': 'app.deleted',
  'licenses.create': 'license.created',
  'license.delete': 'license.deleted',
  'licenses.delete_unused': 'license.deleted',
  'user.update': 'user.updated',
  'user.reset_devices': 'devices.reset',
  'user.revoke_sessions': 'user.sessions_revoked',
  'user.delete': 'user.deleted',
  'seat.release': 'seat.released',
  'ban.create': 'ban.created',
  'ban.delete': 'ban.deleted',
  'keys.create': 'signing_key.created',
  'keys.certify': 'signing_key.rotated',
  'keys.retire': 'signing_key.retired',
  'keys.root_set': 'root_key.set',
  'keys.root_replace': 'root_key.set',
  'variable.put': 'variable.updated',
  'variable.delete': 'variable.deleted',
  'file.create': 'file.created',
  'file.replace_content': 'file.updated',
  'file.update': 'file.updated',
  'file.delete': 'file.deleted',
  'template.create': 'template.created',
  'template.update': 'template.updated',
  'template.apply': 'template.applied',
  'template.delete': 'template.deleted',
  'entitlement.grant': 'entitlement.granted',
  'entitlement.revoke': 'entitlement.revoked',
};

/** Keys an event's data may never carry at any depth: what would let a receiver act as the user, the app or the service. */
const SECRET_KEY = /^(password|secret|token|private_key|api_secret|session_token|code_hash)$|_(password|secret|token|hash|private_key)$/i;

/** A programming error (so the write rolls back), never a leak: an event's data names no secret. */
export function assertNoSecrets(type: string, value: unknown, path = 'data'): void {
  if (Array.isArray(value)) {
    value.forEach((v, i) => assertNoSecrets(type, v, `${path}[${i}]`));
  } else if (value !== null && typeof value === 'object') {
    for (const [key, v] of Object.entries(value)) {
      if (SECRET_KEY.test(key)) throw new Error(`event ${type}: ${path}.${key} looks like a secret and may not be emitted`);
      assertNoSecrets(type, v, `${path}.${key}`);
    }
  }
}
