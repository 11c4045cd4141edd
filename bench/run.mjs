#!/usr/bin/env node
// Tollgate benchmark harness: `npm run bench [-- options]`. See docs/performance.md.
//
// Starts the real server (node dist/cli/main.js serve) on a fresh SQLite file
// seeded with --users users, and the bare ceilings (node:http: JSON, file
// streams, an argon2id route, the JSON plus one Ed25519 signature; a one-route
// Fastify app), every server pinned to core 0 and the load to core 1 where
// there are two cores; runs every scenario
// over loopback (wrk for fixed requests, autocannon for requests that differ
// every time and for downloads) in turns with its ceilings, samples the
// server's RSS every 100 ms and its CPU per request, then the /app_context
// scenarios on PostgreSQL when one answers. Prints a table and writes
// bench/results/bench-<users>-users-<time>.json.
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { cpus, freemem, loadavg, release, tmpdir, totalmem, availableParallelism } from 'node:os';
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, openSync, writeSync, closeSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { cleanEnv, freePort, killAllChildren, logPath, rssSampler, runNode, startChild, stopChild } from './lib/proc.mjs';
import { createCodes, PASSWORD, seedUsers, setUpApp, setUpSigningKey, tollgateClient, USER_PREFIX } from './lib/tollgate.mjs';
import { formatSummary, summarise } from './profile-summary.mjs';
import { webhookLines, webhookRows } from './webhooks.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const RESULTS = join(ROOT, 'bench', 'results');
const MiB = 1024 * 1024;

const HELP = `Usage: npm run bench -- [options]

  --quick                   a smoke test in about a minute: 1000 users, 2 s per scenario, one turn each, the
                            /app_context rows, the access-log row and login on SQLite (--only and --users still apply)
  --users N                 users seeded into the store (default 10000)
  --duration S              seconds per scenario (default 10)
  --warmup S                unmeasured seconds before each scenario and each ceiling (default 1)
  --slices N                a scenario and its HTTP ceiling take turns, N runs each of S/N seconds (default 5)
  --connections N           connections for the JSON routes (default 50)
  --argon2-connections N    connections for the password routes and their bare argon2id route (default 8)
  --download-connections N  connections for the 1 MiB and 100 MiB downloads (default 10 and 4: "a,b" or one number)
  --only a,b                run only these scenarios (names as in the table; ceilings they need run too)
  --autocannon              measure the fixed-request rows with autocannon instead of wrk (not comparable with the targets)
  --no-postgres             skip the PostgreSQL scenarios
  --no-pin                  do not pin the servers to core 0 and the load generator to core 1
  --profile                 instead of the table: run the server under node --cpu-prof on /app_context (Bearer)
                            for --duration seconds and print where the CPU time goes
  --profile-scenario NAME   profile another scenario instead (e.g. sign_up, login)
  --profile-db DB           sqlite (default) or postgres
  --max-minutes M           hard stop for the single-node run (default 15; the 3-node and failover runs after it have their own)
  --no-cluster              skip what follows the table: 3 nodes behind nginx against 1 (bench/cluster.mjs) and a
                            PostgreSQL failover, asynchronous and remote_apply (bench/failover.mjs); skipped too with
                            --quick, --only and --profile
  --keep                    keep the temporary directory (database, files, server logs)

  Environment: BENCH_DATABASE_URL=postgres://user@host:port/db names the PostgreSQL server to use
  (default postgres://postgres@127.0.0.1:5432/postgres); a fresh database is created there and dropped after.

  Scale: run once with the default --users and once with --users 1000000; each run writes its JSON with
  the user count in the file name and prints the p50 of /sign_up, /activate_license and /app_context
  next to the latest run at another user count.`;

const { values: argv } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    users: { type: 'string' },
    duration: { type: 'string' },
    warmup: { type: 'string' },
    slices: { type: 'string' },
    connections: { type: 'string', default: '50' },
    'argon2-connections': { type: 'string', default: '8' },
    'download-connections': { type: 'string', default: '10,4' },
    only: { type: 'string' },
    autocannon: { type: 'boolean', default: false },
    'no-pin': { type: 'boolean', default: false },
    'no-postgres': { type: 'boolean', default: false },
    profile: { type: 'boolean', default: false },
    'profile-scenario': { type: 'string', default: 'app_context_bearer' },
    'profile-db': { type: 'string', default: 'sqlite' },
    'max-minutes': { type: 'string', default: '15' },
    keep: { type: 'boolean', default: false },
    'no-cluster': { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});
if (argv.help) {
  process.stdout.write(HELP + '\n');
  process.exit(0);
}
const positive = (name, v, { integer = true } = {}) => {
  const n = Number(v);
  if (!(n > 0) || (integer && !Number.isInteger(n))) {
    process.stderr.write(`bench: --${name} must be a positive ${integer ? 'integer' : 'number'}, got "${v}"\n`);
    process.exit(2);
  }
  return n;
};
// --quick: the defaults of a smoke test; options given explicitly still win.
const QUICK_ONLY = 'app_context_bearer,app_context_license_code,app_context_password,app_context_access_log,login';
const given = (name, normal, quick) => argv[name] ?? (argv.quick ? quick : normal);
const opt = {
  quick: argv.quick,
  users: positive('users', given('users', '10000', '1000')),
  duration: positive('duration', given('duration', '10', '2'), { integer: false }),
  warmup: given('warmup', '1', '1') === '0' ? 0 : positive('warmup', given('warmup', '1', '1'), { integer: false }),
  slices: positive('slices', given('slices', '5', '1')),
  connections: positive('connections', argv.connections),
  argon2Connections: positive('argon2-connections', argv['argon2-connections']),
  downloadConnections: argv['download-connections'].split(',').map((v) => positive('download-connections', v)),
  only: argv.only || argv.quick ? new Set((argv.only ?? QUICK_ONLY).split(',').map((s) => s.trim())) : null,
  postgres: !argv['no-postgres'] && !(argv.quick && !argv.only),
  autocannon: argv.autocannon,
  pin: !argv['no-pin'],
  profile: argv.profile,
  profileScenario: argv['profile-scenario'],
  profileDb: ['sqlite', 'postgres'].includes(argv['profile-db']) ? argv['profile-db'] : (process.stderr.write('bench: --profile-db must be sqlite or postgres\n'), process.exit(2)),
  maxMinutes: positive('max-minutes', argv['max-minutes'], { integer: false }),
  keep: argv.keep,
};
const [dl1Connections, dl100Connections = dl1Connections] = opt.downloadConnections;

if (!existsSync(join(ROOT, 'dist', 'cli', 'main.js'))) {
  process.stderr.write('bench: dist/cli/main.js is missing; run `npm run build` first (npm run bench does)\n');
  process.exit(2);
}

// ---------------------------------------------------------------- load generator and pinning

/** Whether a command can be started at all (its exit status does not matter: `wrk -v` exits 1). */
const installed = (cmd, args) => !spawnSync(cmd, args, { stdio: 'ignore', timeout: 10_000 }).error;

