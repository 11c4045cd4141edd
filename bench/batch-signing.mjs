// Batch signing, measured (issue 26, "Signed answers at the limit"): the answers of one event-loop turn hashed
// into a Merkle tree, ONE Ed25519 signature over the root, each answer carrying its path to the root (the idea of
// the TLS batch-signing draft, draft-ietf-tls-batch-signing). A prototype to decide whether a wire change pays;
// nothing of it is in the server.
//
// For each batch size B (1..64) it measures, in this process, with the same Node.js crypto the server uses:
//   - per batch: B leaf hashes (SHA-256 of each answer's signed bytes, the responseInput layout of docs/signing.md,
//     ~330 bytes), the tree (B-1 node hashes), one signature over the root, B paths (log2 B hashes each) encoded;
//   - answers/s and the signing cost per answer (CPU µs), against one signature per answer (B = 1 is that, plus a
//     leaf hash);
//   - the client's cost to verify one answer (log2 B hashes + one signature check), and the header bytes added;
//   - latency within a turn: B answers ready at once are signed one after another today (the i-th waits for i
//     signatures); batched, all wait for the whole batch. Reported: mean and worst wait per answer, both ways.
// With --http it also runs the prototype over HTTP: a node:http server answering an 836-byte JSON body (the size
// of /app_context's) unsigned, signed one signature per answer (today), and batched (answers of one turn held
// until setImmediate, then one tree and one signature; each answer gets its path), each pinned to core 0 and loaded
// by wrk pinned to core 1 (-t1 -c<connections>, --latency), in turns: req/s, p50/p99 latency, the batch sizes seen.
// Usage: node bench/batch-signing.mjs [--sizes 1,2,4,8,16,32,64] [--ms 1500] [--json]
//          [--http] [--connections 1,10,50] [--seconds 4] [--turns 2]
import { spawn, spawnSync } from 'node:child_process';
import { createHash, generateKeyPairSync, hash, sign, verify } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import { loadavg } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { freePort } from './lib/proc.mjs';

/**
 * The server's signer (dist/domain/signing/ed25519.js: libsodium through sodium-native when it loads) when the
 * project is built, else node:crypto's: the prototype signs as the server does.
 */
const signerPath = fileURLToPath(new URL('../dist/domain/signing/ed25519.js', import.meta.url));
const signer = existsSync(signerPath)
  ? (await import(pathToFileURL(signerPath).href)).ed25519
  : { backend: 'node:crypto (no dist/: npm run build)', sign: (message, key) => sign(null, message, key) };

const { values: opt } = parseArgs({
  options: {
    sizes: { type: 'string', default: '1,2,4,8,16,32,64' },
    ms: { type: 'string', default: '1500' },
    json: { type: 'boolean', default: false },
    http: { type: 'boolean', default: false },
    connections: { type: 'string', default: '1,10,50' },
    seconds: { type: 'string', default: '4' },
    turns: { type: 'string', default: '2' },
    serve: { type: 'string' },
    port: { type: 'string' },
  },
});
const SIZES = opt.sizes.split(',').map(Number);
const MS = Number(opt.ms);

const { privateKey, publicKey } = generateKeyPairSync('ed25519');
const LEAF = Buffer.from([0]);
const NODE = Buffer.from([1]);

/** An answer's signed bytes, as responseInput lays them out (a different nonce per answer). */
function answerInput(i) {
  return Buffer.from(
    ['tollgate/response/v1', 'kid_0190c0de', String(1_790_000_000_000 + i), `nonce-${String(i).padStart(16, '0')}`,
      '0190c0de-0000-7000-8000-000000000000', '200', 'GET /app_context', 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
      createHash('sha256').update(`c${i}`).digest('hex'), createHash('sha256').update(`b${i}`).digest('hex')].join('\n'),
    'utf8',
  );
}

/** SHA-256 of the parts, one-shot (a third of createHash's cost, as src/domain/signing/format.ts's sha256Hex). */
const h = (...parts) => hash('sha256', parts.length === 1 ? parts[0] : Buffer.concat(parts), 'buffer');

