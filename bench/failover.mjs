#!/usr/bin/env node
// A PostgreSQL failover under a steady write load (issue 26): two Tollgate nodes
// behind nothing, the database behind an HAProxy TCP proxy, a primary that dies
// and a streaming replica promoted in its place. Measures what a client sees:
// how long until a write succeeds again, how requests were answered meanwhile
// (200 or 503 only: never a 500, never a hang), and how many acknowledged
// writes the new primary does not have.
//
//   node bench/failover.mjs [--synchronous] [--json]
//
// Used by test/cluster/pg-failover.test.ts (which asserts the behaviour) and by
// `npm run bench` (which prints the figures). Needs root, PostgreSQL's binaries
// and HAProxy; see pairUnavailable() in lib/pg-pair.mjs.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { pairUnavailable, startPair, stopAllPairs } from './lib/pg-pair.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const MAIN = join(ROOT, 'dist', 'cli', 'main.js');
const ADMIN_TOKEN = 'failover-admin-token-0123456789';
/** Longer than any bounded wait of the node (connect 1 s, query 2 s): an answer later than this is a hang. */
const HANG_MS = 30_000;

function freePort() {
  return new Promise((done, fail) => {
    const srv = createServer();
    srv.on('error', fail);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => done(port));
    });
  });
}

async function startNode(databaseUrl) {
  const port = await freePort();
  const child = spawn(process.execPath, [MAIN, 'serve'], {
    env: {
      PATH: process.env.PATH, HOME: process.env.HOME ?? '/tmp',
      DATABASE_URL: databaseUrl, PORT: String(port), HOST: '127.0.0.1', TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN,
      LOG_LEVEL: 'warn', RATE_LIMIT: 'off', ACCESS_LOG: 'off',
      // What docs/deploy.md recommends behind a proxy that may fail over: bounded waits, so a request
      // to a database that is gone is a 503 in seconds, not a hang.
      PG_CONNECT_TIMEOUT_MS: '1000', PG_QUERY_TIMEOUT_MS: '2000', PG_STATEMENT_TIMEOUT_MS: '1500',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output = [];
  child.stdout.on('data', (d) => output.push(String(d)));
  child.stderr.on('data', (d) => output.push(String(d)));
  const url = `http://127.0.0.1:${port}`;
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; await sleep(100)) {
    if (child.exitCode !== null) throw new Error(`node exited with ${child.exitCode}: ${output.join('')}`);
    try {
      if ((await fetch(`${url}/readyz`)).status === 200) return { url, child, output };
    } catch {
      // not listening yet
    }
  }
  child.kill('SIGKILL');
  throw new Error(`node did not become ready: ${output.join('')}`);
}

async function stopNode(node) {
  if (node.child.exitCode !== null) return;
  const gone = new Promise((r) => node.child.once('exit', r));
  node.child.kill('SIGKILL');
  await gone;
}

/** One request with a bound: resolves to { status, body } or { hung: true } / { error }. */
async function call(base, method, path, { body, headers = {} } = {}) {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), HANG_MS);
  try {
    const res = await fetch(base + path, {
      method, signal: ac.signal,
      headers: { ...(body !== undefined && { 'content-type': 'application/json' }), ...headers },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    let parsed = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON
    }
    return { status: res.status, body: parsed };
  } catch (err) {
    return ac.signal.aborted ? { hung: true } : { error: err.message };
  } finally {
    clearTimeout(timer);
  }
}

const admin = (base, method, path, body) => call(base, method, `/admin/v1${path}`, { body, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });

const percentile = (sorted, p) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : null);

/**
 * Runs one failover and returns its figures. `synchronous`: commits wait for the replica to apply them
 * (`remote_apply`); otherwise asynchronous replication. `loadMs`: write load before the primary dies.
 */