// The fixed-request rows need a load generator that is not itself the bottleneck: autocannon (one
// Node.js thread) set the pace of the bare server, which then idled a third of the time.
const LOAD_TOOL = opt.autocannon ? 'autocannon' : 'wrk';
if (LOAD_TOOL === 'wrk' && !installed('wrk', ['-v'])) {
  process.stderr.write(
    'bench: wrk is not installed. The /app_context rows and their ceilings are measured with wrk, a C load generator\n' +
      'that keeps up with the bare server (autocannon does not). Install it and run again:\n\n' +
      '    sudo apt-get install wrk        # Debian/Ubuntu package "wrk"; other systems: https://github.com/wg/wrk\n\n' +
      'or pass --autocannon to measure those rows with autocannon (ratios then not comparable with the targets).\n',
  );
  process.exit(2);
}

/**
 * Server on core 0 (every thread: taskset before exec), load generator on core 1: neither steals the
 * other's core, and the bare server and Tollgate meet the same conditions. Not possible on one core.
 */
const PIN = (() => {
  const none = (why) => ({ server: undefined, load: undefined, note: `not pinned: ${why}` });
  if (!opt.pin) return none('--no-pin');
  if (availableParallelism() < 2) return none(`${availableParallelism()} CPU available (pinning needs two)`);
  if (!installed('taskset', ['-V'])) return none('taskset (util-linux) is missing');
  return { server: ['taskset', '-c', '0'], load: ['taskset', '-c', '1'], note: 'pinned: every server process (all its threads) on core 0, the load generator on core 1 (taskset); PostgreSQL is not pinned' };
})();

// ---------------------------------------------------------------- run bounds

const startedAt = Date.now();
// A private copy of dist/ for the whole run: others may rebuild dist/ meanwhile, and every number of
// one run (and its build fingerprint) must come from one build. Inside bench/ so that the copy still
// resolves its packages from the project's node_modules.
// The package.json beside it, as in a checkout: the CLI reads its version from ../../package.json.
const DIST_ROOT = join(ROOT, 'bench', `.dist-${process.pid}`);
const DIST = join(DIST_ROOT, 'dist');
cpSync(join(ROOT, 'dist'), DIST, { recursive: true, filter: (src) => !src.endsWith('.map') });
copyFileSync(join(ROOT, 'package.json'), join(DIST_ROOT, 'package.json'));
// Other work on the machine skews every number: recorded with the results, and warned about when high.
const startLoad = loadavg().map((l) => Math.round(l * 100) / 100);
const work = mkdtempSync(join(tmpdir(), 'tollgate-bench-'));
let cleanedUp = false;
function cleanup() {
  if (cleanedUp) return;
  cleanedUp = true;
  killAllChildren();
  rmSync(DIST_ROOT, { recursive: true, force: true });
  if (!opt.keep) rmSync(work, { recursive: true, force: true });
}
const deadline = setTimeout(() => {
  process.stderr.write(`\nbench: --max-minutes ${opt.maxMinutes} exceeded; stopping everything\n`);
  cleanup();
  process.exit(1);
}, opt.maxMinutes * 60_000);
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.once(sig, () => {
    process.stderr.write(`\nbench: ${sig}: stopping\n`);
    cleanup();
    process.exit(130);
  });
}
process.once('exit', cleanup);

const say = (msg) => process.stderr.write(`[${((Date.now() - startedAt) / 1000).toFixed(1).padStart(6)} s] ${msg}\n`);

// ---------------------------------------------------------------- load

let specCounter = 0;

/**
 * Warm-up (unmeasured), then the measured runs, by wrk or autocannon driven
 * from a fresh child process (bench/lib/load-worker.mjs, on the load core),
 * sampling the RSS of each target's server (`targets[i].pid`) every 100 ms
 * throughout (the baseline is read before the first request); the worker adds
 * up each server's CPU per request. Several targets take turns in --slices runs each.
 */
async function measure(targets, { duration = opt.duration, warmup = opt.warmup, slices = opt.slices } = {}) {
  const pids = targets.map((t) => t.pid);
  const file = join(work, `load-${++specCounter}.json`);
  writeFileSync(file, JSON.stringify({ targets, duration, warmup, slices }));
  const samplers = pids.map((pid) => rssSampler(pid, 100));
  let out;
  let rss;
  try {
    out = await runNode([join(ROOT, 'bench', 'lib', 'load-worker.mjs'), file], {
      cwd: ROOT, env: cleanEnv({}), prefix: PIN.load, timeoutMs: ((duration + warmup) * targets.length + 90) * 1000, // the worker measures each target for `duration`
    });
  } finally {
    rss = samplers.map((sampler) => sampler.stop());
  }
  const results = JSON.parse(out.trim().split('\n').at(-1)).targets;
  return results.map((r, i) => ({ connections: targets[i].connections, ...r, rss: rss[i] }));
}

// ---------------------------------------------------------------- servers

const ADMIN_TOKEN = `tg_bench_${randomBytes(24).toString('hex')}`;

/**
 * The server as an operator runs it, at the default log level, with rate limits and the access log
 * off (each costs a few microseconds per request: the access-log row measures that one).
 */
async function startTollgate(name, databaseUrl, nodeFlags = [], env = {}) {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const child = await startChild({
    name: `tollgate (${name})`,
    args: [...nodeFlags, join(DIST, 'cli', 'main.js'), 'serve'],
    cwd: work,
    prefix: PIN.server,
    env: cleanEnv({
      PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: databaseUrl, TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN,
      RATE_LIMIT: 'off', LOG_LEVEL: 'info', ACCESS_LOG: 'off', ...env,
    }),
    logFile: logPath(work, `tollgate-${name}`),
    ready: async () => (await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(1000) })).ok,
  });
  return { child, base, port, client: tollgateClient(base, ADMIN_TOKEN) };
}

/** The bare node:http ceiling server, or (framework 'fastify') the one-route Fastify app. */
async function startCeilingServer(jsonBytes, filesDir, nodeFlags = [], framework = 'node:http') {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const child = await startChild({
    name: `ceiling server (${framework})`,
    args: [
      ...nodeFlags, join(ROOT, 'bench', 'ceiling-server.mjs'), '--port', String(port), '--json-bytes', String(jsonBytes),
      '--dir', filesDir, '--dist', DIST, '--password', PASSWORD, '--framework', framework,
    ],
    cwd: work,
    prefix: PIN.server,
    env: cleanEnv({}),
    logFile: logPath(work, framework === 'fastify' ? 'ceiling-fastify' : 'ceiling'),
    ready: async () => (await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(1000) })).ok,
  });
  return { child, base };
}

// ---------------------------------------------------------------- fixtures

/** Content files in a directory of their own (the ceiling server serves that directory). */
function writeFiles() {
  const dir = join(work, 'files');
  mkdirSync(dir);
  const write = (name, size) => {
    const path = join(dir, name);
    const fd = openSync(path, 'w');
    const block = randomBytes(MiB);
    for (let done = 0; done < size; done += MiB) writeSync(fd, block, 0, Math.min(MiB, size - done));
    closeSync(fd);
    return { path, name, size };
  };
  const small = write('small-1mib.bin', MiB);
  // Without a 100 MiB download to measure (--quick, --only), a stand-in of the same name: only its metadata shows in /app_context.
  const large = ['download_100mib', 'download_100mib_x20'].some(selected) ? write('large-100mib.bin', 100 * MiB) : { ...small, name: 'large-100mib.bin' };
  return { dir, small, large };
}

