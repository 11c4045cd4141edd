import { chmodSync, closeSync, existsSync, openSync, renameSync, rmSync, statSync } from 'node:fs';
import { userInfo } from 'node:os';
import { dirname, resolve } from 'node:path';
import type { Command } from 'commander';
import type { LogLevel } from '../config/index.js';
import { cryptoRandom, systemClock } from '../domain/deps.js';
import { DomainError } from '../domain/errors.js';
import type { Db } from '../store/db.js';
import type { OpenOptions } from '../store/open.js';
import type { SqliteDb } from '../store/sqlite.js';
import { configOrExit, dbTarget, exit, failureLine, guardStart, localRefusal, StartError, waitForDatabase, type DbTarget } from './start.js';

/**
 * `backup` and `migrate`: commands on the database itself, without a server.
 * Neither ever creates a database (`migrate --create` excepted, for a first
 * install): run from the wrong directory or with a typo in the URL, they must
 * fail naming the path they looked at, not succeed on a new empty file.
 */
export function localCommands(program: Command): void {
  program
    .command('backup')
    .description('Copy a live SQLite database to a new file, consistently, while the service runs (PostgreSQL: use pg_dump)')
    .argument('<destination>', 'file to write; must not exist yet, in a directory that does')
    .option('--database-url <url>', 'sqlite:<path> [env DATABASE_URL]')
    .action(async (destination: string, options: { databaseUrl?: string }) => {
      const config = configOrExit(options.databaseUrl ? { databaseUrl: options.databaseUrl } : {});
      if (!config.databaseUrl.startsWith('sqlite:')) {
        exit('backup copies SQLite databases; for PostgreSQL run: pg_dump --format=custom --file=tollgate.dump "$DATABASE_URL"', 2);
      }
      const target = dbTarget(config.databaseUrl, true);
      await runLocal(target, config.logLevel, async () => {
        refuseEmptyFile(target, 'backup');
        const { openDb } = await import('../store/open.js');
        const db = await openDb(config.databaseUrl, { ...config, mustExist: true });
        try {
          await requireSchema(db, target, 'backup');
          const dest = checkDestination(destination);
          const copied = await copyTo(db as SqliteDb, dest);
          process.stdout.write(`backed up ${target.location} to ${dest}: ${copied}\n`);
        } finally {
          await db.close();
        }
      });
    });

  program
    .command('migrate')
    .description('Apply pending migrations to an existing database and exit')
    .option('--database-url <url>', 'sqlite:<path> or postgres://… [env DATABASE_URL]')
    .option('--create', 'first install: create the SQLite file, or the tables in an empty PostgreSQL database')
    .action(async (options: { databaseUrl?: string; create?: boolean }) => {
      const config = configOrExit(options.databaseUrl ? { databaseUrl: options.databaseUrl } : {});
      const create = options.create === true;
      const target = dbTarget(config.databaseUrl, !create);
      await runLocal(target, config.logLevel, async () => {
        const say = (line: string) => process.stderr.write(`tollgate: ${line}\n`);
        const db = await waitForDatabase(() => openReady(config.databaseUrl, config, target, create), target, config.databaseWaitMs, say);
        try {
          const { migrate } = await import('../store/migrate.js');
          const applied = await migrate(db);
          process.stdout.write(
            applied.length ? `applied migrations to ${target.location}: ${applied.join(', ')}\n` : `database ${target.location} is up to date\n`,
          );
        } finally {
          await db.close();
        }
      });
    });
}

/**
 * `tollgate tokens create NAME --local`: a new admin token written straight
 * into the database, for the operator who lost every token (the first one is
 * shown once). Whoever may read and write the database owns the server
 * anyway; like `backup`, it never creates a database: a run from the wrong
 * directory names the path it looked at instead of minting a token nobody uses.
 */
export async function createTokenLocally(name: string, databaseUrl: string | undefined, json: boolean): Promise<void> {
  const config = configOrExit(databaseUrl ? { databaseUrl } : {});
  const target = dbTarget(config.databaseUrl, true);
  await runLocal(target, config.logLevel, async () => {
    refuseEmptyFile(target, 'tokens create');
    const [{ openDb }, { createServices }, { createStore }, { argon2Hasher }, { createAdminToken }] = await Promise.all([
      import('../store/open.js'),
      import('../domain/services.js'),
      import('../store/index.js'),
      import('../domain/password.js'),
      import('../domain/admin/tokens.js'),
    ]);
    const db = await openDb(config.databaseUrl, { ...config, mustExist: true });
    try {
      await requireSchema(db, target, 'tokens create');
      // Older code writing into a newer schema may write what the newer release cannot read.
      await (await import('../store/migrate.js')).refuseNewerSchema(db);
      const services = await createServices({ store: createStore(db), clock: systemClock, random: cryptoRandom, hasher: argon2Hasher(), counters: null });
      // The audit log says it was made on the machine, by which system user, not through the API.
      const created = await createAdminToken({ ...services, actor: `local:${localUser()}` }, name).catch((err: unknown) => {
        throw err instanceof DomainError ? localRefusal(err, { 'body.name': 'the token name' }) : err;
      });
      const note = 'The admin token is shown only once: it is stored as a digest and cannot be printed again.';
      if (json) {
        process.stdout.write(JSON.stringify(created, null, 2) + '\n');
        process.stderr.write(`${note}\n`);
      } else {
        process.stdout.write(`created admin token ${created.name} (${created.id}) in ${target.location}\n\n  export TOLLGATE_ADMIN_TOKEN=${created.token}\n\n${note}\n`);
      }
    } finally {
      await db.close();
    }
  });
}

