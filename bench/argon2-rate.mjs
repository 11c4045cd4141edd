// The ceiling of the password routes: the bare argon2id hash rate with the
// production parameters (OWASP_ARGON2 and argon2Hasher from the built
// project), `--concurrency` hashes in flight at once, like the load generator's
// connections against /auth/login and /sign_up. Prints one JSON line.
// Usage: node bench/argon2-rate.mjs [--dist dist] --seconds 10 --concurrency 8 [--warmup 1]
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: { dist: { type: 'string' }, seconds: { type: 'string' }, concurrency: { type: 'string' }, warmup: { type: 'string' } },
});
const dist = resolve(values.dist ?? join(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '..', 'dist'));
const { argon2Hasher, OWASP_ARGON2 } = await import(pathToFileURL(join(dist, 'domain', 'password.js')).href);
const seconds = Number(values.seconds ?? 10);
const concurrency = Number(values.concurrency ?? 8);
const warmup = Number(values.warmup ?? 1);
const hasher = argon2Hasher(OWASP_ARGON2);

async function run(ms) {
  const end = Date.now() + ms;
  let count = 0;
  const latencies = [];
  await Promise.all(
    Array.from({ length: concurrency }, async (_, w) => {
      while (Date.now() < end) {
        const t = performance.now();
        await hasher.hash(`bench password ${w} ${count}`);
        latencies.push(performance.now() - t);
        count++;
      }
    }),
  );
  return { count, latencies };
}

await run(warmup * 1000);
const t0 = performance.now();
const { count, latencies } = await run(seconds * 1000);
const elapsed = (performance.now() - t0) / 1000;
latencies.sort((a, b) => a - b);
const pct = (p) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? null;
process.stdout.write(
  JSON.stringify({ params: OWASP_ARGON2, concurrency, hashes: count, seconds: elapsed, rate: count / elapsed, p50: pct(50), p99: pct(99) }) + '\n',
);
