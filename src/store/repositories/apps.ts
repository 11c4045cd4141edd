import type { Queryable, Row } from '../db.js';
import { AFTER_CURSOR, cursorParams, toPage, type Cursor } from '../pagination.js';
import type { AppRecord, AppSettings, Page } from '../records.js';

const SETTING_COLUMNS: Record<keyof AppSettings, string> = {
  deviceAuthEnabled: 'device_auth_enabled',
  anonymousAccessAllowed: 'anonymous_access_allowed',
  maxDevicesPerUser: 'max_devices_per_user',
  sessionTtlSeconds: 'session_ttl_seconds',
  passwordMinLength: 'password_min_length',
  registrationOpen: 'registration_open',
  maxSessionsPerUser: 'max_sessions_per_user',
  rateFailuresPerIdentity: 'rate_failures_per_identity',
  rateFailuresPerIdentityWindowSeconds: 'rate_failures_per_identity_window_seconds',
  rateFailuresPerIp: 'rate_failures_per_ip',
  rateFailuresPerIpWindowSeconds: 'rate_failures_per_ip_window_seconds',
  rateSignupsPerIp: 'rate_signups_per_ip',
  rateSignupsPerIpWindowSeconds: 'rate_signups_per_ip_window_seconds',
  rateSignupsPerApp: 'rate_signups_per_app',
  rateSignupsPerAppWindowSeconds: 'rate_signups_per_app_window_seconds',
  signaturesRequired: 'signatures_required',
  offlineGraceSeconds: 'offline_grace_seconds',
  leaseRenewSeconds: 'lease_renew_seconds',
  maxSeats: 'max_seats',
  heartbeatSeconds: 'heartbeat_seconds',
  seatGraceSeconds: 'seat_grace_seconds',
  deviceResetCooldownSeconds: 'device_reset_cooldown_seconds',
  deviceResetsPerYear: 'device_resets_per_year',
  trialMinutes: 'trial_minutes',
};
/** Settings that may be NULL (not set), read back as null rather than 0. */
const NULLABLE_SETTINGS = new Set<keyof AppSettings>(['maxSeats', 'deviceResetsPerYear']);
/** Settings that are lists, stored as JSON arrays of strings. */
export interface AppLists {
  trialEntitlements: readonly string[];
  trialBlockedDomains: readonly string[];
}
const LIST_COLUMNS: [keyof AppLists, string][] = [
  ['trialEntitlements', 'trial_entitlements'],
  ['trialBlockedDomains', 'trial_blocked_domains'],
];
const BOOLEAN_SETTINGS = new Set<keyof AppSettings>(['deviceAuthEnabled', 'anonymousAccessAllowed', 'registrationOpen', 'signaturesRequired']);
const SETTINGS = Object.entries(SETTING_COLUMNS) as [keyof AppSettings, string][];

const COLUMNS = `id, name, api_key, api_secret_hash, root_public_key, ${SETTINGS.map(([, c]) => c).join(', ')}, ${LIST_COLUMNS.map(([, c]) => c).join(', ')}, created_at, updated_at`;

export const jsonList = (v: unknown): string[] => (typeof v === 'string' ? (JSON.parse(v) as string[]) : []);

export function toApp(r: Row): AppRecord {
  const settings = {} as Record<keyof AppSettings, number | boolean | null>;
  for (const [key, column] of SETTINGS) {
    settings[key] = BOOLEAN_SETTINGS.has(key) ? Number(r[column]) === 1 : NULLABLE_SETTINGS.has(key) && r[column] == null ? null : Number(r[column]);
  }
  return {
    id: r.id as string,
    name: r.name as string,
    apiKey: r.api_key as string,
    apiSecretHash: r.api_secret_hash as string,
    rootPublicKey: (r.root_public_key as string | null) ?? null,
    ...(settings as unknown as AppSettings),
    trialEntitlements: jsonList(r.trial_entitlements),
    trialBlockedDomains: jsonList(r.trial_blocked_domains),
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
  };
}

export function appsRepository(q: Queryable) {
  return {
    async insert(app: AppRecord): Promise<void> {
      const values = [app.id, app.name, app.apiKey, app.apiSecretHash, app.rootPublicKey, ...SETTINGS.map(([key]) => app[key]), ...LIST_COLUMNS.map(([key]) => JSON.stringify(app[key])), app.createdAt, app.updatedAt];
      await q.run(`INSERT INTO apps (${COLUMNS}) VALUES (${values.map(() => '?').join(', ')})`, values);
    },

    async findById(id: string): Promise<AppRecord | undefined> {
      const r = await q.one(`SELECT ${COLUMNS} FROM apps WHERE id = ?`, [id]);
      return r && toApp(r);
    },

    async findByKey(apiKey: string): Promise<AppRecord | undefined> {
      const r = await q.one(`SELECT ${COLUMNS} FROM apps WHERE api_key = ?`, [apiKey]);
      return r && toApp(r);
    },

    async list(cursor: Cursor | null, limit: number): Promise<Page<AppRecord>> {
      const rows = await q.all(
        `SELECT ${COLUMNS} FROM apps WHERE ${AFTER_CURSOR} ORDER BY created_at, id LIMIT ?`,
        [...cursorParams(cursor), limit + 1],
      );
      return toPage(rows, limit, toApp, (r) => ({ at: Number(r.created_at), id: r.id as string }));
    },

    /** Updates the name and any given settings; false when the app does not exist. */
    async update(id: string, changes: Partial<AppSettings & AppLists> & { name?: string }, now: number): Promise<boolean> {
      const sets: string[] = ['updated_at = ?'];
      const params: (string | number | boolean | null)[] = [now];
      if (changes.name !== undefined) {
        sets.push('name = ?');
        params.push(changes.name);
      }
      for (const [key, column] of SETTINGS) {
        const value = changes[key];
        if (value !== undefined) {
          sets.push(`${column} = ?`);
          params.push(value);
        }
      }
      for (const [key, column] of LIST_COLUMNS) {
        const value = changes[key];
        if (value !== undefined) {
          sets.push(`${column} = ?`);
          params.push(JSON.stringify(value));
        }
      }
      return (await q.run(`UPDATE apps SET ${sets.join(', ')} WHERE id = ?`, [...params, id])) === 1;
    },

    async setSecretHash(id: string, hash: string, now: number): Promise<boolean> {
      return (await q.run('UPDATE apps SET api_secret_hash = ?, updated_at = ? WHERE id = ?', [hash, now, id])) === 1;
    },

    async delete(id: string): Promise<boolean> {
      return (await q.run('DELETE FROM apps WHERE id = ?', [id])) === 1;
    },
  };
}

export type AppsRepository = ReturnType<typeof appsRepository>;
