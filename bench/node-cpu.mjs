#!/usr/bin/env node
// What a Tollgate node costs in CPU as the kernel counts it (utime + stime of
// /proc/<pid>/stat), which a loaded machine does not skew the way it skews
// req/s (issue 26): N nodes on PostgreSQL with a private Redis, behind nginx
// when N > 1, as in bench/cluster.mjs.
//
//   idle: CPU ms per minute of each node, nginx and the private Redis, and the
//         transactions PostgreSQL committed for the bench database, while no
//         request arrives;
//   load: CPU µs per request (every node + nginx) for GET /app_context with a
//         session, unsigned, over a wrk run of --duration seconds.
//
//   node bench/node-cpu.mjs [--nodes 3] [--proxied] [--idle 60] [--duration 5] [--warmup 0] [--rounds 1] [--json]
//   (--proxied: behind nginx even with one node; the default when --nodes > 1)
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { ADMIN_TOKEN, BASE_DB, cpuMs, releaseAll, startLayout, workDir } from './lib/layout.mjs';
import { createCodes, PASSWORD, tollgateClient } from './lib/tollgate.mjs';

const USAGE = `node bench/node-cpu.mjs [options]
  --nodes N      Tollgate nodes on PostgreSQL + a private Redis (default 3)
  --proxied      behind nginx even with one node (the default when --nodes > 1)
  --idle S       seconds of idle measured (default 60)
  --duration S   seconds of each wrk round on GET /app_context (default 5)
  --warmup S     seconds of unmeasured load before the rounds (default 0)
  --rounds N     wrk rounds (default 1)
  --json         one line of JSON
  -h, --help     this text
Needs nginx, redis-server, wrk, psql, taskset and the built server (npm run build);
BENCH_DATABASE_URL (default ${BASE_DB}) is where a fresh database is made and dropped.`;

/** Voluntary (the process waited: an event-loop turn found nothing more to do) and involuntary context switches. */
function switches(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return [Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(status)[1]), Number(/^nonvoluntary_ctxt_switches:\s+(\d+)/m.exec(status)[1])];
}

function commits(dbUrl) {
  const name = new URL(dbUrl).pathname.slice(1);
  return Number(execFileSync('psql', [BASE_DB, '-AtXqc', `SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = '${name}'`]).toString().trim());
}

function redisCommands(url) {
  const port = new URL(url).port;
  const info = execFileSync('redis-cli', ['-p', port, 'info', 'stats']).toString();
  return Number(/total_commands_processed:(\d+)/.exec(info)?.[1] ?? NaN);
}

function wrkCount(url, duration, headers) {
  const args = ['-c', '1', 'wrk', '-t1', '-c50', `-d${duration}s`, ...Object.entries(headers).flatMap(([k, v]) => ['-H', `${k}: ${v}`]), url];
  const out = execFileSync('taskset', args, { stdio: 'pipe' }).toString();
  return { requests: Number(/(\d+) requests in/.exec(out)?.[1] ?? NaN), non2xx: Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0) };
}

