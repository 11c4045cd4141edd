// One measurement's load generator, in a process of its own: every ceiling
// and every scenario gets an identical, fresh client (the harness's own heap,
// a 100 MiB upload buffer or a million-user seed, never slows the client
// down), and the harness stays idle to sample the server's RSS on time.
//
// Usage: node bench/lib/load-worker.mjs <spec.json>
// spec: { duration, warmup, slices?, targets: [target, …] }
// target: { url, connections, timeout?, method?, headers?, body?, dynamic? }
//      or { hashes: { dist, concurrency } }: the bare argon2id hash rate, computed here with
//         the project's own hasher (dist/domain/password.js) and `concurrency` hashes in flight
// dynamic (requests that differ every time, built by setupRequest):
//   { kind: 'user-headers', path, users, prefix, password }        x-api-username/x-api-password of a random user
//   { kind: 'login', path, users, prefix, password }               POST body with a random user's credentials
//   { kind: 'signup', path, tag, password }                        POST body with a username never used before
//   { kind: 'activate', path, codesFile, users, prefix, password } POST body with the next unused code
//
// With several targets (a ceiling and the scenario compared with it) the
// measured `duration` seconds of each are cut into `slices` runs, taken in
// turns A B B A A B… so that both meet the same moments of a shared machine:
// a drift or a burst of other work lands on both alike. Each target is warmed
// up once first.
// Prints one JSON line: { targets: [numbers of each target's measured runs] }.
import autocannon from 'autocannon';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createRequire } from 'node:module';

const spec = JSON.parse(readFileSync(process.argv[2], 'utf8'));

// Two adjustments to autocannon's response queue (lib/pipelinedRequestsQueue.js):
// - it keeps every response body as a string (`body += chunk`: a UTF-8 decode
//   and a copy of every byte) for body checks we do not use; on a 100 MiB
//   download that caps the client near 60 MiB/s, so the ceiling and Tollgate
//   would both measure the client. Bodies are dropped instead.
// - it counts bytes only for completed responses; a 10 s run completes a
//   handful of 100 MiB responses, so MiB/s is counted from the socket instead,
//   partial responses included.
let receivedBytes = 0;
const Queue = createRequire(import.meta.url)('autocannon/lib/pipelinedRequestsQueue.js');
const addByteCount = Queue.prototype.addByteCount;
Queue.prototype.addBody = function addBody() {};
Queue.prototype.addByteCount = function countBytes(count) {
  receivedBytes += count;
  addByteCount.call(this, count);
};

function requests(target) {
  const d = target.dynamic;
  if (!d) return undefined;
  const randomUser = () => `${d.prefix}${Math.floor(Math.random() * d.users)}`;
  const json = { 'content-type': 'application/json' };
  let n = 0;
  let setupRequest;
  let method = 'POST';
  let headers = json;
  switch (d.kind) {
    case 'user-headers':
      method = 'GET';
      headers = {};
      setupRequest = (req) => ({ ...req, headers: { ...req.headers, 'x-api-username': randomUser(), 'x-api-password': d.password } });
      break;
    case 'login':
      setupRequest = (req) => ({ ...req, body: JSON.stringify({ credentials: { username: randomUser(), password: d.password } }) });
      break;
    case 'signup':
      setupRequest = (req) => ({ ...req, body: JSON.stringify({ username: `signup_${d.tag}_${n++}`, password: d.password }) });
      break;
    case 'activate': {
      const codes = JSON.parse(readFileSync(d.codesFile, 'utf8'));
      // Past the end of the list the code is "used up": it answers 401, counted as non-2xx.
      setupRequest = (req) => ({ ...req, body: JSON.stringify({ code: codes[n++] ?? 'EXHAUSTED', username: randomUser(), password: d.password }) });
      break;
    }
    default:
      throw new Error(`unknown dynamic request kind ${d.kind}`);
  }
  return [{ method, path: d.path, headers: { ...target.headers, ...headers }, setupRequest }];
}

