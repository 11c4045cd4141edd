import { execFile, spawnSync } from 'node:child_process';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, call, startNode, stopNode, type Node } from './cluster/nodes.js';
import { PASSWORD, STORE } from './helpers.js';

/**
 * The `tollgate` command-line tool (DECISIONS.md, "Command-line tool") driven
 * as a user drives it: the built CLI as child processes against a real server
 * process on a temporary SQLite database. SQLite project only: the server is
 * a separate process with a store of its own, so the PostgreSQL run adds nothing.
 */

const ROOT = resolve(import.meta.dirname, '..');
const MAIN = join(ROOT, 'dist/cli/main.js');

const SYMBOL = '[A-HJ-NP-Z2-9]';
const DEFAULT_CODE = new RegExp(`^${SYMBOL}{5}(-${SYMBOL}{5}){4}$`);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ENV_ACTOR = 'env:TOLLGATE_ADMIN_TOKEN';

/** Builds dist/ when any source is newer than dist/cli/main.js (tsc emits even on type errors elsewhere). */
function buildIfStale(): void {
  const newest = (dir: string): number =>
    Math.max(0, ...readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts')).map((f) => statSync(join(dir, f)).mtimeMs));
  if (existsSync(MAIN) && statSync(MAIN).mtimeMs >= newest(join(ROOT, 'src'))) return;
  const tsc = spawnSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: ROOT, encoding: 'utf8' });
  if (tsc.status !== 0) console.warn(`tsc -p tsconfig.build.json exited ${tsc.status}:\n${tsc.stdout}${tsc.stderr}`);
  if (!existsSync(MAIN)) throw new Error(`build produced no ${MAIN}`);
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The environment of a CLI run: the test's own, minus any TOLLGATE_* setting that would leak in. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
  for (const key of Object.keys(env)) if (key.startsWith('TOLLGATE_')) delete env[key];
  return { ...env, ...extra };
}

function run(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((done) => {
    execFile(process.execPath, [MAIN, ...args], { env: cleanEnv(env), encoding: 'utf8', timeout: 20_000, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? ((err as { code: number }).code) : null) : 0;
      done({ code, stdout, stderr });
    });
  });
}

/** Runs `fn` over `items` with at most `limit` at a time. */
async function pool<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!);
      }
    }),
  );
  return out;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