/** One argon2id hash with the production parameters, reused for every seeded user. */
async function passwordHash() {
  const { argon2Hasher, OWASP_ARGON2 } = await import(pathToFileURL(join(DIST, 'domain', 'password.js')).href);
  return { hash: await argon2Hasher(OWASP_ARGON2).hash(PASSWORD), params: OWASP_ARGON2 };
}

/** The app, files, users, a license-code user and a session: everything the scenarios need. */
async function prepareStore(server, databaseUrl, files, hash, label) {
  const { client } = server;
  say(`${label}: creating the app, its variables and files (upload of ${(files.large.size / MiB).toFixed(0)} MiB)`);
  const app = await setUpApp(client, { small: files.small, large: files.large });
  await setUpSigningKey(DIST, client, app.id);
  const t = Date.now();
  await seedUsers(DIST, databaseUrl, app.id, opt.users, hash, (n) => say(`${label}: seeded ${n} users…`), (m) => say(`${label}: ${m}`));
  const seedSeconds = (Date.now() - t) / 1000;
  say(`${label}: seeded ${opt.users} users in ${seedSeconds.toFixed(1)} s`);
  const [code] = await createCodes(client, app.id, 1);
  await client.call('POST', '/sign_up_with_license_code', { body: { code }, headers: app.appHeaders });
  const { session_token: token } = await client.call('POST', '/auth/login', {
    body: { credentials: { username: `${USER_PREFIX}0`, password: PASSWORD } },
    headers: app.appHeaders,
  });
  const ctx = await client.call('GET', '/app_context', { headers: { ...app.appHeaders, authorization: `Bearer ${token}` }, raw: true });
  settleDisk(label);
  return { ...app, licenseCode: code, token, appContextBytes: ctx.bytes, seedSeconds };
}

/**
 * Writes the dirty pages of the setup (the upload, a million seeded users: ~450 MiB) to disk before
 * anything is measured. Left to the kernel, that write-back ran during the first scenario (seen in
 * /proc/meminfo's Dirty: 450 MiB at its start, gone by its end), on the same two CPUs.
 */
function settleDisk(label) {
  const t = Date.now();
  const r = spawnSync('sync', { stdio: 'ignore', timeout: 120_000 });
  if (r.error || r.status !== 0) say(`${label}: sync failed (${r.error?.message ?? `exit ${r.status}`}); the kernel may still be writing the setup back`);
  else say(`${label}: setup written to disk in ${((Date.now() - t) / 1000).toFixed(1)} s`);
}

// ---------------------------------------------------------------- scenarios

const signupTag = randomBytes(3).toString('hex');

/**
 * Each scenario: what it loads, its ceilings and its target. `ceiling` names the
 * ceiling of the target's ratio, `also` the ceilings shown beside it (each
 * measured in the same turns); `target` is { ratio } (of the ceiling's rate)
 * or { rssGrowthMiB }. Fixed requests go by LOAD_TOOL (wrk); requests that
 * differ every time and downloads by autocannon (its byte count of partial
 * responses, and the results the download targets were set on).
 */
function scenarios(server, app, db, codes = []) {
  const url = server.base;
  const h = app.appHeaders;
  const bearer = { ...h, authorization: `Bearer ${app.token}` };
  const users = { users: opt.users, prefix: USER_PREFIX, password: PASSWORD };
  const codesFile = join(work, `codes-${db}.json`);
  const json = (row) => ({ ceiling: 'json', also: ['fastify'], ...row, options: { connections: opt.connections, tool: LOAD_TOOL, ...row.options } });
  const list = [
    json({
      name: 'app_context_bearer', route: 'GET /app_context (Bearer)', target: { ratio: db === 'postgres' ? 0.7 : 0.8 },
      options: { url: `${url}/app_context`, headers: bearer },
    }),
    json({
      // The same request asking for a signed answer (Tollgate-Nonce), answered on the fast path since issue 26: the
      // row above minus this one is the cost of signing (one Ed25519 signature and two SHA-256). Target 0.30 of bare
      // node:http (issue 26). Beside it json_signed, bare node:http doing that signing work and nothing else: the
      // signature's own limit, which the line SIGNATURE LIMIT compares with (on both stores). One nonce for the whole
      // run: the server keeps no nonce, so a fresh one per request would cost it nothing more.
      name: 'app_context_signed', route: 'GET /app_context (Bearer, signed: Tollgate-Nonce)', target: db === 'postgres' ? null : { ratio: 0.3 },
      also: ['fastify', 'json_signed'],
      options: { url: `${url}/app_context`, headers: { ...bearer, 'tollgate-nonce': 'bench-nonce-0123456789abcdef' } },
    }),
    json({
      name: 'app_context_license_code', route: 'GET /app_context (x-api-license-code)', target: db === 'postgres' ? null : { ratio: 0.7 },
      options: { url: `${url}/app_context`, headers: { ...h, 'x-api-license-code': app.licenseCode } },
    }),
    json({
      // A client polling with legacy username/password headers: the password is verified with argon2 once, then cached.
      name: 'app_context_password', route: 'GET /app_context (x-api-username/password)', target: db === 'postgres' ? null : { ratio: 0.7 },
      options: { url: `${url}/app_context`, headers: { ...h, 'x-api-username': `${USER_PREFIX}0`, 'x-api-password': PASSWORD } },
    }),
  ];
  if (db === 'postgres') return list;
  list.push(
    json({
      // The Bearer row with the access log on (ACCESS_LOG=on, one info line per request to the server's log file), on a
      // second server over the same database, in turns with the first (log off): its cost per request. No target.
      name: 'app_context_access_log', route: 'GET /app_context (Bearer), access log on', target: null, accessLog: true,
      options: { headers: bearer },
    }),
    {
      name: 'download_1mib', route: 'GET /files/:id/download (1 MiB)', ceiling: 'stream_1mib', target: { ratio: 0.8 }, metric: 'bytes',
      options: { url: `${url}/files/${app.fileIds.small}/download`, headers: bearer, connections: dl1Connections, timeout: 120 },
    },
    {
      name: 'download_100mib', route: 'GET /files/:id/download (100 MiB)', ceiling: 'stream_100mib', target: { ratio: 0.8 }, metric: 'bytes',
      options: { url: `${url}/files/${app.fileIds.large}/download`, headers: bearer, connections: dl100Connections, timeout: 120 },
    },
    {
      name: 'download_100mib_x20', route: '100 MiB download, 20 clients at once', ceiling: 'stream_100mib_x20', target: { rssGrowthMiB: 64 }, metric: 'bytes',
      options: { url: `${url}/files/${app.fileIds.large}/download`, headers: bearer, connections: 20, timeout: 120 },
    },
    {
      // Worst case, no target: every request a different user, so every request verifies a password with argon2.
      name: 'app_context_password_cold', route: 'GET /app_context (x-api-username/password, a new user each request)', ceiling: 'http_argon2', target: null,
      options: { url, headers: h, connections: opt.argon2Connections, dynamic: { kind: 'user-headers', path: '/app_context', ...users } },
    },
    {
      name: 'login', route: 'POST /auth/login', ceiling: 'http_argon2', target: { ratio: 0.9 },
      options: { url, headers: h, connections: opt.argon2Connections, dynamic: { kind: 'login', path: '/auth/login', ...users } },
    },
    {
      name: 'sign_up', route: 'POST /sign_up', ceiling: 'http_argon2', target: { ratio: 0.9 },
      options: { url, headers: h, connections: opt.argon2Connections, dynamic: { kind: 'signup', path: '/sign_up', tag: signupTag, password: PASSWORD } },
    },
    {
      // One fresh unused code per request (written to codesFile just before the run), an existing user each time.
      name: 'activate_license', route: 'POST /activate_license', ceiling: 'http_argon2', target: null, codes, codesFile,
      options: { url, headers: h, connections: opt.argon2Connections, dynamic: { kind: 'activate', path: '/activate_license', codesFile, ...users } },
    },
  );
  return list;
}

