#!/usr/bin/env node
import { setFlagsFromString } from 'node:v8';
import { Command } from 'commander';
import { ConfigError, SETTINGS, loadConfig, type Config } from '../config/index.js';
import { migrate } from '../store/migrate.js';
import { openDb } from '../store/open.js';
import type { SqliteDb } from '../store/sqlite.js';
import { createTollgate } from '../wiring.js';
import { appsCommand } from './commands/apps.js';
import { filesCommand, varsCommand } from './commands/content.js';
import { licensesCommand } from './commands/licenses.js';
import { auditCommand, bansCommand, tokensCommand } from './commands/operators.js';
import { usersCommand } from './commands/users.js';

type Flags = Partial<Record<keyof Config, string>>;

/** Reads config from env and flags; a bad value ends the process with one line naming the setting. */
function configOrExit(flags: Flags): Readonly<Config> {
  try {
    return loadConfig(process.env, flags);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`tollgate: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
}

const program = new Command('tollgate')
  .description('Tollgate: self-hosted access and licensing service')
  .option('--url <url>', 'server to manage [env TOLLGATE_URL, default http://127.0.0.1:8080]')
  .option('--token <token>', 'admin token [env TOLLGATE_ADMIN_TOKEN]')
  .option('--json', 'print JSON (for scripts) instead of tables');

const serve = program.command('serve').description('Run the service (creates the database and applies migrations at start)');
for (const setting of Object.values(SETTINGS)) {
  serve.option(`${setting.flag} <value>`, `${setting.description} [env ${setting.env}]`);
}
serve.action(async (options: Record<string, string>) => {
  // Downloads stream 256 KiB chunks. Once V8 decided to allocate the stream's bookkeeping objects in
  // the old generation ("allocation-site pretenuring"), each dead one kept its chunk alive until a full
  // GC, and the chunks' memory forced ~10 full GCs a second: a 100 MiB download ran at 520-620 MiB/s.
  // Without pretenuring the chunks die young: 850-970 MiB/s, no full GC (measured, docs/performance.md).
  setFlagsFromString('--no-allocation-site-pretenuring');
  const flags: Flags = {};
  for (const [key, value] of Object.entries(options)) flags[key as keyof Config] = value;
  const config = configOrExit(flags);
  const tollgate = await createTollgate(config);
  // Graceful: stop accepting, let in-flight requests finish (new ones get 503), close the pools; give up after 10 s.
  const stop = async (signal: string) => {
    tollgate.server.log.info({ signal }, 'shutting down: finishing in-flight requests');
    setTimeout(() => {
      tollgate.server.log.error('shutdown took over 10 s: exiting with requests still open');
      process.exit(1);
    }, 10_000).unref();
    await tollgate.close();
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
  try {
    const address = await tollgate.server.listen({ port: config.port, host: config.host });
    if (tollgate.initialAdminToken) printFirstStart(address, tollgate.initialAdminToken);
  } catch (err) {
    process.stderr.write(`tollgate: cannot listen on ${config.host}:${config.port}: ${(err as Error).message}\n`);
    await tollgate.close();
    process.exit(1);
  }
});

/** Shown once: the token is stored only as a digest and cannot be printed again. */
function printFirstStart(url: string, token: string): void {
  process.stdout.write(
    [
      '',
      'First start: created an admin token. It is shown only this once; keep it safe.',
      '',
      `  export TOLLGATE_URL=${url}`,
      `  export TOLLGATE_ADMIN_TOKEN=${token}`,
      '',
      'Next:',
      '  npx tollgate apps create "My App"            # prints the app key and secret',
      '  npx tollgate tokens create "ci"               # more named admin tokens',
      `  open ${url}/docs                               # API reference`,
      '',
    ].join('\n'),
  );
}

program
  .command('backup')
  .description('Copy a live SQLite database to a file, consistently, while the service runs (PostgreSQL: use pg_dump)')
  .argument('<destination>', 'file to write')
  .option('--database-url <url>', 'sqlite:<path> [env DATABASE_URL]')
  .action(async (destination: string, options: { databaseUrl?: string }) => {
    const config = configOrExit(options.databaseUrl ? { databaseUrl: options.databaseUrl } : {});
    if (!config.databaseUrl.startsWith('sqlite:')) {
      process.stderr.write('tollgate: backup copies SQLite databases; for PostgreSQL run: pg_dump --format=custom --file=tollgate.dump "$DATABASE_URL"\n');
      process.exit(2);
    }
    const db = await openDb(config.databaseUrl, config);
    try {
      await (db as SqliteDb).backup(destination);
      process.stdout.write(`backed up ${config.databaseUrl} to ${destination}\n`);
    } finally {
      await db.close();
    }
  });

program
  .command('migrate')
  .description('Apply pending database migrations and exit')
  .option('--database-url <url>', 'sqlite:<path> or postgres://… [env DATABASE_URL]')
  .action(async (options: { databaseUrl?: string }) => {
    const config = configOrExit(options.databaseUrl ? { databaseUrl: options.databaseUrl } : {});
    const db = await openDb(config.databaseUrl, config);
    try {
      const applied = await migrate(db);
      process.stdout.write(applied.length ? `applied migrations: ${applied.join(', ')}\n` : 'database is up to date\n');
    } finally {
      await db.close();
    }
  });

appsCommand(program);
licensesCommand(program);
usersCommand(program);
varsCommand(program);
filesCommand(program);
bansCommand(program);
tokensCommand(program);
auditCommand(program);

await program.parseAsync(process.argv);
