// Instructions per request on the server's main thread, counted by callgrind: a measure that does not
// move with the load on a shared machine (req/s here moves 4x between runs; instruction counts do not).
//
// Each server runs under `valgrind --tool=callgrind --instr-atstart=no --separate-threads=yes`. A client
// in this process (keep-alive agent, --connections sockets) sends --warmup unmeasured requests, then
// instrumentation is switched on (callgrind_control -i on), exactly --requests requests are sent,
// instrumentation is switched off and the counts dumped (callgrind_control -d). Only the main thread's
// dump (callgrind thread 1, the JS thread; file suffix -01) is counted: its instructions / requests.
// The split "without GC and compiling" drops the self cost of V8's garbage collector and compilers
// (matched by function name, see GC_RE and COMPILE_RE), which is where most run-to-run noise lives.
//
// Rows:
//   bare          node bench/ceiling-server.mjs (node:http), GET /json of the /app_context answer's size
//   fastify       the same with --framework fastify (a one-route Fastify 5 app)
//   bare_signed   the bare server's GET /json-signed (--dist): the same JSON plus one Ed25519 signature over
//                 Tollgate's signed-bytes layout, its two hashes and two headers: the signature's own limit
//   bearer        dist/cli/main.js serve (SQLite), GET /app_context, Authorization: Bearer <session>
//   license_code  the same, x-api-license-code
//   password      the same, x-api-username / x-api-password (argon2 once, then cached: in the warm-up)
//   signed        the bearer request with Tollgate-Nonce (a signed answer: the app has a certified signing key)
// Each row has a server process of its own under valgrind (each Tollgate one on a copy of the seeded store),
// and its own keep-alive sockets, opened by the warm-up and reused by the measured requests.
// The store is seeded first, over HTTP, by the same build run natively (admin API: app, variables,
// files, licenses; client API: sign up, activate, login, sign up with a license code).
//
// Usage: node bench/instructions.mjs [--only bare,fastify,bare_signed,bearer,license_code,password,signed]
//          [--requests 3000] [--warmup 15000] [--connections 10] [--dist dist] [--keep] [--serial] [--pause-ms 3000]
// --keep leaves the callgrind dumps (and logs) in the temporary directory; --serial runs the rows one at a
// time instead of in two lanes side by side (two valgrind processes, one CPU each).
// The warm-up pauses 3 s (--pause-ms) before its last 1,000 requests, so that Turbofan's queued jobs (on helper threads,
// starved under valgrind) finish before anything is counted; a row whose helper threads still ran more
// than 5% of its count during the measured requests gets a note (its count may be high: rerun).
// Defaults: 3,000 measured requests after 15,000 warm-up requests per row; under valgrind everything is
// ~50-100x slower: a run of all five rows takes 3-6 minutes on 2 CPUs (--warmup lower to shorten it).
// Needs valgrind (callgrind, callgrind_control) and a built dist/ (npx tsc -p tsconfig.build.json).
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { cleanEnv, freePort, killAllChildren, startChild, stopChild } from './lib/proc.mjs';
import { setUpSigningKey } from './lib/tollgate.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const ALL_ROWS = ['bare', 'fastify', 'bare_signed', 'bearer', 'license_code', 'password', 'signed'];
const TOLLGATE_ROWS = ['bearer', 'license_code', 'password', 'signed'];
/** The method's warm-up: 15,000 unmeasured requests per row (fewer leave Tollgate's code visibly less optimized). */
const METHOD_WARMUP = 15_000;
const DEFAULT_WARMUP = METHOD_WARMUP;
/** The default pause before the warm-up's last requests (see measure); --pause-ms sets it. */
const DEFAULT_PAUSE_MS = 3000;
/** How long a server under callgrind gets to write its final dump after SIGTERM before SIGKILL. */
const CALLGRIND_GRACE_MS = 60_000;