/** Signs B answers with one signature: the root's, and each answer's path (sibling hashes, leaf to root). */
function signBatch(inputs) {
  let level = inputs.map((m) => h(LEAF, m));
  const paths = inputs.map(() => []);
  let index = inputs.map((_, i) => i);
  while (level.length > 1) {
    const next = [];
    for (let i = 0; i < level.length; i += 2) {
      const right = level[i + 1] ?? level[i]; // an odd node pairs with itself
      next.push(h(NODE, level[i], right));
    }
    for (let a = 0; a < inputs.length; a++) {
      const at = index[a];
      const sibling = at ^ 1;
      paths[a].push(level[sibling] ?? level[at]);
      index[a] = at >> 1;
    }
    level = next;
  }
  const root = level[0];
  const sig = signer.sign(Buffer.concat([Buffer.from('tollgate/batch/v1\n'), root]), privateKey);
  // What each answer would carry: the signature, its index and its path (base64url), one header value.
  return inputs.map((_, a) => `v2; b=${inputs.length}; i=${a}; sig=${sig.toString('base64url')}; path=${paths[a].map((p) => p.toString('base64url')).join('.')}`);
}

/** A client's check of one answer: the path up to the root, then the one signature. */
function verifyOne(input, header) {
  const m = /; b=(\d+); i=(\d+); sig=([^;]+); path=(.*)$/.exec(header);
  let at = Number(m[2]);
  let node = h(LEAF, input);
  for (const s of m[4] ? m[4].split('.') : []) {
    const sib = Buffer.from(s, 'base64url');
    node = at & 1 ? h(NODE, sib, node) : h(NODE, node, sib);
    at >>= 1;
  }
  return verify(null, Buffer.concat([Buffer.from('tollgate/batch/v1\n'), node]), publicKey, Buffer.from(m[3], 'base64url'));
}

/**
 * Runs `f` repeatedly for about MS ms (after a short warm-up); CPU µs per call (this process's user + system time,
 * process.cpuUsage: on a shared machine, wall time also counts the moments other processes held the core).
 */
function time(f) {
  for (let i = 0; i < 200; i++) f();
  let n = 0;
  const c0 = process.cpuUsage();
  const end = process.hrtime.bigint() + BigInt(MS) * 1_000_000n;
  while (process.hrtime.bigint() < end) {
    for (let i = 0; i < 20; i++) f();
    n += 20;
  }
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / n;
}

if (opt.serve) {
  serve(opt.serve, Number(opt.port));
} else {
  await main();
}

/** The prototype server: `plain`, `each` (one signature per answer) or `batch` (one per turn). */
function serve(mode, port) {
  const body = Buffer.from(JSON.stringify({ application: { id: '0190c0de-0000-7000-8000-000000000000' }, padding: 'x'.repeat(760) }));
  const bodySha = createHash('sha256').update(body).digest('hex');
  let t = 0;
  const inputOf = (req) => Buffer.from(`tollgate/response/v1\nkid_0190c0de\n${++t}\n${req.headers['tollgate-nonce'] ?? 'nonce-0000000000000000'}\n0190c0de-0000-7000-8000-000000000000\n200\nGET ${req.url}\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n${createHash('sha256').update(req.headers.authorization ?? '').digest('hex')}\n${bodySha}`);
  const send = (res, sig) => {
    res.writeHead(200, sig === null ? ['content-type', 'application/json', 'content-length', String(body.length)] : ['content-type', 'application/json', 'tollgate-signature', sig, 'content-length', String(body.length)]);
    res.end(body);
  };
  let pending = [];
  let batches = 0;
  let answers = 0;
  let largest = 0;
  const flush = () => {
    const turn = pending;
    pending = [];
    const headers = signBatch(turn.map((x) => x.input));
    batches++;
    answers += turn.length;
    largest = Math.max(largest, turn.length);
    for (let i = 0; i < turn.length; i++) send(turn[i].res, headers[i]);
  };
  const server = createServer((req, res) => {
    if (req.url === '/stats') {
      res.end(JSON.stringify({ batches, answers, largest }));
      return;
    }
    if (mode === 'plain') return send(res, null);
    if (mode === 'each') return send(res, `v1; kid=kid_0190c0de; t=${t}; sig=${signer.sign(inputOf(req), privateKey).toString('base64url')}`);
    if (pending.length === 0) setImmediate(flush);
    pending.push({ res, input: inputOf(req) });
  });
  server.keepAliveTimeout = 72_000;
  server.listen(port, '127.0.0.1', () => process.stdout.write('ready\n'));
}

