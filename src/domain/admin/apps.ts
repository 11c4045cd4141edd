import { randomUUID } from 'node:crypto';
import type { ReadRepositories } from '../../store/index.js';
import type { Cursor } from '../../store/pagination.js';
import type { AppRecord, AppSettings, Page } from '../../store/records.js';
import { DomainError, validationError } from '../errors.js';
import { iso } from '../membership.js';
import type { Change, Services } from '../service-types.js';
import { digest, newToken } from '../tokens.js';
import { Checker } from '../validation.js';
import type { AppLists } from '../../store/repositories/apps.js';
import { checkCodes } from '../entitlements.js';
import { checkDomains } from '../trial-emails.js';
import { write } from '../unit-of-work.js';
import { diff, type AdminServices } from './audit.js';

/**
 * Every app setting: its API name, its record field and its default, in one
 * table, so the view, the input mapping and the defaults cannot drift apart.
 */
export const APP_SETTINGS = [
  ['device_auth_enabled', 'deviceAuthEnabled', false],
  ['anonymous_access_allowed', 'anonymousAccessAllowed', false],
  ['max_devices_per_user', 'maxDevicesPerUser', 1],
  ['session_ttl_seconds', 'sessionTtlSeconds', 86400],
  ['password_min_length', 'passwordMinLength', 8],
  ['registration_open', 'registrationOpen', true],
  ['max_sessions_per_user', 'maxSessionsPerUser', 0],
  ['rate_failures_per_identity', 'rateFailuresPerIdentity', 10],
  ['rate_failures_per_identity_window_seconds', 'rateFailuresPerIdentityWindowSeconds', 900],
  ['rate_failures_per_ip', 'rateFailuresPerIp', 30],
  ['rate_failures_per_ip_window_seconds', 'rateFailuresPerIpWindowSeconds', 300],
  ['rate_signups_per_ip', 'rateSignupsPerIp', 20],
  ['rate_signups_per_ip_window_seconds', 'rateSignupsPerIpWindowSeconds', 3600],
  ['rate_signups_per_app', 'rateSignupsPerApp', 0],
  ['rate_signups_per_app_window_seconds', 'rateSignupsPerAppWindowSeconds', 3600],
  ['offline_grace_seconds', 'offlineGraceSeconds', 0],
  ['lease_renew_seconds', 'leaseRenewSeconds', 3600],
  ['trial_minutes', 'trialMinutes', 0],
  ['max_seats', 'maxSeats', null],
  ['heartbeat_seconds', 'heartbeatSeconds', 300],
  ['seat_grace_seconds', 'seatGraceSeconds', 0],
  ['device_reset_cooldown_seconds', 'deviceResetCooldownSeconds', 604_800],
  ['device_resets_per_year', 'deviceResetsPerYear', null],
] as const satisfies readonly (readonly [string, keyof AppSettings, boolean | number | null])[];

type SettingName = (typeof APP_SETTINGS)[number][0];

/** `signatures` is the one setting that is a word: `optional` (default) or `required` (stored as a flag). */
export type AppSettingsInput = { name?: string; signatures?: 'optional' | 'required'; trial_entitlements?: string[]; trial_blocked_domains?: string[] } & { [K in SettingName]?: SettingValue<Extract<(typeof APP_SETTINGS)[number], readonly [K, unknown, unknown]>[2]> };

/** A setting's input type from its default: a flag, a number, or a number that may be unset (null). */
type SettingValue<D> = D extends boolean ? boolean : D extends null ? number | null : number;

export type AppView = { id: string; name: string; api_key: string; created_at: string; updated_at: string } & Required<Omit<AppSettingsInput, 'name'>>;

export function viewApp(app: AppRecord): AppView {
  const view: Record<string, unknown> = { id: app.id, name: app.name, api_key: app.apiKey };
  for (const [name, field] of APP_SETTINGS) view[name] = app[field];
  view.signatures = app.signaturesRequired ? 'required' : 'optional';
  view.trial_entitlements = [...app.trialEntitlements];
  view.trial_blocked_domains = [...app.trialBlockedDomains];
  view.created_at = iso(app.createdAt);
  view.updated_at = iso(app.updatedAt);
  return view as AppView;
}

