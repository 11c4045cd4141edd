import { statSync } from 'node:fs';
import { userInfo } from 'node:os';
import type { Command } from 'commander';
import { createOperator, listOperators, OPERATOR_PASSWORD_MIN, type OperatorAccountView } from '../../domain/admin/operator-accounts.js';
import { isRole, ROLES } from '../../domain/admin/roles.js';
import { cryptoRandom, systemClock } from '../../domain/deps.js';
import { DomainError } from '../../domain/errors.js';
import type { Services } from '../../domain/services.js';
import type { Db } from '../../store/db.js';
import { decodeCursor, type Cursor } from '../../store/pagination.js';
import { printObject, printRows } from '../output.js';
import { configOrExit, dbTarget, exit, failureLine, guardStart, localRefusal, StartError, type DbTarget } from '../start.js';

/**
 * `tollgate operators create|list`: dashboard accounts written straight into
 * the database, on the machine that holds it, with no server and no token.
 * This is how the first owner is made, and how an owner locked out of every
 * account gets back in. Whoever may write the database owns the server
 * anyway. Like `tokens create --local`, it never creates a database.
 */
export function operatorAccountsCommand(program: Command): void {
  const operators = program.command('operators').description('Dashboard operator accounts, in the database on this machine (DATABASE_URL)');
  operators
    .command('create')
    .description('Create an operator (the first owner: --role owner); the password is asked for on the terminal or read with --password-stdin')
    .argument('<username>')
    .requiredOption('--role <role>', `one of ${ROLES.join(', ')}`)
    .option('--password-stdin', 'read the password from standard input (one line) instead of asking')
    .option('--database-url <url>', 'sqlite:<path> or postgres://… [env DATABASE_URL]')
    .action(async function (this: Command, username: string, options: { role: string; passwordStdin?: boolean; databaseUrl?: string }) {
      const json = this.optsWithGlobals<{ json?: boolean }>().json === true;
      if (!isRole(options.role)) exit(`--role must be one of ${ROLES.join(', ')}`, 2);
      const role = options.role;
      await withDatabase(options.databaseUrl, async (s, target) => {
        const password = options.passwordStdin ? await readStdin() : await askTwice();
        const created = await createOperator({ ...s, actor: `local:${localUser()}` }, 'owner', { username, password, role });
        if (json) printObject({ ...created }, { json });
        else process.stdout.write(`created operator ${created.username} (${created.role}, ${created.id}) in ${target.location}\nSign in at /dashboard on the server that uses this database.\n`);
      });
    });
  operators
    .command('list')
    .description('List operators')
    .option('--database-url <url>', 'sqlite:<path> or postgres://… [env DATABASE_URL]')
    .action(async function (this: Command, options: { databaseUrl?: string }) {
      const json = this.optsWithGlobals<{ json?: boolean }>().json === true;
      await withDatabase(options.databaseUrl, async (s) => {
        const items: OperatorAccountView[] = [];
        let cursor: Cursor | null = null;
        do {
          const page = await listOperators(s, cursor, 500);
          items.push(...page.items);
          cursor = page.nextCursor ? decodeCursor(page.nextCursor) : null;
        } while (cursor);
        printRows(items as unknown as Record<string, unknown>[], ['id', 'username', 'role', 'totp_enabled', 'disabled', 'last_login_at'], { json });
      });
    });
}

async function withDatabase(databaseUrl: string | undefined, fn: (s: Services, target: DbTarget) => Promise<void>): Promise<void> {
  const config = configOrExit(databaseUrl ? { databaseUrl } : {});
  const target = dbTarget(config.databaseUrl, true);
  guardStart(target, config.logLevel);
  try {
    refuseEmptyFile(target);
    // The store and the password hasher load only here: the other commands start without them.
    const [{ openDb }, { createServices }, { createStore }, { argon2Hasher }] = await Promise.all([
      import('../../store/open.js'),
      import('../../domain/services.js'),
      import('../../store/index.js'),
      import('../../domain/password.js'),
    ]);
    const db = await openDb(config.databaseUrl, { ...config, mustExist: true });
    try {
      await requireOperatorsTable(db, target);
      // Older code writing into a newer schema may write what the newer release cannot read.
      await (await import('../../store/migrate.js')).refuseNewerSchema(db);
      const services = await createServices({ store: createStore(db), clock: systemClock, random: cryptoRandom, hasher: argon2Hasher(), counters: null });
      await fn(services, target).catch((err: unknown) => {
        throw err instanceof DomainError ? localRefusal(err, { 'body.username': 'the username', 'body.password': 'the password' }) : err;
      });
    } finally {
      await db.close();
    }
  } catch (err) {
    exit(failureLine(err, target), err instanceof StartError ? err.exitCode : 1, err, config.logLevel);
  }
}

/** A zero-byte file would open as an empty database: the wrong place, said as such. */
function refuseEmptyFile(target: DbTarget): void {
  if (target.kind !== 'sqlite') return;
  let size = -1;
  try {
    size = statSync(target.location).size;
  } catch {
    return; // missing: openDb refuses it, naming the path
  }
  if (size === 0) throw new StartError(`${target.location} is not a Tollgate database (an empty file)`);
}

async function requireOperatorsTable(db: Db, target: DbTarget): Promise<void> {
  const present = async (table: string) =>
    (db.dialect === 'sqlite'
      ? await db.one("SELECT 1 AS present FROM sqlite_master WHERE type = 'table' AND name = ?", [table])
      : await db.one('SELECT 1 AS present WHERE to_regclass(?) IS NOT NULL', [table])) !== undefined;
  if (!(await present('schema_migrations'))) throw new StartError(`${target.location} is not a Tollgate database (no schema_migrations table)`);
  if (!(await present('operators'))) throw new StartError(`${target.location} predates operator accounts: run \`tollgate migrate\` (or start the new version once) first`);
}

/** The first line of standard input, without its line ending (`printf %s "$PW" | tollgate operators create …`). */
async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  const line = Buffer.concat(chunks).toString('utf8').split(/\r?\n/)[0] ?? '';
  if (line === '') throw new StartError('--password-stdin: standard input was empty');
  return line;
}

async function askTwice(): Promise<string> {
  if (!process.stdin.isTTY) throw new StartError('no terminal to ask for the password on: pipe it in with --password-stdin');
  const first = await ask(`Password (at least ${OPERATOR_PASSWORD_MIN} characters): `);
  const second = await ask('Repeat it: ');
  if (first !== second) throw new StartError('the two passwords differ; nothing was created');
  return first;
}

/** Reads a line on the terminal without echoing it. */
function ask(prompt: string): Promise<string> {
  process.stderr.write(prompt);
  const stdin = process.stdin;
  stdin.setRawMode(true);
  stdin.setEncoding('utf8');
  stdin.resume();
  return new Promise((resolve, reject) => {
    let value = '';
    const finish = () => {
      stdin.off('data', onData);
      stdin.setRawMode(false);
      stdin.pause();
      process.stderr.write('\n');
    };
    const onData = (chunk: string) => {
      for (const ch of chunk) {
        if (ch === '\r' || ch === '\n') return finish(), resolve(value);
        if (ch === '\u0003' || ch === '\u0004') return finish(), reject(new StartError('cancelled; nothing was created'));
        value = ch === '\u007f' || ch === '\b' ? [...value].slice(0, -1).join('') : value + ch;
      }
    };
    stdin.on('data', onData);
  });
}

function localUser(): string {
  try {
    return userInfo().username;
  } catch {
    return `uid ${process.getuid?.() ?? '?'}`;
  }
}