async function main() {
const inputsFor = (b) => Array.from({ length: b }, (_, i) => answerInput(i));
const single = inputsFor(1)[0];
const oneSignUs = time(() => signer.sign(single, privateKey));
const oneVerifyUs = time(() => verify(null, single, publicKey, signer.sign(single, privateKey))) - oneSignUs;
const today = `v1; kid=kid_0190c0de; t=1790000000000; sig=${signer.sign(single, privateKey).toString('base64url')}`;

const rows = [];
for (const b of SIZES) {
  const inputs = inputsFor(b);
  const headers = signBatch(inputs);
  for (let a = 0; a < b; a++) if (!verifyOne(inputs[a], headers[a])) throw new Error(`batch ${b}: answer ${a} does not verify`);
  // In turns with one signature per answer (A B A), so both meet the same moments of a shared machine.
  const before = time(() => signer.sign(single, privateKey));
  const batchUs = time(() => signBatch(inputs));
  const after = time(() => signer.sign(single, privateKey));
  const oneSignUs = (before + after) / 2;
  const perAnswerUs = batchUs / b;
  const verifyUs = time(() => verifyOne(inputs[b - 1], headers[b - 1]));
  const headerBytes = headers.reduce((s, x) => s + x.length, 0) / b;
  // Within one turn, B answers ready at once: today the i-th (1-based) is sent after i signatures; batched, all after the batch.
  const todayMean = (oneSignUs * (b + 1)) / 2;
  const todayWorst = oneSignUs * b;
  rows.push({
    batch: b, oneSignUs, batchUs, perAnswerUs, answersPerS: 1e6 / perAnswerUs, speedup: oneSignUs / perAnswerUs, verifyUs, headerBytes,
    waitMeanUs: { today: todayMean, batched: batchUs }, waitWorstUs: { today: todayWorst, batched: batchUs },
  });
}

const load = loadavg().map((x) => x.toFixed(2)).join(' ');
if (opt.json) {
  process.stdout.write(JSON.stringify({ load, oneSignUs, oneVerifyUs, todayHeaderBytes: today.length, rows }, null, 2) + '\n');
} else {
  const f = (x, d = 1) => x.toFixed(d);
  const out = [];
  out.push(`Batch signing (Merkle tree over the answers of one turn, one Ed25519 signature per batch); node ${process.version}, OpenSSL ${process.versions.openssl}, load ${load}`);
  out.push(`One Ed25519 signature today (${signer.backend}, measured first): ${f(oneSignUs)} µs (${f(1e6 / oneSignUs, 0)}/s); one verification: ${f(oneVerifyUs)} µs; today's Tollgate-Signature: ${today.length} bytes`);
  out.push('');
  out.push('| batch | one signature µs (same turns) | µs per batch | µs per answer | answers/s (signing only) | vs one signature each | client verify µs | header bytes | wait in the turn, mean: today / batched µs | worst: today / batched µs |');
  out.push('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of rows) {
    out.push(`| ${r.batch} | ${f(r.oneSignUs)} | ${f(r.batchUs)} | ${f(r.perAnswerUs, 2)} | ${f(r.answersPerS, 0)} | ${f(r.speedup, 2)}x | ${f(r.verifyUs)} | ${f(r.headerBytes, 0)} | ${f(r.waitMeanUs.today)} / ${f(r.waitMeanUs.batched)} | ${f(r.waitWorstUs.today)} / ${f(r.waitWorstUs.batched)} |`);
  }
  process.stdout.write(out.join('\n') + '\n');
}

if (opt.http) await httpRuns();
}

