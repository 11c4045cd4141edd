// Child processes of the benchmark: the Tollgate server, the bare ceiling
// server and the argon2 rate probe. Every child is tracked by pid so the
// harness can stop exactly what it started, and nothing else.
import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const children = new Set();

/** A TCP port that was free a moment ago (bound on port 0, then released). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** The environment a child gets: only what it needs, so the caller's DATABASE_URL, REDIS_URL… never leak in. */
export function cleanEnv(extra) {
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp' };
  if (process.env.TMPDIR) env.TMPDIR = process.env.TMPDIR;
  return { ...env, ...extra };
}

/**
 * `node <args>`, or `<prefix…> node <args>` (`taskset -c 0`: taskset execs node, so the pid is node's).
 */
function spawnNode(args, prefix, options) {
  return prefix?.length ? spawn(prefix[0], [...prefix.slice(1), process.execPath, ...args], options) : spawn(process.execPath, args, options);
}

/**
 * Spawns `node <args>` (behind `prefix`, e.g. taskset) with stdout/stderr written straight to
 * `logFile` (no pipe through the harness: a server's log lines cost the harness nothing); resolves
 * once `ready()` answers true (polled), or rejects after `timeoutMs` with the log tail.
 */
export async function startChild({ name, args, env, cwd, logFile, ready, prefix, timeoutMs = 30_000 }) {
  const fd = openSync(logFile, 'a');
  let child;
  try {
    child = spawnNode(args, prefix, { cwd, env, stdio: ['ignore', fd, fd] });
  } finally {
    closeSync(fd);
  }
  children.add(child);
  let exited = null;
  child.once('exit', (code, signal) => {
    exited = { code, signal };
    children.delete(child);
  });
  child.once('error', (err) => {
    // the prefix's command or node could not be started (ENOENT…): reported below, never an uncaught 'error'
    exited = { error: err.message };
    children.delete(child);
  });
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (exited) throw new Error(`${name} exited during start (${JSON.stringify(exited)}); log:\n${tail(logFile)}`);
    if (await ready().catch(() => false)) break;
    if (Date.now() > deadline) {
      await stopChild(child);
      throw new Error(`${name} not ready after ${timeoutMs} ms; log:\n${tail(logFile)}`);
    }
    await sleep(100);
  }
  return child;
}

/** SIGTERM (the server shuts down gracefully, which also flushes --cpu-prof), SIGKILL after `graceMs`. */
export async function stopChild(child, graceMs = 15_000) {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const done = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await done;
  clearTimeout(timer);
}

/** Last resort (a crash or Ctrl-C of the harness): kill the children this process started; returns their pids. */
export function killAllChildren() {
  const pids = [];
  for (const child of children) {
    pids.push(child.pid);
    try {
      child.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
  children.clear();
  return pids;
}

/** Runs `node <args>` (behind `prefix`) to completion, bounded by `timeoutMs`; resolves to its stdout. */
export function runNode(args, { env, cwd, timeoutMs, prefix }) {
  return new Promise((resolve, reject) => {
    const child = spawnNode(args, prefix, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      children.delete(child);
      if (code === 0) resolve(out);
      else reject(new Error(`node ${args.join(' ')} failed (${code ?? signal}): ${err.trim().slice(-2000)}`));
    });
  });
}

function tail(file, lines = 30) {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/** VmRSS of a process in bytes, from /proc (Linux), or null when it cannot be read. */
export function readRss(pid) {
  try {
    const m = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/**
 * Samples a process's RSS every `intervalMs`: the baseline is read when the
 * sampler is created (before the scenario sends anything), the peak is the
 * highest sample until stop().
 */
export function rssSampler(pid, intervalMs = 100) {
  const baseline = readRss(pid);
  let peak = baseline ?? 0;
  let last = baseline;
  let samples = 1;
  const timer = setInterval(() => {
    const v = readRss(pid);
    if (v === null) return;
    samples++;
    last = v;
    if (v > peak) peak = v;
  }, intervalMs);
  return {
    stop() {
      clearInterval(timer);
      const v = readRss(pid);
      if (v !== null) {
        last = v;
        if (v > peak) peak = v;
      }
      return { baseline, peak, end: last, samples, growth: baseline === null ? null : peak - baseline };
    },
  };
}

export function logPath(dir, name) {
  return join(dir, `${name}.log`);
}
