#!/usr/bin/env node
// The cost of being many (issue 26): three Tollgate nodes on PostgreSQL and a
// private Redis behind nginx (`least_conn`, keep-alive to the upstreams),
// against one node behind the same nginx and one node alone, on the same
// machine in one run. Every Tollgate node and nginx run on core 0, wrk on
// core 1 (PostgreSQL and Redis are not pinned): on two cores three nodes
// cannot be faster than one; what the ratio shows is what the cross-node
// bus, the shared rate-limit state and the proxy cost.
//
// Rows: GET /app_context with a session (unsigned, and signed with
// Tollgate-Nonce), POST /auth/login (argon2id), POST /activate_license (a new
// code every request, argon2id); then how long a ban and a device reset made
// on one node take to be in force on every other node (p50/p99 over --tries).
//
//   node bench/cluster.mjs [--duration S] [--tries N] [--warmup S] [--json]
//
// --warmup (default 10): seconds of each /app_context row's load through the front before any row is measured
// (login and activation: 2 s at most), so every node runs warm code; a node behind a 3-way balancer sees a third
// of the requests and needs about 20 s at this rate to stop getting cheaper (0: rows start on cold nodes, as
// before 2026-11-27).
//
// Environment: BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres): a fresh
// database is created there for each layout and dropped after.
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { ADMIN_TOKEN, BASE_DB, cpuMs, LOAD_CORE, pinned, releaseAll, startLayout, workDir } from './lib/layout.mjs';
import { createCodes, PASSWORD, setUpSigningKey, tollgateClient } from './lib/tollgate.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const RESULTS = join(ROOT, 'bench', 'results');

function has(cmd, args) {
  try {
    execFileSync(cmd, args, { stdio: 'pipe' });
    return true;
  } catch (err) {
    return err.code !== 'ENOENT';
  }
}

/** Why this bench cannot run here, or null. */
export function clusterUnavailable() {
  for (const [cmd, args, pkg] of [['nginx', ['-v'], 'nginx-light'], ['redis-server', ['--version'], 'redis-server'], ['wrk', ['-v'], 'wrk'], ['psql', ['--version'], 'postgresql-client'], ['taskset', ['-V'], 'util-linux']]) {
    if (!has(cmd, args)) return `${cmd} is not installed (Debian package "${pkg}")`;
  }
  try {
    execFileSync('pg_isready', ['-d', BASE_DB], { stdio: 'pipe' });
  } catch {
    return `PostgreSQL does not answer at ${BASE_DB.replace(/\/\/[^@]*@/, '//')}`;
  }
  return null;
}

/** wrk on core 1 against `url`; parses req/s, p50, p99 and non-2xx from its --latency output. */
export function wrk(url, { duration, connections, headers = {}, script }) {
  const args = [...LOAD_CORE, 'wrk', '-t1', `-c${connections}`, `-d${duration}s`, '--latency', ...Object.entries(headers).flatMap(([k, v]) => ['-H', `${k}: ${v}`]), ...(script ? ['-s', script] : []), url];
  const out = execFileSync(args[0], args.slice(1), { stdio: 'pipe', timeout: (duration + 60) * 1000 }).toString();
  const toMs = (v, unit) => Number(v) * ({ us: 0.001, ms: 1, s: 1000 }[unit] ?? 1);
  const lat = (p) => {
    const m = new RegExp(`^\\s+${p}%\\s+([\\d.]+)(us|ms|s)`, 'm').exec(out);
    return m ? toMs(m[1], m[2]) : null;
  };
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN);
  const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? NaN);
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0);
  const errors = /Socket errors:.*/.exec(out)?.[0] ?? null;
  const statuses = Object.fromEntries([...out.matchAll(/^status (\d+): (\d+)$/gm)].map((m) => [m[1], Number(m[2])]));
  return { rps, requests, p50: lat(50), p99: lat(99), non2xx, errors, statuses };
}