const { values: opt } = parseArgs({
  options: {
    only: { type: 'string', default: ALL_ROWS.join(',') },
    requests: { type: 'string', default: '3000' },
    warmup: { type: 'string', default: String(DEFAULT_WARMUP) },
    connections: { type: 'string', default: '10' },
    dist: { type: 'string', default: join(ROOT, 'dist') },
    keep: { type: 'boolean', default: false },
    serial: { type: 'boolean', default: false },
    'pause-ms': { type: 'string', default: String(DEFAULT_PAUSE_MS) },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (opt.help) {
  process.stdout.write('Usage: node bench/instructions.mjs [--only ' + ALL_ROWS.join(',') + '] [--requests 3000] [--warmup 15000] [--connections 10] [--dist dist] [--keep] [--serial] [--pause-ms 3000]\n');
  process.exit(0);
}
const rows = opt.only.split(',').map((s) => s.trim()).filter(Boolean);
for (const r of rows) if (!ALL_ROWS.includes(r)) fail(`unknown row "${r}" (rows: ${ALL_ROWS.join(', ')})`);
const REQUESTS = positiveInt('requests', opt.requests);
const WARMUP = positiveInt('warmup', opt.warmup, true);
const CONNECTIONS = positiveInt('connections', opt.connections);
const DIST = resolve(opt.dist);
// On a loaded machine V8's helper threads need longer to finish the queued compile jobs (the note below shows it).
const PAUSE_MS = positiveInt('pause-ms', opt['pause-ms'], true);

/**
 * V8's garbage collector, by (demangled) function name: the collectors, their visitors and root
 * iteration (IterateObjectCache: the startup object cache, visited at every scavenge), marking,
 * sweeping, evacuation, remembered sets, and the heap's own Heap:: functions.
 */
const GC_RE = new RegExp([
  'v8::internal::Heap::', 'Scaveng', 'MarkCompact', 'MinorMC', 'Marking', 'Sweep', 'Evacuat', 'RecordMigratedSlot',
  'PointersUpdating', 'IterateObjectCache', 'StringTableCleaner', 'GCTracer', 'heap::base::', 'cppgc::', 'CppHeap',
  'RememberedSet', 'SlotSet', 'TypedSlot', 'GlobalHandles::(Iterate|Process|Identify|Compute|Update|Post|Clear)',
  'v8::internal::(MemoryAllocator|PagedSpace|SemiSpace|NewSpace|PagedNewSpace|LargeObjectSpace|MemoryChunk|Page|LocalHeap|Safepoint|WeakObjects|ObjectStats|ArrayBufferSweeper|ClearWeak)',
  'Isolate::Iterate', 'HandleScopeImplementer::Iterate', 'RootVisitor', 'VisitWeakList', 'LeftTrimmedHandles',
].join('|'));
/** V8's compilers and parser: Turbofan, Maglev, Sparkplug, Ignition's bytecode generator, the JS parser, deoptimization. */
const COMPILE_RE = new RegExp([
  'v8::internal::compiler::', 'v8::internal::maglev::', 'v8::internal::baseline::', 'Turbofan', 'Maglev',
  'v8::internal::interpreter::(Bytecode(Generator|ArrayBuilder|ArrayWriter|RegisterOptimizer|JumpTable|Label)|ConstantArrayBuilder|HandlerTableBuilder|BlockCoverageBuilder)',
  'v8::internal::(Parser|ParserBase|PreParser|Scanner|Utf16CharacterStream|AstValueFactory|AstNodeFactory|AstRawString|DeclarationScope|Scope|FunctionLiteral|Rewriter)\\b',
  'v8::internal::(Compiler|OptimizingCompileDispatcher|OptimizedCompilationJob|OptimizedCompilationInfo|UnoptimizedCompilationJob|UnoptimizedCompilationInfo|CompilationCache|CompilationJob|TieringManager|Zone|ZoneList|AccountingAllocator|Assembler|MacroAssembler|TurboAssembler|Deoptimizer|TranslatedState|TranslationArray|SourcePositionTableBuilder|CodeDesc)\\b',
].join('|'));

const startedAt = Date.now();
const say = (msg) => process.stderr.write(`[${((Date.now() - startedAt) / 1000).toFixed(1).padStart(6)} s] ${msg}\n`);

function fail(msg) {
  process.stderr.write(`instructions: ${msg}\n`);
  process.exit(1);
}

function positiveInt(name, value, zeroOk = false) {
  const n = Number(value);
  if (!Number.isInteger(n) || n < (zeroOk ? 0 : 1)) fail(`--${name} must be an integer ${zeroOk ? '>= 0' : '> 0'} (got ${value})`);
  return n;
}

// ---------------------------------------------------------------- children (always cleaned up)

let work = null;

/** Kills what this process started; a killed valgrind leaves its vgdb pipes (<tmp>/vgdb-pipe-…-<pid>-by-…): removed too. */
function killAll() {
  const dir = process.env.TMPDIR || '/tmp';
  for (const pid of killAllChildren()) {
    try {
      for (const f of readdirSync(dir)) {
        if (f.startsWith('vgdb-pipe-') && f.includes(`-${pid}-by-`)) rmSync(join(dir, f), { force: true });
      }
    } catch {
      // nothing to remove
    }
  }
}
process.once('exit', () => {
  killAll();
  if (work && !opt.keep) rmSync(work, { recursive: true, force: true });
});
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.once(sig, () => {
    say(`${sig}: stopping the servers`);
    process.exit(130);
  });
}
process.on('uncaughtException', (err) => {
  process.stderr.write(`instructions: ${err.stack ?? err}\n`);
  process.exit(1);
});
process.on('unhandledRejection', (err) => {
  process.stderr.write(`instructions: ${err?.stack ?? err}\n`);
  process.exit(1);
});

/**
 * Starts a server (`node <args>`, behind `prefix`: valgrind) with its output in <work>/<name>.log; resolves once GET
 * `readyPath` answers 2xx.
 */
async function startServer({ name, args, prefix, env, port, readyPath, timeoutMs }) {
  const base = `http://127.0.0.1:${port}`;
  const logFile = join(work, `${name}.log`);
  const ready = () => fetch(base + readyPath, { signal: AbortSignal.timeout(2000) }).then((r) => r.ok);
  const child = await startChild({ name, args, prefix, env, cwd: work, logFile, ready, timeoutMs });
  return { child, base, port, logFile };
}

// ---------------------------------------------------------------- load

/** A keep-alive agent of `connections` sockets, kept from the warm-up through the measured requests. */
function keepAliveAgent(connections = CONNECTIONS) {
  return new Agent({ keepAlive: true, keepAliveMsecs: 60_000, maxSockets: connections, maxFreeSockets: connections, scheduling: 'fifo' });
}

/**
 * Sends exactly `count` GET requests through `agent` (one request in flight per socket, `connections`
 * at a time); throws if any answer is not `expectStatus`.
 */
async function load(agent, base, path, headers, count, connections = CONNECTIONS, expectStatus = 200) {
  if (count === 0) return;
  const url = new URL(path, base);
  let sent = 0;
  let bad = null;
  const one = () =>
    new Promise((ok, ko) => {
      const req = request({ agent, host: url.hostname, port: url.port, path: url.pathname + url.search, method: 'GET', headers, timeout: 120_000 }, (res) => {
        let size = 0;
        res.on('data', (c) => (size += c.length));
        res.on('end', () => ok({ status: res.statusCode, size }));
        res.on('error', ko);
      });
      req.on('timeout', () => req.destroy(new Error(`GET ${path} timed out`)));
      req.on('error', ko);
      req.end();
    });
  const worker = async () => {
    while (sent < count && !bad) {
      sent++;
      const r = await one();
      if (r.status !== expectStatus) bad = `GET ${path} answered ${r.status}`;
    }
  };
  await Promise.all(Array.from({ length: Math.min(connections, count) }, worker));
  if (bad) throw new Error(bad);
}

// ---------------------------------------------------------------- callgrind

/**
 * callgrind_control (through vgdb) finds the server by a pipe named after $USER/$LOGNAME and $HOST as the
 * server saw them, so it runs with the server's environment (Tollgate's own HOST setting would rename that
 * pipe: it is left unset, the default bind address is 127.0.0.1). It exits 0 even when it fails: its
 * output is checked for "OK".
 */
function callgrindControl(args) {
  const r = spawnSync('callgrind_control', args, { encoding: 'utf8', timeout: 120_000, env: cleanEnv({}) });
  const out = `${r.stdout ?? ''}${r.stderr ?? ''}`;
  if (r.error || r.status !== 0 || !/\bOK\./.test(out) || /error/i.test(out)) {
    throw new Error(`callgrind_control ${args.join(' ')} failed: ${r.error?.message ?? out.trim()}`);
  }
  return out;
}

/**
 * Self cost per function of one callgrind dump (Ir only): the file's own format, with name compression
 * (`fn=(id) name`, later `fn=(id)`); a cost line right after `calls=` is a call's inclusive cost and is skipped.
 */
function parseDump(file) {
  const text = readFileSync(file, 'utf8');
  const names = new Map();
  const self = new Map();
  let fn = '???';
  let skipNext = false;
  let thread = null;
  let totals = null;
  let pid = null;
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const c = line.charCodeAt(0);
    if ((c >= 48 && c <= 57) || c === 43 || c === 45 || c === 42) {
      // a cost line: position then the Ir count
      if (skipNext) {
        skipNext = false;
        continue;
      }
      const sp = line.lastIndexOf(' ');
      const v = Number(line.slice(sp + 1));
      if (sp > 0 && Number.isFinite(v)) self.set(fn, (self.get(fn) ?? 0) + v);
      continue;
    }
    if (line.startsWith('fn=')) {
      const m = /^fn=\((\d+)\)(?: (.*))?$/.exec(line);
      if (m) {
        if (m[2] !== undefined) names.set(m[1], m[2]);
        fn = names.get(m[1]) ?? `(${m[1]})`;
      } else fn = line.slice(3);
      continue;
    }
    if (line.startsWith('cfn=')) {
      const m = /^cfn=\((\d+)\) (.*)$/.exec(line);
      if (m) names.set(m[1], m[2]);
      continue;
    }
    if (line.startsWith('calls=')) {
      skipNext = true;
      continue;
    }
    if (line.startsWith('thread:')) thread = Number(line.slice(7));
    else if (line.startsWith('totals:')) totals = Number(line.slice(7));
    else if (line.startsWith('pid:')) pid = Number(line.slice(4));
  }
  let sum = 0;
  let gc = 0;
  let compile = 0;
  for (const [name, v] of self) {
    sum += v;
    const kind = classify(name);
    if (kind === 'gc') gc += v;
    else if (kind === 'compile') compile += v;
  }
  return { thread, pid, totals: totals ?? sum, sum, gc, compile, self };
}

/** 'gc', 'compile' or null, by the function's name without its parameter list (types named there do not count). */
function classify(name) {
  const bare = name.replaceAll('(anonymous namespace)', '{anonymous}');
  const open = bare.indexOf('(');
  const head = open > 0 ? bare.slice(0, open) : bare;
  if (GC_RE.test(head)) return 'gc';
  if (COMPILE_RE.test(head)) return 'compile';
  return null;
}

/** The dump files callgrind wrote for `pid`, by dump number and thread: <prefix>.<pid>.<n>-<tt>. */
function dumpFiles(pid) {
  const out = [];
  for (const f of readdirSync(work)) {
    const m = new RegExp(`^cg\\.${pid}\\.(\\d+)-(\\d+)$`).exec(f);
    if (m) out.push({ file: join(work, f), dump: Number(m[1]), thread: Number(m[2]) });
  }
  return out;
}

/**
 * Warm-up, then exactly REQUESTS instrumented requests, then a dump; returns the main thread's counts.
 * The main thread is callgrind's thread 1 (valgrind numbers the process's initial thread, the one whose
 * tid is the pid, 1); the dump's own `thread:` line is checked too.
 */
async function measure(server, label, path, headers) {
  const pid = server.child.pid;
  const t0 = Date.now();
  say(`${label}: warm-up, ${WARMUP} requests (not counted)`);
  // The same sockets for the warm-up and the measured requests: the measured requests set up no connection.
  const agent = keepAliveAgent();
  let t1;
  let t2;
  let before;
  try {
    // The warm-up, with a pause before its last 1,000 requests: under valgrind the helper threads that run
    // Turbofan get little time while the main thread is busy; idle, they finish the queued compile jobs,
    // and the last requests install the optimized code before anything is counted.
    const tailCount = Math.min(1000, Math.floor(WARMUP / 4));
    await load(agent, server.base, path, headers, WARMUP - tailCount);
    await sleep(PAUSE_MS);
    await load(agent, server.base, path, headers, tailCount);
    t1 = Date.now();
    before = new Set(dumpFiles(pid).map((d) => d.dump));
    callgrindControl(['-i', 'on', String(pid)]);
    await load(agent, server.base, path, headers, REQUESTS);
    callgrindControl(['-i', 'off', String(pid)]);
    callgrindControl(['-d', String(pid)]);
    t2 = Date.now();
  } finally {
    agent.destroy();
  }
  // The dump is written by the server's process: wait until the main thread's file is complete.
  let files = [];
  for (let i = 0; i < 200; i++) {
    files = dumpFiles(pid).filter((d) => !before.has(d.dump));
    const main = files.find((d) => d.thread === 1);
    if (main && /\ntotals: \d+/.test(readFileSync(main.file, 'utf8').slice(-4096))) break;
    await sleep(100);
  }
  const mainFile = files.find((d) => d.thread === 1);
  if (!mainFile) throw new Error(`${label}: no callgrind dump of thread 1 for pid ${pid} in ${work}`);
  const parsed = parseDump(mainFile.file);
  if (parsed.thread !== 1) throw new Error(`${label}: ${mainFile.file} is thread ${parsed.thread}, not the main thread`);
  if (parsed.sum !== parsed.totals) say(`${label}: note: self costs add up to ${parsed.sum}, the dump's totals say ${parsed.totals}`);
  const others = files.filter((d) => d.thread !== 1).map((d) => parseDump(d.file).totals).reduce((a, b) => a + b, 0);
  say(`${label}: ${(parsed.totals / REQUESTS).toFixed(0)} instructions/request on the main thread (${mainFile.file.split('/').pop()}; other threads ${(others / REQUESTS).toFixed(0)}/request); warm-up ${((t1 - t0) / 1000).toFixed(0)} s, measured ${((t2 - t1) / 1000).toFixed(0)} s`);
  return { label, totals: parsed.totals, gc: parsed.gc, compile: parsed.compile, others, file: mainFile.file };
}

// ---------------------------------------------------------------- Tollgate setup (over HTTP)

const PASSWORD = 'correct horse battery staple';
const USERNAME = 'insn_user';

async function call(base, method, path, { body, headers = {}, expect } = {}) {
  const res = await fetch(base + path, {
    method,
    headers: { ...headers, ...(body !== undefined && !(body instanceof Uint8Array) && { 'content-type': 'application/json' }), ...(body instanceof Uint8Array && { 'content-type': 'application/octet-stream' }) },
    body: body === undefined ? undefined : body instanceof Uint8Array ? body : JSON.stringify(body),
    signal: AbortSignal.timeout(120_000),
  });
  const text = await res.text();
  if (expect !== undefined ? res.status !== expect : !res.ok) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 500)}`);
  return { json: text ? JSON.parse(text) : null, bytes: Buffer.byteLength(text) };
}

/** An app like the bench's (variables, two files), two licenses, a user with a session, a license-code user. */
async function seed(base, adminToken) {
  const admin = { authorization: `Bearer ${adminToken}` };
  const { json: app } = await call(base, 'POST', '/admin/v1/apps', { body: { name: 'Instructions App' }, headers: admin });
  const appHeaders = { 'x-api-key': app.api_key, 'x-api-secret': app.api_secret };
  const variables = { latest_version: '2.4.1', update_url: 'https://example.com/downloads/app-2.4.1.zip', motd: 'Welcome back!', feature_flags: 'sync,export,beta-ui', min_version: '2.0.0' };
  for (const [name, value] of Object.entries(variables)) {
    await call(base, 'PUT', `/admin/v1/apps/${app.id}/variables/${name}`, { body: { value }, headers: admin });
  }
  for (const name of ['small-1mib.bin', 'large-100mib.bin']) {
    await call(base, 'POST', `/admin/v1/apps/${app.id}/files?name=${encodeURIComponent(name)}&mime_type=application/octet-stream`, { body: new Uint8Array(randomBytes(1024)), headers: admin });
  }
  const { json: lic } = await call(base, 'POST', `/admin/v1/apps/${app.id}/licenses`, { body: { count: 2, minutes: 43_200 }, headers: admin, expect: 201 });
  const [code1, code2] = lic.licenses.map((l) => l.code);
  await call(base, 'POST', '/sign_up', { body: { username: USERNAME, password: PASSWORD }, headers: appHeaders });
  await call(base, 'POST', '/activate_license', { body: { code: code1, username: USERNAME, password: PASSWORD }, headers: appHeaders });
  const { json: login } = await call(base, 'POST', '/auth/login', { body: { credentials: { username: USERNAME, password: PASSWORD } }, headers: appHeaders });
  await call(base, 'POST', '/sign_up_with_license_code', { body: { code: code2 }, headers: appHeaders });
  // A certified signing key, as npm run bench sets one up, for the signed row.
  await setUpSigningKey(DIST, { admin: (method, path, { body, expect } = {}) => call(base, method, `/admin/v1${path}`, { body, headers: admin, expect }).then((r) => r.json) }, app.id);
  const headers = {
    bearer: { ...appHeaders, authorization: `Bearer ${login.session_token}` },
    signed: { ...appHeaders, authorization: `Bearer ${login.session_token}`, 'tollgate-nonce': 'insn-nonce-0123456789abcdef' },
    license_code: { ...appHeaders, 'x-api-license-code': code2 },
    password: { ...appHeaders, 'x-api-username': USERNAME, 'x-api-password': PASSWORD },
  };
  const sizes = {};
  for (const [row, h] of Object.entries(headers)) sizes[row] = (await call(base, 'GET', '/app_context', { headers: h })).bytes;
  return { headers, sizes };
}

function tollgateEnv(port, adminToken, dir = work) {
  return cleanEnv({
    PORT: String(port), DATABASE_URL: `sqlite:${join(dir, 't.db')}`, TOLLGATE_ADMIN_TOKEN: adminToken,
    RATE_LIMIT: 'off', ACCESS_LOG: 'off', LOG_LEVEL: 'info',
  });
}

// ---------------------------------------------------------------- main

/** The newest modification time (and file count) under dist/, to notice a rebuild during the run. */
function distStamp() {
  let newest = 0;
  let files = 0;
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.js')) {
        files++;
        newest = Math.max(newest, statSync(p).mtimeMs);
      }
    }
  };
  try {
    walk(DIST);
  } catch {
    return 'unreadable';
  }
  return `${files}@${newest}`;
}

function preflight() {
  const missing = ['valgrind', 'callgrind_control'].filter((t) => spawnSync('which', [t], { stdio: 'ignore' }).status !== 0);
  if (missing.length) fail(`${missing.join(' and ')} not found: install valgrind (apt-get install valgrind), which brings callgrind and callgrind_control`);
  const main = join(DIST, 'cli', 'main.js');
  if (!existsSync(main)) fail(`${main} not found: build first (npx tsc -p tsconfig.build.json)`);
  // A stale build is measured as it is: say so.
  const builtAt = statSync(main).mtimeMs;
  const newer = [];
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.ts') && statSync(p).mtimeMs > builtAt) newer.push(p.slice(ROOT.length + 1));
    }
  };
  if (existsSync(join(ROOT, 'src'))) walk(join(ROOT, 'src'));
  const notes = [];
  if (newer.length) notes.push(`dist/ may be stale: ${newer.length} source file(s) changed after dist/cli/main.js was built (${newer.slice(0, 3).join(', ')}${newer.length > 3 ? ', …' : ''})`);
  return notes;
}

async function main() {
  const notes = preflight();
  const distBefore = distStamp();
  for (const n of notes) say(`note: ${n}`);
  work = mkdtempSync(join(tmpdir(), 'tollgate-insn-'));
  const adminToken = `tg_insn_${randomBytes(24).toString('hex')}`;
  const mainJs = join(DIST, 'cli', 'main.js');
  const ceilingJs = join(ROOT, 'bench', 'ceiling-server.mjs');
  if (WARMUP < METHOD_WARMUP) notes.push(`warm-up reduced to ${WARMUP} unmeasured requests per row (the method's is 15,000: fewer can leave code less optimized, counts higher)`);

  // 1. The store, seeded natively (fast), and the size of the /app_context answer.
  say(`seeding a SQLite store in ${work} (Tollgate run natively)`);
  let seeded;
  {
    const port = await freePort();
    const server = await startServer({ name: 'tollgate-seed', args: [mainJs, 'serve'], env: tollgateEnv(port, adminToken), port, readyPath: '/readyz', timeoutMs: 60_000 });
    try {
      seeded = await seed(server.base, adminToken);
    } finally {
      await stopChild(server.child);
    }
  }
  const jsonBytes = seeded.sizes.bearer;
  say(`/app_context answers ${jsonBytes} bytes (Bearer; license code ${seeded.sizes.license_code}, password ${seeded.sizes.password}): the ceilings answer ${jsonBytes}`);
  if (seeded.sizes.license_code !== jsonBytes || seeded.sizes.password !== jsonBytes) {
    notes.push(`/app_context sizes differ by credential: Bearer ${jsonBytes}, license code ${seeded.sizes.license_code}, password ${seeded.sizes.password} bytes (the ceilings answer ${jsonBytes})`);
  }

  const valgrind = () => ['valgrind', '--tool=callgrind', '--instr-atstart=no', '--separate-threads=yes', `--callgrind-out-file=${join(work, 'cg.%p')}`];
  const results = {};

  // 2. Every row in a server process of its own under valgrind (a Tollgate server measured for one credential
  //    after another would run the later ones with code optimized for the earlier ones, and re-optimize
  //    while counted). Each Tollgate server gets its own copy of the seeded store.
  const startCeiling = async (row, framework, extraArgs = []) => {
    const port = await freePort();
    say(`${row}: starting the ceiling server (${framework}) under callgrind`);
    const server = await startServer({
      name: `ceiling-${row}`, prefix: valgrind(), args: [ceilingJs, '--port', String(port), '--json-bytes', String(jsonBytes), '--framework', framework, ...extraArgs],
      env: cleanEnv({}), port, readyPath: '/healthz', timeoutMs: 240_000,
    });
    // the answer's size, checked once (outside the measurement)
    const probe = await call(server.base, 'GET', '/json');
    if (probe.bytes !== jsonBytes) notes.push(`${row}: /json answered ${probe.bytes} bytes, not ${jsonBytes}`);
    return server;
  };
  let distChangedBeforeReady = false;
  const startTollgate = async (row) => {
    const dir = join(work, `store-${row}`);
    mkdirSync(dir);
    for (const f of ['t.db', 't.db-wal']) if (existsSync(join(work, f))) copyFileSync(join(work, f), join(dir, f));
    const port = await freePort();
    say(`${row}: starting dist/cli/main.js serve under callgrind (SQLite, a copy of the seeded store)`);
    const server = await startServer({
      name: `tollgate-${row}`, prefix: valgrind(), args: [mainJs, 'serve'], env: tollgateEnv(port, adminToken, dir), port, readyPath: '/readyz', timeoutMs: 300_000,
    });
    if (distStamp() !== distBefore) distChangedBeforeReady = true;
    return server;
  };
  const jobs = {
    // The ceilings receive the Bearer request's headers (and ignore them), as in npm run bench: parsing a request's
    // headers is the same work for every server, so it is not counted against Tollgate.
    bare: { weight: 1, run: () => runRow('bare', () => startCeiling('bare', 'node:http'), '/json', seeded.headers.bearer) },
    fastify: { weight: 1, run: () => runRow('fastify', () => startCeiling('fastify', 'fastify'), '/json', seeded.headers.bearer) },
    // The signed request's own headers (Bearer and nonce): the nonce and the credential line are signed as Tollgate signs them.
    bare_signed: { weight: 1, run: () => runRow('bare_signed', () => startCeiling('bare_signed', 'node:http', ['--dist', DIST]), '/json-signed', seeded.headers.signed) },
    ...Object.fromEntries(TOLLGATE_ROWS.map((row) => [row, { weight: 2, run: () => runRow(row, () => startTollgate(row), '/app_context', seeded.headers[row]) }])),
  };
  const runRow = async (row, start, path, headers) => {
    const server = await start();
    try {
      results[row] = await measure(server, row, path, headers);
    } finally {
      await stopChild(server.child, CALLGRIND_GRACE_MS);
    }
  };
  // Two lanes side by side (valgrind runs a process's threads one at a time: one CPU each), balanced by
  // weight (a Tollgate server starts slower); counts do not depend on it, only the wall time does.
  // --serial: one lane.
  const lanes = opt.serial ? [[]] : [[], []];
  const load_ = lanes.map(() => 0);
  for (const row of [...rows].sort((x, y) => jobs[y].weight - jobs[x].weight || ALL_ROWS.indexOf(x) - ALL_ROWS.indexOf(y))) {
    const i = load_.indexOf(Math.min(...load_));
    lanes[i].push(row);
    load_[i] += jobs[row].weight;
  }
  await Promise.all(lanes.map(async (lane) => {
    for (const row of lane) await jobs[row].run();
  }));
  // A rebuild while Tollgate loads its modules can mix two builds; after that, the server runs the build it loaded.
  if (distChangedBeforeReady) notes.push('dist/ changed before a Tollgate server under valgrind was ready (a rebuild?): its code may not be the seeded build, or may mix two: rerun');
  else if (distStamp() !== distBefore) notes.push('dist/ changed during the run, after the Tollgate servers had loaded it (the rows measure the build from the start of the run): rerun to measure the new build');

  // 4. The table.
  const per = (n) => n / REQUESTS;
  const fmt = (n) => Math.round(n).toLocaleString('en-US');
  const bare = results.bare;
  const lines = [];
  lines.push(`Instructions per request on the server's main thread (callgrind; ${REQUESTS} measured requests per row after ${WARMUP} unmeasured, ${CONNECTIONS} keep-alive connections; /app_context and the ceilings' /json answer ${jsonBytes} bytes)`);
  lines.push('');
  lines.push('| row | instructions/request | without GC+compiling | GC | compiling | ratio to bare | ratio to bare (without GC+compiling) | other threads (not counted) |');
  lines.push('|---|---:|---:|---:|---:|---:|---:|---:|');
  const bareClean = bare ? bare.totals - bare.gc - bare.compile : 0;
  for (const row of ALL_ROWS) {
    const r = results[row];
    if (!r) continue;
    const clean = r.totals - r.gc - r.compile;
    const ratio = (a, b) => (bare ? `${(a / b).toFixed(2)}x` : 'n/a');
    // Turbofan at work on a helper thread while the requests were counted: the main thread ran some code
    // not yet (re)optimized, so its count is higher than the steady state's.
    if (r.others > 0.05 * r.totals) {
      notes.push(`${row}: V8's helper threads ran ${fmt(per(r.others))} instructions/request during the measured requests (compiling): its count may be high; rerun (or raise --warmup) if it differs`);
    }
    lines.push(`| ${row} | ${fmt(per(r.totals))} | ${fmt(per(clean))} | ${fmt(per(r.gc))} | ${fmt(per(r.compile))} | ${ratio(r.totals, bare?.totals)} | ${ratio(clean, bareClean)} | ${fmt(per(r.others))} |`);
  }
  // The signed answer against the signature's own limit: what Tollgate adds to a bare server that signs the same way.
  if (results.signed && results.bare_signed) {
    const extra = per(results.signed.totals - results.bare_signed.totals);
    const plainExtra = results.bearer && bare ? per(results.bearer.totals - bare.totals) : null;
    lines.push('');
    lines.push(`signed against bare_signed: ${extra >= 0 ? '+' : '−'}${fmt(Math.abs(extra))} instructions/request (Tollgate's access check, answer and signed-path work over the least a signing server does)` +
      (plainExtra === null ? '' : `; bearer against bare: ${plainExtra >= 0 ? '+' : '−'}${fmt(Math.abs(plainExtra))}`));
  }
  lines.push('');
  lines.push('GC: self instructions of V8 heap/GC functions (Heap::, Scavenger, MarkCompact, marking, sweeping…); compiling: V8 compiler::, Maglev, Sparkplug, bytecode generator, parser (self cost, main thread). Other threads: V8 helper threads (concurrent GC, Turbofan) and the libuv pool, shown only.');
  lines.push(`Run took ${((Date.now() - startedAt) / 1000).toFixed(0)} s.`);
  for (const n of notes) lines.push(`Note: ${n}`);
  process.stdout.write(lines.join('\n') + '\n');
  if (opt.keep) say(`callgrind dumps kept in ${work}`);
}

await main();
