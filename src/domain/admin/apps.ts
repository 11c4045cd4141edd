import { randomUUID } from 'node:crypto';
import type { Cursor } from '../../store/pagination.js';
import type { AppRecord, AppSettings, Page } from '../../store/records.js';
import { DomainError } from '../errors.js';
import { iso } from '../membership.js';
import type { Services } from '../services.js';
import { digest, newToken } from '../tokens.js';
import { Checker } from '../validation.js';
import { audit, diff, type AdminServices } from './audit.js';

export interface AppView {
  id: string;
  name: string;
  api_key: string;
  device_auth_enabled: boolean;
  anonymous_access_allowed: boolean;
  max_devices_per_user: number;
  session_ttl_seconds: number;
  password_min_length: number;
  registration_open: boolean;
  created_at: string;
  updated_at: string;
}

export interface AppSettingsInput {
  name?: string;
  device_auth_enabled?: boolean;
  anonymous_access_allowed?: boolean;
  max_devices_per_user?: number;
  session_ttl_seconds?: number;
  password_min_length?: number;
  registration_open?: boolean;
}

export function viewApp(app: AppRecord): AppView {
  return {
    id: app.id,
    name: app.name,
    api_key: app.apiKey,
    device_auth_enabled: app.deviceAuthEnabled,
    anonymous_access_allowed: app.anonymousAccessAllowed,
    max_devices_per_user: app.maxDevicesPerUser,
    session_ttl_seconds: app.sessionTtlSeconds,
    password_min_length: app.passwordMinLength,
    registration_open: app.registrationOpen,
    created_at: iso(app.createdAt),
    updated_at: iso(app.updatedAt),
  };
}

function toSettings(input: AppSettingsInput): Partial<AppSettings> & { name?: string } {
  const check = new Checker();
  if (input.name !== undefined) check.text('body.name', input.name, { min: 1, max: 128 });
  check.throwIfAny();
  const out: Partial<AppSettings> & { name?: string } = {};
  if (input.name !== undefined) out.name = input.name;
  if (input.device_auth_enabled !== undefined) out.deviceAuthEnabled = input.device_auth_enabled;
  if (input.anonymous_access_allowed !== undefined) out.anonymousAccessAllowed = input.anonymous_access_allowed;
  if (input.max_devices_per_user !== undefined) out.maxDevicesPerUser = input.max_devices_per_user;
  if (input.session_ttl_seconds !== undefined) out.sessionTtlSeconds = input.session_ttl_seconds;
  if (input.password_min_length !== undefined) out.passwordMinLength = input.password_min_length;
  if (input.registration_open !== undefined) out.registrationOpen = input.registration_open;
  return out;
}

/** Creates an app; the API secret is in this answer and nowhere else, ever. */
export async function createApp(s: AdminServices, input: AppSettingsInput & { name: string }): Promise<AppView & { api_secret: string }> {
  const settings = toSettings(input);
  const now = s.clock();
  const secret = newToken('secret', s.random);
  const app: AppRecord = {
    id: randomUUID(),
    name: input.name,
    apiKey: newToken('key', s.random),
    apiSecretHash: digest(secret),
    deviceAuthEnabled: settings.deviceAuthEnabled ?? false,
    anonymousAccessAllowed: settings.anonymousAccessAllowed ?? false,
    maxDevicesPerUser: settings.maxDevicesPerUser ?? 1,
    sessionTtlSeconds: settings.sessionTtlSeconds ?? 86400,
    passwordMinLength: settings.passwordMinLength ?? 8,
    registrationOpen: settings.registrationOpen ?? true,
    createdAt: now,
    updatedAt: now,
  };
  await s.store.apps.insert(app);
  const view = viewApp(app);
  await audit(s, 'app.create', app.id, app.id, { after: settingsOf(view) });
  return { ...view, api_secret: secret };
}

export async function getApp(s: Services, id: string): Promise<AppRecord> {
  const app = await s.store.apps.findById(id);
  if (!app) throw new DomainError('not_found', 'Application not found');
  return app;
}

export async function listApps(s: Services, cursor: Cursor | null, limit: number): Promise<Page<AppView>> {
  const page = await s.store.apps.list(cursor, limit);
  return { items: page.items.map(viewApp), nextCursor: page.nextCursor };
}

export async function updateApp(s: AdminServices, id: string, input: AppSettingsInput): Promise<AppView> {
  const app = await getApp(s, id);
  await s.store.apps.update(id, toSettings(input), s.clock());
  await s.caches.changed({ app });
  const after = viewApp(await getApp(s, id));
  await audit(s, 'app.update', id, id, diff(settingsOf(viewApp(app)), settingsOf(after)));
  return after;
}

function settingsOf(view: AppView): Record<string, unknown> {
  const { id: _id, api_key: _key, created_at: _c, updated_at: _u, ...settings } = view;
  return settings;
}

export async function rotateSecret(s: AdminServices, id: string): Promise<{ api_secret: string }> {
  const app = await getApp(s, id);
  const secret = newToken('secret', s.random);
  await s.store.apps.setSecretHash(id, digest(secret), s.clock());
  await s.caches.changed({ app });
  await audit(s, 'app.rotate_secret', id, id, {});
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
  await s.store.apps.delete(id);
  await s.caches.changed({ app });
  await audit(s, 'app.delete', id, id, { before: settingsOf(viewApp(app)) });
}
