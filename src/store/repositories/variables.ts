import type { Queryable } from '../db.js';
import type { VariableRecord } from '../records.js';

export function variablesRepository(q: Queryable) {
  return {
    /** Creates or replaces; true when it created. */
    async put(appId: string, name: string, value: string, now: number): Promise<void> {
      await q.run(
        `INSERT INTO variables (app_id, name, value, updated_at) VALUES (?, ?, ?, ?)
         ON CONFLICT (app_id, name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
        [appId, name, value, now],
      );
    },

    async get(appId: string, name: string): Promise<VariableRecord | undefined> {
      const r = await q.one<{ name: string; value: string; updated_at: number }>(
        'SELECT name, value, updated_at FROM variables WHERE app_id = ? AND name = ?',
        [appId, name],
      );
      return r && { name: r.name, value: r.value, updatedAt: Number(r.updated_at) };
    },

    async list(appId: string): Promise<VariableRecord[]> {
      const rows = await q.all<{ name: string; value: string; updated_at: number }>(
        'SELECT name, value, updated_at FROM variables WHERE app_id = ? ORDER BY name',
        [appId],
      );
      return rows.map((r) => ({ name: r.name, value: r.value, updatedAt: Number(r.updated_at) }));
    },

    async delete(appId: string, name: string): Promise<boolean> {
      return (await q.run('DELETE FROM variables WHERE app_id = ? AND name = ?', [appId, name])) === 1;
    },
  };
}

export type VariablesRepository = ReturnType<typeof variablesRepository>;
