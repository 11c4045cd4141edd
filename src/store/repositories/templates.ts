import type { Dialect, Queryable, Row } from '../db.js';
import { nullableNumber } from '../rows.js';
import { AFTER_CURSOR, cursorParams, toPage, type Cursor } from '../pagination.js';
import type { Page, TemplateRecord } from '../records.js';
import { jsonList } from './apps.js';

const COLUMNS =
  'id, app_id, name, minutes, grants_lifetime_access, entitlements, max_devices, redeem_within_minutes, max_seats, heartbeat_seconds, created_at, updated_at';

function toTemplate(r: Row): TemplateRecord {
  return {
    id: r.id as string,
    appId: r.app_id as string,
    name: r.name as string,
    minutes: nullableNumber(r.minutes),
    grantsLifetime: Number(r.grants_lifetime_access) === 1,
    entitlements: jsonList(r.entitlements),
    maxDevices: nullableNumber(r.max_devices),
    redeemWithinMinutes: nullableNumber(r.redeem_within_minutes),
    maxSeats: nullableNumber(r.max_seats),
    heartbeatSeconds: nullableNumber(r.heartbeat_seconds),
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
  };
}

const values = (t: TemplateRecord) => [
  t.name, t.minutes, t.grantsLifetime, JSON.stringify(t.entitlements), t.maxDevices, t.redeemWithinMinutes, t.maxSeats, t.heartbeatSeconds,
];

/** License templates (policies) per app; names unique per app (the unique index: UniqueViolation). */
export function templatesRepository(q: Queryable, dialect: Dialect) {
  return {
    async insert(t: TemplateRecord): Promise<void> {
      await q.run(
        `INSERT INTO license_templates (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        [t.id, t.appId, ...values(t), t.createdAt, t.updatedAt],
      );
    },

    async update(t: TemplateRecord): Promise<boolean> {
      return (await q.run(
        `UPDATE license_templates SET name = ?, minutes = ?, grants_lifetime_access = ?, entitlements = ?, max_devices = ?, redeem_within_minutes = ?,
         max_seats = ?, heartbeat_seconds = ?, updated_at = ? WHERE id = ? AND app_id = ?`,
        [...values(t), t.updatedAt, t.id, t.appId],
      )) === 1;
    },

    async findById(appId: string, id: string): Promise<TemplateRecord | undefined> {
      const r = await q.one(`SELECT ${COLUMNS} FROM license_templates WHERE id = ? AND app_id = ?`, [id, appId]);
      return r && toTemplate(r);
    },

    /**
     * The template, read under a lock of its row until the transaction ends: `share` for a write that names it (a
     * product mapping), `update` for its deletion, so the two come wholly one before the other (PostgreSQL's
     * READ COMMITTED; SQLite's write transaction already admits one writer at a time).
     */
    async findLocked(appId: string, id: string, mode: 'share' | 'update'): Promise<TemplateRecord | undefined> {
      const lock = dialect === 'postgres' ? (mode === 'share' ? ' FOR SHARE' : ' FOR UPDATE') : '';
      const r = await q.one(`SELECT ${COLUMNS} FROM license_templates WHERE id = ? AND app_id = ?${lock}`, [id, appId]);
      return r && toTemplate(r);
    },

    async findByName(appId: string, name: string): Promise<TemplateRecord | undefined> {
      const r = await q.one(`SELECT ${COLUMNS} FROM license_templates WHERE app_id = ? AND name = ?`, [appId, name]);
      return r && toTemplate(r);
    },

    async list(appId: string, cursor: Cursor | null, limit: number): Promise<Page<TemplateRecord>> {
      const rows = await q.all(
        `SELECT ${COLUMNS} FROM license_templates WHERE app_id = ? AND ${AFTER_CURSOR} ORDER BY created_at, id LIMIT ?`,
        [appId, ...cursorParams(cursor), limit + 1],
      );
      return toPage(rows, limit, toTemplate, (r) => ({ at: Number(r.created_at), id: r.id as string }));
    },

    /** Licenses made from it keep their copied effects (their template_id becomes NULL). */
    async delete(appId: string, id: string): Promise<boolean> {
      return (await q.run('DELETE FROM license_templates WHERE id = ? AND app_id = ?', [id, appId])) === 1;
    },
  };
}

export type TemplatesRepository = ReturnType<typeof templatesRepository>;
