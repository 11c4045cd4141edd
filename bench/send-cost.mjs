// What sending a signed answer costs beside an unsigned one, without Tollgate (issue 26; docs/performance.md,
// "Issue 26: what a signed answer costs besides its signature").
//
// A node:http server answers every request with an 854-byte JSON body the way the fast path does (one
// writeHead with a flat header list, then end with the body as latin1: one writev per answer), in three modes:
//   plain    the unsigned answer's headers
//   headers  the same plus Tollgate-Signature and Tollgate-Key-Cert values of the real lengths (~570 bytes more)
//   sign     headers, plus one Ed25519 signature (crypto.sign with a prepared KeyObject) per answer, not sent
// Each mode runs in its own server process pinned to core 0 (taskset), loaded by `wrk -t1 -c50` pinned to core 1,
// the modes in alternation (--rounds times), and prints the server's CPU per request (user + system, from
// process.cpuUsage over the measured seconds) and the mean Ed25519 signature alone in the same process.
// Reading: headers − plain is what the ~570 header bytes cost (Node's header checks, the copy, the kernel's
// send); sign − headers − signature is what a signature does to the rest of the request (caches).
//
// Usage: node bench/send-cost.mjs [--rounds 3] [--seconds 4]   (needs wrk and taskset; a quiet machine for absolute numbers)
import { spawn, spawnSync } from 'node:child_process';
import { generateKeyPairSync, sign } from 'node:crypto';
import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const BODY = JSON.stringify({ pad: 'x'.repeat(852 - 10) });
const SIGNATURE = `v1; kid=k_0123456789abcdef; t=1795000000; sig=${'A'.repeat(86)}`;
const CERT = 'B'.repeat(396); // an encoded certificate's length (its JSON fields base64url)

if (process.argv[2] === '--serve') serve(process.argv[3]);
else await main();

function serve(mode) {
  const { privateKey } = generateKeyPairSync('ed25519');
  const input = Buffer.alloc(330, 97);
  const extra = mode === 'plain' ? [] : ['tollgate-signature', SIGNATURE, 'tollgate-key-cert', CERT];
  const list = ['x-content-type-options', 'nosniff', 'x-frame-options', 'DENY', 'referrer-policy', 'no-referrer',
    'content-type', 'application/json; charset=utf-8', ...extra, 'content-length', String(BODY.length)];
  let answered = 0;
  let signNs = 0n;
  const server = createServer((req, res) => {
    answered++;
    if (mode === 'sign') {
      const t = process.hrtime.bigint();
      sign(null, input, privateKey);
      signNs += process.hrtime.bigint() - t;
    }
    res.writeHead(200, list);
    res.end(BODY, 'latin1');
  });
  server.listen(0, '127.0.0.1', () => process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`));
  process.on('message', () => {
    const u = process.cpuUsage();
    process.send({ answered, user: u.user, system: u.system, signNs: Number(signNs) });
  });
}

async function main() {
  const { values: opt } = parseArgs({ options: { rounds: { type: 'string', default: '3' }, seconds: { type: 'string', default: '4' } } });
  const rounds = Number(opt.rounds);
  const seconds = Number(opt.seconds);
  const self = fileURLToPath(import.meta.url);
  const results = { plain: [], headers: [], sign: [] };
  for (let r = 0; r < rounds; r++) {
    for (const mode of r % 2 === 0 ? ['plain', 'headers', 'sign'] : ['sign', 'headers', 'plain']) {
      const child = spawn('taskset', ['-c', '0', process.execPath, self, '--serve', mode], { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
      const port = await new Promise((resolve) => child.stdout.once('data', (d) => resolve(JSON.parse(String(d)).port)));
      const url = `http://127.0.0.1:${port}/`;
      spawnSync('taskset', ['-c', '1', 'wrk', '-t1', '-c50', '-d1', url]); // warm-up
      const ask = () => new Promise((resolve) => { child.once('message', resolve); child.send('now'); });
      const a = await ask();
      spawnSync('taskset', ['-c', '1', 'wrk', '-t1', '-c50', `-d${seconds}`, url]);
      const b = await ask();
      child.kill();
      const n = b.answered - a.answered;
      const row = { user: (b.user - a.user) / n, system: (b.system - a.system) / n, sign: (b.signNs - a.signNs) / n / 1000, n };
      results[mode].push(row);
      process.stdout.write(`round ${r + 1} ${mode.padEnd(7)} ${String(n).padStart(7)} answers  CPU ${row.user.toFixed(1)} + ${row.system.toFixed(1)} µs/answer` +
        (mode === 'sign' ? `  (signature alone ${row.sign.toFixed(1)} µs)` : '') + '\n');
    }
  }
  const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
  process.stdout.write('\nmedians, CPU µs per answer (user + system):\n');
  for (const mode of ['plain', 'headers', 'sign']) {
    const rs = results[mode];
    process.stdout.write(`  ${mode.padEnd(7)} ${median(rs.map((x) => x.user)).toFixed(1)} + ${median(rs.map((x) => x.system)).toFixed(1)}` +
      (mode === 'sign' ? `  (signature alone ${median(rs.map((x) => x.sign)).toFixed(1)})` : '') + '\n');
  }
}
