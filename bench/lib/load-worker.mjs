// One measurement's load generator, in a process of its own: every ceiling
// and every scenario gets an identical, fresh client (the harness's own heap,
// a 100 MiB upload buffer or a million-user seed, never slows the client
// down), and the harness stays idle to sample the server's RSS on time.
//
// Usage: node bench/lib/load-worker.mjs <spec.json>
// spec: { duration, warmup, slices?, targets: [target, …] }
// target: { url, connections, timeout?, method?, headers?, body?, dynamic?, tool?, pid? }
//   tool 'wrk' (the default for fixed requests when wrk is installed: a C client that is not the
//   bottleneck) or 'autocannon' (requests that differ every time, downloads); pid: the server's
//   process, whose CPU (user and kernel, all threads, from /proc/<pid>/stat) is added up over each
//   measured run
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
import { spawn } from 'node:child_process';
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

/** wrk's units: latencies in us/ms/s, sizes in KB/MB/GB of 1024. */
const TIME_UNITS = { us: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const SIZE_UNITS = { B: 1, KB: 1024, MB: 1024 ** 2, GB: 1024 ** 3, TB: 1024 ** 4 };

/**
 * One wrk run (one thread: the load worker runs pinned to its core, and wrk inherits that), bounded
 * like autocannon's. wrk takes whole seconds. Its report is shaped like autocannon's result.
 */
function wrk(target, seconds) {
  const args = ['-t1', `-c${target.connections}`, `-d${seconds}s`, `--timeout`, `${target.timeout ?? 10}s`, '--latency'];
  for (const [name, value] of Object.entries(target.headers ?? {})) args.push('-H', `${name}: ${value}`);
  args.push(target.url);
  return new Promise((resolve, reject) => {
    const child = spawn('wrk', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const guard = setTimeout(() => child.kill('SIGKILL'), (seconds + 30) * 1000);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(guard);
      const total = /(\d+) requests in ([\d.]+)(us|ms|s|m|h), ([\d.]+)([KMGT]?B) read/.exec(out);
      if (code !== 0 || !total) return reject(new Error(`wrk ${args.join(' ')} failed (${code}): ${out.slice(-1000)}`));
      const latency = (p) => {
        const m = new RegExp(`\\s${p}%\\s+([\\d.]+)(us|ms|s|m|h)`).exec(out);
        return m ? Number(m[1]) * TIME_UNITS[m[2]] : null;
      };
      const requests = Number(total[1]);
      const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
      const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
      const errors = socket ? Number(socket[1]) + Number(socket[2]) + Number(socket[3]) : 0;
      resolve({
        duration: Number(total[2]) * TIME_UNITS[total[3]] / 1000, requests: { total: requests }, '2xx': requests - non2xx, non2xx, errors,
        timeouts: socket ? Number(socket[4]) : 0, latency: { p50: latency(50), p99: latency(99) }, statusCodeStats: {},
        bytes: Number(total[4]) * SIZE_UNITS[total[5]],
      });
    });
  });
}

/** CPU time of a process, all its threads, in µs: [user, kernel] (Linux /proc; null elsewhere). */
function cpuOf(pid) {
  if (!pid) return null;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return [Number(fields[11]) * TICK_US, Number(fields[12]) * TICK_US];
  } catch {
    return null;
  }
}
/** USER_HZ: 100 on every Linux build this runs on (getconf CLK_TCK); /proc/<pid>/stat counts in its ticks. */
const TICK_US = 1e6 / 100;

/** Runs of one target, added up. p50 is the mean of the runs' p50 weighted by requests; p99 the worst run's. */
function tally() {
  const t = { seconds: 0, requests: 0, ok: 0, bytes: 0, non2xx: 0, errors: 0, timeouts: 0, p50sum: 0, p99: 0, statusCodes: {}, runs: 0, perRun: [], userUs: 0, sysUs: 0, cpuKnown: true };
  return {
    add(r, bytes, cpu) {
      if (cpu) {
        t.userUs += cpu[0];
        t.sysUs += cpu[1];
      } else t.cpuKnown = false;
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
        mibps: t.bytes / t.seconds / (1024 * 1024),
        // The server's CPU per request answered (all its threads): what it costs, whoever set the pace.
        cpuUserUs: t.cpuKnown && t.ok ? t.userUs / t.ok : null, cpuSysUs: t.cpuKnown && t.ok ? t.sysUs / t.ok : null, non2xx: t.non2xx, errors: t.errors, timeouts: t.timeouts, statusCodes: t.statusCodes, runs: t.runs, perRun: t.perRun, window,
      };
    },
  };
}

const targets = spec.targets;
// The same request list for the warm-up and the runs: sign-up names and activation codes are never reused.
const reqs = targets.map((t) => requests(t));
const run = (i, seconds) => {
  const t = targets[i];
  return t.tool === 'wrk' && !t.dynamic ? wrk(t, Math.max(1, Math.round(seconds))) : load(t, seconds, reqs[i]);
};
for (const i of targets.keys()) if (spec.warmup > 0) await run(i, spec.warmup);
const slices = targets.length > 1 ? Math.max(1, spec.slices ?? 1) : 1;
const tallies = targets.map(() => tally());
// The measured window on the monotonic clock, in µs: the clock of a --cpu-prof profile, to cut it to the run.
const from = Number(process.hrtime.bigint() / 1000n);
for (let k = 0; k < slices; k++) {
  const order = k % 2 === 0 ? targets.keys() : [...targets.keys()].reverse();
  for (const i of order) {
    receivedBytes = 0;
    const before = cpuOf(targets[i].pid);
    const r = await run(i, spec.duration / slices);
    const after = cpuOf(targets[i].pid);
    tallies[i].add(r, r.bytes ?? receivedBytes, before && after ? [after[0] - before[0], after[1] - before[1]] : null);
  }
}
const to = Number(process.hrtime.bigint() / 1000n);
process.stdout.write(JSON.stringify({ targets: tallies.map((t) => t.result([from, to])) }) + '\n');
