/**
 * The catalogue of audited actions: every name an audit entry may carry,
 * grouped by family. `AdminWork.audit` (unit-of-work.ts) takes only these, so
 * a write cannot invent a name; tests and (next) the event outbox iterate the
 * list, so a new write cannot be missed by either.
 *
 * Spelling (docs/decisions.md, "Audit actions are one typed catalogue"): names
 * already stored stay as they are (`licenses.create` beside `license.delete`,
 * `keys.*`): the log is read and filtered by them. A NEW action is
 * `<family>.<verb>`: the family its neighbours already use if it has one,
 * otherwise the singular noun of what it changes; the verb in snake_case,
 * present tense (`operator.totp_enable`, `keys.forget_ended`).
 */
export const AUDIT_ACTIONS = [
  'app.create',
  'app.update',
  'app.rotate_secret',
  'app.delete',
  'licenses.create',
  'license.delete',
  'licenses.delete_unused',
  'ban.create',
  'ban.delete',
  'user.update',
  'user.reset_devices',
  'user.revoke_sessions',
  'user.delete',
  'seat.release',
  'template.create',
  'template.update',
  'template.apply',
  'template.delete',
  'entitlement.grant',
  'entitlement.revoke',
  'trial.reset',
  'variable.put',
  'variable.delete',
  'file.create',
  'file.replace_content',
  'file.update',
  'file.delete',
  'keys.root_set',
  'keys.root_replace',
  'keys.create',
  'keys.certify',
  'keys.retire',
  'keys.forget_ended',
  'admin_token.create',
  'admin_token.update',
  'admin_token.revoke',
  'operator.create',
  'operator.update',
  'operator.delete',
  'operator.totp_reset',
  'operator.login',
  'operator.logout',
  'operator.totp_start',
  'operator.totp_enable',
  'operator.totp_disable',
  'webhook.create',
  'webhook.update',
  'webhook.delete',
  'webhook.rotate_secret',
  'webhook.test',
  'webhook.replay',
] as const;

/** One audited action's name. */
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

const known: ReadonlySet<string> = new Set(AUDIT_ACTIONS);

/** Whether a stored or asked-for name is one of the catalogue's (the log may hold names of older releases: they stay readable). */
export const isAuditAction = (name: string): name is AuditAction => known.has(name);
