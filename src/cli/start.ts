import { existsSync, statSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { ConfigError, loadConfig, type Config, type LogLevel } from '../config/index.js';
import { SchemaAhead, StoreMissing, StoreUnavailable } from '../store/db.js';
import { maskedUrl } from '../store/masked-url.js';
import { VERSION } from './package-info.js';

/**
 * Start-up of the local commands (serve, migrate, backup): where the database
 * is, how long to wait for it, and how every failure becomes one line on
 * stderr and a non-zero exit. An operator reads these lines in a terminal or
 * a unit's journal; a stack trace there hides the one fact that matters
 * (which path, which server, what is wrong) and looks like a bug.
 */

export type Flags = Partial<Record<keyof Config, string>>;

/** Reads config from env and flags; a bad value ends the process with one line naming the setting. */
export function configOrExit(flags: Flags): Readonly<Config> {
  try {
    return loadConfig(process.env, flags);
  } catch (err) {
    if (err instanceof ConfigError) exit(err.message, 2);
    throw err;
  }
}

/** The database a DATABASE_URL names, as the operator must read it. */
export interface DbTarget {
  kind: 'sqlite' | 'postgres';
  /** The absolute SQLite path (relative ones are resolved from the current directory), or the URL with its password masked. */
  location: string;
  /** Whether the command refuses to create it (every one but serve and `migrate --create`). */
  mustExist: boolean;
  /** A SQLite path typed relative: only then does the current directory explain where it was looked for. */
  relative?: boolean;
}

export function dbTarget(url: string, mustExist = false): DbTarget {
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length);
    return { kind: 'sqlite', location: path === ':memory:' ? path : resolve(path), mustExist, relative: path !== ':memory:' && !isAbsolute(path) };
  }
  // Start-up lines end up in logs and tickets: the store's masking, the same as in its own messages.
  return { kind: 'postgres', location: maskedUrl(url), mustExist };
}

/** A failure already phrased for the operator: printed as is. */
export class StartError extends Error {
  constructor(message: string, readonly exitCode = 1) {
    super(message);
    this.name = 'StartError';
  }
}

/**
 * A refusal of a local command's input in the command's own terms: the
 * domain phrases it for the HTTP API (`Invalid request: body.password …`),
 * which reads like a server's answer to someone who typed no request.
 * `names` gives each field as the operator typed it (an argument, an option).
 */
export function localRefusal(err: { message: string; fieldErrors?: { field: string; message: string }[] | undefined }, names: Record<string, string>): StartError {
  const fields = err.fieldErrors ?? [];
  if (fields.length === 0) return new StartError(err.message);
  return new StartError(`${fields.map((f) => `${names[f.field] ?? f.field} ${f.message}`).join('; ')}; nothing was created`);
}

function codeOf(err: unknown): string {
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && code !== '') return code;
  }
  return '';
}

/**
 * The driver's own error inside the store's wrappers: they name the location again ("PostgreSQL at
 * …: <driver message>"), which our lines name already, and the store reports a SQLite file it cannot
 * open as StoreMissing with the cause that says why (a parent that is a file, no permission).
 */
function unwrap(err: unknown): unknown {
  return (err instanceof StoreUnavailable || err instanceof StoreMissing) && err.cause instanceof Error ? err.cause : err;
}

function messageOf(err: unknown): string {
  const inner = unwrap(err);
  const text = inner instanceof Error ? inner.message || inner.name : String(inner);
  return text.replace(/\s*\n\s*/g, ' ').trim();
}

/**
 * Worth waiting for: the server is down, starting, restarting or out of
 * connections. The raw pg/network codes are listed as well as StoreUnavailable
 * so this holds whether or not the store maps them.
 */
const TRANSIENT_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ENOTFOUND', 'EPIPE',
  '57P01', '57P02', '57P03', '53300',
]);
const TRANSIENT_MESSAGES = /connection terminated|timeout exceeded when trying to connect|connection timeout/i;

export function isTransient(err: unknown): boolean {
  const code = codeOf(err);
  // A refused login (28xxx) is "unavailable" to a running node (a password being rotated), but at
  // start it is a wrong setting: waiting would only delay the line that says so.
  if (code.startsWith('28')) return false;
  if (err instanceof StoreUnavailable) return true;
  // 08xxx: connection exceptions.
  return TRANSIENT_CODES.has(code) || code.startsWith('08') || TRANSIENT_MESSAGES.test(messageOf(err));
}

function isMissing(err: unknown): boolean {
  return err instanceof StoreMissing || codeOf(err) === '3D000';
}

/** The nearest existing ancestor of `path` when it is not a directory (a SQLite path "under a file"). */
function fileInTheWay(path: string): string | null {
  for (let dir = dirname(path); ; dir = dirname(dir)) {
    try {
      return statSync(dir).isDirectory() ? null : dir;
    } catch {
      if (dirname(dir) === dir) return null;
    }
  }
}

