import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';

/*
 * The one place the SQLite driver is loaded from; which better-sqlite3 depends on the Node that runs us.
 *
 * - Node 22 and later: better-sqlite3 13 (the `better-sqlite3` dependency). It is built on Node-API and ships
 *   a prebuilt addon, so nothing compiles at install. Version 12 aborts the process on Node 24 when the GC
 *   frees a statement (`Assertion failed: (env) != nullptr` in Statement::~Statement).
 * - Node 20: better-sqlite3 12 (the `better-sqlite3-node20` alias, compiled at install): 13 crashes there
 *   on the first `new Database()`.
 *
 * The types are @types/better-sqlite3's; both versions have the same API for what Tollgate uses.
 */
const nodeMajor = Number(process.versions.node.split('.')[0]);

export const sqliteDriver = {
  package: nodeMajor >= 22 ? 'better-sqlite3' : 'better-sqlite3-node20',
  version: '',
};

const require = createRequire(import.meta.url);

function load(): typeof BetterSqlite3 {
  try {
    sqliteDriver.version = (require(`${sqliteDriver.package}/package.json`) as { version: string }).version;
    return require(sqliteDriver.package) as typeof BetterSqlite3;
  } catch (err) {
    const why = err instanceof Error ? err.message.split('\n')[0] : String(err);
    throw new Error(
      `cannot load the SQLite driver ${sqliteDriver.package} for Node ${process.versions.node} (${why}); ` +
        `reinstall Tollgate's dependencies with this Node (npm ci), letting better-sqlite3's install script run`,
      { cause: err },
    );
  }
}

/** better-sqlite3's Database class, as `import Database from 'better-sqlite3'` gives it. */
const Database = load();
export default Database;

export type Connection = BetterSqlite3.Database;
export type Statement = BetterSqlite3.Statement<unknown[], unknown>;