const selected = (name) => !opt.only || opt.only.has(name);

/** The Bearer /app_context request, as its row sends it. */
const bearerRequest = (server, app) => ({
  url: `${server.base}/app_context`, headers: { ...app.appHeaders, authorization: `Bearer ${app.token}` }, connections: opt.connections, tool: LOAD_TOOL,
});

function verdict(row) {
  if (!row.target) return '—';
  const bad = row.non2xx + row.errors + row.timeouts > Math.max(5, 0.01 * row.requests);
  let ok;
  if (row.target.ratio !== undefined) ok = row.ratio !== null && row.ratio >= row.target.ratio;
  else ok = row.rss.growth !== null && row.rss.growth < row.target.rssGrowthMiB * MiB;
  return ok && !bad ? 'PASS' : bad ? 'FAIL (errors)' : 'FAIL';
}

const targetText = (t) => (!t ? '—' : t.ratio !== undefined ? `≥ ${t.ratio}` : `RSS +< ${t.rssGrowthMiB} MiB`);

// ---------------------------------------------------------------- output

const mib = (b) => (b === null || b === undefined ? '?' : (b / MiB).toFixed(1));
const fmt = (n, d = 0) => (n === null || n === undefined || Number.isNaN(n) ? '—' : n.toFixed(d));
/** Latencies in ms: wrk measures fractions of a millisecond; autocannon's histogram has whole ones (0: under 1 ms). */
const ms = (n) => (n === null || n === undefined ? '—' : n === 0 ? '<1' : fmt(n, n < 1 ? 2 : n < 10 && !Number.isInteger(n) ? 1 : 0));
/** The server's CPU per request answered, user + kernel, in µs (all its threads). */
const cpu = (r) => (r.cpuUserUs === null || r.cpuUserUs === undefined ? '—' : `${fmt(r.cpuUserUs, 1)} + ${fmt(r.cpuSysUs, 1)}`);
const rateOf = (metric, r) => (metric === 'bytes' ? r.mibps : r.rps);
const rateText = (rate, bytes) => `${fmt(rate, rate < 100 ? 1 : 0)} ${bytes ? 'MiB/s' : 'req/s'}`;

function table(rows) {
  const head = ['scenario', 'db', 'load', 'conns', 'req/s', 'MiB/s', 'p50 ms', 'p99 ms', 'non-2xx/err', 'CPU µs/req user+sys', 'peak RSS MiB', 'RSS growth MiB', 'ceiling (#)', 'ratio', 'ratio to Fastify (#)', 'target', 'result'];
  const lines = rows.map((r) => {
    const bytes = r.metric === 'bytes';
    const fastify = r.also?.find((a) => a.name === 'fastify');
    return [
      r.name, r.db, r.tool, String(r.connections), fmt(r.rps, r.rps < 100 ? 1 : 0), fmt(r.mibps, 1), ms(r.p50), ms(r.p99), `${r.non2xx}/${r.errors + r.timeouts}`, cpu(r),
      mib(r.rss.peak), mib(r.rss.growth), `${rateText(r.ceilingRate, bytes)} (${r.ceiling} #${r.ceilingSeq})`, fmt(r.ratio, 2),
      fastify ? `${fmt(fastify.ratio, 2)} (#${fastify.seq})` : '—', targetText(r.target), r.verdict,
    ];
  });
  return markdown(head, lines);
}

function ceilingTable(all) {
  const head = ['#', 'ceiling', 'what', 'load', 'conns', 'rate/s', 'MiB/s', 'p50 ms', 'p99 ms', 'CPU µs/req user+sys', 'peak RSS MiB', 'RSS growth MiB'];
  const lines = all.map((c) => [
    String(c.seq), c.name, c.what, c.tool, String(c.connections), fmt(c.rps, c.rps < 100 ? 1 : 0), fmt(c.mibps, 1), ms(c.p50), ms(c.p99), cpu(c), mib(c.rss.peak), mib(c.rss.growth),
  ]);
  return markdown(head, lines);
}

/** Every target, one line each: what the issue asks to see at a glance. */
function targetLines(rows) {
  const withTarget = rows.filter((r) => r.target);
  if (!withTarget.length) return [];
  const lines = withTarget.map((r) => {
    const value = r.target.ratio !== undefined ? `${fmt(r.ratio, 2)} of ${r.ceiling} (#${r.ceilingSeq})` : `RSS growth ${mib(r.rss.growth)} MiB`;
    return `${r.verdict.padEnd(13)} ${`${r.name} (${r.db})`.padEnd(36)} ${value}, target ${targetText(r.target)}`;
  });
  const failed = withTarget.filter((r) => r.verdict !== 'PASS').length;
  return [`Targets: ${withTarget.length - failed} PASS, ${failed} FAIL`, '', ...lines, ''];
}

