import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { buildIfStale, MAIN, ROOT } from './cli-process.js';

/**
 * Every `tollgate` command is a new process: what it imports, it pays for at
 * each start (the server, pg and argon2 were ~0.3 s of CPU for `--version`).
 * Commands other than `serve` and the local database ones must not load them.
 * Which modules load is observed with a resolve hook, not timed.
 */
const HOOK = `data:text/javascript,${encodeURIComponent(
  "export async function resolve(s, c, next) { const r = await next(s, c); process.stderr.write('LOADED ' + r.url + '\\n'); return r; }",
)}`;
const REGISTER = `data:text/javascript,${encodeURIComponent(`import { register } from 'node:module'; register(${JSON.stringify(HOOK)});`)}`;
const HEAVY = [/node_modules\/pg\//, /node_modules\/fastify\//, /node_modules\/@node-rs\/argon2/, /node_modules\/better-sqlite3\//, /\/dist\/wiring\.js$/];

function loaded(args: string[]): string[] {
  const r = spawnSync(process.execPath, ['--import', REGISTER, MAIN, ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' },
  });
  const urls = r.stderr.split('\n').filter((l) => l.startsWith('LOADED ')).map((l) => l.slice('LOADED '.length));
  expect(urls.length, r.stderr).toBeGreaterThan(0);
  return urls;
}

describe('the CLI loads the server, the store drivers and the password hasher only for commands that use them', () => {
  buildIfStale();

  it.each([
    ['--version', ['--version']],
    ['a remote command', ['apps', 'list', '--url', 'http://127.0.0.1:1', '--token', 'x']],
    ['help', ['--help']],
  ])('%s', (_name, args) => {
    const heavy = loaded(args).filter((url) => HEAVY.some((re) => re.test(url)));
    expect(heavy).toEqual([]);
  });

  it('a local database command does load them (so the hook would see them)', () => {
    const urls = loaded(['tokens', 'create', 'x', '--local', '--database-url', 'sqlite:/nonexistent-dir/db.sqlite']);
    expect(urls.some((url) => /node_modules\/@node-rs\/argon2/.test(url))).toBe(true);
    expect(urls.some((url) => /\/dist\/store\/open\.js$/.test(url))).toBe(true);
  });
});
