#!/usr/bin/env node
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { Command } from 'commander';
import { SETTINGS, type Config } from '../config/index.js';
import { appsCommand } from './commands/apps.js';
import { filesCommand, varsCommand } from './commands/content.js';
import { keysCommand } from './commands/keys.js';
import { integrationsCommand } from './commands/integrations.js';
import { licensesCommand } from './commands/licenses.js';
import { templatesCommand } from './commands/templates.js';
import { operatorAccountsCommand } from './commands/operator-accounts.js';
import { auditCommand, bansCommand, tokensCommand } from './commands/operators.js';
import { seatsCommand } from './commands/seats.js';
import { trialsCommand, usersCommand } from './commands/users.js';
import { webhooksCommand } from './commands/webhooks.js';
import { keepTickShape } from '../http/tick-shape.js';
import { localCommands } from './local.js';
import { resealCommand } from './reseal.js';
import { commandName, VERSION } from './package-info.js';
import { configOrExit, dbTarget, exit, failureLine, guardStart, waitForDatabase, type Flags } from './start.js';

const program = new Command('tollgate')
  .description('Tollgate: self-hosted access and licensing service')
  .version(VERSION, '-V, --version', 'print the version of this tollgate')
  .option('--url <url>', 'server to manage [env TOLLGATE_URL, default http://127.0.0.1:8080]')
  .option('--token <token>', 'admin token [env TOLLGATE_ADMIN_TOKEN]')
  .option('--app <app_id>', 'application, for the commands that act in one (audit: only its events) [env TOLLGATE_APP]')
  .option('--json', 'print JSON (for scripts) instead of tables')
  // The global options stand anywhere on the line, so each sub-command's help lists them too.
  .configureHelp({ showGlobalOptions: true });

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
  // Before anything else can run a full GC on an idle process: node:http's ~10 ticks per answer stay ~30 ns each
  // instead of ~250 ns once V8 lost nextTick's feedback (src/http/tick-shape.ts, docs/performance.md).
  keepTickShape();
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
  // The first admin token exists from here on. It never goes to stdout, which is the log stream (JSON a
  // machine parses, kept by journald and every shipper): at a terminal it goes to the terminal (stderr), else
  // into a file only this user can read, which one log line names (docs/decisions.md, issue 29).
  const firstToken = tollgate.initialAdminToken;
  const atTerminal = process.stderr.isTTY === true;
  const configured = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${config.port}`;
  let firstTokenShown = false;
  if (firstToken && !atTerminal) {
    writeFirstToken(tollgate.server.log, configured, firstToken);
    firstTokenShown = true;
  } else if (firstToken) {
    // A start that fails before it is shown (the port taken) shows it on the way out: the next start finds a
    // token and makes none, so unseen it would be lost.
    process.once('exit', () => {
      if (!firstTokenShown) process.stderr.write(firstStartText(configured, firstToken));
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
  if (firstToken && !firstTokenShown) {
    // After "Server listening" in both formats: JSON lines wait in a buffer, so let them out first.
    tollgate.flushLog();
    process.stderr.write(firstStartText(address, firstToken));
  }
  firstTokenShown = true;
});

/** Where a first start that is not at a terminal leaves the token: the working directory (the unit's state directory). */
const FIRST_TOKEN_FILE = 'tollgate-admin-token';

/**
 * The token into ./tollgate-admin-token, mode 0600, and one log line with the
 * file's path (never the token). A file already there (an earlier install) is
 * replaced, not written through: it could be a link to somewhere else.
 */
function writeFirstToken(log: { warn(obj: object, msg: string): void; error(obj: object, msg: string): void }, url: string, token: string): void {
  const path = resolve(FIRST_TOKEN_FILE);
  try {
    rmSync(path, { force: true });
    writeFileSync(path, firstStartText(url, token).trimStart(), { mode: 0o600, flag: 'wx' });
    log.warn({ event: 'first_admin_token', file: path }, `first start: the admin token is in ${path} (mode 0600, shown nowhere else); read it, then delete the file`);
  } catch (err) {
    log.error(
      { event: 'first_admin_token', file: path, err: { message: (err as Error).message } },
      `first start: cannot write the admin token to ${path}; create one with \`${commandName()} tokens create NAME --local\` on this machine`,
    );
  }
}

/** Shown once: the token is stored only as a digest and cannot be printed again. */
function firstStartText(url: string, token: string): string {
  const tollgate = commandName();
  return [
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
  ].join('\n');
}

localCommands(program);
resealCommand(program);
appsCommand(program);
licensesCommand(program);
templatesCommand(program);
integrationsCommand(program);
usersCommand(program);
seatsCommand(program);
trialsCommand(program);
varsCommand(program);
filesCommand(program);
bansCommand(program);
keysCommand(program);
tokensCommand(program);
auditCommand(program);
operatorAccountsCommand(program);
webhooksCommand(program);

await program.parseAsync(process.argv);