/** The access-log row next to the same server's log-off row, measured in the same turns: the log's cost per request. */
function accessLogNotes(rows) {
  return rows.filter((r) => r.accessLog).map((r) => {
    const a = r.accessLog;
    return `Access log (ACCESS_LOG=on, ${a.lines} lines written): ${fmt(r.rps)} req/s (${fmt(r.ratio, 2)} of node:http) against ${fmt(a.off.rps)} req/s ` +
      `(${fmt(a.offRatio, 2)}) with it off in the same turns: ${fmt(a.costUs, 1)} µs more per request at full load, ` +
      `server CPU ${fmt(a.cpuCostUs, 1)} µs more per request (${cpu(r)} against ${cpu(a.off)})\n`;
  });
}
function markdown(head, lines) {
  const widths = head.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
  const row = (cells) => `| ${cells.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  return [row(head), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...lines.map(row)].join('\n');
}

/** The p50s the scale comparison looks at, from this run and the latest run at another user count. */
const SCALE_SCENARIOS = ['sign_up', 'activate_license', 'app_context_bearer'];
function scaleNote(current) {
  const others = new Map();
  for (const f of existsSync(RESULTS) ? readdirSync(RESULTS) : []) {
    const m = /^bench-(\d+)-users-.*\.json$/.exec(f);
    if (!m || Number(m[1]) === current.meta.users) continue;
    try {
      const data = JSON.parse(readFileSync(join(RESULTS, f), 'utf8'));
      if (!data.scenarios.some((s) => SCALE_SCENARIOS.includes(s.name))) continue; // an --only run of other scenarios
      // A smoke test, or another load generator (autocannon's p50 has whole milliseconds, wrk's fractions): not comparable.
      if (data.meta.quick || (data.meta.loadTool ?? 'autocannon') !== current.meta.loadTool) continue;
      const prev = others.get(data.meta.users);
      if (!prev || data.meta.finishedAt > prev.meta.finishedAt) others.set(data.meta.users, data);
    } catch {
      // not one of ours
    }
  }
  const pick = (data, name) => data.scenarios.find((s) => s.name === name && s.db === 'sqlite');
  const runs = [current, ...others.values()].sort((a, b) => a.meta.users - b.meta.users);
  const head = ['scenario (SQLite)', ...runs.map((r) => `p50 ms @ ${r.meta.users} users`), ...runs.map((r) => `req/s @ ${r.meta.users}`)];
  const lines = SCALE_SCENARIOS.map((name) => [
    name,
    ...runs.map((r) => ms(pick(r, name)?.p50)),
    ...runs.map((r) => fmt(pick(r, name)?.rps, 1)),
  ]);
  const builds = new Set(runs.map((r) => r.meta.machine.build));
  const note = runs.length > 1
    ? `\n(${runs.map((r) => `${r.meta.users} users: build ${r.meta.machine.build}, ${r.meta.finishedAt}`).join('; ')}${builds.size > 1 ? ' — different builds: the comparison mixes code changes with scale' : ''})`
    : `\n(no run at another user count in bench/results yet: run again with --users ${current.meta.users >= 1_000_000 ? 10_000 : 1_000_000} to compare)`;
  return markdown(head, lines) + note;
}

function machine() {
  const cpu = /model name\s*:\s*(.*)/.exec(safeRead('/proc/cpuinfo'))?.[1] ?? cpus()[0]?.model ?? 'unknown';
  let commit = 'unknown';
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src'], { cwd: ROOT, encoding: 'utf8' }).trim();
    if (dirty) commit += ' (src/ modified)';
  } catch {
    // not a git checkout
  }
  return {
    nproc: availableParallelism(), cpu, node: process.version, kernel: release(), memTotalMiB: Math.round(totalmem() / MiB), memFreeMiB: Math.round(freemem() / MiB),
    commit, build: distFingerprint(), autocannon: JSON.parse(safeRead(join(ROOT, 'node_modules', 'autocannon', 'package.json')) || '{}').version ?? 'unknown',
    wrk: LOAD_TOOL === 'wrk' ? /wrk (\S+)/.exec(spawnSync('wrk', ['-v'], { encoding: 'utf8' }).stdout ?? '')?.[1] ?? 'unknown' : null, loadAverageAtStart: startLoad, loadAverageAtEnd: loadavg().map((l) => Math.round(l * 100) / 100),
  };
}

/** SHA-256 (12 hex) over the .js files of the build measured: tells whether two runs measured the same build. */
function distFingerprint() {
  const hash = createHash('sha256');
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.js')) hash.update(path.slice(DIST.length)).update(readFileSync(path));
    }
  };
  walk(DIST);
  return hash.digest('hex').slice(0, 12);
}

function safeRead(path) {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

// ---------------------------------------------------------------- PostgreSQL

async function postgresServer() {
  const serverUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const safe = serverUrl.replace(/:[^:@/]*@/, ':***@');
  const { default: pg } = await import('pg');
  const admin = new pg.Client({ connectionString: serverUrl, connectionTimeoutMillis: 3000 });
  try {
    await admin.connect();
  } catch (err) {
    return { skip: `PostgreSQL: SKIPPED, not reachable at ${safe} (${err.message}); set BENCH_DATABASE_URL to run it` };
  }
  const name = `tollgate_bench_${randomBytes(6).toString('hex')}`;
  const version = (await admin.query('SHOW server_version')).rows[0].server_version;
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(), name, version, safe,
    drop: async () => {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    },
  };
}

// ---------------------------------------------------------------- main

async function main() {
  say(`work directory ${work}; ${opt.users} users, ${opt.duration} s per scenario (+${opt.warmup} s warm-up)${opt.quick ? ' (--quick)' : ''}`);
  say(PIN.note);
  say(`load generator: ${LOAD_TOOL} for fixed requests, autocannon for requests that differ every time and for downloads`);
  if (startLoad[0] > availableParallelism() * 0.5) {
    say(`warning: load average ${startLoad[0]} on ${availableParallelism()} CPUs: other work competes with the benchmark, expect low and noisy numbers`);
  }
  const files = writeFiles();
  const { hash, params } = await passwordHash();
  const sqliteUrl = `sqlite:${join(work, 'tollgate.db')}`;

  if (opt.profile) return profileRun(files, hash, sqliteUrl);

  const rows = [];
  const notes = [];

  // 1. Tollgate on SQLite, seeded; the bare servers beside it (each idles while another is measured).
  const server = await startTollgate('sqlite', sqliteUrl);
  const app = await prepareStore(server, sqliteUrl, files, hash, 'SQLite');
  say(`/app_context answers ${app.appContextBytes} bytes: the JSON ceilings answer as many`);
  await warmUp(server, bearerRequest(server, app));
  const bare = await startCeilingServer(app.appContextBytes, files.dir);
  const fastify = await startCeilingServer(app.appContextBytes, files.dir, [], 'fastify');
  const ceilings = pairedCeilings({ bare, fastify }, app.appContextBytes, files);
  for (const ceiling of [bare, fastify]) await warmUp(ceiling, { url: `${ceiling.base}/json`, connections: opt.connections, tool: LOAD_TOOL });
  if (selected('app_context_signed')) {
    // With the signed row's headers (Bearer, nonce), so the path it will be measured on is the one compiled.
    const { headers } = scenarios(server, app, 'sqlite').find((s) => s.name === 'app_context_signed').options;
    await warmUp(bare, { url: `${bare.base}/json-signed`, headers, connections: opt.connections, tool: LOAD_TOOL });
  }

  // 2. The scenarios on SQLite, each in turns with its ceilings.
  for (const s of scenarios(server, app, 'sqlite', [])) {
    if (!selected(s.name)) continue;
    if (s.name === 'activate_license') {
      // One fresh code per request, with a wide margin over the latest bare argon2 route's rate.
      const rate = ceilings.latestRate('http_argon2') ?? 200;
      const count = Math.ceil(rate * (opt.duration + opt.warmup) * 2.5) + 500;
      say(`creating ${count} license codes for /activate_license`);
      s.codes.push(...(await createCodes(server.client, app.id, count)));
      writeFileSync(s.codesFile, JSON.stringify(s.codes));
    }
    rows.push(s.accessLog ? await accessLogRow(s, server, sqliteUrl, ceilings) : (await runScenario(s, 'sqlite', server, ceilings)).row);
  }
  await stopChild(server.child);

  // 3. PostgreSQL, when there is one.
  let postgres = null;
  const pgScenarios = ['app_context_bearer', 'app_context_signed', 'app_context_license_code', 'app_context_password'].filter(selected);
  if (opt.postgres && pgScenarios.length > 0) {
    const pgInfo = await postgresServer();
    if (pgInfo.skip) {
      notes.push(pgInfo.skip);
      say(pgInfo.skip);
    } else {
      postgres = { version: pgInfo.version, database: pgInfo.name };
      say(`PostgreSQL ${pgInfo.version}: fresh database ${pgInfo.name} on ${pgInfo.safe}`);
      try {
        const pgServer = await startTollgate('postgres', pgInfo.url);
        try {
          // The same app shape; a stand-in for the 100 MiB file (only its metadata shows in /app_context).
          const standIn = { ...files.large, path: files.small.path };
          const pgApp = await prepareStore(pgServer, pgInfo.url, { small: files.small, large: standIn }, hash, 'PostgreSQL');
          postgres.seedSeconds = pgApp.seedSeconds;
          await warmUp(pgServer, bearerRequest(pgServer, pgApp));
          if (pgApp.appContextBytes !== app.appContextBytes) notes.push(`PostgreSQL: /app_context answers ${pgApp.appContextBytes} bytes (SQLite: ${app.appContextBytes})`);
          for (const s of scenarios(pgServer, pgApp, 'postgres', [])) {
            if (selected(s.name) && !s.accessLog) rows.push((await runScenario(s, 'postgres', pgServer, ceilings)).row);
          }
        } finally {
          await stopChild(pgServer.child);
        }
      } finally {
        await pgInfo.drop();
        say(`dropped ${pgInfo.name}`);
      }
    }
  } else if (!opt.postgres) {
    notes.push(`PostgreSQL: SKIPPED (${opt.quick ? '--quick' : '--no-postgres'})`);
  }
  // 4. Webhooks (bench/webhooks.mjs): a fresh store each, SQLite and PostgreSQL.
  const webhooks = [];
  if (selected('webhooks')) {
    const sizes = opt.quick ? { writes: 200, burst: 500, samples: 50 } : { writes: 1000, burst: 3000, samples: 200 };
    webhooks.push(await webhookRows({ startTollgate, stopChild, databaseUrl: `sqlite:${join(work, 'webhooks.db')}`, db: 'sqlite', say, sizes }));
    if (opt.postgres || opt.quick) {
      const pgInfo = await postgresServer();
      if (pgInfo.skip) notes.push(`webhooks on ${pgInfo.skip}`);
      else {
        try {
          webhooks.push(await webhookRows({ startTollgate, stopChild, databaseUrl: pgInfo.url, db: 'postgres', say, sizes }));
        } finally {
          await pgInfo.drop();
        }
      }
    }
  }
  await stopChild(bare.child);
  await stopChild(fastify.child);
  notes.push(...signingCost(rows));

  const finishedAt = new Date().toISOString();
  const result = {
    meta: {
      users: opt.users, duration: opt.duration, warmup: opt.warmup, connections: opt.connections, argon2Connections: opt.argon2Connections,
      downloadConnections: [dl1Connections, dl100Connections], slices: opt.slices, argon2Params: params, appContextBytes: app.appContextBytes,
      seedSeconds: app.seedSeconds, postgres, loadTool: LOAD_TOOL, pinning: PIN.note, quick: opt.quick,
      startedAt: new Date(startedAt).toISOString(), finishedAt, wallSeconds: (Date.now() - startedAt) / 1000, machine: machine(), notes,
    },
    ceilings: ceilings.all,
    scenarios: rows,
    webhooks,
  };
  mkdirSync(RESULTS, { recursive: true });
  const file = join(RESULTS, `bench-${opt.users}-users-${finishedAt.replace(/[:.]/g, '-')}${opt.quick ? '-quick' : ''}.json`);
  writeFileSync(file, JSON.stringify(result, null, 2) + '\n');

  const m = result.meta.machine;
  const out = [
    '',
    `Tollgate benchmark: ${opt.users} users, ${opt.duration} s per scenario in ${opt.slices} turn(s), ${m.nproc} × ${m.cpu}, Node ${m.node}, commit ${m.commit}, build ${m.build}`,
    `load average (1/5/15 min) at start ${m.loadAverageAtStart.join(' ')}, at end ${m.loadAverageAtEnd.join(' ')}`,
    `${PIN.note}; load: ${LOAD_TOOL === 'wrk' ? `wrk ${m.wrk} (one thread)` : `autocannon ${m.autocannon}`} for fixed requests, autocannon ${m.autocannon} for the rest; Tollgate with RATE_LIMIT=off, ACCESS_LOG=off, LOG_LEVEL=info`,
    '',
    'Ceilings (in the order measured; each scenario takes turns with its ceilings in one measurement: bare node:http and a one-route Fastify app for /app_context, and beside the signed row node:http plus one signature, a bare file stream for downloads, a bare node:http argon2id route for the password routes)',
    '',
    ceilingTable(ceilings.all),
    '',
    'Scenarios (ratio = req/s ÷ ceiling req/s, downloads MiB/s ÷ ceiling MiB/s; CPU = the server process\'s user + kernel time per request answered, all threads; RSS sampled every 100 ms, growth over the pre-scenario baseline)',
    '',
    table(rows),
    '',
    ...targetLines(rows),
    ...webhookLines(webhooks),
    ...accessLogNotes(rows),
    ...notes.map((n) => `${n}\n`),
    'Scale: p50 next to the latest run at another user count',
    '',
    scaleNote(result),
    '',
    `results: ${file.slice(ROOT.length + 1)} (${result.meta.wallSeconds.toFixed(0)} s wall)`,
    '',
  ];
  process.stdout.write(out.join('\n'));
}

/**
 * The ceilings. Each scenario is measured in turns with its ceilings, in one
 * load-worker run (short runs of each, A B C C B A…; see load-worker.mjs), so
 * all meet the same moments of a shared machine. An HTTP ceiling gets the
 * scenario's requests (headers, connections, load generator; it ignores the
 * headers), so that the client and the kernel carry the same requests.
 */
function pairedCeilings({ bare, fastify }, jsonBytes, files) {
  const defs = {
    json: { server: bare, what: `node:http, the same ${jsonBytes}-byte JSON`, path: '/json' },
    fastify: { server: fastify, what: `Fastify 5, one route sending the same ${jsonBytes} bytes as a string`, path: '/json' },
    // The signature's own limit: the same JSON plus a signed answer's own work (two SHA-256, one Ed25519 signature, two headers).
    json_signed: { server: bare, what: 'node:http, the same JSON plus one Ed25519 signature and the signed headers (the signature\'s own limit)', path: '/json-signed' },
    stream_1mib: { server: bare, what: 'fs.createReadStream, 1 MiB', path: `/file/${files.small.name}` },
    stream_100mib: { server: bare, what: 'fs.createReadStream, 100 MiB', path: `/file/${files.large.name}` },
    stream_100mib_x20: { server: bare, what: 'fs.createReadStream, 100 MiB', path: `/file/${files.large.name}` },
    // The least an HTTP password route can do: read the JSON (or the password header), one argon2id verify or hash, answer.
    http_argon2: { server: bare, what: 'node:http, one argon2id verify or hash per request', dynamicPath: '/argon2' },
  };
  const all = [];
  const record = (c) => {
    c.seq = all.length + 1;
    all.push(c);
    return c;
  };
  const load = (name, scenario) => {
    const def = defs[name];
    const { server } = def;
    const options = def.dynamicPath ? { ...scenario, url: server.base, dynamic: { ...scenario.dynamic, path: def.dynamicPath } } : { ...scenario, url: server.base + def.path };
    return { ...options, pid: server.child.pid };
  };

  return {
    all,
    /** A scenario (served by `pid`), its ceiling, the ceilings shown beside it, and `companions` (other servers' runs), measured in turns. */
    async paired(s, pid, companions = []) {
      const names = [s.ceiling, ...(s.also ?? [])];
      say(`  in turns with ${names.map((n) => `${n} (${defs[n].what})`).join(' and ')}${companions.map((c) => ` and ${c.label}`).join('')}, ${opt.slices} run(s) each`);
      const results = await measure([...names.map((n) => load(n, s.options)), { ...s.options, pid }, ...companions.map((c) => ({ ...c.options, pid: c.pid }))]);
      const measuredCeilings = names.map((n, i) => record({ name: n, what: defs[n].what, tool: toolOf(s.options), ...results[i] }));
      return { main: results[names.length], ceilings: measuredCeilings, companions: results.slice(names.length + 1) };
    },
    latestRate: (name) => all.findLast((c) => c.name === name)?.rps ?? null,
  };
}

const toolOf = (options) => (options.tool === 'wrk' && !options.dynamic ? 'wrk' : 'autocannon');

/** The cost of a signed answer: the signed /app_context row against the unsigned one of the same store (time per request, one event loop). */
function signingCost(rows) {
  return ['sqlite', 'postgres'].flatMap((db) => {
    const plain = rows.find((r) => r.db === db && r.name === 'app_context_bearer');
    const signed = rows.find((r) => r.db === db && r.name === 'app_context_signed');
    if (!signed?.rps) return [];
    const ratio = signed.ratio == null ? 'n/a' : signed.ratio.toFixed(3);
    // The signed row's own lines print without the unsigned row too (--only app_context_signed); the difference needs both.
    return [
      `SIGNED RATIO (${db}): ${ratio} of bare node:http (signed Bearer /app_context ${fmt(signed.rps)} req/s, ceiling ${fmt(signed.ceilingRate)} req/s in the same turns; issue 26 target >= 0.30)`,
      ...signatureLimit(signed),
      ...(plain?.rps
        ? [`Signed answers (${db}): ${fmt(signed.rps)} req/s against ${fmt(plain.rps)} unsigned, ${fmt(1e6 / signed.rps - 1e6 / plain.rps)} µs more per request (one Ed25519 signature, two SHA-256, ~500 header bytes)`]
        : []),
    ];
  });
}

/**
 * The signed row against json_signed, measured in the same turns: how near Tollgate comes to the least any
 * server does with one signature per answer, and that least as a share of bare node:http (the same row's json).
 */
function signatureLimit(signed) {
  const limit = signed.also?.find((a) => a.name === 'json_signed');
  if (!limit?.rate) return [];
  const share = signed.ceilingRate > 0 ? fmt(limit.rate / signed.ceilingRate, 2) : 'n/a';
  return [
    `SIGNATURE LIMIT (${signed.db}): signed /app_context is ${fmt(limit.ratio, 2)} of node:http plus one signature (${fmt(limit.rate)} req/s in the same turns, #${limit.seq}), ` +
      `which itself reads ${share} of bare node:http: one signature per answer caps this machine near ${share}`,
  ];
}

