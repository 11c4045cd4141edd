import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A PostgreSQL server of the test's own (the shared one on 5432 is never
 * stopped), on a free port, that the test may stop and start again. Needs the
 * Debian server binaries and root (initdb runs as the postgres user); where
 * they are missing, `privatePostgresMissing` says why and the caller skips
 * with that reason printed.
 */
export interface PrivatePostgres {
  readonly url: string;
  /** pg_ctl stop -m fast: every connection is closed, nothing listens on the port. */
  stop(): void;
  start(): void;
  /** SIGSTOP to the postmaster and every process it forked: connections stay open, nothing is ever answered. */
  freeze(): void;
  /** SIGCONT to the processes freeze() stopped. */
  thaw(): void;
  /** Stops it for good and removes its files. */
  remove(): void;
}

const BIN = '/usr/lib/postgresql/15/bin';

export const privatePostgresMissing: string | null = !existsSync(join(BIN, 'initdb'))
  ? `${BIN}/initdb is not installed`
  : process.getuid?.() !== 0
    ? 'not root (initdb must run as the postgres user)'
    : null;

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

export async function privatePostgres(): Promise<PrivatePostgres> {
  if (privatePostgresMissing) throw new Error(privatePostgresMissing);
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-pg-own-'));
  const data = join(dir, 'data');
  const port = await freePort();
  const as = (bin: string, args: string[]) => execFileSync('runuser', ['-u', 'postgres', '--', join(BIN, bin), ...args], { stdio: 'pipe', timeout: 60_000 });
  const ctl = (...args: string[]) => as('pg_ctl', ['-D', data, '-l', join(dir, 'server.log'), '-w', '-t', '30', ...args]);
  execFileSync('chown', ['postgres:postgres', dir]);
  as('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
  const start = () => void ctl('start', '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`);
  start();
  let running = true;
  let frozen: number[] = [];
  const signal = (pids: number[], sig: NodeJS.Signals) => {
    for (const pid of pids) {
      try {
        process.kill(pid, sig);
      } catch {
        // exited meanwhile
      }
    }
  };
  const thaw = () => {
    signal(frozen, 'SIGCONT');
    frozen = [];
  };
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    stop: () => {
      ctl('stop', '-m', 'fast');
      running = false;
    },
    start: () => {
      start();
      running = true;
    },
    freeze: () => {
      const postmaster = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
      const children = execFileSync('pgrep', ['-P', String(postmaster)], { stdio: 'pipe' }).toString().split('\n').filter(Boolean).map(Number);
      frozen = [postmaster, ...children];
      signal(frozen, 'SIGSTOP');
    },
    thaw,
    remove: () => {
      thaw(); // a frozen server cannot be stopped
      try {
        if (running) ctl('stop', '-m', 'immediate');
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