/** The one line for a failure to open, reach or prepare the database. */
export function failureLine(err: unknown, target: DbTarget): string {
  const where = target.location;
  if (err instanceof StartError) return err.message;
  if (err instanceof SchemaAhead) {
    return `the database at ${where} has schema version ${err.found}, but this release (tollgate ${VERSION}) knows versions up to ${err.known}: a newer release migrated it; run that release, or restore the backup taken before the upgrade (docs/deploy.md, "Downgrades")`;
  }
  if (isTransient(err)) return `the database at ${where} does not answer: ${messageOf(err)}`;
  if (target.kind === 'sqlite') {
    const line = sqliteOpenFailure(err, target);
    if (line) return line;
  } else if (isMissing(unwrap(err))) {
    return `no PostgreSQL database at ${where}: create it first (createdb) or fix DATABASE_URL`;
  }
  const code = codeOf(err);
  if (code === '28P01' || code === '28000') return `PostgreSQL at ${where} refused the login: ${messageOf(err)}`;
  return `unexpected error (database ${where}): ${messageOf(err)}`;
}

/**
 * A SQLite file that could not be opened, explained from what the file system shows: the store
 * reports a missing file and one it cannot open alike (StoreMissing), and only the caller knows
 * whether the file had to exist.
 */
function sqliteOpenFailure(err: unknown, target: DbTarget): string | null {
  const where = target.location;
  const code = codeOf(err);
  const text = `${code} ${messageOf(err)}`;
  const opening = err instanceof StoreMissing || /^(SQLITE_|E[A-Z]+$)/.test(code) || /directory does not exist/i.test(text);
  if (!opening || where === ':memory:') return null;
  const blocker = fileInTheWay(where);
  if (blocker) return `cannot open the SQLite database at ${where}: ${blocker} is a file, not a directory`;
  if (target.mustExist && !existsSync(where)) {
    const from = target.relative ? `; a relative path is resolved from the current directory ${process.cwd()}` : '';
    return `no SQLite database at ${where} (nothing was created${from}); check DATABASE_URL or --database-url`;
  }
  // The store's message may already say "cannot open the SQLite database at <path>: "; say it once.
  const reason = messageOf(err).replace(`cannot open the SQLite database at ${where}: `, '');
  const unwritable = /SQLITE_CANTOPEN|SQLITE_READONLY|EACCES|EPERM|EROFS/.test(text);
  const hint = unwritable ? ` (check that ${dirname(where)} exists and this user, uid ${process.getuid?.() ?? '?'}, may write to it)` : '';
  return `cannot open the SQLite database at ${where}: ${reason}${hint}`;
}

const verbose = (level: LogLevel | undefined) => level === 'debug' || level === 'trace';

/** Prints `tollgate: <line>` on stderr and exits; the stack only when the operator asked for debug logs. */
export function exit(line: string, code = 1, err?: unknown, level?: LogLevel): never {
  const hint = line.startsWith('unexpected error') && !verbose(level) ? ' (LOG_LEVEL=debug prints the stack)' : '';
  process.stderr.write(`tollgate: ${line}${hint}\n`);
  if (err instanceof Error && err.stack && verbose(level)) process.stderr.write(`${err.stack}\n`);
  process.exit(code);
}

/**
 * Until the start is over, an error nobody awaited (an 'error' event, a
 * stray rejection) ends the process with one line rather than a trace.
 * Returns the function that lifts the guard once the service runs.
 */
export function guardStart(target: DbTarget, level: LogLevel): () => void {
  const onError = (err: unknown) => exit(failureLine(err, target), 1, err, level);
  process.on('uncaughtException', onError);
  process.on('unhandledRejection', onError);
  return () => {
    process.off('uncaughtException', onError);
    process.off('unhandledRejection', onError);
  };
}

/** Retries back off from 250 ms to at most 2 s: quick when a database is seconds from ready, gentle when it is down. */
const delay = (attempt: number) => Math.min(2000, 250 * 2 ** (attempt - 1));

/**
 * Runs `attempt` until it succeeds, retrying only what is worth waiting for
 * (isTransient), each retry told in one line, for at most `waitMs` in all:
 * an attempt still pending at the bound (a database that accepts and never
 * answers) counts as a failure too. 0: one attempt.
 */
export async function waitForDatabase<T>(attempt: () => Promise<T>, target: DbTarget, waitMs: number, say: (line: string) => void): Promise<T> {
  const deadline = Date.now() + waitMs;
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<never>((_, reject) => {
    if (waitMs > 0) timer = setTimeout(() => reject(new StartError(`the database at ${target.location} did not answer within DATABASE_WAIT_MS=${waitMs} ms`)), waitMs);
  });
  bound.catch(() => undefined);
  try {
    for (let n = 1; ; n++) {
      try {
        return await Promise.race([attempt(), bound]);
      } catch (err) {
        if (err instanceof StartError || !isTransient(err)) throw err;
        if (Date.now() + delay(n) >= deadline) {
          throw new StartError(`the database at ${target.location} does not answer (gave up after ${n} attempt${n === 1 ? '' : 's'}, DATABASE_WAIT_MS=${waitMs}): ${messageOf(err)}`);
        }
        say(`waiting for the database at ${target.location}: ${messageOf(err)} (attempt ${n})`);
        await Promise.race([new Promise((r) => setTimeout(r, delay(n))), bound]);
      }
    }
  } finally {
    clearTimeout(timer);
  }
}