async function runScenario(s, db, server, ceilings, companions = []) {
  say(`${db} ${s.name}: ${s.route}, ${s.options.connections} connections, ${toolOf(s.options)}`);
  const { main: m, ceilings: [c, ...also], companions: measured } = await ceilings.paired(s, server.child.pid, companions);
  const metric = s.metric ?? 'requests';
  const row = { name: s.name, db, route: s.route, tool: toolOf(s.options), ceiling: s.ceiling, metric, target: s.target, ...m };
  row.ceilingSeq = c.seq;
  row.ceilingRate = rateOf(metric, c);
  row.ratio = row.ceilingRate > 0 ? rateOf(metric, m) / row.ceilingRate : null;
  row.also = also.map((a) => ({ name: a.name, seq: a.seq, rate: rateOf(metric, a), ratio: rateOf(metric, a) > 0 ? rateOf(metric, m) / rateOf(metric, a) : null }));
  row.verdict = verdict(row);
  return { row, companions: measured };
}

/**
 * An unmeasured run of a fresh server on one request, long enough for V8 to compile its hot path
 * (on a busy machine a 1-s warm-up at a few thousand req/s left the first row at 5× its CPU per request).
 */
async function warmUp(server, options) {
  const seconds = Math.max(3, 3 * opt.warmup);
  say(`  warming up ${options.url} for ${seconds} s (unmeasured)`);
  await measure([{ ...options, pid: server.child.pid }], { duration: seconds, warmup: 0, slices: 1 });
}