/** One autocannon run, bounded: stopped by force if it outlives its duration by 30 s. */
function load(target, duration, reqs) {
  return new Promise((resolve, reject) => {
    const options = {
      url: target.url, connections: target.connections, duration, timeout: target.timeout ?? 10,
      ...(target.method && { method: target.method }), ...(target.headers && { headers: target.headers }), ...(target.body && { body: target.body }),
      ...(reqs && { requests: reqs }),
    };
    const instance = autocannon(options, (err, result) => (err ? reject(err) : resolve(result)));
    const guard = setTimeout(() => instance.stop(), (duration + 30) * 1000);
    instance.once('done', () => clearTimeout(guard));
  });
}

/** The bare hash rate for `duration` seconds, shaped like an autocannon result (no latency histogram: p50/p99 of the hashes). */
async function hashLoad(h, duration) {
  const { argon2Hasher, OWASP_ARGON2 } = await import(pathToFileURL(join(h.dist, 'domain', 'password.js')).href);
  const hasher = argon2Hasher(OWASP_ARGON2);
  const end = performance.now() + duration * 1000;
  const latencies = [];
  const t0 = performance.now();
  await Promise.all(Array.from({ length: h.concurrency }, async (_, w) => {
    while (performance.now() < end) {
      const t = performance.now();
      await hasher.hash(`bench password ${w} ${latencies.length}`);
      latencies.push(performance.now() - t);
    }
  }));
  latencies.sort((a, b) => a - b);
  const pct = (p) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? 0;
  const n = latencies.length;
  return { duration: (performance.now() - t0) / 1000, requests: { total: n }, '2xx': n, non2xx: 0, errors: 0, timeouts: 0, latency: { p50: pct(0.5), p99: pct(0.99) }, statusCodeStats: {} };
}

/** Runs of one target, added up. p50 is the mean of the runs' p50 weighted by requests; p99 the worst run's. */
function tally() {
  const t = { seconds: 0, requests: 0, ok: 0, bytes: 0, non2xx: 0, errors: 0, timeouts: 0, p50sum: 0, p99: 0, statusCodes: {}, runs: 0, perRun: [] };
  return {
    add(r, bytes) {
      t.runs++;
      t.perRun.push(Math.round(r['2xx'] / r.duration));
      t.seconds += r.duration;
      t.requests += r.requests.total;
      t.ok += r['2xx'];
      t.bytes += bytes;
      t.non2xx += r.non2xx;
      t.errors += r.errors;
      t.timeouts += r.timeouts;
      t.p50sum += r.latency.p50 * r.requests.total;
      t.p99 = Math.max(t.p99, r.latency.p99);
      for (const [code, v] of Object.entries(r.statusCodeStats ?? {})) t.statusCodes[code] = (t.statusCodes[code] ?? 0) + v.count;
    },
    result(window) {
      return {
        seconds: t.seconds, requests: t.requests, ok: t.ok, rps: t.ok / t.seconds, p50: t.requests ? Math.round(t.p50sum / t.requests) : null, p99: t.p99,
        mibps: t.bytes / t.seconds / (1024 * 1024), non2xx: t.non2xx, errors: t.errors, timeouts: t.timeouts, statusCodes: t.statusCodes, runs: t.runs, perRun: t.perRun, window,
      };
    },
  };
}

const targets = spec.targets;
// The same request list for the warm-up and the runs: sign-up names and activation codes are never reused.
const reqs = targets.map((t) => requests(t));
const run = (i, seconds) => (targets[i].hashes ? hashLoad(targets[i].hashes, seconds) : load(targets[i], seconds, reqs[i]));
for (const i of targets.keys()) if (spec.warmup > 0) await run(i, spec.warmup);
const slices = targets.length > 1 ? Math.max(1, spec.slices ?? 1) : 1;
const tallies = targets.map(() => tally());
// The measured window on the monotonic clock, in µs: the clock of a --cpu-prof profile, to cut it to the run.
const from = Number(process.hrtime.bigint() / 1000n);
for (let k = 0; k < slices; k++) {
  const order = k % 2 === 0 ? targets.keys() : [...targets.keys()].reverse();
  for (const i of order) {
    receivedBytes = 0;
    const r = await run(i, spec.duration / slices);
    tallies[i].add(r, receivedBytes);
  }
}
const to = Number(process.hrtime.bigint() / 1000n);
process.stdout.write(JSON.stringify({ targets: tallies.map((t) => t.result([from, to])) }) + '\n');
