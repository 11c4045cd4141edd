// A layout of the multi-node benches (bench/cluster.mjs, bench/node-cpu.mjs): a fresh PostgreSQL database,
// a private Redis, N Tollgate nodes on them and, when proxied, nginx in front (`least_conn`, keep-alive to
// the upstreams). Everything started here is tracked, so a bench can stop exactly what it started, in a
// `finally` (stop()) or, on a signal or a crash, all at once (releaseAll()), work directories included.
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { cleanEnv, freePort, killAllChildren, startChild, stopChild } from './proc.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const MAIN = join(ROOT, 'dist', 'cli', 'main.js');
export const ADMIN_TOKEN = 'cluster-bench-admin-token-0123456789';
export const BASE_DB = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** Tollgate nodes and nginx on core 0, the load on core 1, where there are two cores. */
export const pinned = availableParallelism() >= 2;
export const SERVER_CORE = pinned ? ['taskset', '-c', '0'] : [];
export const LOAD_CORE = pinned ? ['taskset', '-c', '1'] : [];

/** nginx and redis-server (the Tollgate nodes are tracked by proc.mjs), the databases not yet dropped, the work directories. */
const others = new Set();
const databases = new Set();
const dirs = new Set();

/** A fresh directory for a bench's logs and configuration, removed by releaseAll() at the latest. */
export function workDir(prefix) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.add(dir);
  return dir;
}

/**
 * Last resort (a signal, a crash, the end of a bench whatever happened): kills every process started here
 * and through proc.mjs and drops every database made here. Synchronous, so it can run in an 'exit' handler.
 * The kills are at once; the DROP DATABASE waits for a checkpoint (12 s measured on a busy shared server).
 */
export function releaseAll() {
  killAllChildren();
  for (const child of others) child.kill('SIGKILL');
  others.clear();
  for (const drop of databases) drop();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  dirs.clear();
}

function psql(url, sql) {
  return execFileSync('psql', [url, '-AtXqc', sql], { stdio: 'pipe' }).toString().trim();
}

export async function freshDatabase() {
  const name = `tollgate_cluster_bench_${process.pid}_${Date.now()}`;
  psql(BASE_DB, `CREATE DATABASE ${name}`);
  const url = new URL(BASE_DB);
  url.pathname = `/${name}`;
  const drop = () => {
    databases.delete(drop);
    try {
      psql(BASE_DB, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    } catch {
      // dropped by a later run's clean-up at worst
    }
  };
  databases.add(drop);
  return { url: url.toString(), drop };
}

export async function startRedis(dir) {
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' });
  others.add(child);
  child.once('exit', () => others.delete(child));
  for (let i = 0; i < 100; i++) {
    try {
      execFileSync('redis-cli', ['-p', String(port), 'ping'], { stdio: 'pipe' });
      const url = `redis://127.0.0.1:${port}`;
      const pid = () => Number(/process_id:(\d+)/.exec(execFileSync('redis-cli', ['-p', String(port), 'info', 'server']).toString())[1]);
      return { url, pid, stop: () => child.kill('SIGKILL') };
    } catch {
      await sleep(50);
    }
  }
  child.kill('SIGKILL');
  throw new Error('redis-server did not start');
}

export async function startNginx(dir, upstreams) {
  const port = await freePort();
  const conf = join(dir, `nginx-${port}.conf`);
  mkdirSync(join(dir, 'nginx-temp'), { recursive: true });
  writeFileSync(conf, [
    'user root;',
    'worker_processes 1;',
    'daemon off;',
    `pid ${dir}/nginx-${port}.pid;`,
    `error_log ${dir}/nginx-${port}-error.log warn;`,
    'events { worker_connections 4096; }',
    'http {',
    '  access_log off;',
    `  client_body_temp_path ${dir}/nginx-temp/body; proxy_temp_path ${dir}/nginx-temp/proxy;`,
    `  fastcgi_temp_path ${dir}/nginx-temp/fastcgi; uwsgi_temp_path ${dir}/nginx-temp/uwsgi; scgi_temp_path ${dir}/nginx-temp/scgi;`,
    '  upstream tollgate {',
    '    least_conn;',
    ...upstreams.map((u) => `    server ${u.replace('http://', '')};`),
    '    keepalive 128;',
    '  }',
    '  server {',
    `    listen 127.0.0.1:${port};`,
    '    location / {',
    '      proxy_pass http://tollgate;',
    '      proxy_http_version 1.1;',
    '      proxy_set_header Connection "";',
    '      proxy_set_header Host $host;',
    '      proxy_set_header X-Forwarded-For $remote_addr;',
    '    }',
    '  }',
    '}',
    '',
  ].join('\n'));
  const child = spawn(SERVER_CORE[0] ?? 'nginx', [...SERVER_CORE.slice(1), ...(SERVER_CORE.length ? ['nginx'] : []), '-c', conf], { stdio: 'ignore' });
  others.add(child);
  child.once('exit', () => others.delete(child));
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 100; i++) {
    try {
      if ((await fetch(`${url}/healthz`)).status === 200) {
        // taskset execs nginx, so the child's pid is the master's; its workers are its children.
        const pids = () => [child.pid, ...execFileSync('pgrep', ['-P', String(child.pid)]).toString().trim().split('\n').map(Number)];
        return { url, pid: child.pid, pids, stop: () => child.kill('SIGQUIT') };
      }
    } catch {
      // not yet
    }
    await sleep(50);
  }
  child.kill('SIGKILL');
  throw new Error(`nginx did not start (see ${dir}/nginx-${port}-error.log)`);
}