function toSettings(input: AppSettingsInput): Partial<AppSettings & AppLists> & { name?: string } {
  const check = new Checker();
  if (input.name !== undefined) check.text('body.name', input.name, { min: 1, max: 128 });
  check.throwIfAny();
  const out: Record<string, unknown> = {};
  if (input.name !== undefined) out.name = input.name;
  for (const [name, field] of APP_SETTINGS) if (input[name] !== undefined) out[field] = input[name];
  if (input.signatures !== undefined) out.signaturesRequired = input.signatures === 'required';
  if (input.trial_entitlements !== undefined) out.trialEntitlements = checkCodes('body.trial_entitlements', input.trial_entitlements);
  if (input.trial_blocked_domains !== undefined) out.trialBlockedDomains = checkDomains('body.trial_blocked_domains', input.trial_blocked_domains);
  return out as Partial<AppSettings & AppLists> & { name?: string };
}

/**
 * A lease asks to be renewed at `iat + lease_renew_seconds` and stops working
 * offline at `iat + offline_grace_seconds`: a renewal point past the end is
 * never reached while the lease works, so the pair is refused (naming both)
 * rather than silently clamped. Equal is allowed (the default 3600 with a
 * grace of 3600, common in deployments). 0 (no leases) is free of the rule.
 */
function checkLeaseTiming(settings: Pick<AppSettings, 'offlineGraceSeconds' | 'leaseRenewSeconds'>): void {
  const { offlineGraceSeconds: grace, leaseRenewSeconds: renew } = settings;
  if (grace === 0 || renew <= grace) return;
  const message = `lease_renew_seconds (${renew}) must not exceed offline_grace_seconds (${grace}): a lease would ask for renewal only after it expired`;
  throw new DomainError('validation_error', `Invalid request: ${message}`, [
    { field: 'body.lease_renew_seconds', message: `must be at most offline_grace_seconds (${grace})` },
    { field: 'body.offline_grace_seconds', message: `must be at least lease_renew_seconds (${renew}), or 0 for no leases` },
  ]);
}

function defaults(): AppSettings & AppLists {
  const out: Record<string, unknown> = {};
  for (const [, field, value] of APP_SETTINGS) out[field] = value;
  out.signaturesRequired = false;
  out.trialEntitlements = [];
  out.trialBlockedDomains = [];
  return out as unknown as AppSettings & AppLists;
}

/** Creates an app; the API secret is in this answer and nowhere else, ever. */
export async function createApp(s: AdminServices, input: AppSettingsInput & { name: string }): Promise<AppView & { api_secret: string }> {
  const settings = { ...defaults(), ...toSettings(input) };
  checkLeaseTiming(settings);
  // A new app has no signing key yet: `required` would refuse every client (see requireUsableKey).
  if (settings.signaturesRequired) throw validationError('body.signatures', 'can be required only once the application has an active signing key (tollgate keys init)');
  const now = s.clock();
  const secret = newToken('secret', s.random);
  const app: AppRecord = {
    id: randomUUID(),
    name: input.name,
    apiKey: newToken('key', s.random),
    apiSecretHash: digest(secret),
    rootPublicKey: null,
    ...settings,
    createdAt: now,
    updatedAt: now,
  };
  const view = viewApp(app);
  await write(s, async ({ tx, audit, emit }) => {
    await tx.apps.insert(app);
    await audit('app.create', app.id, app.id, { after: settingsOf(view) });
    await emit('app.created', app.id, appData(view));
  });
  return { ...view, api_secret: secret };
}

export async function getApp(s: Services, id: string): Promise<AppRecord> {
  return appIn(s.store, id);
}