export async function measure({ nodes: count, idle, duration, proxied = count > 1, warmup = 0, rounds = 1 }) {
  const dir = workDir('tollgate-node-cpu-');
  let layout = null;
  try {
    layout = await startLayout(dir, { count, proxied });
    const { db, redis, nodes, nginx, front } = layout;
    const redisPid = redis.pid();
    const client = tollgateClient(nodes[0].url, ADMIN_TOKEN);
    const app = await client.admin('POST', '/apps', { body: { name: 'Node CPU' } });
    const appHeaders = { 'x-api-key': app.api_key, 'x-api-secret': app.api_secret };
    await client.call('POST', '/sign_up', { body: { username: 'cpu_user', password: PASSWORD }, headers: appHeaders });
    const [code] = await createCodes(client, app.id, 1);
    await client.call('POST', '/activate_license', { body: { code, username: 'cpu_user', password: PASSWORD }, headers: appHeaders });
    const session = await client.call('POST', '/auth/login', { body: { credentials: { username: 'cpu_user', password: PASSWORD } }, headers: appHeaders });
    const bearer = { ...appHeaders, authorization: `Bearer ${session.session_token}` };
    await sleep(5000); // start-up work and the first flushes out of the way
    const pids = nodes.map((n) => n.child.pid);
    const nginxPids = nginx ? nginx.pids() : [];
    const snap = () => ({ nodes: pids.map(cpuMs), sw: pids.map(switches), nginx: nginxPids.reduce((s, p) => s + cpuMs(p), 0), redis: cpuMs(redisPid), commits: commits(db.url), redisCmds: redisCommands(redis.url) });
    const a = snap();
    await sleep(idle * 1000);
    const b = snap();
    const perMin = (x) => Math.round((x * 60_000) / (idle * 1000));
    const idleRow = {
      nodeMsPerMin: b.nodes.map((v, i) => perMin(v - a.nodes[i])),
      nginxMsPerMin: perMin(b.nginx - a.nginx),
      redisMsPerMin: perMin(b.redis - a.redis),
      pgCommitsPerMin: perMin(b.commits - a.commits),
      redisCommandsPerMin: perMin(b.redisCmds - a.redisCmds),
    };
    if (warmup > 0) wrkCount(`${front}/app_context`, warmup, bearer);
    const loads = [];
    for (let r = 0; r < rounds; r++) {
    const c = snap();
    const run = wrkCount(`${front}/app_context`, duration, bearer);
    const d = snap();
    const nodeMs = d.nodes.reduce((s, v, i) => s + v - c.nodes[i], 0);
    const loadRow = {
      requests: run.requests,
      non2xx: run.non2xx,
      nodeUsPerRequest: Math.round(((nodeMs * 1000) / run.requests) * 10) / 10,
      nginxUsPerRequest: Math.round((((d.nginx - c.nginx) * 1000) / run.requests) * 10) / 10,
      // per 100 requests, summed over the nodes: waits (voluntary) and preemptions (involuntary)
      waitsPer100: Math.round((d.sw.reduce((s, v, i) => s + v[0] - c.sw[i][0], 0) / run.requests) * 1000) / 10,
      preemptionsPer100: Math.round((d.sw.reduce((s, v, i) => s + v[1] - c.sw[i][1], 0) / run.requests) * 1000) / 10,
      perNodeShare: d.nodes.map((v, i) => Math.round(((v - c.nodes[i]) / nodeMs) * 100) / 100),
      pgCommits: d.commits - c.commits,
      redisCommands: d.redisCmds - c.redisCmds,
    };
    loads.push(loadRow);
    }
    return { nodes: count, proxied, warmup, idleSeconds: idle, idle: idleRow, load: loads.length === 1 ? loads[0] : loads };
  } finally {
    // Whatever happened (a node that never got ready, a wrk that failed): the layout's processes and database go.
    await layout?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  // A signal skips every finally: kill what was started (nodes, nginx, Redis), drop the database, remove the directory here.
  for (const sig of ['SIGINT', 'SIGTERM']) {
    process.on(sig, () => {
      releaseAll();
      process.exit(130);
    });
  }
  const options = { nodes: { type: 'string', default: '3' }, idle: { type: 'string', default: '60' }, duration: { type: 'string', default: '5' }, json: { type: 'boolean', default: false }, proxied: { type: 'boolean' }, warmup: { type: 'string', default: '0' }, rounds: { type: 'string', default: '1' }, help: { type: 'boolean', short: 'h', default: false } };
  let values;
  try {
    ({ values } = parseArgs({ options }));
  } catch (err) {
    console.error(`${err.message}\n\n${USAGE}`);
    process.exit(2);
  }
  if (values.help) {
    console.log(USAGE);
  } else {
    try {
      const r = await measure({ nodes: Number(values.nodes), idle: Number(values.idle), duration: Number(values.duration), proxied: values.proxied ?? Number(values.nodes) > 1, warmup: Number(values.warmup), rounds: Number(values.rounds) });
      console.log(values.json ? JSON.stringify(r) : JSON.stringify(r, null, 2));
    } catch (err) {
      console.error(`node-cpu bench: ${err.stack ?? err}`);
      process.exitCode = 1;
    } finally {
      releaseAll();
    }
  }
}
