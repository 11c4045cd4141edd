import type { Dialect, Queryable, Row } from '../db.js';
import { foldCase } from '../fold.js';
import { nullableNumber } from '../rows.js';
import { jsonList } from './apps.js';
import { AFTER_CURSOR, cursorParams, SEEK_CURSOR, seekParam, toPage, type Cursor } from '../pagination.js';
import type { ActivationRecord, LicenseRecord, Page } from '../records.js';

const COLUMNS =
  'id, app_id, code, minutes, grants_lifetime_access, revokes_lifetime_access, note, expires_at, created_at, used_at, used_by_user_id, template_id, entitlements, max_devices, max_seats, heartbeat_seconds';


function toLicense(r: Row): LicenseRecord {
  return {
    id: r.id as string,
    appId: r.app_id as string,
    code: r.code as string,
    minutes: nullableNumber(r.minutes),
    grantsLifetime: Number(r.grants_lifetime_access) === 1,
    revokesLifetime: Number(r.revokes_lifetime_access) === 1,
    note: (r.note as string | null) ?? null,
    expiresAt: nullableNumber(r.expires_at),
    createdAt: Number(r.created_at),
    usedAt: nullableNumber(r.used_at),
    usedByUserId: (r.used_by_user_id as string | null) ?? null,
    templateId: (r.template_id as string | null) ?? null,
    entitlements: jsonList(r.entitlements),
    maxDevices: nullableNumber(r.max_devices),
    maxSeats: nullableNumber(r.max_seats),
    heartbeatSeconds: nullableNumber(r.heartbeat_seconds),
  };
}

function toActivation(r: Row): ActivationRecord {
  return {
    id: r.id as string,
    appId: r.app_id as string,
    userId: r.user_id as string,
    licenseId: r.license_id as string,
    occurredAt: Number(r.occurred_at),
    minutes: nullableNumber(r.minutes),
    grantsLifetime: Number(r.grants_lifetime_access) === 1,
    revokesLifetime: Number(r.revokes_lifetime_access) === 1,
    endsAt: nullableNumber(r.ends_at),
  };
}

export interface LicenseFilter {
  /** Made from this template. */
  templateId?: string;
  used?: boolean;
  /** Code or note contains it (any case). */
  search?: string;
  /** Note contains it (any case). */
  note?: string;
  /** created_at >= createdFrom and < createdTo (epoch ms). */
  createdFrom?: number;
  createdTo?: number;
}

/** The WHERE clause of a filter, shared by the list and its count so `total` counts exactly what the pages hold. */
function matching(dialect: Dialect, appId: string, filter: LicenseFilter): { where: string; params: (string | number)[] } {
  let where = 'app_id = ?';
  const params: (string | number)[] = [appId];
  if (filter.used === true) where += ' AND used_at IS NOT NULL';
  if (filter.used === false) where += ' AND used_at IS NULL';
  if (filter.templateId !== undefined) where += ' AND template_id = ?', params.push(filter.templateId);
  if (filter.search) {
    // Lower-cased on both sides: SQLite's LIKE ignores ASCII case, PostgreSQL's does not; foldCase also folds É on SQLite.
    where += ` AND (${foldCase(dialect, 'code')} LIKE ? ESCAPE '\\' OR ${foldCase(dialect, 'note')} LIKE ? ESCAPE '\\')`;
    const like = '%' + escapeLike(filter.search.toLowerCase()) + '%';
    params.push(like, like);
  }
  if (filter.note) {
    where += ` AND ${foldCase(dialect, 'note')} LIKE ? ESCAPE '\\'`;
    params.push('%' + escapeLike(filter.note.toLowerCase()) + '%');
  }
  if (filter.createdFrom !== undefined) where += ' AND created_at >= ?', params.push(filter.createdFrom);
  if (filter.createdTo !== undefined) where += ' AND created_at < ?', params.push(filter.createdTo);
  return { where, params };
}

export function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (c) => '\\' + c);
}