describe.skipIf(STORE !== 'sqlite')('tollgate CLI against a real server', () => {
  let node: Node;
  let dir: string;
  let url: string;

  /** A CLI run with --url/--token flags. */
  const cli = (...args: string[]) => run(['--url', url, '--token', ADMIN_TOKEN, ...args]);
  /** A CLI run configured through TOLLGATE_URL / TOLLGATE_ADMIN_TOKEN. */
  const cliEnv = (args: string[], extra: Record<string, string> = {}) => run(args, { TOLLGATE_URL: url, TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN, ...extra });

  function ok(r: Run, what: string): Run {
    expect(r.code, `${what}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`).toBe(0);
    return r;
  }
  /** A successful run whose stdout must be JSON; returns it parsed. */
  function parsed(r: Run, what: string): Any {
    ok(r, what);
    try {
      return JSON.parse(r.stdout);
    } catch {
      throw new Error(`${what}: stdout is not JSON:\n${r.stdout}`);
    }
  }
  const json = async (...args: string[]): Promise<Any> => parsed(await cli(...args, '--json'), args.join(' '));
  const items = (x: Any): Any[] => (Array.isArray(x) ? x : x.items);

  /** The `detail` the server answers for this admin call, to compare with what the CLI prints. */
  async function serverDetail(method: string, path: string, body?: unknown, token = ADMIN_TOKEN): Promise<string> {
    const res = await call(url, method, `/admin/v1${path}`, { ...(body !== undefined && { body }), headers: { authorization: `Bearer ${token}` } });
    expect(res.status, JSON.stringify(res.body)).toBeGreaterThanOrEqual(400);
    expect(typeof res.body.detail).toBe('string');
    return res.body.detail as string;
  }

  /** A failed run: non-zero exit, nothing on stdout, and (when given) the server's detail on stderr. */
  function failed(r: Run, what: string, detail?: string, status?: number): void {
    expect(r.code, `${what} should fail\nstdout: ${r.stdout}\nstderr: ${r.stderr}`).not.toBe(0);
    expect(r.code).not.toBeNull();
    expect(r.stdout, what).toBe('');
    expect(r.stderr.trim().length, `${what}: nothing on stderr`).toBeGreaterThan(0);
    if (detail !== undefined) expect(r.stderr, what).toContain(detail);
    if (status !== undefined) expect(r.stderr, what).toContain(String(status));
    expect(r.stderr, `${what}: a stack trace on stderr`).not.toMatch(/\n\s+at .+:\d+:\d+/);
  }

  interface ClientApp {
    id: string;
    name: string;
    headers: Record<string, string>;
  }
  const client = (app: ClientApp, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    call(url, method, path, { ...(body !== undefined && { body }), headers: { ...app.headers, ...headers } });
  async function signUp(app: ClientApp, username: string, hardwareId?: string): Promise<string> {
    const res = await client(app, 'POST', '/sign_up', { username, password: PASSWORD, ...(hardwareId && { hardware_id: hardwareId }) });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.id as string;
  }
  const login = (app: ClientApp, username: string, password = PASSWORD, hardwareId?: string) =>
    client(app, 'POST', '/auth/login', { credentials: { username, password }, ...(hardwareId && { hardware_id: hardwareId }) });

  // Shared by the steps below, which run in order.
  let app: ClientApp;
  let codes: string[] = [];
  let activeUser: { id: string; username: string };

  beforeAll(async () => {
    buildIfStale();
    dir = mkdtempSync(join(tmpdir(), 'tollgate-cli-'));
    node = await startNode(`sqlite:${join(dir, 'tollgate.db')}`, { LOG_LEVEL: 'warn' });
    url = node.url;
  }, 60_000);

  afterAll(async () => {
    if (node) await stopNode(node);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  describe('--help', () => {
    const EXPECTED: Record<string, string[]> = {
      '': ['serve', 'backup', 'migrate', 'apps', 'licenses', 'users', 'seats', 'vars', 'files', 'bans', 'tokens', 'audit'],
      apps: ['list', 'create', 'get', 'update', 'rotate-secret', 'delete'],
      licenses: ['create', 'list', 'get', 'delete'],
      users: ['list', 'get', 'extend', 'lifetime', 'set-password', 'reset-devices', 'revoke-sessions', 'delete'],
      vars: ['list', 'get', 'set', 'delete'],
      files: ['list', 'upload', 'replace', 'get', 'delete'],
      bans: ['list', 'create', 'delete'],
      tokens: ['list', 'create', 'revoke'],
      seats: ['list', 'release'],
    };

    /** The entries of one section ("Options:", "Commands:") of a help text: term and description. */
    function section(help: string, title: string): { term: string; description: string }[] {
      const lines = help.split('\n');
      const start = lines.indexOf(`${title}:`);
      if (start < 0) return [];
      const out: { term: string; description: string }[] = [];
      for (const line of lines.slice(start + 1)) {
        if (line.trim() === '' || !line.startsWith(' ')) break;
        const m = /^ {2}(\S.*?)(?: {2,}(\S.*))?$/.exec(line);
        if (!m) continue; // a wrapped description line
        out.push({ term: m[1]!, description: m[2] ?? '' });
      }
      return out;
    }

    /**
     * Every sub-command's help, each a fresh evaluation of the built dist/cli/main.js with its own argv,
     * all in one child process (a process per help text would cost ~0.4 s of module loading each).
     * process.exit is caught, so the exit code is the one the real process would end with.
     */
    async function inOneProcess(argvs: string[][]): Promise<Run[]> {
      const runner = join(dir, 'help-runner.mjs');
      writeFileSync(
        runner,
        `import { pathToFileURL } from 'node:url';
const [main, requests] = [process.argv[2], JSON.parse(process.argv[3])];
const write = { out: process.stdout.write.bind(process.stdout), err: process.stderr.write.bind(process.stderr) };
class Exit { constructor(code) { this.code = code; } }
const results = [];
let n = 0;
for (const args of requests) {
  let stdout = '', stderr = '';
  process.stdout.write = (chunk) => { stdout += chunk; return true; };
  process.stderr.write = (chunk) => { stderr += chunk; return true; };
  process.exit = (code) => { throw new Exit(code ?? 0); };
  process.argv = [process.execPath, main, ...args];
  let code;
  try {
    await import(pathToFileURL(main).href + '?run=' + n++);
    code = process.exitCode ?? 0;
  } catch (e) {
    if (e instanceof Exit) code = e.code;
    else { stderr += String(e && e.stack || e); code = 99; }
  }
  process.exitCode = undefined;
  results.push({ code, stdout, stderr });
}
write.out(JSON.stringify(results));
`,
      );
      const r = await new Promise<Run>((done) =>
        execFile(process.execPath, [runner, MAIN, JSON.stringify(argvs)], { env: cleanEnv(), encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) =>
          done({ code: err ? 1 : 0, stdout, stderr }),
        ),
      );
      expect(r.code, r.stderr).toBe(0);
      return JSON.parse(r.stdout) as Run[];
    }

    it('works on every command and sub-command: exit 0, usage names it, every option and command described', async () => {
      // Discover the tree from the help texts themselves, and check it against the commands DECISIONS.md names.
      const seen = new Map<string, Run>();
      let frontier: string[][] = [[]];
      while (frontier.length) {
        const runs = await inOneProcess(frontier.map((p) => [...p, '--help']));
        const next: string[][] = [];
        frontier.forEach((path, i) => {
          const r = runs[i]!;
          seen.set(path.join(' '), r);
          for (const { term } of section(r.stdout, 'Commands')) {
            const name = term.split(' ')[0]!;
            if (name !== 'help') next.push([...path, name]);
          }
        });
        frontier = next;
      }
      for (const [parent, children] of Object.entries(EXPECTED)) {
        for (const child of children) expect([...seen.keys()], 'command missing from the help tree').toContain(parent ? `${parent} ${child}` : child);
      }
      expect(seen.size).toBeGreaterThanOrEqual(1 + Object.values(EXPECTED).flat().length);

      // A sample also as real processes of their own: the same text, exit code 0.
      const sample = ['', 'apps', 'licenses create', 'users set-password'];
      const real = await pool(sample, 4, (p) => run([...p.split(' ').filter(Boolean), '--help']));
      sample.forEach((p, i) => {
        const r = real[i]!;
        expect(r.code, `tollgate ${p} --help: ${r.stderr}`).toBe(0);
        expect(r.stdout, `tollgate ${p} --help`).toBe(seen.get(p)!.stdout);
      });

      const problems: string[] = [];
      for (const [path, r] of seen) {
        const name = `tollgate${path ? ' ' + path : ''}`;
        if (r.code !== 0) problems.push(`${name} --help exited ${r.code}: ${r.stderr}`);
        if (r.stderr !== '') problems.push(`${name} --help wrote to stderr: ${r.stderr}`);
        if (!r.stdout.startsWith(`Usage: ${name}`)) problems.push(`${name} --help does not start with "Usage: ${name}": ${r.stdout.slice(0, 80)}`);
        const description = r.stdout.split('\n')[2] ?? '';
        if (description.trim() === '') problems.push(`${name} --help has no description`);
        for (const { term, description: d } of [...section(r.stdout, 'Options'), ...section(r.stdout, 'Commands')]) {
          if (d.trim() === '') problems.push(`${name} --help: "${term}" has no description`);
        }
      }
      expect(problems, 'help texts').toEqual([]);
    });

    it('`help <command>` matches `<command> --help`', async () => {
      const [a, b] = await inOneProcess([['help', 'licenses'], ['licenses', '--help']]);
      expect(a!.code).toBe(0);
      expect(a!.stdout).toContain('Usage: tollgate licenses');
      expect(a!.stdout).toBe(b!.stdout);
    });
  });

  describe('apps', () => {
    it('create prints the key and, once, the secret; --json parses; the app works on the client API', async () => {
      const table = ok(await cli('apps', 'create', 'Table App'), 'apps create');
      expect(table.stdout).toMatch(/api_key\s.*tg_key_/);
      expect(table.stdout).toMatch(/api_secret\s.*tg_sec_/);
      expect(table.stdout).toContain('shown only once');

      const created = await json('apps', 'create', 'CLI App', '--max-devices', '2', '--registration', 'open');
      expect(created).toMatchObject({ name: 'CLI App', max_devices_per_user: 2, registration_open: true });
      expect(created.id).toMatch(UUID);
      expect(created.api_secret).toMatch(/^tg_sec_/);
      app = { id: created.id, name: created.name, headers: { 'x-api-key': created.api_key, 'x-api-secret': created.api_secret } };
      expect((await client(app, 'POST', '/sign_up', { username: 'probe', password: PASSWORD })).status).toBe(200);
    });

    it('list and get, through flags and through TOLLGATE_URL / TOLLGATE_ADMIN_TOKEN', async () => {
      const [viaFlags, viaEnv, table, got] = await Promise.all([
        json('apps', 'list'),
        cliEnv(['apps', 'list', '--json']),
        cliEnv(['apps', 'list']),
        json('apps', 'get', app.id),
      ]);
      const names = items(viaFlags).map((a: Any) => a.name);
      expect(names).toEqual(expect.arrayContaining(['Table App', 'CLI App']));
      expect(items(parsed(viaEnv, 'apps list (env)')).map((a: Any) => a.id)).toContain(app.id);
      expect(ok(table, 'apps list (table)').stdout).toContain('CLI App');
      expect(got).toMatchObject({ id: app.id, name: 'CLI App', max_devices_per_user: 2 });
      expect(got.api_secret).toBeUndefined();
      // The global --json also works before the sub-command.
      expect(parsed(await run(['--url', url, '--token', ADMIN_TOKEN, '--json', 'apps', 'get', app.id]), '--json apps get').id).toBe(app.id);
    });

    it('update changes the name and settings', async () => {
      const updated = await json('apps', 'update', app.id, '--name', 'CLI App 2', '--device-auth', 'on', '--max-devices', '1', '--session-ttl', '3600', '--password-min', '10', '--anonymous', 'off');
      expect(updated).toMatchObject({ id: app.id, name: 'CLI App 2', device_auth_enabled: true, max_devices_per_user: 1, session_ttl_seconds: 3600, password_min_length: 10, anonymous_access_allowed: false });
      app.name = 'CLI App 2';
      expect(await json('apps', 'get', app.id)).toMatchObject({ name: 'CLI App 2', device_auth_enabled: true });
      const back = await json('apps', 'update', app.id, '--device-auth', 'off', '--password-min', '8');
      expect(back).toMatchObject({ device_auth_enabled: false, password_min_length: 8 });
    });

    it('rotate-secret issues a new secret; the old one stops working at once', async () => {
      const old = app.headers['x-api-secret']!;
      const rotated = await json('apps', 'rotate-secret', app.id);
      expect(rotated.api_secret).toMatch(/^tg_sec_/);
      expect(rotated.api_secret).not.toBe(old);
      expect((await client(app, 'POST', '/sign_up', { username: 'probe2', password: PASSWORD })).status).toBe(401);
      app.headers['x-api-secret'] = rotated.api_secret;
      expect((await client(app, 'POST', '/sign_up', { username: 'probe2', password: PASSWORD })).status).toBe(200);
    });

    it('delete needs --confirm with the name; then the app is gone', async () => {
      const doomed = await json('apps', 'create', 'Doomed');
      const missing = await cli('apps', 'delete', doomed.id);
      failed(missing, 'apps delete without --confirm', '--confirm');
      const wrong = await cli('apps', 'delete', doomed.id, '--confirm', 'Not the name');
      failed(wrong, 'apps delete --confirm <wrong name>', await serverDetail('DELETE', `/apps/${doomed.id}?confirm=Not%20the%20name`), 422);
      expect(await json('apps', 'delete', doomed.id, '--confirm', 'Doomed')).toEqual({ ok: true });
      const gone = await cli('apps', 'get', doomed.id);
      failed(gone, 'apps get <deleted>', await serverDetail('GET', `/apps/${doomed.id}`), 404);
    });
  });

  describe('licenses', () => {
    /** 100 default-mask codes, 2 lifetime codes, 3 masked codes. */
    const TOTAL = 105;

    it('create --count 100 --minutes 43200 --csv: a header and 100 unique codes of the default mask', async () => {
      const r = ok(await cli('licenses', 'create', '--app', app.id, '--count', '100', '--minutes', '43200', '--csv'), 'licenses create --csv');
      const lines = r.stdout.split(/\r?\n/).filter((l) => l !== '');
      expect(lines.length).toBe(101);
      const header = lines[0]!.split(',');
      expect(header.slice(0, 2)).toEqual(['id', 'code']);
      const at = (name: string) => {
        const i = header.indexOf(name);
        expect(i, `CSV column ${name}`).toBeGreaterThanOrEqual(0);
        return i;
      };
      const rows = lines.slice(1).map((l) => l.split(','));
      for (const row of rows) {
        expect(row.length).toBe(header.length);
        expect(row[at('id')]).toMatch(UUID);
        expect(row[at('code')]).toMatch(DEFAULT_CODE);
        expect(row[at('minutes')]).toBe('43200');
        expect(row[at('grants_lifetime_access')]).toBe('false');
      }
      codes = rows.map((row) => row[1]!);
      expect(new Set(codes).size).toBe(100);
    });

    it('create with --lifetime and with --mask', async () => {
      const lifetime = await json('licenses', 'create', '--app', app.id, '--count', '2', '--lifetime', '--note', 'gift', '--expires-at', '2099-01-01T00:00:00Z');
      expect(lifetime.licenses).toHaveLength(2);
      for (const l of lifetime.licenses) {
        expect(l).toMatchObject({ minutes: null, grants_lifetime_access: true, revokes_lifetime_access: false, note: 'gift', expires_at: '2099-01-01T00:00:00.000Z' });
        expect(l.code).toMatch(DEFAULT_CODE);
      }
      // '0' is not in the code alphabet, so no random code can contain 'TG0-' and the search below matches these three only.
      const masked = await json('licenses', 'create', '--app', app.id, '--count', '3', '--minutes', '60', '--mask', 'TG0-XXXXXXXX-XXXXXXXX');
      expect(masked.licenses).toHaveLength(3);
      for (const l of masked.licenses) expect(l.code).toMatch(new RegExp(`^TG0-${SYMBOL}{8}-${SYMBOL}{8}$`));
    });

    it('refuses bad values with the server detail: weak mask, minutes with lifetime, count 0', async () => {
      const weak = await cli('licenses', 'create', '--app', app.id, '--count', '1', '--mask', 'XXXX');
      failed(weak, 'weak mask', await serverDetail('POST', `/apps/${app.id}/licenses`, { count: 1, mask: 'XXXX' }), 422);
      const both = await cli('licenses', 'create', '--app', app.id, '--minutes', '10', '--lifetime');
      failed(both, 'minutes and lifetime', await serverDetail('POST', `/apps/${app.id}/licenses`, { count: 1, minutes: 10, lifetime: true }), 422);
      const zero = await cli('licenses', 'create', '--app', app.id, '--count', '0');
      failed(zero, 'count 0', await serverDetail('POST', `/apps/${app.id}/licenses`, { count: 0 }), 422);
      failed(await cli('licenses', 'create', '--app', app.id, '--count', 'many'), 'count not a number', 'integer');
      failed(await cli('licenses', 'create', '--count', '1'), 'no --app', '--app');
    });

    it('list: --unused, --used, --q, --json; a redeemed code moves from unused to used', async () => {
      // Redeem one code through the client API, so there is a used license and an active user.
      const username = 'licensee';
      const userId = await signUp(app, username);
      const redeemed = codes[0]!;
      const activation = await client(app, 'POST', '/activate_license', { code: redeemed, username, password: PASSWORD });
      expect(activation.status, JSON.stringify(activation.body)).toBe(200);
      activeUser = { id: userId, username };

      const [all, unused, used, searched, viaEnv] = await Promise.all([
        json('licenses', 'list', '--app', app.id, '--limit', '500'),
        json('licenses', 'list', '--app', app.id, '--unused', '--limit', '500'),
        json('licenses', 'list', '--app', app.id, '--used'),
        json('licenses', 'list', '--app', app.id, '--q', 'TG0-'),
        cliEnv(['licenses', 'list', '--limit', '5', '--json'], { TOLLGATE_APP: app.id }),
      ]);
      expect(items(all)).toHaveLength(TOTAL);
      expect(items(unused)).toHaveLength(TOTAL - 1);
      expect(items(unused).map((l: Any) => l.code)).not.toContain(redeemed);
      expect(items(used)).toHaveLength(1);
      expect(items(used)[0]).toMatchObject({ code: redeemed, used_by_user_id: userId });
      expect(items(used)[0].used_at).not.toBeNull();
      expect(items(searched)).toHaveLength(3);
      for (const l of items(searched)) expect(l.code.startsWith('TG0-')).toBe(true);
      expect(items(parsed(viaEnv, 'licenses list (TOLLGATE_APP)'))).toHaveLength(5);
      // Default --limit is 100.
      expect(items(await json('licenses', 'list', '--app', app.id))).toHaveLength(100);
      const table = ok(await cli('licenses', 'list', '--app', app.id, '--used'), 'licenses list --used (table)');
      expect(table.stdout).toContain(redeemed);
    });

    it('list --csv is the server export: every matching license', async () => {
      const [everything, used] = await Promise.all([cli('licenses', 'list', '--app', app.id, '--csv'), cli('licenses', 'list', '--app', app.id, '--csv', '--used')]);
      const lines = ok(everything, 'licenses list --csv').stdout.split(/\r?\n/).filter((l) => l !== '');
      expect(lines[0]!.startsWith('id,code,')).toBe(true);
      expect(lines.length).toBe(1 + TOTAL);
      const exported = new Set(lines.slice(1).map((l) => l.split(',')[1]));
      for (const code of codes) expect(exported.has(code), code).toBe(true);
      // Byte for byte what the server's export answers.
      const direct = await fetch(`${url}/admin/v1/apps/${app.id}/licenses/export`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
      expect(everything.stdout).toBe(await direct.text());
      const usedLines = ok(used, 'licenses list --csv --used').stdout.split(/\r?\n/).filter((l) => l !== '');
      expect(usedLines.length).toBe(2);
      expect(usedLines[1]).toContain(codes[0]!);
    });

    it('get and delete', async () => {
      const list = items(await json('licenses', 'list', '--app', app.id, '--q', codes[1]!));
      expect(list).toHaveLength(1);
      const id = list[0].id as string;
      expect(await json('licenses', 'get', id, '--app', app.id)).toMatchObject({ id, code: codes[1], used_at: null });
      expect(await json('licenses', 'delete', id, '--app', app.id)).toEqual({ ok: true });
      failed(await cli('licenses', 'get', id, '--app', app.id), 'licenses get <deleted>', await serverDetail('GET', `/apps/${app.id}/licenses/${id}`), 404);
      // A used license is not deleted.
      const usedId = items(await json('licenses', 'list', '--app', app.id, '--used'))[0].id as string;
      const refused = await cli('licenses', 'delete', usedId, '--app', app.id);
      failed(refused, 'licenses delete <used>', await serverDetail('DELETE', `/apps/${app.id}/licenses/${usedId}`));
    });
  });

  describe('users', () => {
    let bob: string;

    it('list (--q, --json) and get', async () => {
      bob = await signUp(app, 'bob');
      const [all, searched, table, detail] = await Promise.all([
        json('users', 'list', '--app', app.id),
        json('users', 'list', '--app', app.id, '--q', 'bo'),
        cli('users', 'get', activeUser.id, '--app', app.id),
        json('users', 'get', activeUser.id, '--app', app.id),
      ]);
      expect(items(all).map((u: Any) => u.username)).toEqual(expect.arrayContaining(['bob', 'licensee', 'probe', 'probe2']));
      expect(items(searched).map((u: Any) => u.username)).toEqual(['bob']);
      expect(ok(table, 'users get (table)').stdout).toMatch(/licensee/);
      expect(detail).toMatchObject({ id: activeUser.id, username: 'licensee', membership: { is_active: true, is_lifetime: false } });
      for (const key of ['devices', 'ips', 'activations', 'sessions']) expect(Array.isArray(detail[key]), key).toBe(true);
      expect(detail.activations).toHaveLength(1);
      expect(detail.ips.length).toBeGreaterThan(0);
    });

    it('extend, lifetime, lifetime --revoke', async () => {
      const before = Date.now();
      const extended = await json('users', 'extend', bob, '--app', app.id, '--minutes', '60');
      expect(extended.membership.is_active).toBe(true);
      const until = Date.parse(extended.membership.active_until);
      expect(until).toBeGreaterThanOrEqual(before + 59 * 60_000);
      expect(until).toBeLessThanOrEqual(Date.now() + 61 * 60_000);
      expect((await json('users', 'lifetime', bob, '--app', app.id)).membership).toMatchObject({ is_active: true, is_lifetime: true });
      expect((await json('users', 'lifetime', bob, '--app', app.id, '--revoke')).membership).toMatchObject({ is_lifetime: false });
      failed(await cli('users', 'extend', bob, '--app', app.id), 'extend without --minutes', '--minutes');
      failed(await cli('users', 'extend', bob, '--app', app.id, '--minutes', '0'), 'extend 0', await serverDetail('PATCH', `/apps/${app.id}/users/${bob}`, { extend_minutes: 0 }), 422);
    });

    it('set-password: the new password logs in, the old one does not', async () => {
      await json('users', 'extend', bob, '--app', app.id, '--minutes', '60');
      expect(await json('users', 'set-password', bob, '--app', app.id, '--password', 'a brand new password')).toMatchObject({ id: bob, password_set: true });
      expect((await login(app, 'bob')).status).toBe(401);
      expect((await login(app, 'bob', 'a brand new password')).status).toBe(200);
      failed(await cli('users', 'set-password', bob, '--app', app.id, '--password', 'short'), 'set-password short', await serverDetail('PATCH', `/apps/${app.id}/users/${bob}`, { password: 'short' }), 422);
    });

    it('revoke-sessions ends live sessions', async () => {
      const token = (await login(app, 'bob', 'a brand new password')).body.session_token as string;
      expect((await client(app, 'GET', '/app_context', undefined, { authorization: `Bearer ${token}` })).status).toBe(200);
      const res = await json('users', 'revoke-sessions', bob, '--app', app.id);
      expect(res.revoked).toBeGreaterThanOrEqual(1);
      expect((await client(app, 'GET', '/app_context', undefined, { authorization: `Bearer ${token}` })).status).toBe(401);
      expect(ok(await cli('users', 'revoke-sessions', bob, '--app', app.id), 'revoke-sessions (text)').stdout).toMatch(/revoked 0 session/);
    });

    it('reset-devices lets a user in from a new device', async () => {
      ok(await cli('apps', 'update', app.id, '--device-auth', 'on'), 'device auth on');
      expect((await login(app, 'bob', 'a brand new password', 'hw-one')).status).toBe(200);
      const refused = await login(app, 'bob', 'a brand new password', 'hw-two');
      expect(refused.status).toBe(401);
      expect(refused.body.code).toBe('device_mismatch');
      expect(await json('users', 'reset-devices', bob, '--app', app.id)).toEqual({ ok: true });
      expect((await login(app, 'bob', 'a brand new password', 'hw-two')).status).toBe(200);
      ok(await cli('apps', 'update', app.id, '--device-auth', 'off'), 'device auth off');
    });

    it('delete', async () => {
      expect(ok(await cli('users', 'delete', bob, '--app', app.id), 'users delete').stdout).toContain(bob);
      failed(await cli('users', 'get', bob, '--app', app.id), 'users get <deleted>', await serverDetail('GET', `/apps/${app.id}/users/${bob}`), 404);
      expect((await login(app, 'bob', 'a brand new password')).status).toBe(401);
    });
  });

  describe('vars', () => {
    it('set, get, list, delete', async () => {
      expect(await json('vars', 'set', 'latest_version', '2.4.1', '--app', app.id)).toMatchObject({ name: 'latest_version', value: '2.4.1' });
      ok(await cliEnv(['vars', 'set', 'motd', 'hello, world'], { TOLLGATE_APP: app.id }), 'vars set (env)');
      expect(await json('vars', 'get', 'motd', '--app', app.id)).toMatchObject({ name: 'motd', value: 'hello, world' });
      const listed = items(await json('vars', 'list', '--app', app.id));
      expect(listed.map((v: Any) => [v.name, v.value]).sort()).toEqual([['latest_version', '2.4.1'], ['motd', 'hello, world']]);
      // The client sees them.
      const token = (await login(app, activeUser.username)).body.session_token as string;
      const ctx = await client(app, 'GET', '/app_context', undefined, { authorization: `Bearer ${token}` });
      expect(ctx.body.application.variables).toEqual(expect.arrayContaining([{ name: 'latest_version', value: '2.4.1' }]));
      expect(await json('vars', 'delete', 'motd', '--app', app.id)).toEqual({ ok: true });
      failed(await cli('vars', 'get', 'motd', '--app', app.id), 'vars get <deleted>', await serverDetail('GET', `/apps/${app.id}/variables/motd`), 404);
    });
  });

  describe('files', () => {
    it('upload, list, get, replace, delete; sizes and SHA-256 match; the client downloads the bytes', async () => {
      const first = randomBytes(300_000);
      const second = randomBytes(1234);
      const firstPath = join(dir, 'first.bin');
      const secondPath = join(dir, 'second.bin');
      writeFileSync(firstPath, first);
      writeFileSync(secondPath, second);
      const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

      const uploaded = await json('files', 'upload', firstPath, '--app', app.id, '--name', 'tool.bin', '--mime-type', 'application/x-tool', '--encrypted');
      expect(uploaded).toMatchObject({ name: 'tool.bin', mime_type: 'application/x-tool', is_encrypted: true, size: first.length, sha256: sha(first) });
      const plain = await json('files', 'upload', secondPath, '--app', app.id);
      expect(plain).toMatchObject({ name: 'second.bin', is_encrypted: false, size: second.length, sha256: sha(second) });

      const listed = items(await json('files', 'list', '--app', app.id));
      expect(listed.map((f: Any) => f.id).sort()).toEqual([uploaded.id, plain.id].sort());
      expect(await json('files', 'get', uploaded.id, '--app', app.id)).toMatchObject({ id: uploaded.id, sha256: sha(first) });

      const replaced = await json('files', 'replace', uploaded.id, secondPath, '--app', app.id);
      expect(replaced).toMatchObject({ id: uploaded.id, name: 'tool.bin', size: second.length, sha256: sha(second) });

      const token = (await login(app, activeUser.username)).body.session_token as string;
      const download = await fetch(`${url}/files/${uploaded.id}/download`, { headers: { ...app.headers, authorization: `Bearer ${token}` } });
      expect(download.status).toBe(200);
      expect(sha(Buffer.from(await download.arrayBuffer()))).toBe(sha(second));

      expect(await json('files', 'delete', plain.id, '--app', app.id)).toEqual({ ok: true });
      failed(await cli('files', 'get', plain.id, '--app', app.id), 'files get <deleted>', await serverDetail('GET', `/apps/${app.id}/files/${plain.id}`), 404);
      failed(await cli('files', 'upload', join(dir, 'no-such-file'), '--app', app.id), 'upload of a missing file', 'no-such-file');
    });
  });

  describe('bans', () => {
    it('create, list, delete: a banned user gets 403 from the client API until the ban is lifted', async () => {
      expect((await login(app, activeUser.username)).status).toBe(200);
      const ban = await json('bans', 'create', '--app', app.id, '--type', 'user', '--value', activeUser.id, '--reason', 'chargeback');
      expect(ban).toMatchObject({ type: 'user', value: activeUser.id, reason: 'chargeback', expires_at: null });
      expect(ban.id).toMatch(UUID);
      const refused = await login(app, activeUser.username);
      expect(refused.status).toBe(403);
      expect(refused.body.code).toBe('banned');

      const ipBan = await json('bans', 'create', '--app', app.id, '--type', 'ip', '--value', '203.0.113.0/24', '--expires-at', '2099-01-01T00:00:00Z');
      expect(ipBan).toMatchObject({ type: 'ip', value: '203.0.113.0/24', expires_at: '2099-01-01T00:00:00.000Z' });
      const [all, ips, table] = await Promise.all([json('bans', 'list', '--app', app.id), json('bans', 'list', '--app', app.id, '--type', 'ip'), cli('bans', 'list', '--app', app.id)]);
      expect(items(all).map((b: Any) => b.id).sort()).toEqual([ban.id, ipBan.id].sort());
      expect(items(ips).map((b: Any) => b.id)).toEqual([ipBan.id]);
      expect(ok(table, 'bans list (table)').stdout).toContain('chargeback');

      expect(await json('bans', 'delete', ban.id, '--app', app.id)).toEqual({ ok: true });
      expect((await login(app, activeUser.username)).status).toBe(200);
      ok(await cli('bans', 'delete', ipBan.id, '--app', app.id), 'bans delete (text)');
      expect(items(await json('bans', 'list', '--app', app.id))).toEqual([]);

      failed(await cli('bans', 'create', '--app', app.id, '--type', 'bogus', '--value', 'x'), 'ban of an unknown type', await serverDetail('POST', `/apps/${app.id}/bans`, { type: 'bogus', value: 'x' }), 422);
      failed(await cli('bans', 'create', '--app', app.id, '--type', 'ip'), 'ban without --value', '--value');
    });
  });

  describe('tokens and audit', () => {
    it('tokens create, list, revoke; a revoked token fails with exit 1 and the server detail', async () => {
      const created = await json('tokens', 'create', 'ci');
      expect(created).toMatchObject({ name: 'ci', revoked_at: null });
      expect(created.token).toMatch(/^tg_adm_/);
      // The new token works, and its writes are audited under its name.
      const withToken = (...args: string[]) => run(['--url', url, '--token', created.token, ...args]);
      ok(await withToken('vars', 'set', 'by_ci', 'yes', '--app', app.id), 'vars set with the new token');
      const listed = items(parsed(await withToken('tokens', 'list', '--json'), 'tokens list'));
      const mine = listed.find((t: Any) => t.id === created.id);
      expect(mine).toMatchObject({ name: 'ci', revoked_at: null });
      expect(mine.last_used_at).not.toBeNull();
      expect(mine.token).toBeUndefined();

      // A token with a role: a viewer reads and is refused a write with the server's detail; the list shows roles.
      const viewer = await json('tokens', 'create', 'looker', '--role', 'viewer');
      expect(viewer).toMatchObject({ name: 'looker', role: 'viewer' });
      const asViewer = (...args: string[]) => run(['--url', url, '--token', viewer.token, ...args]);
      ok(await asViewer('apps', 'list'), 'apps list as a viewer');
      failed(await asViewer('vars', 'set', 'by_viewer', 'no', '--app', app.id), 'vars set as a viewer', await serverDetail('PUT', `/apps/${app.id}/variables/by_viewer`, { value: 'no' }, viewer.token), 403);
      failed(await asViewer('tokens', 'create', 'escalate', '--role', 'owner'), 'a viewer minting an owner token', await serverDetail('POST', '/tokens', { name: 'escalate', role: 'owner' }, viewer.token), 403);
      const table = (await cli('tokens', 'list')).stdout;
      expect(table).toMatch(/looker\s*│\s*viewer\s*│/);
      // Who minted each token (issue 30.1): a column of its own; tokens of the environment's token have no operator.
      expect(table.split('\n').find((l) => l.includes('│'))).toMatch(/role\s*│\s*operator_username\s*│/);
      expect(created.role).toBe('owner');

      expect(await json('tokens', 'revoke', created.id)).toEqual({ ok: true });
      const denied = await withToken('apps', 'list');
      expect(denied.code).toBe(1);
      failed(denied, 'a revoked token', await serverDetail('GET', '/apps', undefined, created.token), 401);
      failed(await cli('tokens', 'revoke', created.id), 'revoke twice', await serverDetail('DELETE', `/tokens/${created.id}`), 404);

      const audit = parsed(await cli('audit', '--action', 'variable.put', '--json'), 'audit --action');
      const byCi = items(audit).find((e: Any) => e.target_id === 'by_ci' || JSON.stringify(e.details).includes('by_ci'));
      expect(byCi, JSON.stringify(audit)).toBeDefined();
      expect(byCi.actor).toContain('ci');
      expect(byCi.actor).toContain(created.id);
    });

    it('audit --json lists the actions just done, with the actor', async () => {
      const all = items(await json('audit', '--limit', '500'));
      const actions = new Set(all.map((e: Any) => e.action));
      for (const action of ['app.create', 'app.update', 'app.rotate_secret', 'app.delete', 'licenses.create', 'license.delete', 'user.update', 'user.reset_devices', 'user.revoke_sessions', 'user.delete', 'variable.put', 'variable.delete', 'file.create', 'file.replace_content', 'file.delete', 'ban.create', 'ban.delete', 'admin_token.create', 'admin_token.revoke']) {
        expect(actions.has(action), `audit lacks ${action}`).toBe(true);
      }
      // Newest first.
      const times = all.map((e: Any) => Date.parse(e.at));
      expect([...times].sort((a, b) => b - a)).toEqual(times);

      const bans = items(await json('audit', '--action', 'ban.create', '--app', app.id));
      expect(bans).toHaveLength(2);
      for (const e of bans) expect(e).toMatchObject({ action: 'ban.create', actor: ENV_ACTOR, app_id: app.id });
      const created = items(await json('audit', '--action', 'app.create', '--target', app.id));
      expect(created).toHaveLength(1);
      expect(created[0]).toMatchObject({ actor: ENV_ACTOR, app_id: app.id, target_id: app.id });
      expect(items(await json('audit', '--limit', '3'))).toHaveLength(3);
      expect(ok(await cli('audit', '--app', app.id, '--limit', '5'), 'audit (table)').stdout).toContain(ENV_ACTOR);
      failed(await cli('audit', '--since', 'yesterday'), 'audit --since <not a time>', await serverDetail('GET', '/audit?since=yesterday'), 422);
    });
  });

  describe('failures', () => {
    it('an unknown app id exits non-zero with the server detail', async () => {
      const ghost = randomUUID();
      const results = await Promise.all([
        cli('apps', 'get', ghost),
        cli('licenses', 'list', '--app', ghost),
        cli('files', 'list', '--app', ghost),
      ]);
      const detail = await serverDetail('GET', `/apps/${ghost}`);
      results.forEach((r, i) => failed(r, `unknown app #${i}`, undefined, 404));
      failed(results[0]!, 'apps get <unknown>', detail, 404);
      failed(await cli('apps', 'get', 'not-a-uuid'), 'apps get <not a uuid>', await serverDetail('GET', '/apps/not-a-uuid'), 422);
    });

    it('a wrong token exits 1 with the server detail, through the flag and through the environment', async () => {
      const detail = await serverDetail('GET', '/apps', undefined, 'wrong-token-0123456789');
      const [flag, env] = await Promise.all([
        run(['--url', url, '--token', 'wrong-token-0123456789', 'apps', 'list']),
        run(['apps', 'list', '--json'], { TOLLGATE_URL: url, TOLLGATE_ADMIN_TOKEN: 'wrong-token-0123456789' }),
      ]);
      for (const r of [flag, env]) {
        expect(r.code).toBe(1);
        failed(r, 'wrong token', detail, 401);
      }
      // The flag wins over the environment.
      parsed(await run(['--token', ADMIN_TOKEN, 'apps', 'list', '--json'], { TOLLGATE_URL: url, TOLLGATE_ADMIN_TOKEN: 'wrong-token-0123456789' }), 'flag over env');
    });

    it('bad option values exit non-zero: refused locally, or with the server detail', async () => {
      const [notInt, badSwitch, zeroDevices, badTtl] = await Promise.all([
        cli('apps', 'create', 'X', '--max-devices', 'abc'),
        cli('apps', 'create', 'X', '--device-auth', 'maybe'),
        cli('apps', 'create', 'X', '--max-devices', '0'),
        cli('apps', 'update', app.id, '--session-ttl', '5'),
      ]);
      failed(notInt, '--max-devices abc', '--max-devices');
      failed(badSwitch, '--device-auth maybe', '--device-auth');
      failed(zeroDevices, '--max-devices 0', await serverDetail('POST', '/apps', { name: 'X', max_devices_per_user: 0 }), 422);
      failed(badTtl, '--session-ttl 5', await serverDetail('PATCH', `/apps/${app.id}`, { session_ttl_seconds: 5 }), 422);
      // Nothing was created by the refused calls.
      expect(items(await json('apps', 'list')).map((a: Any) => a.name)).not.toContain('X');
    });

    it('no token, or no server, exits 1 with a clear line', async () => {
      const none = await run(['apps', 'list'], { TOLLGATE_URL: url });
      failed(none, 'no token', 'TOLLGATE_ADMIN_TOKEN');
      expect(none.code).toBe(1);
      const unreachable = await run(['--url', 'http://127.0.0.1:1', '--token', ADMIN_TOKEN, 'apps', 'list']);
      failed(unreachable, 'no server', 'cannot reach');
      expect(unreachable.code).toBe(1);
      failed(await cli('apps', 'frobnicate'), 'unknown sub-command', 'frobnicate');
    });
  });
});
