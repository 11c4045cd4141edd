#!/usr/bin/env node
import { existsSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import { Command } from 'commander';
import { SETTINGS, type Config } from '../config/index.js';
import { appsCommand } from './commands/apps.js';
import { filesCommand, varsCommand } from './commands/content.js';
import { keysCommand } from './commands/keys.js';
import { licensesCommand } from './commands/licenses.js';
import { operatorAccountsCommand } from './commands/operator-accounts.js';
import { auditCommand, bansCommand, tokensCommand } from './commands/operators.js';
import { usersCommand } from './commands/users.js';
import { localCommands } from './local.js';
import { resealCommand } from './reseal.js';
import { commandName, VERSION } from './package-info.js';
import { configOrExit, dbTarget, exit, failureLine, guardStart, waitForDatabase, type Flags } from './start.js';

const program = new Command('tollgate')
  .description('Tollgate: self-hosted access and licensing service')
  .version(VERSION, '-V, --version', 'print the version of this tollgate')
  .option('--url <url>', 'server to manage [env TOLLGATE_URL, default http://127.0.0.1:8080]')
  .option('--token <token>', 'admin token [env TOLLGATE_ADMIN_TOKEN]')
  .option('--json', 'print JSON (for scripts) instead of tables');

const serve = program.command('serve').description('Run the service (applies migrations at start; creates a SQLite database that does not exist yet)');
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
  const target = dbTarget(config.databaseUrl);
  const say = (line: string) => {
    if (config.logLevel !== 'silent') process.stderr.write(`tollgate: ${line}\n`);
  };
  // Which database this node uses, before anything can fail: a start in the wrong directory shows "new file".
  const fresh = target.kind === 'sqlite' && target.location !== ':memory:' && !existsSync(target.location);
  say(`database ${target.location} (${target.kind === 'sqlite' ? `SQLite${fresh ? ', new file' : ''}` : 'PostgreSQL'})`);
  const lift = guardStart(target, config.logLevel);
  // Loaded here, not at the top: the server (Fastify, its plugins, both store drivers) is ~0.25 s of
  // imports that every other command, `--version` included, would pay for nothing.
  const { createTollgate } = await import('../wiring.js');
  const tollgate = await waitForDatabase(() => createTollgate(config), target, config.databaseWaitMs, say).catch((err: unknown) =>
    exit(failureLine(err, target), 1, err, config.logLevel),
  );
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
  // The first admin token exists from here on. A start that fails before it is shown (the port taken)
  // shows it on the way out: the next start finds a token and makes none, so unseen it would be lost.
  const firstToken = tollgate.initialAdminToken;
  let firstTokenShown = false;
  if (firstToken) {
    process.once('exit', () => {
      if (!firstTokenShown) printFirstStart(`http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${config.port}`, firstToken);
    });
  }
  let address: string;
  try {
    address = await tollgate.server.listen({ port: config.port, host: config.host });
  } catch (err) {
    await tollgate.close().catch(() => undefined);
    exit(`cannot listen on ${config.host}:${config.port}: ${(err as Error).message}`, 1, err, config.logLevel);
  }
  lift();
  if (firstToken) printFirstStart(address, firstToken);
  firstTokenShown = true;
});

/** Shown once: the token is stored only as a digest and cannot be printed again. */
function printFirstStart(url: string, token: string): void {
  const tollgate = commandName();
  process.stdout.write(
    [
      '',
      'First start: created an admin token. It is shown only this once; keep it safe.',
      '',
      `  export TOLLGATE_URL=${url}`,
      `  export TOLLGATE_ADMIN_TOKEN=${token}`,
      '',
      'Next:',
      `  ${`${tollgate} apps create "My App"`.padEnd(40)} # prints the app key and secret`,
      `  ${`${tollgate} tokens create "ci"`.padEnd(40)} # more named admin tokens`,
      `  ${`open ${url}/docs`.padEnd(40)} # API reference`,
      '',
      `Lost this token? On this machine: ${tollgate} tokens create NAME --local (uses the same DATABASE_URL).`,
      '',
    ].join('\n'),
  );
}

localCommands(program);
resealCommand(program);
appsCommand(program);
licensesCommand(program);
usersCommand(program);
varsCommand(program);
filesCommand(program);
bansCommand(program);
keysCommand(program);
tokensCommand(program);
auditCommand(program);
operatorAccountsCommand(program);

await program.parseAsync(process.argv);