export function licensesRepository(q: Queryable, dialect: Dialect) {
  return {
    /** False if the code already exists in the app (no error, so a PostgreSQL transaction stays usable). */
    async insert(l: LicenseRecord): Promise<boolean> {
      const changed = await q.run(
        `INSERT INTO licenses (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, ?, ?, ?, ?, ?) ON CONFLICT (app_id, code) DO NOTHING`,
        [
          l.id, l.appId, l.code, l.minutes, l.grantsLifetime, l.revokesLifetime, l.note, l.expiresAt, l.createdAt,
          l.templateId, JSON.stringify(l.entitlements), l.maxDevices, l.maxSeats, l.heartbeatSeconds,
        ],
      );
      return changed === 1;
    },

    async findByCode(appId: string, code: string): Promise<LicenseRecord | undefined> {
      const r = await q.one(`SELECT ${COLUMNS} FROM licenses WHERE app_id = ? AND code = ?`, [appId, code]);
      return r && toLicense(r);
    },

    async findById(appId: string, id: string): Promise<LicenseRecord | undefined> {
      const r = await q.one(`SELECT ${COLUMNS} FROM licenses WHERE id = ? AND app_id = ?`, [id, appId]);
      return r && toLicense(r);
    },

    /** The single-use guarantee: only one caller can flip used_at from NULL. */
    async markUsed(id: string, userId: string, now: number): Promise<boolean> {
      return (await q.run('UPDATE licenses SET used_at = ?, used_by_user_id = ? WHERE id = ? AND used_at IS NULL', [now, userId, id])) === 1;
    },

    async list(appId: string, filter: LicenseFilter, cursor: Cursor | null, limit: number): Promise<Page<LicenseRecord>> {
      const match = matching(dialect, appId, filter);
      const rows = await q.all(
        `SELECT ${COLUMNS} FROM licenses WHERE ${match.where} AND ${SEEK_CURSOR} AND ${AFTER_CURSOR} ORDER BY created_at, id LIMIT ?`,
        [...match.params, seekParam(cursor), ...cursorParams(cursor), limit + 1],
      );
      return toPage(rows, limit, toLicense, (r) => ({ at: Number(r.created_at), id: r.id as string }));
    },

    /** How many licenses match the filter (the list's `total`). */
    async count(appId: string, filter: LicenseFilter): Promise<number> {
      const match = matching(dialect, appId, filter);
      const r = await q.one<{ n: number | string }>(`SELECT COUNT(*) AS n FROM licenses WHERE ${match.where}`, match.params);
      return Number(r?.n ?? 0);
    },

    /** Every unused license matching the filter, in one statement (a code redeemed meanwhile is used, so it stays). */
    /** The ids deleted (the license.deleted event lists them). */
    async deleteUnusedMatching(appId: string, filter: LicenseFilter): Promise<string[]> {
      const match = matching(dialect, appId, { ...filter, used: false });
      return (await q.all<{ id: string }>(`DELETE FROM licenses WHERE ${match.where} RETURNING id`, match.params)).map((r) => r.id);
    },

    /** Only unused licenses can be deleted: a used one is part of a user's history. */
    async deleteUnused(appId: string, id: string): Promise<boolean> {
      return (await q.run('DELETE FROM licenses WHERE id = ? AND app_id = ? AND used_at IS NULL', [id, appId])) === 1;
    },

    async insertActivation(a: ActivationRecord): Promise<void> {
      await q.run(
        `INSERT INTO activations (id, app_id, user_id, license_id, occurred_at, minutes, grants_lifetime_access, revokes_lifetime_access, ends_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        [a.id, a.appId, a.userId, a.licenseId, a.occurredAt, a.minutes, a.grantsLifetime, a.revokesLifetime, a.endsAt],
      );
    },

    async activationsOf(userId: string): Promise<ActivationRecord[]> {
      const rows = await q.all(
        'SELECT id, app_id, user_id, license_id, occurred_at, minutes, grants_lifetime_access, revokes_lifetime_access, ends_at FROM activations WHERE user_id = ? ORDER BY occurred_at, id',
        [userId],
      );
      return rows.map(toActivation);
    },

    /** When the license's redemption by this user holds until (null: never), or undefined when this user did not redeem it. */
    async holdingEnd(licenseId: string, userId: string): Promise<number | null | undefined> {
      const r = await q.one('SELECT ends_at FROM activations WHERE license_id = ? AND user_id = ? ORDER BY occurred_at DESC LIMIT 1', [licenseId, userId]);
      return r === undefined ? undefined : nullableNumber(r.ends_at);
    },

    /** Every redemption of this user with the limits its license lends (a refund pulls in what stacked on one: domain/licenses.ts). */
    async holdingsWithLimits(userId: string): Promise<{ id: string; licenseId: string; endsAt: number | null; maxDevices: number | null; maxSeats: number | null; heartbeatSeconds: number | null }[]> {
      const rows = await q.all(
        `SELECT a.id, a.license_id, a.ends_at, l.max_devices, l.max_seats, l.heartbeat_seconds
           FROM activations a JOIN licenses l ON l.id = a.license_id WHERE a.user_id = ? ORDER BY a.occurred_at, a.id`,
        [userId],
      );
      return rows.map((r) => ({
        id: r.id as string, licenseId: r.license_id as string, endsAt: nullableNumber(r.ends_at),
        maxDevices: nullableNumber(r.max_devices), maxSeats: nullableNumber(r.max_seats), heartbeatSeconds: nullableNumber(r.heartbeat_seconds),
      }));
    },

    /** One redemption's holding moves to `endsAt` (a refund pulled in what stacked on another). */
    async setActivationEnd(id: string, endsAt: number): Promise<void> {
      await q.run('UPDATE activations SET ends_at = ? WHERE id = ?', [endsAt, id]);
    },

    /** A store's renewal: the redemption's holding (the limits it lends) moves from `from` to `to`; one ended meanwhile stays. */
    async extendActivation(licenseId: string, userId: string, from: number, to: number): Promise<void> {
      await q.run('UPDATE activations SET ends_at = ? WHERE license_id = ? AND user_id = ? AND ends_at = ?', [to, licenseId, userId, from]);
    },

    /** A refund or a revoked lifetime: the redemption's holding, if still live, ends now. */
    async endActivation(licenseId: string, userId: string, now: number): Promise<void> {
      await q.run('UPDATE activations SET ends_at = ? WHERE license_id = ? AND user_id = ? AND (ends_at IS NULL OR ends_at > ?)', [now, licenseId, userId, now]);
    },

    /** A lifetime revoked: every holding of the user that never ended ends now (entitlements.ts). */
    async endOpenActivations(userId: string, now: number): Promise<void> {
      await q.run('UPDATE activations SET ends_at = ? WHERE user_id = ? AND ends_at IS NULL AND grants_lifetime_access = 1', [now, userId]);
    },

    /**
     * A template applied to its existing licenses: their copied effects (entitlements, limits) are
     * replaced; unused ones also take its duration and redeem window. Returns how many changed.
     */
    async applyTemplate(
      appId: string, templateId: string,
      t: { minutes: number | null; grantsLifetime: boolean; entitlements: readonly string[]; maxDevices: number | null; maxSeats: number | null; heartbeatSeconds: number | null },
    ): Promise<{ used: number; unused: number }> {
      const copied = [JSON.stringify(t.entitlements), t.maxDevices, t.maxSeats, t.heartbeatSeconds];
      const used = await q.run(
        'UPDATE licenses SET entitlements = ?, max_devices = ?, max_seats = ?, heartbeat_seconds = ? WHERE app_id = ? AND template_id = ? AND used_at IS NOT NULL',
        [...copied, appId, templateId],
      );
      const unused = await q.run(
        'UPDATE licenses SET entitlements = ?, max_devices = ?, max_seats = ?, heartbeat_seconds = ?, minutes = ?, grants_lifetime_access = ? WHERE app_id = ? AND template_id = ? AND used_at IS NULL',
        [...copied, t.minutes, t.grantsLifetime, appId, templateId],
      );
      return { used, unused };
    },

    /** The activations of the template's used licenses: the redemptions whose grants an applied template rewrites. */
    async activationsOfTemplate(appId: string, templateId: string): Promise<ActivationRecord[]> {
      const rows = await q.all(
        `SELECT a.id, a.app_id, a.user_id, a.license_id, a.occurred_at, a.minutes, a.grants_lifetime_access, a.revokes_lifetime_access, a.ends_at
         FROM activations a JOIN licenses l ON l.id = a.license_id WHERE l.app_id = ? AND l.template_id = ? ORDER BY a.occurred_at, a.id`,
        [appId, templateId],
      );
      return rows.map(toActivation);
    },
  };
}

export type LicensesRepository = ReturnType<typeof licensesRepository>;
