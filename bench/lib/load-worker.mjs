// One measurement's load generator, in a process of its own: every ceiling
// and every scenario gets an identical, fresh client (the harness's own heap,
// a 100 MiB upload buffer or a million-user seed, never slows the client
// down), and the harness stays idle to sample the server's RSS on time.
//
// Usage: node bench/lib/load-worker.mjs <spec.json>
// spec: { url, connections, duration, warmup, timeout?, method?, headers?, body?, dynamic? }
// dynamic (requests that differ every time, built by setupRequest):
//   { kind: 'user-headers', path, users, prefix, password }        x-api-username/x-api-password of a random user
//   { kind: 'login', path, users, prefix, password }               POST body with a random user's credentials
//   { kind: 'signup', path, tag, password }                        POST body with a username never used before
//   { kind: 'activate', path, codesFile, users, prefix, password } POST body with the next unused code
// Prints one JSON line: the measured run's numbers.
import autocannon from 'autocannon';
import { readFileSync } from 'node:fs';
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

function requests(d) {
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
  return [{ method, path: d.path, headers: { ...spec.headers, ...headers }, setupRequest }];
}

/** One autocannon run, bounded: stopped by force if it outlives its duration by 30 s. */
function load(duration, reqs) {
  return new Promise((resolve, reject) => {
    const options = {
      url: spec.url, connections: spec.connections, duration, timeout: spec.timeout ?? 10,
      ...(spec.method && { method: spec.method }), ...(spec.headers && { headers: spec.headers }), ...(spec.body && { body: spec.body }),
      ...(reqs && { requests: reqs }),
    };
    const instance = autocannon(options, (err, result) => (err ? reject(err) : resolve(result)));
    const guard = setTimeout(() => instance.stop(), (duration + 30) * 1000);
    instance.once('done', () => clearTimeout(guard));
  });
}

// The same request list for the warm-up and the run: sign-up names and activation codes are never reused.
const reqs = requests(spec.dynamic);
if (spec.warmup > 0) await load(spec.warmup, reqs);
receivedBytes = 0;
// The measured window on the monotonic clock, in µs: the clock of a --cpu-prof profile, to cut it to the run.
const from = Number(process.hrtime.bigint() / 1000n);
const r = await load(spec.duration, reqs);
const to = Number(process.hrtime.bigint() / 1000n);
process.stdout.write(
  JSON.stringify({
    seconds: r.duration,
    requests: r.requests.total,
    ok: r['2xx'],
    rps: r['2xx'] / r.duration,
    p50: r.latency.p50,
    p99: r.latency.p99,
    mibps: receivedBytes / r.duration / (1024 * 1024),
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    statusCodes: r.statusCodeStats,
    window: [from, to],
  }) + '\n',
);
