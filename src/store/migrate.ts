import { SchemaAhead, type Db } from './db.js';
import { dialectTypes, migrations } from './migrations/index.js';

/**
 * Applies pending migrations, each in its own transaction together with its
 * row in schema_migrations, so a crash leaves either all of it or none.
 * Returns the versions applied. Refuses (SchemaAhead) a database a newer
 * release migrated, before touching it.
 */
export async function migrate(db: Db, now: number = Date.now()): Promise<number[]> {
  // Several nodes may start at once: one migrates while the others wait, then find nothing to do.
  return db.exclusive(() => applyPending(db, now));
}

async function appliedVersions(db: Db): Promise<Set<number>> {
  const rows = await db.all<{ version: number | string }>('SELECT version FROM schema_migrations');
  return new Set(rows.map((r) => Number(r.version)));
}

function refuseAhead(applied: Set<number>): void {
  const found = Math.max(0, ...applied);
  const known = Math.max(...migrations.map((m) => m.version));
  if (found > known) throw new SchemaAhead(found, known);
}

/**
 * For the local commands that write without migrating (`tokens create
 * --local`, `operators create`): SchemaAhead when a newer release migrated
 * the database. Needs the schema_migrations table (callers check it first).
 */
export async function refuseNewerSchema(db: Db): Promise<void> {
  refuseAhead(await appliedVersions(db));
}

async function applyPending(db: Db, now: number): Promise<number[]> {
  const types = dialectTypes(db.dialect);
  await db.script(
    `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at ${types.ts} NOT NULL)`,
  );
  const applied = await appliedVersions(db);
  refuseAhead(applied);
  const done: number[] = [];
  for (const m of migrations) {
    if (applied.has(m.version)) continue;
    const record = `INSERT INTO schema_migrations (version, name, applied_at) VALUES (${m.version}, '${m.name}', ${Math.trunc(now)});`;
    try {
      await db.script(`BEGIN;\n${m.up(types)}\n${record}\nCOMMIT;`);
    } catch (err) {
      await db.script('ROLLBACK').catch(() => undefined);
      throw new Error(`migration ${m.version} (${m.name}) failed: ${(err as Error).message}`);
    }
    done.push(m.version);
  }
  return done;
}