/** The app, read through these repositories (a transaction's, in a write). */
export async function appIn(repos: Pick<ReadRepositories, 'apps'>, id: string): Promise<AppRecord> {
  const app = await repos.apps.findById(id);
  if (!app) throw new DomainError('not_found', 'Application not found');
  return app;
}

/** Only what identifies the app's cache entries goes on the bus: never the record with its secret's digest. */
export const appChanged = (app: AppRecord): Change => ({ app: { id: app.id, apiKey: app.apiKey } });

export async function listApps(s: Services, cursor: Cursor | null, limit: number): Promise<Page<AppView>> {
  const page = await s.store.apps.list(cursor, limit);
  return { items: page.items.map(viewApp), nextCursor: page.nextCursor };
}

export async function updateApp(s: AdminServices, id: string, input: AppSettingsInput): Promise<AppView> {
  const settings = toSettings(input);
  return write(s, async ({ tx, audit, changed, emit }) => {
    const app = await appIn(tx, id);
    // Only a change to either setting is checked: an app stored before the rule keeps working until then.
    if (settings.offlineGraceSeconds !== undefined || settings.leaseRenewSeconds !== undefined) checkLeaseTiming({ ...app, ...settings });
    if (settings.signaturesRequired && !app.signaturesRequired) await requireUsableKey(tx, id, s.clock());
    await tx.apps.update(id, settings, s.clock());
    const after = viewApp(await appIn(tx, id));
    await audit('app.update', id, id, diff(settingsOf(viewApp(app)), settingsOf(after)));
    await emit('app.updated', id, appData(after));
    changed(appChanged(app));
    return after;
  });
}

/** An app in its events: its id, name and settings (not its API key, which clients hold, nor anything of its secret). */
function appData(view: AppView): Record<string, unknown> {
  const { api_key: _key, ...data } = view;
  return data;
}

function settingsOf(view: AppView): Record<string, unknown> {
  const { id: _id, api_key: _key, created_at: _c, updated_at: _u, ...settings } = view;
  return settings;
}

export async function rotateSecret(s: AdminServices, id: string): Promise<{ api_secret: string }> {
  const secret = newToken('secret', s.random);
  await write(s, async ({ tx, audit, changed, emit }) => {
    const app = await appIn(tx, id);
    await tx.apps.setSecretHash(id, digest(secret), s.clock());
    await audit('app.rotate_secret', id, id, {});
    await emit('app.secret_rotated', id, { app_id: id });
    changed(appChanged(app));
  });
  return { api_secret: secret };
}

/** Deleting cascades over everything the app owns; the caller must repeat the app's name to confirm. */
export async function deleteApp(s: AdminServices, id: string, confirmName: string | undefined): Promise<void> {
  const app = await getApp(s, id);
  if (confirmName !== app.name) {
    throw new DomainError('validation_error', 'Confirm the deletion by passing the application name as ?confirm=', [
      { field: 'querystring.confirm', message: 'must equal the application name' },
    ]);
  }
  await write(s, async ({ tx, audit, changed, emit }) => {
    const current = await appIn(tx, id); // the settings as deleted, for the audit entry (a 404 if deleted meanwhile)
    await tx.apps.delete(id);
    await audit('app.delete', id, id, { before: settingsOf(viewApp(current)) });
    // The app's own endpoints went with it (cascade): service-wide ones hear of it.
    await emit('app.deleted', id, { app_id: id, name: current.name });
    changed({ ...appChanged(current), appUsers: id });
  });
}

/**
 * `signatures: required` on an app that cannot sign would refuse every client
 * (nonce-less requests with 422, the rest unsigned and refused by the SDK):
 * the setting is refused until a certified key is valid now. Here, not in keys.ts: keys.ts
 * imports this file, and a file cycle is refused (docs/layers.md).
 */
async function requireUsableKey(tx: Pick<ReadRepositories, 'signingKeys'>, appId: string, now: number): Promise<void> {
  if (!(await tx.signingKeys.hasUsable(appId, now))) {
    throw validationError('body.signatures', 'can be required only once the application has an active signing key (tollgate keys init)');
  }
}
