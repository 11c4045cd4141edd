// A private PostgreSQL primary with one streaming replica behind an HAProxy TCP
// proxy: the supported HA setup of docs/deploy.md, small enough for one test.
// Nothing here touches the shared server on 5432: every instance runs from its
// own directory on its own port, and `stop()` removes all of it.
//
// Failing over is what an orchestrator (Patroni, pg_auto_failover, a runbook)
// does: the primary dies, the replica is promoted, and the proxy is pointed at
// it through HAProxy's runtime API, which also cuts the sessions still open to
// the old address. The Tollgate nodes only ever know the proxy's address.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** The newest PostgreSQL under /usr/lib/postgresql with initdb and pg_basebackup, or null. */
export function postgresBin() {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root)
    .filter((v) => /^\d+$/.test(v))
    .sort((a, b) => Number(b) - Number(a));
  for (const v of versions) {
    const bin = join(root, v, 'bin');
    if (existsSync(join(bin, 'initdb')) && existsSync(join(bin, 'pg_basebackup'))) return bin;
  }
  return null;
}

/** Why a pair cannot run here, or null when it can: PostgreSQL's binaries, HAProxy, and root (initdb runs as postgres). */
export function pairUnavailable() {
  if (!postgresBin()) return 'no PostgreSQL binaries under /usr/lib/postgresql/*/bin';
  if (process.getuid?.() !== 0) return 'not root (initdb and pg_ctl run as the postgres user through runuser)';
  try {
    execFileSync('haproxy', ['-v'], { stdio: 'pipe' });
  } catch {
    return 'haproxy is not installed (Debian package "haproxy")';
  }
  return null;
}

/** Every pair started and not yet stopped: an interrupted run stops them all (stopAllPairs). */
const live = new Set();

export async function stopAllPairs() {
  await Promise.all([...live].map((stop) => stop()));
}

function freePort() {
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

/** One line to HAProxy's admin socket; resolves to its answer. */
function haproxyCommand(socket, line) {
  return new Promise((resolve, reject) => {
    const conn = connect(socket);
    let out = '';
    conn.on('data', (d) => (out += d));
    conn.on('end', () => resolve(out.trim()));
    conn.on('error', reject);
    conn.write(`${line}\n`);
  });
}

/**
 * Starts primary, replica (pg_basebackup -R) and the proxy. `synchronous` makes every commit wait until
 * the replica has applied it (`synchronous_commit = remote_apply` with the replica as the synchronous
 * standby); otherwise replication is asynchronous, PostgreSQL's default.
 */
export async function startPair({ synchronous = false } = {}) {
  const bin = postgresBin();
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-pg-pair-'));
  execFileSync('chown', ['postgres:postgres', dir]);
  const as = (tool, args, timeout = 60_000) =>
    execFileSync('runuser', ['-u', 'postgres', '--', join(bin, tool), ...args], { stdio: 'pipe', timeout }).toString();
  const primary = { data: join(dir, 'primary'), port: await freePort() };
  const replica = { data: join(dir, 'replica'), port: await freePort() };
  const proxyPort = await freePort();
  const socket = join(dir, 'haproxy.sock');
  const started = [];
  let haproxy = null;

  const pgStart = (node, extra = '') => {
    as('pg_ctl', ['-D', node.data, '-l', `${node.data}.log`, '-w', '-t', '60', 'start', '-o',
      `-p ${node.port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c wal_level=replica -c max_wal_senders=5 -c hot_standby=on ${extra}`]);
    started.push(node);
  };

  async function stop() {
    live.delete(stop);
    if (haproxy && haproxy.exitCode === null) {
      const gone = new Promise((r) => haproxy.once('exit', r));
      haproxy.kill('SIGKILL');
      await gone;
    }
    for (const node of started) {
      try {
        as('pg_ctl', ['-D', node.data, '-w', '-t', '30', 'stop', '-m', 'immediate']);
      } catch {
        // already stopped (the failed primary)
      }
    }
    rmSync(dir, { recursive: true, force: true });
  }

  live.add(stop);
  try {
    as('initdb', ['-D', primary.data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
    // Synchronous settings are the primary's alone (given on its command line, so the base backup does not
    // carry them): a promoted replica that waited for a standby of its own would never commit.
    pgStart(primary, synchronous ? "-c synchronous_standby_names='*' -c synchronous_commit=remote_apply" : '');
    as('pg_basebackup', ['-h', '127.0.0.1', '-p', String(primary.port), '-U', 'postgres', '-D', replica.data, '-R', '-X', 'stream', '--no-sync']);
    pgStart(replica);

    const config = join(dir, 'haproxy.cfg');
    writeFileSync(config, [
      'global',
      `  stats socket ${socket} mode 600 level admin`,
      'defaults',
      '  mode tcp',
      '  timeout connect 2s',
      '  timeout client 1h',
      '  timeout server 1h',
      'frontend postgres',
      `  bind 127.0.0.1:${proxyPort}`,
      '  default_backend db',
      'backend db',
      `  server db 127.0.0.1:${primary.port}`,
      '',
    ].join('\n'));
    haproxy = spawn('haproxy', ['-db', '-f', config], { stdio: ['ignore', 'ignore', 'pipe'] });
    let haproxyErr = '';
    haproxy.stderr.on('data', (d) => (haproxyErr += d));
    for (let i = 0; !existsSync(socket); i++) {
      if (haproxy.exitCode !== null || i > 100) throw new Error(`haproxy did not start: ${haproxyErr}`);
      await sleep(50);
    }
  } catch (err) {
    await stop();
    throw err;
  }

  /** SQL through psql on one instance (not through the proxy). */
  const sql = (node, query) =>
    execFileSync(join(bin, 'psql'), ['-h', '127.0.0.1', '-p', String(node.port), '-U', 'postgres', '-d', 'postgres', '-AtXqc', query], { stdio: 'pipe', timeout: 30_000 }).toString().trim();

  return {
    dir,
    /** What the Tollgate nodes are given: the proxy, never an instance. */
    url: `postgres://postgres@127.0.0.1:${proxyPort}/postgres`,
    primary,
    replica,
    sql,
    /** Bytes of WAL the replica has not replayed yet (0 when it has caught up). */
    replayLag: () => Number(sql(primary, "SELECT COALESCE(MAX(pg_wal_lsn_diff(sent_lsn, replay_lsn)), -1) FROM pg_stat_replication")),
    /** The primary fails: killed without a checkpoint (`pg_ctl stop -m immediate`, a crash to PostgreSQL). */
    killPrimary() {
      as('pg_ctl', ['-D', primary.data, '-w', '-t', '30', 'stop', '-m', 'immediate']);
    },
    /** The replica becomes the primary (`pg_ctl promote`, waiting until it accepts writes). */
    promote() {
      as('pg_ctl', ['-D', replica.data, '-w', '-t', '60', 'promote']);
    },
    /** The proxy sends new connections to the new primary and cuts those still open to the old address. */
    async switchProxy() {
      const set = await haproxyCommand(socket, `set server db/db addr 127.0.0.1 port ${replica.port}`);
      if (!/changed|no need to change/i.test(set)) throw new Error(`haproxy refused the switch: ${set}`);
      await haproxyCommand(socket, 'shutdown sessions server db/db');
    },
    stop,
  };
}
