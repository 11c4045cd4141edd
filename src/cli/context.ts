import { InvalidArgumentError, type Command } from 'commander';
import { ApiClient, CliError } from './api.js';
import type { OutputOptions } from './output.js';

export interface CliContext {
  api: ApiClient;
  out: OutputOptions;
  /** The sub-command's own options and the global ones (`--app` is global: it may stand anywhere). */
  opts: Record<string, unknown>;
}

/**
 * Wraps an admin sub-command: resolves --url/--token (or TOLLGATE_URL /
 * TOLLGATE_ADMIN_TOKEN), --json and --app from the global options, and turns a
 * failure into the server's detail on stderr with exit code 1.
 */
export function remote(fn: (ctx: CliContext, ...args: string[]) => Promise<void>) {
  return async function (this: Command, ...args: unknown[]): Promise<void> {
    const all = this.optsWithGlobals<{ url?: string; token?: string; json?: boolean; app?: string }>();
    const rawUrl = all.url ?? process.env.TOLLGATE_URL ?? 'http://127.0.0.1:8080';
    const token = all.token ?? process.env.TOLLGATE_ADMIN_TOKEN;
    if (!token) {
      process.stderr.write('tollgate: no admin token: pass --token or set TOLLGATE_ADMIN_TOKEN\n');
      process.exitCode = 1;
      return;
    }
    const positional = args.slice(0, this.registeredArguments.length) as string[];
    try {
      const url = serverUrl(rawUrl);
      await fn({ api: new ApiClient({ url, token }), out: { json: all.json === true }, opts: all }, ...positional);
    } catch (err) {
      if (err instanceof CliError) {
        process.stderr.write(`tollgate: ${err.message}\n`);
        process.exitCode = 1;
        return;
      }
      throw err;
    }
  };
}

/**
 * The server's address as typed: `127.0.0.1:8080` or `licensing.example.com`
 * without a scheme means http:// (as curl reads it), never "Invalid URL".
 */
export function serverUrl(raw: string): string {
  const text = raw.trim();
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `http://${text}`;
  const shown = withoutPassword(raw);
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw new CliError(`--url ${shown} is not a server address (for example http://127.0.0.1:8080)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new CliError(`--url ${shown}: only http:// and https:// servers`);
  // fetch refuses such a URL with a message that echoes it, password included.
  if (url.username || url.password) throw new CliError(`--url ${shown}: a user name or password in the URL is not supported; the admin token (--token) is the credential`);
  return url.href;
}

/** The URL as typed, with whatever stands between `user:` and `@` masked: it is printed, and logs keep it. */
function withoutPassword(raw: string): string {
  return raw.replace(/^((?:[^/]*\/\/)?[^/@:]*:)[^/@]*@/, '$1***@');
}

export function requireApp(ctx: CliContext): string {
  const app = (ctx.opts.app as string | undefined) ?? process.env.TOLLGATE_APP;
  if (!app) throw new CliError('no application: pass --app <app_id> or set TOLLGATE_APP');
  return app;
}

export const int = (value: string): number => {
  if (!/^-?\d+$/.test(value)) throw new InvalidArgumentError('must be an integer');
  return Number(value);
};

export const positiveInt = (value: string): number => {
  const n = int(value);
  if (n < 1) throw new InvalidArgumentError('must be at least 1');
  return n;
};