function localUser(): string {
  try {
    return userInfo().username;
  } catch {
    return `uid ${process.getuid?.() ?? '?'}`;
  }
}

/** Runs a local command: any failure is one line on stderr and exit 1 (cleanup in `finally` blocks runs first). */
async function runLocal(target: DbTarget, level: LogLevel, fn: () => Promise<void>): Promise<void> {
  guardStart(target, level);
  try {
    await fn();
  } catch (err) {
    exit(failureLine(err, target), err instanceof StartError ? err.exitCode : 1, err, level);
  }
}

type LocalCommand = 'backup' | 'migrate' | 'tokens create';

/** Opens the database and proves it answers and holds Tollgate's tables (or may be given them: `create`). */
async function openReady(url: string, config: OpenOptions, target: DbTarget, create: boolean): Promise<Db> {
  if (!create) refuseEmptyFile(target, 'migrate');
  const { openDb } = await import('../store/open.js');
  const db = await openDb(url, { ...config, mustExist: !create });
  try {
    if (!create) await requireSchema(db, target, 'migrate');
    else await hasSchema(db); // reach the database now, so an unreachable one is waited for
    return db;
  } catch (err) {
    await db.close().catch(() => undefined);
    throw err;
  }
}

/**
 * Whether the database holds Tollgate's migration table. An empty file or an
 * empty PostgreSQL database (`postgres` itself, say) is the wrong place, not
 * a deployment to upgrade or to back up.
 */
async function hasSchema(db: Db): Promise<boolean> {
  const row =
    db.dialect === 'sqlite'
      ? await db.one("SELECT 1 AS present FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'")
      : await db.one("SELECT 1 AS present WHERE to_regclass('schema_migrations') IS NOT NULL");
  return row !== undefined;
}

/** A zero-byte file (`touch`ed, or left by an older version run in the wrong place): refused before opening turns it into an empty database. */
function refuseEmptyFile(target: DbTarget, command: LocalCommand): void {
  if (target.kind !== 'sqlite' || target.location === ':memory:') return;
  let size = -1;
  try {
    size = statSync(target.location).size;
  } catch {
    return; // missing: openDb says so
  }
  if (size === 0) throw notTollgate(target, command);
}

async function requireSchema(db: Db, target: DbTarget, command: LocalCommand): Promise<void> {
  if (!(await hasSchema(db))) throw notTollgate(target, command);
}

function notTollgate(target: DbTarget, command: LocalCommand): StartError {
  const firstInstall = command === 'migrate' ? '; for a first install run `tollgate migrate --create` or `tollgate serve`' : '';
  return new StartError(`${target.location} is not a Tollgate database (no schema_migrations table)${firstInstall}`);
}

/** Never overwrites, never creates directories: a backup lands exactly where the operator said, or nowhere. */
function checkDestination(destination: string): string {
  const dest = resolve(destination);
  if (existsSync(dest)) throw new StartError(`backup destination ${dest} already exists; backups never overwrite: remove it or choose a new name`);
  const dir = dirname(dest);
  let isDir = false;
  try {
    isDir = statSync(dir).isDirectory();
  } catch {
    isDir = false;
  }
  if (!isDir) throw new StartError(`cannot write the backup ${dest}: the directory ${dir} does not exist`);
  return dest;
}

/**
 * Copies into a temporary name beside the destination and renames it only
 * once complete and readable, so an interrupted or failed backup never leaves
 * a file that looks like one. Returns what was copied, read from the copy.
 */
async function copyTo(db: SqliteDb, dest: string): Promise<string> {
  const partial = `${dest}.partial-${process.pid}`;
  try {
    // A backup holds the apps' signing keys: owner-only from its first byte, whatever the umask (SQLite
    // writes into the existing file and keeps its mode; the chmod covers a file system that would not).
    closeSync(openSync(partial, 'wx', 0o600));
    await db.backup(partial);
    chmodSync(partial, 0o600);
    const summary = await summarize(partial);
    if (existsSync(dest)) throw new StartError(`backup destination ${dest} appeared while copying; backups never overwrite`);
    renameSync(partial, dest);
    return `${formatBytes(statSync(dest).size)}, ${summary}`;
  } finally {
    rmSync(partial, { force: true });
  }
}

/** Counts read back from the copy itself: "a backup of nothing" shows as 0 apps and 0 users. */
async function summarize(path: string): Promise<string> {
  const { default: Database } = await import('../store/sqlite-driver.js');
  const copy = new Database(path, { fileMustExist: true });
  try {
    const count = (table: string) => (copy.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
    const version = (copy.prepare('SELECT max(version) AS v FROM schema_migrations').get() as { v: number | null }).v;
    const counted = ['app', 'user', 'license', 'file'].map((noun) => {
      const n = count(`${noun}s`);
      return `${n} ${noun}${n === 1 ? '' : 's'}`;
    });
    return `${counted.join(', ')} (schema version ${version ?? 0})`;
  } finally {
    copy.close();
  }
}

function formatBytes(n: number): string {
  if (n < 1024) return `${n} bytes`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let value = n / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}