/** Starts `count` nodes one after the other, each pushed on `nodes` once ready (so a failure leaves the started ones there to stop). */
export async function startNodes(dir, count, env, nodes = []) {
  for (let i = 0; i < count; i++) {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const child = await startChild({
      name: `tollgate-${i}`,
      args: [MAIN, 'serve'],
      env: cleanEnv({ ...env, PORT: String(port), HOST: '127.0.0.1', TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN, RATE_LIMIT: 'off', ACCESS_LOG: 'off', LOG_LEVEL: 'warn', PG_POOL_SIZE: '10', TRUST_PROXY: '127.0.0.1' }),
      cwd: dir,
      logFile: join(dir, `node-${i}.log`),
      prefix: SERVER_CORE,
      ready: async () => (await fetch(`${url}/readyz`).catch(() => null))?.status === 200,
    });
    nodes.push({ url, child });
  }
  return nodes;
}

/**
 * A fresh database, a private Redis, `count` nodes on them and, when `proxied`, nginx in front. `front` is where
 * clients go (nginx, or node 0). stop() stops all of it and drops the database (idempotent); a start that fails
 * part-way stops what it had started before it throws.
 */
export async function startLayout(dir, { count, proxied }) {
  const layout = { db: null, redis: null, nodes: [], nginx: null, front: null, stop };
  let stopped = false;
  async function stop() {
    if (stopped) return;
    stopped = true;
    layout.nginx?.stop();
    for (const n of layout.nodes) await stopChild(n.child).catch(() => undefined);
    layout.redis?.stop();
    layout.db?.drop();
  }
  try {
    layout.db = await freshDatabase();
    layout.redis = await startRedis(dir);
    await startNodes(dir, count, { DATABASE_URL: layout.db.url, REDIS_URL: layout.redis.url }, layout.nodes);
    layout.nginx = proxied ? await startNginx(dir, layout.nodes.map((n) => n.url)) : null;
    layout.front = layout.nginx?.url ?? layout.nodes[0].url;
    return layout;
  } catch (err) {
    await stop();
    throw err;
  }
}

const TICK = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim());

/** utime + stime of a process as the kernel counts it, in ms: what a loaded machine does not inflate the way it does req/s. */
export function cpuMs(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICK;
}