/** --http: the three servers in turns under wrk, per connection count. */
async function httpRuns() {
  const have = (cmd) => spawnSync(cmd, ['-h'], { stdio: 'ignore' }).error === undefined;
  if (!have('wrk')) throw new Error('--http needs wrk (apt-get install wrk)');
  const pin = have('taskset') ? { server: ['taskset', '-c', '0'], load: ['taskset', '-c', '1'] } : { server: [], load: [] };
  const self = fileURLToPath(import.meta.url);
  const servers = {};
  for (const mode of ['plain', 'each', 'batch']) {
    const port = await freePort();
    const [cmd, ...args] = [...pin.server, process.execPath, self, '--serve', mode, '--port', String(port)];
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise((resolve, reject) => {
      child.stdout.once('data', resolve);
      child.once('exit', (code) => reject(new Error(`${mode} server exited ${code}`)));
    });
    servers[mode] = { child, port };
  }
  const stats = async (mode) => (await fetch(`http://127.0.0.1:${servers[mode].port}/stats`)).json();
  const wrk = (mode, connections, seconds) => {
    const [cmd, ...args] = [...pin.load, 'wrk', '-t1', `-c${connections}`, `-d${seconds}s`, '--latency', '-H', 'Tollgate-Nonce: nonce-0123456789abcdef', '-H', 'Authorization: Bearer tg_session_x', `http://127.0.0.1:${servers[mode].port}/app_context`];
    const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: (seconds + 30) * 1000 });
    const out = r.stdout ?? '';
    const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN);
    const ms = (label) => {
      const m = new RegExp(`\\s${label}%\\s+([\\d.]+)(us|ms|s)`).exec(out);
      if (!m) return NaN;
      return Number(m[1]) * (m[2] === 'us' ? 0.001 : m[2] === 's' ? 1000 : 1);
    };
    return { rps, p50: ms('50'), p99: ms('99') };
  };
  const seconds = Number(opt.seconds);
  const turns = Number(opt.turns);
  const lines = [];
  lines.push('');
  lines.push(`Over HTTP (node:http, 836-byte body, wrk -t1 pinned to core 1, servers on core 0; ${turns} turns of ${seconds} s each, in alternation; load ${loadavg().map((x) => x.toFixed(2)).join(' ')})`);
  lines.push('');
  lines.push('| connections | unsigned req/s | one signature each req/s | batched req/s | batched / each | each / unsigned | batched / unsigned | p50 ms unsigned / each / batched | p99 ms unsigned / each / batched | mean batch (largest) |');
  lines.push('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  try {
    for (const c of opt.connections.split(',').map(Number)) {
      const sum = { plain: [], each: [], batch: [] };
      for (const mode of Object.keys(sum)) wrk(mode, c, 1); // warm-up
      const before = await stats('batch');
      for (let t = 0; t < turns; t++) {
        for (const mode of t % 2 ? ['batch', 'each', 'plain'] : ['plain', 'each', 'batch']) sum[mode].push(wrk(mode, c, seconds));
      }
      const after = await stats('batch');
      const avg = (xs, k) => xs.reduce((a, x) => a + x[k], 0) / xs.length;
      const r = Object.fromEntries(Object.entries(sum).map(([m, xs]) => [m, { rps: avg(xs, 'rps'), p50: avg(xs, 'p50'), p99: avg(xs, 'p99') }]));
      const meanBatch = (after.answers - before.answers) / Math.max(1, after.batches - before.batches);
      const f = (x, d = 0) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
      lines.push(`| ${c} | ${f(r.plain.rps)} | ${f(r.each.rps)} | ${f(r.batch.rps)} | ${f(r.batch.rps / r.each.rps, 2)}x | ${f(r.each.rps / r.plain.rps, 2)} | ${f(r.batch.rps / r.plain.rps, 2)} | ${f(r.plain.p50, 2)} / ${f(r.each.p50, 2)} / ${f(r.batch.p50, 2)} | ${f(r.plain.p99, 2)} / ${f(r.each.p99, 2)} / ${f(r.batch.p99, 2)} | ${f(meanBatch, 1)} (${after.largest}) |`);
    }
  } finally {
    for (const { child } of Object.values(servers)) child.kill('SIGKILL');
  }
  process.stdout.write(lines.join('\n') + '\n');
}
