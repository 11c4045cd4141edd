import type { Queryable, Row } from '../db.js';
import { AFTER_CURSOR, cursorParams, toPage, type Cursor } from '../pagination.js';
import type { AppRecord, AppSettings, Page } from '../records.js';

const COLUMNS =
  'id, name, api_key, api_secret_hash, device_auth_enabled, anonymous_access_allowed, max_devices_per_user, session_ttl_seconds, password_min_length, registration_open, created_at, updated_at';

export function toApp(r: Row): AppRecord {
  return {
    id: r.id as string,
    name: r.name as string,
    apiKey: r.api_key as string,
    apiSecretHash: r.api_secret_hash as string,
    deviceAuthEnabled: Number(r.device_auth_enabled) === 1,
    anonymousAccessAllowed: Number(r.anonymous_access_allowed) === 1,
    maxDevicesPerUser: Number(r.max_devices_per_user),
    sessionTtlSeconds: Number(r.session_ttl_seconds),
    passwordMinLength: Number(r.password_min_length),
    registrationOpen: Number(r.registration_open) === 1,
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
  };
}

const SETTING_COLUMNS: Record<keyof AppSettings, string> = {
  deviceAuthEnabled: 'device_auth_enabled',
  anonymousAccessAllowed: 'anonymous_access_allowed',
  maxDevicesPerUser: 'max_devices_per_user',
  sessionTtlSeconds: 'session_ttl_seconds',
  passwordMinLength: 'password_min_length',
  registrationOpen: 'registration_open',
};

export function appsRepository(q: Queryable) {
  return {
    async insert(app: AppRecord): Promise<void> {
      await q.run(
        `INSERT INTO apps (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        [
          app.id, app.name, app.apiKey, app.apiSecretHash, app.deviceAuthEnabled, app.anonymousAccessAllowed,
          app.maxDevicesPerUser, app.sessionTtlSeconds, app.passwordMinLength, app.registrationOpen,
          app.createdAt, app.updatedAt,
        ],
      );
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
    async update(id: string, changes: Partial<AppSettings> & { name?: string }, now: number): Promise<boolean> {
      const sets: string[] = ['updated_at = ?'];
      const params: (string | number | boolean)[] = [now];
      if (changes.name !== undefined) {
        sets.push('name = ?');
        params.push(changes.name);
      }
      for (const [key, column] of Object.entries(SETTING_COLUMNS) as [keyof AppSettings, string][]) {
        const value = changes[key];
        if (value !== undefined) {
          sets.push(`${column} = ?`);
          params.push(value);
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
