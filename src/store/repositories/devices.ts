import type { Queryable, Row } from '../db.js';
import type { DeviceRecord } from '../records.js';

function toDevice(r: Row): DeviceRecord {
  return {
    id: r.id as string,
    userId: r.user_id as string,
    hardwareId: r.hardware_id as string,
    createdAt: Number(r.created_at),
    lastSeenAt: Number(r.last_seen_at),
  };
}

export function devicesRepository(q: Queryable) {
  return {
    async find(userId: string, hardwareId: string): Promise<DeviceRecord | undefined> {
      const r = await q.one(
        'SELECT id, user_id, hardware_id, created_at, last_seen_at FROM devices WHERE user_id = ? AND hardware_id = ?',
        [userId, hardwareId],
      );
      return r && toDevice(r);
    },

    /** False when the device is already registered (unique per user and hardware id). */
    async insert(d: DeviceRecord & { appId: string }): Promise<boolean> {
      const changed = await q.run(
        `INSERT INTO devices (id, app_id, user_id, hardware_id, created_at, last_seen_at) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (user_id, hardware_id) DO NOTHING`,
        [d.id, d.appId, d.userId, d.hardwareId, d.createdAt, d.lastSeenAt],
      );
      return changed === 1;
    },

    async listFor(userId: string): Promise<DeviceRecord[]> {
      const rows = await q.all(
        'SELECT id, user_id, hardware_id, created_at, last_seen_at FROM devices WHERE user_id = ? ORDER BY created_at, id',
        [userId],
      );
      return rows.map(toDevice);
    },

    async deleteFor(userId: string): Promise<void> {
      await q.run('DELETE FROM devices WHERE user_id = ?', [userId]);
    },
  };
}

export type DevicesRepository = ReturnType<typeof devicesRepository>;
