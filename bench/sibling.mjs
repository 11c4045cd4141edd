#!/usr/bin/env node
// Do the bench's two cores slow each other? `npm run bench` pins every server to core 0 and the load
// generator to core 1; when the two are hyperthreads of one physical core (or a hypervisor maps them so),
// whatever runs on core 1 takes execution resources from core 0, and a server's CPU per request depends
// on how busy its load generator is. This measures it: one Ed25519 signature by the server's own signer
// (dist/domain/signing/ed25519.js), timed on core 0 while core 1 idles, then while core 1 runs a busy
// loop, then idle again. Read the ratio: 1.0 means independent cores.
//
// Usage: node bench/sibling.mjs [--dist dist] [--rounds 5] [--signatures 20000]
import { spawn, spawnSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values: opt } = parseArgs({
  options: {
    dist: { type: 'string', default: join(ROOT, 'dist') },
    rounds: { type: 'string', default: '5' },
    signatures: { type: 'string', default: '20000' },
    child: { type: 'boolean', default: false },
  },
});

if (opt.child) {
  // On core 0: the median of --rounds timings of --signatures signatures each, in µs per signature.
  const { generateKeyPairSync } = await import('node:crypto');
  const { ed25519 } = await import(pathToFileURL(join(resolve(opt.dist), 'domain', 'signing', 'ed25519.js')).href);
  const { privateKey } = generateKeyPairSync('ed25519');
  const message = Buffer.alloc(303, 0x61); // as long as a signed answer's bytes
  const n = Number(opt.signatures);
  for (let i = 0; i < n / 4; i++) ed25519.sign(message, privateKey);
  const times = [];
  for (let r = 0; r < Number(opt.rounds); r++) {
    const t = process.hrtime.bigint();
    for (let i = 0; i < n; i++) ed25519.sign(message, privateKey);
    times.push(Number(process.hrtime.bigint() - t) / n / 1000);
  }
  times.sort((a, b) => a - b);
  process.stdout.write(JSON.stringify({ backend: ed25519.backend, median: times[times.length >> 1] }));
  process.exit(0);
}

if (availableParallelism() < 2 || spawnSync('taskset', ['-c', '0', 'true']).status !== 0) {
  console.log('bench/sibling: needs two cores and taskset');
  process.exit(0);
}

const signOnCore0 = () => {
  const out = spawnSync('taskset', ['-c', '0', process.execPath, fileURLToPath(import.meta.url), '--child', '--dist', opt.dist, '--rounds', opt.rounds, '--signatures', opt.signatures], { encoding: 'utf8' });
  if (out.status !== 0) throw new Error(`the signing child failed: ${out.stderr}`);
  return JSON.parse(out.stdout);
};

const idle = signOnCore0();
const spinner = spawn('taskset', ['-c', '1', 'sh', '-c', 'while :; do :; done'], { stdio: 'ignore' });
let busy;
try {
  busy = signOnCore0();
} finally {
  spinner.kill('SIGKILL');
}
const idleAgain = signOnCore0();
const quiet = (idle.median + idleAgain.median) / 2;
console.log(`one Ed25519 signature (${idle.backend}) on core 0: ${idle.median.toFixed(2)} µs with core 1 idle, ${busy.median.toFixed(2)} µs with core 1 busy, ${idleAgain.median.toFixed(2)} µs idle again`);
console.log(`core 1 busy makes core 0 ${(busy.median / quiet).toFixed(2)}x slower (1.00: independent cores)`);