/**
 * The Bearer row on a second server over the same database with ACCESS_LOG=on, in turns with the
 * first server (log off) and the ceilings: the log's cost per request, and a count of the lines it
 * wrote (none means this build has no access log, or it is off at this level).
 */
async function accessLogRow(s, server, databaseUrl, ceilings) {
  const logged = await startTollgate('sqlite-access-log', databaseUrl, [], { ACCESS_LOG: 'on' });
  try {
    const options = { ...s.options, url: `${logged.base}/app_context` };
    await warmUp(logged, options);
    const off = { label: 'the same requests to the first server (access log off)', pid: server.child.pid, options: { ...s.options, url: `${server.base}/app_context` } };
    const { row, companions: [offResult] } = await runScenario({ ...s, options }, 'sqlite', logged, ceilings, [off]);
    const lines = (safeRead(logPath(work, 'tollgate-sqlite-access-log')).match(/"msg":"request"/g) ?? []).length;
    row.accessLog = {
      lines, off: offResult, offRatio: row.ceilingRate > 0 ? offResult.rps / row.ceilingRate : null,
      costUs: row.rps > 0 && offResult.rps > 0 ? 1e6 / row.rps - 1e6 / offResult.rps : null,
      cpuCostUs: row.cpuUserUs !== null && offResult.cpuUserUs !== null ? row.cpuUserUs + row.cpuSysUs - offResult.cpuUserUs - offResult.cpuSysUs : null,
    };
    return row;
  } finally {
    await stopChild(logged.child);
  }
}