export async function runFailover({ synchronous = false, loadMs = 3000, workers = 8, log = () => {} } = {}) {
  const why = pairUnavailable();
  if (why) return { skipped: why };
  const nodes = [];
  const interrupted = () => {
    for (const n of nodes) n.child.kill('SIGKILL');
    stopAllPairs().finally(() => process.exit(130));
  };
  process.once('SIGINT', interrupted).once('SIGTERM', interrupted);
  const pair = await startPair({ synchronous }).catch((err) => {
    process.off('SIGINT', interrupted).off('SIGTERM', interrupted);
    throw err;
  });
  try {
    nodes.push(await startNode(pair.url), await startNode(pair.url));
    const [a, b] = nodes;
    const app = await admin(a.url, 'POST', '/apps', { name: 'Failover' });
    if (app.status !== 201) throw new Error(`app: ${JSON.stringify(app)}`);
    const appHeaders = { 'x-api-key': app.body.api_key, 'x-api-secret': app.body.api_secret };

    // A signed-in user on node b, to check after the failover that a ban made on node a still reaches b
    // (the cross-node bus listens on a connection the failover cut).
    const license = await admin(a.url, 'POST', `/apps/${app.body.id}/licenses`, { count: 1, minutes: 600 });
    const signup = await call(b.url, 'POST', '/sign_up_with_license_code', { body: { code: license.body.licenses[0].code }, headers: appHeaders });
    if (signup.status !== 200) throw new Error(`sign-up: ${JSON.stringify(signup)}`);
    const login = await call(b.url, 'POST', '/auth/login', { body: { credentials: { code: license.body.licenses[0].code } }, headers: appHeaders });
    const bearer = { ...appHeaders, authorization: `Bearer ${login.body.session_token}` };

    const acked = []; // usernames whose sign-up was answered 200
    const ackedCodes = []; // license codes whose creation was answered 201 (cheap writes: no password hash)
    const counts = { total: 0, ok: 0, unavailable: 0, other: 0, hung: 0, transport: 0 };
    const others = [];
    const successes = []; // times of 200 answers
    let next = 0;
    let stop = false;
    const worker = async (w) => {
      while (!stop) {
        const n = next++;
        const username = `failover_${n}`;
        const res = await call(nodes[(n + w) % 2].url, 'POST', '/sign_up', { body: { username, password: 'failover password' }, headers: appHeaders });
        counts.total++;
        if (res.hung) counts.hung++;
        else if (res.error) {
          counts.transport++;
          await sleep(50);
        } else if (res.status === 200) {
          counts.ok++;
          acked.push(username);
          successes.push(Date.now());
        } else if (res.status === 503 && res.body?.code === 'service_unavailable') {
          counts.unavailable++;
          await sleep(50); // a client backs off a little on 503
        } else {
          counts.other++;
          if (others.length < 20) others.push({ status: res.status, body: res.body });
        }
      }
    };
    const licenseWorker = async (w) => {
      while (!stop) {
        const res = await call(nodes[w % 2].url, 'POST', `/admin/v1/apps/${app.body.id}/licenses`, { body: { count: 1, minutes: 60 }, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
        counts.total++;
        if (res.hung) counts.hung++;
        else if (res.error) {
          counts.transport++;
          await sleep(50);
        } else if (res.status === 201) {
          ackedCodes.push(res.body.licenses[0].code);
          successes.push(Date.now());
          counts.ok++;
        } else if (res.status === 503 && res.body?.code === 'service_unavailable') {
          counts.unavailable++;
          await sleep(50);
        } else {
          counts.other++;
          if (others.length < 20) others.push({ status: res.status, body: res.body });
        }
      }
    };
    const load = [...Array.from({ length: workers }, (_, w) => worker(w)), ...Array.from({ length: workers }, (_, w) => licenseWorker(w))];
    await sleep(loadMs);
    const before = counts.ok;
    const lagBytes = pair.replayLag();
    const syncState = pair.sql(pair.primary, 'SELECT sync_state FROM pg_stat_replication');

    const killedAt = Date.now();
    pair.killPrimary();
    pair.promote();
    const promotedAt = Date.now();
    await pair.switchProxy();
    const switchedAt = Date.now();
    log(`primary killed; replica promoted in ${promotedAt - killedAt} ms; proxy switched`);

    // Load goes on until writes succeed again on both nodes, then 2 s more.
    const deadline = Date.now() + 90_000;
    while (Date.now() < deadline && !successes.some((t) => t > switchedAt)) await sleep(20);
    const firstWrite = successes.find((t) => t > switchedAt) ?? null;
    await sleep(2000);
    stop = true;
    await Promise.all(load);

    // Every node is alive and serves; a ban made on a reaches b within 10 s.
    const alive = nodes.map((n) => n.child.exitCode === null);
    let banReachedMs = null;
    const ban = await admin(a.url, 'POST', `/apps/${app.body.id}/bans`, { type: 'user', value: signup.body.id });
    if (ban.status === 201) {
      const banAt = Date.now();
      for (const end = banAt + 10_000; Date.now() < end; await sleep(20)) {
        const ctx = await call(b.url, 'GET', '/app_context', { headers: bearer });
        if (ctx.status === 403) {
          banReachedMs = Date.now() - banAt;
          break;
        }
      }
    }

    // What the new primary holds, read on it directly.
    const present = new Set(pair.sql(pair.replica, `SELECT username FROM users WHERE app_id = '${app.body.id}'`).split('\n'));
    const codes = new Set(pair.sql(pair.replica, `SELECT code FROM licenses WHERE app_id = '${app.body.id}'`).split('\n'));
    const lost = [...acked.filter((u) => !present.has(u)), ...ackedCodes.filter((c) => !codes.has(c))];
    const gaps = [];
    for (let i = 1; i < successes.length; i++) gaps.push(successes[i] - successes[i - 1]);
    return {
      mode: synchronous ? 'synchronous (remote_apply)' : 'asynchronous',
      requests: counts.total, ok: counts.ok, okBeforeFailure: before,
      unavailable: counts.unavailable, other: counts.other, others, hung: counts.hung, transport: counts.transport,
      replicaLagBytesAtFailure: lagBytes,
      promoteMs: promotedAt - killedAt,
      firstWriteAfterSwitchMs: firstWrite === null ? null : firstWrite - switchedAt,
      outageMs: firstWrite === null ? null : firstWrite - killedAt,
      longestGapMs: gaps.length ? Math.max(...gaps) : null,
      p99GapMs: percentile(gaps.sort((x, y) => x - y), 99),
      syncState,
      acknowledged: acked.length + ackedCodes.length, lost: lost.length, lostSample: lost.slice(0, 5),
      nodesAlive: alive.every(Boolean), banReachedMs,
    };
  } finally {
    process.off('SIGINT', interrupted).off('SIGTERM', interrupted);
    for (const n of nodes) await stopNode(n).catch(() => undefined);
    await pair.stop();
  }
}

export function formatFailover(r) {
  if (r.skipped) return `failover: skipped (${r.skipped})`;
  return [
    `failover, ${r.mode}: outage ${r.outageMs} ms from the primary's death to the next acknowledged write`,
    `  (promotion ${r.promoteMs} ms, then ${r.firstWriteAfterSwitchMs} ms after the proxy switched);`,
    `  ${r.requests} writes (sign-ups and license creations): ${r.ok} answered 200, ${r.unavailable} answered 503, ${r.other} other, ${r.hung} hung, ${r.transport} without an answer;`,
    `  acknowledged writes lost: ${r.lost} of ${r.acknowledged} (replica ${r.syncState}, ${r.replicaLagBytesAtFailure} bytes behind at the failure);`,
    `  nodes alive: ${r.nodesAlive ? 'both' : 'NOT ALL'}; a ban after the failover reached the other node in ${r.banReachedMs ?? 'NEVER'} ms`,
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { synchronous: { type: 'boolean', default: false }, json: { type: 'boolean', default: false } } });
  const result = await runFailover({ synchronous: values.synchronous, log: (l) => console.error(`failover: ${l}`) });
  console.log(values.json ? JSON.stringify(result) : formatFailover(result));
}