function luaPost(dir, name, path, headers, bodies) {
  const file = join(dir, `${name}.lua`);
  const quoted = (s) => `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
  writeFileSync(file, [
    `local bodies = {${bodies.map(quoted).join(',\n')}}`,
    'local i = 0',
    `wrk.method = "POST"`,
    `wrk.headers["content-type"] = "application/json"`,
    ...Object.entries(headers).map(([k, v]) => `wrk.headers[${quoted(k)}] = ${quoted(v)}`),
    'local threads = {}',
    'setup = function(thread) table.insert(threads, thread) end',
    'statuses = {}',
    'response = function(status) statuses[status] = (statuses[status] or 0) + 1 end',
    'done = function()',
    '  for _, t in ipairs(threads) do',
    '    local s = t:get("statuses")',
    '    for k, v in pairs(s) do io.write(string.format("status %d: %d\\n", k, v)) end',
    '  end',
    'end',
    'request = function()',
    '  i = i + 1',
    '  if i > #bodies then i = 1 end',
    `  return wrk.format(nil, ${quoted(path)}, nil, bodies[i])`,
    'end',
    '',
  ].join('\n'));
  return file;
}

/** Runs one wrk row and adds the CPU µs per request the nodes and nginx spent on it. */
function withCpu(nodePids, nginxPids, run) {
  const sum = (pids) => pids.reduce((s, p) => s + cpuMs(p), 0);
  const [n0, x0] = [sum(nodePids), sum(nginxPids)];
  const row = run();
  const [n1, x1] = [sum(nodePids), sum(nginxPids)];
  row.nodeUs = Math.round(((n1 - n0) * 10_000) / row.requests) / 10;
  row.nginxUs = Math.round(((x1 - x0) * 10_000) / row.requests) / 10;
  return row;
}

const sorted = (xs) => [...xs].sort((a, b) => a - b);
const pct = (xs, p) => (xs.length ? sorted(xs)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] : null);

/** Until every node in `nodes` answers `want` to GET /app_context with `headers`; ms it took, or null after 10 s. */
async function reachAll(nodes, headers, want, since) {
  const pending = new Set(nodes.map((n) => n.url));
  while (pending.size) {
    if (Date.now() - since > 10_000) return null;
    await Promise.all([...pending].map(async (url) => {
      const res = await fetch(`${url}/app_context`, { headers }).catch(() => null);
      if (res) {
        await res.arrayBuffer();
        if (res.status === want) pending.delete(url);
      }
    }));
    if (pending.size) await sleep(2);
  }
  return Date.now() - since;
}

/** One layout: `count` nodes, optionally behind nginx; runs the load rows, and the propagation rows when count > 1. */
async function layout(dir, { count, proxied, duration, tries, warmup }) {
  const started = await startLayout(dir, { count, proxied });
  const { nodes, nginx, front } = started;
  try {
    const client = tollgateClient(nodes[0].url, ADMIN_TOKEN);
    const app = await client.admin('POST', '/apps', { body: { name: 'Cluster Bench' } });
    const appHeaders = { 'x-api-key': app.api_key, 'x-api-secret': app.api_secret };
    await client.admin('PATCH', `/apps/${app.id}`, { body: { max_sessions_per_user: 0 } }).catch(() => undefined);
    // A root key and a certified signing key, so the signed row measures real Ed25519 signatures.
    await setUpSigningKey(join(ROOT, 'dist'), client, app.id);
    // Users for login and activation, signed up through the front like real clients.
    const users = [];
    for (let i = 0; i < 8; i++) {
      const username = `cluster_user_${i}`;
      await client.call('POST', '/sign_up', { body: { username, password: PASSWORD }, headers: appHeaders });
      users.push(username);
    }
    // Every user with an active membership: a login without one is refused (403) after the same argon2 check.
    const firsts = await createCodes(client, app.id, users.length);
    for (const [i, username] of users.entries()) await client.call('POST', '/activate_license', { body: { code: firsts[i], username, password: PASSWORD }, headers: appHeaders });
    const session = await client.call('POST', '/auth/login', { body: { credentials: { username: users[0], password: PASSWORD } }, headers: appHeaders });
    const bearer = { ...appHeaders, authorization: `Bearer ${session.session_token}` };
    // Enough codes that activation never runs out (argon2id bounds it to a few hundred a second here).
    const codes = await createCodes(client, app.id, Math.max(2000, duration * 600));
    if (warmup > 0) {
      // Every node through the front, every row's path, before anything is measured: a fresh node's first
      // thousands of requests run cold code (V8 compiles the hot paths as they turn hot), about 0.3 s of CPU per
      // node here (docs/performance.md). Without this the 3-node layout paid it three times inside its first
      // row, and node 0 alone had been warmed by the set-up.
      const signedHeaders = { ...bearer, 'tollgate-nonce': 'cluster-bench-nonce-0123456789abcdef' };
      wrk(`${front}/app_context`, { duration: warmup, connections: 50, headers: bearer });
      wrk(`${front}/app_context`, { duration: warmup, connections: 50, headers: signedHeaders });
      // argon2id bounds login and activation to a few dozen a second: their hot paths turn hot within seconds.
      wrk(`${front}/auth/login`, { duration: Math.min(warmup, 2), connections: 8, script: luaPost(dir, `warm-login-${count}`, '/auth/login', appHeaders, users.map((u) => JSON.stringify({ credentials: { username: u, password: PASSWORD } }))) });
      const warmCodes = await createCodes(client, app.id, 300);
      wrk(`${front}/activate_license`, { duration: Math.min(warmup, 2), connections: 8, script: luaPost(dir, `warm-activate-${count}`, '/activate_license', appHeaders, warmCodes.map((code, i) => JSON.stringify({ code, username: users[i % users.length], password: PASSWORD }))) });
    }
    const rows = {};
    const nodePids = nodes.map((n) => n.child.pid);
    const nginxPids = nginx ? nginx.pids() : [];
    const measured = (run) => withCpu(nodePids, nginxPids, run);
    rows['app_context'] = measured(() => wrk(`${front}/app_context`, { duration, connections: 50, headers: bearer }));
    const probe = await fetch(`${front}/app_context`, { headers: { ...bearer, 'tollgate-nonce': 'cluster-bench-nonce-0123456789abcdef' } });
    await probe.arrayBuffer();
    if (!probe.headers.get('tollgate-signature')) throw new Error('the signed row would measure unsigned answers: no Tollgate-Signature');
    rows['app_context signed'] = measured(() => wrk(`${front}/app_context`, { duration, connections: 50, headers: { ...bearer, 'tollgate-nonce': 'cluster-bench-nonce-0123456789abcdef' } }));
    const loginScript = luaPost(dir, `login-${count}`, '/auth/login', appHeaders, users.map((u) => JSON.stringify({ credentials: { username: u, password: PASSWORD } })));
    rows['login'] = measured(() => wrk(`${front}/auth/login`, { duration, connections: 8, script: loginScript }));
    const activateScript = luaPost(dir, `activate-${count}`, '/activate_license', appHeaders, codes.map((code, i) => JSON.stringify({ code, username: users[i % users.length], password: PASSWORD })));
    rows['activation'] = measured(() => wrk(`${front}/activate_license`, { duration, connections: 8, script: activateScript }));

    let propagation = null;
    if (count > 1) {
      // A ban and a device reset made on one node, measured until in force on every other node.
      const victim = users[1];
      const userId = (await client.admin('GET', `/apps/${app.id}/users?q=${victim}`)).items[0].id;
      const ban = [];
      const reset = [];
      let missed = 0;
      for (let t = 0; t < tries; t++) {
        const origin = nodes[t % count];
        const others = nodes.filter((n) => n !== origin);
        const login = await tollgateClient(origin.url, ADMIN_TOKEN).call('POST', '/auth/login', { body: { credentials: { username: victim, password: PASSWORD } }, headers: appHeaders });
        const headers = { ...appHeaders, authorization: `Bearer ${login.session_token}` };
        if ((await reachAll(others, headers, 200, Date.now())) === null) throw new Error('a fresh session is not served by every node');
        // Ban on the origin node; in force on the others when they answer 403.
        const created = await tollgateClient(origin.url, ADMIN_TOKEN).admin('POST', `/apps/${app.id}/bans`, { body: { type: 'user', value: userId } });
        const banMs = await reachAll(others, headers, 403, Date.now());
        await tollgateClient(origin.url, ADMIN_TOKEN).admin('DELETE', `/apps/${app.id}/bans/${created.id}`, { expect: 204 });
        if ((await reachAll(others, headers, 200, Date.now())) === null) throw new Error('an unban did not reach every node');
        // Device reset (ends the user's sessions) on the origin; in force when the others answer 401.
        const resetAt = Date.now();
        await tollgateClient(origin.url, ADMIN_TOKEN).admin('POST', `/apps/${app.id}/users/${userId}/reset-devices`, { expect: 204 });
        const resetMs = await reachAll(others, headers, 401, resetAt);
        if (banMs === null || resetMs === null) missed++;
        else {
          ban.push(banMs);
          reset.push(resetMs);
        }
      }
      propagation = { tries, missed, ban: { p50: pct(ban, 50), p99: pct(ban, 99), max: Math.max(...ban) }, reset: { p50: pct(reset, 50), p99: pct(reset, 99), max: Math.max(...reset) } };
    }
    return { count, proxied, rows, propagation };
  } finally {
    await started.stop();
  }
}

export async function runCluster({ duration = 10, tries = 100, warmup = 10 } = {}) {
  const why = clusterUnavailable();
  if (why) return { skipped: why };
  const dir = workDir('tollgate-cluster-bench-');
  const loadAtStart = loadavg().map((l) => Math.round(l * 100) / 100);
  try {
    const direct = await layout(dir, { count: 1, proxied: false, duration, tries: 0, warmup });
    const one = await layout(dir, { count: 1, proxied: true, duration, tries: 0, warmup });
    const three = await layout(dir, { count: 3, proxied: true, duration, tries, warmup });
    return {
      machine: { cores: availableParallelism(), cpu: cpus()[0]?.model, node: process.version, pinned, loadAtStart, loadAtEnd: loadavg().map((l) => Math.round(l * 100) / 100) },
      duration, warmup, direct, one, three,
    };
  } finally {
    releaseAll();
    rmSync(dir, { recursive: true, force: true });
  }
}

const f0 = (n) => (n === null || Number.isNaN(n) ? '—' : Math.round(n).toLocaleString('en-US'));
const f2 = (n) => (n === null ? '—' : n.toFixed(2));

export function formatCluster(r) {
  if (r.skipped) return `3 nodes: skipped (${r.skipped})`;
  const lines = [
    `3 nodes on PostgreSQL + Redis behind nginx (least_conn) against 1 node, ${r.duration} s per row after ${r.warmup ?? 0} s of warm-up per row; ${r.machine.pinned ? 'nodes and nginx on core 0, wrk on core 1' : 'not pinned'}; load average ${r.machine.loadAtStart.join(' ')} → ${r.machine.loadAtEnd.join(' ')}`,
    `${'row'.padEnd(20)} ${'1 node direct'.padStart(22)} ${'1 node + nginx'.padStart(22)} ${'3 nodes + nginx'.padStart(22)} ${'3 / 1 (nginx)'.padStart(14)}`,
  ];
  for (const name of Object.keys(r.three.rows)) {
    const cell = (row) => `${f0(row.rps)}/s ${f2(row.p50)}|${f2(row.p99)} ms${row.non2xx ? ` ${row.non2xx}!` : ''}`;
    lines.push(`${name.padEnd(20)} ${cell(r.direct.rows[name]).padStart(22)} ${cell(r.one.rows[name]).padStart(22)} ${cell(r.three.rows[name]).padStart(22)} ${(r.three.rows[name].rps / r.one.rows[name].rps).toFixed(2).padStart(14)}`);
  }
  lines.push('  (cells: req/s, p50|p99 latency; "N!" = N answers that were not 2xx)');
  // The same rows by CPU: what the kernel counted for the nodes and nginx, per answered request. A loaded machine
  // stretches wall-clock rates; it hardly changes what one request costs, so this ratio holds when req/s do not.
  if (r.three.rows.app_context?.nodeUs !== undefined) {
    lines.push(`${'CPU µs per request'.padEnd(20)} ${'1 node direct'.padStart(22)} ${'1 node + nginx'.padStart(22)} ${'3 nodes + nginx'.padStart(22)} ${'1 / 3 (nginx)'.padStart(14)}`);
    const cpu = (row) => `${row.nodeUs.toFixed(1)}${row.nginxUs ? ` + ${row.nginxUs.toFixed(1)}` : ''}`;
    const total = (row) => row.nodeUs + row.nginxUs;
    for (const name of Object.keys(r.three.rows)) {
      lines.push(`${name.padEnd(20)} ${cpu(r.direct.rows[name]).padStart(22)} ${cpu(r.one.rows[name]).padStart(22)} ${cpu(r.three.rows[name]).padStart(22)} ${(total(r.one.rows[name]) / total(r.three.rows[name])).toFixed(2).padStart(14)}`);
    }
    lines.push('  (cells: nodes + nginx; the last column is what 3 nodes get from one core per 1 node\'s, ≥ 0.85 is the target)');
  }
  const p = r.three.propagation;
  if (p) {
    lines.push(`a ban made on one node, in force on the 2 others: p50 ${p.ban.p50} ms, p99 ${p.ban.p99} ms, max ${p.ban.max} ms (${p.tries} tries, ${p.missed} not within 10 s)`);
    lines.push(`a device reset made on one node, in force on the 2 others: p50 ${p.reset.p50} ms, p99 ${p.reset.p99} ms, max ${p.reset.max} ms`);
  }
  return lines.join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const sig of ['SIGINT', 'SIGTERM']) {
    process.on(sig, () => {
      releaseAll();
      process.exit(130);
    });
  }
  const { values } = parseArgs({ options: { duration: { type: 'string', default: '10' }, tries: { type: 'string', default: '100' }, json: { type: 'boolean', default: false }, warmup: { type: 'string', default: '10' } } });
  try {
    const result = await runCluster({ duration: Number(values.duration), tries: Number(values.tries), warmup: Number(values.warmup) });
    if (!result.skipped) {
      mkdirSync(RESULTS, { recursive: true });
      writeFileSync(join(RESULTS, `cluster-${new Date().toISOString().replace(/[:.]/g, '-')}.json`), JSON.stringify(result, null, 2) + '\n');
    }
    console.log(values.json ? JSON.stringify(result) : formatCluster(result));
  } catch (err) {
    console.error(`cluster bench: ${err.stack ?? err}`);
    process.exitCode = 1;
  } finally {
    releaseAll();
  }
}