/** --profile: the server under node --cpu-prof, loaded on one scenario (default /app_context Bearer); the profile summarised by function. */
async function profileRun(files, hash, sqliteUrl) {
  const name = opt.profileScenario;
  const dir = join(work, 'cpuprofile');
  mkdirSync(dir);
  let dbUrl = sqliteUrl;
  let pgInfo = null;
  if (opt.profileDb === 'postgres') {
    pgInfo = await postgresServer();
    if (pgInfo.skip) throw new Error(pgInfo.skip);
    dbUrl = pgInfo.url;
    say(`PostgreSQL ${pgInfo.version}: fresh database ${pgInfo.name} on ${pgInfo.safe}`);
  }
  let m;
  let bare = null;
  try {
    // Set the store up with a server that is not profiled (uploads and seeding are not the hot path)…
    const setup = await startTollgate(`${opt.profileDb}-setup`, dbUrl);
    let app;
    let codes = [];
    try {
      app = await prepareStore(setup, dbUrl, files, hash, opt.profileDb);
      // Enough codes for /activate_license at well over the bare argon2 rate of this class of machine.
      if (name === 'activate_license') codes = await createCodes(setup.client, app.id, Math.ceil(500 * (opt.duration + opt.warmup)));
    } finally {
      await stopChild(setup.child);
    }
    // …then profile a fresh server on the same database: start-up, warm-up and the load.
    const server = await startTollgate(`${opt.profileDb}-profile`, dbUrl, ['--cpu-prof', '--cpu-prof-interval=250', `--cpu-prof-dir=${dir}`]);
    try {
      const s = scenarios(server, app, 'sqlite', codes).find((x) => x.name === name);
      if (!s) throw new Error(`--profile-scenario: no scenario named ${name}`);
      if (s.codesFile) writeFileSync(s.codesFile, JSON.stringify(codes));
      say(`profiling ${s.route} on ${opt.profileDb}, ${s.options.connections} connections, ${opt.duration} s`);
      [m] = await measure([{ ...s.options, pid: server.child.pid }]);
    } finally {
      await stopChild(server.child);
    }
    // The bare JSON server under the same load and the same profiler: what the irreducible part costs per request.
    if (['app_context_bearer', 'app_context_license_code', 'app_context_password'].includes(name)) {
      const bareDir = join(work, 'cpuprofile-bare');
      mkdirSync(bareDir);
      const ceiling = await startCeilingServer(app.appContextBytes, files.dir, ['--cpu-prof', '--cpu-prof-interval=250', `--cpu-prof-dir=${bareDir}`]);
      let bm;
      try {
        say(`profiling the bare JSON server (the ceiling), ${opt.connections} connections, ${opt.duration} s`);
        [bm] = await measure([{ url: `${ceiling.base}/json`, connections: opt.connections, tool: LOAD_TOOL, pid: ceiling.child.pid }]);
      } finally {
        await stopChild(ceiling.child);
      }
      bare = { load: bm, summary: readProfile(bareDir, bm, 10) };
    }
  } finally {
    if (pgInfo) await pgInfo.drop();
  }
  const summary = readProfile(dir, m, 25);
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  mkdirSync(RESULTS, { recursive: true });
  const [profileFile] = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'));
  const keep = join(RESULTS, `profile-${name}-${opt.profileDb}-${stamp}.cpuprofile`);
  copyFileSync(join(dir, profileFile), keep);
  const mach = machine();
  writeFileSync(
    join(RESULTS, `profile-${name}-${opt.profileDb}-${stamp}.json`),
    JSON.stringify({ scenario: name, db: opt.profileDb, users: opt.users, load: m, summary, bare, machine: mach }, null, 2) + '\n',
  );
  const perRequest = (sum, fn) => {
    const row = sum.selfTop.find((r) => r.name === fn);
    return row && sum.requests ? `${((1000 * row.ms) / sum.requests).toFixed(1)} µs` : '—';
  };
  process.stdout.write(
    [
      '',
      `CPU profile of the server under ${name} on ${opt.profileDb}: ${fmt(m.rps)} req/s, p50 ${ms(m.p50)} ms, p99 ${ms(m.p99)} ms, ${m.non2xx} non-2xx (profiler on: slower than the table)`,
      `${opt.users} users; ${mach.nproc} × ${mach.cpu}, Node ${mach.node}, commit ${mach.commit}, build ${mach.build}; load average ${mach.loadAverageAtStart.join(' ')} → ${mach.loadAverageAtEnd.join(' ')}`,
      'Samples of the measured run only (start-up, seeding and warm-up left out).',
      '',
      formatSummary(summary),
      '',
      ...(bare
        ? [
            `The bare JSON server under the same load: ${fmt(bare.load.rps)} req/s, ${((1000 * bare.summary.busyMs) / bare.summary.requests).toFixed(1)} µs of CPU per request ` +
              `(Tollgate: ${((1000 * summary.busyMs) / summary.requests).toFixed(1)} µs); writev ${perRequest(bare.summary, 'writev')} per request (Tollgate: ${perRequest(summary, 'writev')})`,
            '',
            formatSummary(bare.summary),
            '',
          ]
        : []),
      `profile: ${keep.slice(ROOT.length + 1)} (open in Chrome DevTools › Performance, or: node bench/profile-summary.mjs <file>)`,
      '',
    ].join('\n'),
  );
}

/** The one .cpuprofile in `dir`, summarised over the measured window of `load`. */
function readProfile(dir, load, top) {
  const [file] = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'));
  if (!file) throw new Error(`no .cpuprofile in ${dir} (did the process exit cleanly on SIGTERM?)`);
  const summary = summarise(JSON.parse(readFileSync(join(dir, file), 'utf8')), top, load.window);
  summary.requests = load.requests;
  return summary;
}

/**
 * The many-node figures of issue 26, each its own process (its own servers, databases and clean-up):
 * bench/cluster.mjs, then bench/failover.mjs in both replication modes. Each prints its own lines.
 */
function clusterRuns() {
  if (argv['no-cluster'] || opt.quick || opt.only || opt.profile) return;
  const run = (script, args, minutes) => {
    process.stdout.write(`\n`);
    const res = spawnSync(process.execPath, [join(ROOT, 'bench', script), ...args], { stdio: 'inherit', timeout: minutes * 60_000, killSignal: 'SIGINT' });
    if (res.status !== 0) process.stderr.write(`bench: ${script} ${args.join(' ')} ended with ${res.status ?? res.signal}\n`);
  };
  run('cluster.mjs', ['--duration', String(opt.duration)], 20);
  run('failover.mjs', [], 5);
  run('failover.mjs', ['--synchronous'], 5);
}

try {
  await main();
  clearTimeout(deadline);
  cleanup();
  clusterRuns();
} catch (err) {
  process.stderr.write(`bench: ${err.stack ?? err}\n`);
  process.exitCode = 1;
} finally {
  clearTimeout(deadline);
  cleanup();
}
