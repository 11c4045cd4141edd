// What sending a signed answer costs beside an unsigned one, without Tollgate (issue 26; docs/performance.md,
// "Issue 26: what a signed answer costs besides its signature").
//
// A node:http server answers every request with an 854-byte JSON body the way the fast path does (one
// writeHead with a flat header list, then end with the body as latin1: one writev per answer), in five modes:
//   plain    the unsigned answer's headers
//   headers  the same plus Tollgate-Signature and Tollgate-Key-Cert values of the real lengths (~570 bytes more)
//   sign     headers, plus one Ed25519 signature (crypto.sign with a prepared KeyObject) per answer, not sent
//   sodium   the same signature by sodium-native's crypto_sign_detached (the server's signer since issue 26's
//            sodium change, src/domain/signing/ed25519.ts); left out when sodium-native is not installed
//   busy     headers, plus a spin of the signature's length (--busy-us) instead of it: the same pace, no signature
// Each mode runs in its own server process pinned to core 0 (taskset), loaded by `wrk -t1 -c50` pinned to core 1,
// the modes in alternation (--rounds times), and prints the server's CPU per request (user + system, from
// process.cpuUsage over the measured seconds) and, in modes sign and sodium, the CPU time of one signature alone
// (2,000 in a row in the same process right after its load).
// Reading: headers − plain is what the ~570 header bytes cost (Node's header checks, the copy, the kernel's
// send); sign − headers − signature is what a signature does to the rest of the request, and busy tells how
// much of that is the slower pace alone (a slower server meets an idle load generator to wake on every send);
// sodium − headers − its signature is the same for libsodium's (does OpenSSL's per-call set-up slow the rest?).
//
// Usage: node bench/send-cost.mjs [--rounds 3] [--seconds 4] [--busy-us 40]   (needs wrk and taskset; a quiet machine for absolute numbers)
import { spawn, spawnSync } from 'node:child_process';
import { generateKeyPairSync, sign } from 'node:crypto';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const BODY = JSON.stringify({ pad: 'x'.repeat(852 - 10) });
const SIGNATURE = `v1; kid=k_0123456789abcdef; t=1795000000; sig=${'A'.repeat(86)}`;
const CERT = 'B'.repeat(396); // an encoded certificate's length (its JSON fields base64url)

function loadSodium() {
  try {
    return createRequire(import.meta.url)('sodium-native');
  } catch {
    return null;
  }
}

if (process.argv[2] === '--serve') serve(process.argv[3], Number(process.argv[4]));
else await main();

function serve(mode, busyUs) {
  const { privateKey } = generateKeyPairSync('ed25519');
  const input = Buffer.alloc(330, 97);
  let signOnce = () => sign(null, input, privateKey);
  if (mode === 'sodium') {
    const sodium = loadSodium();
    const sk = Buffer.alloc(64);
    sodium.crypto_sign_seed_keypair(Buffer.alloc(32), sk, privateKey.export({ format: 'der', type: 'pkcs8' }).subarray(16));
    signOnce = () => {
      const sig = Buffer.allocUnsafe(64);
      sodium.crypto_sign_detached(sig, input, sk);
      return sig;
    };
  }
  const extra = mode === 'plain' ? [] : ['tollgate-signature', SIGNATURE, 'tollgate-key-cert', CERT];
  const list = ['x-content-type-options', 'nosniff', 'x-frame-options', 'DENY', 'referrer-policy', 'no-referrer',
    'content-type', 'application/json; charset=utf-8', ...extra, 'content-length', String(BODY.length)];
  let answered = 0;
  const server = createServer((req, res) => {
    answered++;
    if (mode === 'sign' || mode === 'sodium') signOnce();
    else if (mode === 'busy') for (const end = performance.now() + busyUs / 1000; performance.now() < end;);
    res.writeHead(200, list);
    res.end(BODY, 'latin1');
  });
  server.listen(0, '127.0.0.1', () => process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`));
  process.on('message', (what) => {
    const u = process.cpuUsage();
    if (what !== 'alone') return process.send({ answered, user: u.user, system: u.system });
    // The signature alone, in the same process right after the load: CPU (not wall) time of 2,000 in a row.
    for (let i = 0; i < 2000; i++) signOnce();
    const d = process.cpuUsage(u);
    process.send({ alone: (d.user + d.system) / 2000 });
  });
}

async function main() {
  const { values: opt } = parseArgs({ options: { rounds: { type: 'string', default: '3' }, seconds: { type: 'string', default: '4' }, 'busy-us': { type: 'string', default: '40' } } });
  const rounds = Number(opt.rounds);
  const seconds = Number(opt.seconds);
  const self = fileURLToPath(import.meta.url);
  const modes = ['plain', 'headers', 'sign', ...(loadSodium() ? ['sodium'] : []), 'busy'];
  const results = Object.fromEntries(modes.map((m) => [m, []]));
  for (let r = 0; r < rounds; r++) {
    for (const mode of r % 2 === 0 ? modes : [...modes].reverse()) {
      const child = spawn('taskset', ['-c', '0', process.execPath, self, '--serve', mode, opt['busy-us']], { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
      const port = await new Promise((resolve) => child.stdout.once('data', (d) => resolve(JSON.parse(String(d)).port)));
      const url = `http://127.0.0.1:${port}/`;
      spawnSync('taskset', ['-c', '1', 'wrk', '-t1', '-c50', '-d1', url]); // warm-up
      const ask = () => new Promise((resolve) => { child.once('message', resolve); child.send('now'); });
      const a = await ask();
      spawnSync('taskset', ['-c', '1', 'wrk', '-t1', '-c50', `-d${seconds}`, url]);
      const b = await ask();
      const signs = mode === 'sign' || mode === 'sodium';
      const alone = signs ? (await new Promise((resolve) => { child.once('message', resolve); child.send('alone'); })).alone : 0;
      child.kill();
      const n = b.answered - a.answered;
      const row = { user: (b.user - a.user) / n, system: (b.system - a.system) / n, sign: alone, n };
      results[mode].push(row);
      process.stdout.write(`round ${r + 1} ${mode.padEnd(7)} ${String(n).padStart(7)} answers  CPU ${row.user.toFixed(1)} + ${row.system.toFixed(1)} µs/answer` +
        (signs ? `  (signature alone ${row.sign.toFixed(1)} µs)` : '') + '\n');
    }
  }
  const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
  process.stdout.write('\nmedians, CPU µs per answer (user + system):\n');
  for (const mode of modes) {
    const rs = results[mode];
    process.stdout.write(`  ${mode.padEnd(7)} ${median(rs.map((x) => x.user)).toFixed(1)} + ${median(rs.map((x) => x.system)).toFixed(1)}` +
      (mode === 'sign' || mode === 'sodium' ? `  (signature alone ${median(rs.map((x) => x.sign)).toFixed(1)})` : '') + '\n');
  }
}
