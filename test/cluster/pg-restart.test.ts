import { execFileSync } from 'node:child_process';
import { createServer } from 'node:net';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, call, startNode, stopNode, type Call, type Node } from './nodes.js';

/**
 * A private PostgreSQL, started by this file alone (never the shared server): frozen with SIGSTOP,
 * then restarted fast and immediate under load. Every node process stays alive, answers only 2xx or
 * 503 service_unavailable while the database cannot serve, and serves again afterwards with no
 * restart; no acknowledged write is lost.
 */
const BIN = '/usr/lib/postgresql/15/bin';
const usable = existsSync(join(BIN, 'initdb')) && process.getuid?.() === 0;
if (!usable) {
  const line = `PRIVATE PostgreSQL TESTS SKIPPED: need ${BIN} and root (to run initdb as the postgres user)`;
  console.warn(`\n${'!'.repeat(line.length + 4)}\n! ${line} !\n${'!'.repeat(line.length + 4)}\n`);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const dir = mkdtempSync(join(tmpdir(), 'tollgate-pg-private-'));
const data = join(dir, 'data');
let port = 0;
let started = false;
const nodes: Node[] = [];

function asPostgres(bin: string, args: string[]): string {
  return execFileSync('runuser', ['-u', 'postgres', '--', join(BIN, bin), ...args], { stdio: 'pipe', timeout: 60_000 }).toString();
}

function pgCtl(...args: string[]): void {
  asPostgres('pg_ctl', ['-D', data, '-l', join(dir, 'server.log'), '-w', '-t', '30', ...args]);
}

/** The postmaster and every process it forked (backends, checkpointer, …): what "the server" is. */
function serverPids(): number[] {
  const postmaster = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
  const children = execFileSync('pgrep', ['-P', String(postmaster)], { stdio: 'pipe' }).toString().split('\n').filter(Boolean).map(Number);
  return [postmaster, ...children];
}

async function freePort(): Promise<number> {
  return new Promise((done) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const p = (srv.address() as { port: number }).port;
      srv.close(() => done(p));
    });
  });
}

/** A call that must answer within a bounded wait (the test fails if it hangs, never on how long it took). */
function answered(base: string, method: string, path: string, opts: Parameters<typeof call>[3] = {}): Promise<Call> {
  return Promise.race([
    call(base, method, path, opts),
    sleep(30_000).then(() => {
      throw new Error(`${method} ${path}: no answer within 30 s`);
    }),
  ]);
}

const url = () => `postgres://postgres@127.0.0.1:${port}/postgres`;

beforeAll(async () => {
  if (!usable) return;
  execFileSync('chown', ['postgres:postgres', dir]);
  port = await freePort();
  asPostgres('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
  pgCtl('start', '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`);
  started = true;
});

afterAll(async () => {
  let frozen: number[] = [];
  try {
    if (started) frozen = serverPids();
  } catch {
    // already gone
  }
  for (const pid of frozen) {
    try {
      process.kill(pid, 'SIGCONT');
    } catch {
      // exited
    }
  }
  for (const node of nodes) await stopNode(node, 'SIGKILL').catch(() => undefined);
  if (started) {
    try {
      pgCtl('stop', '-m', 'immediate');
    } catch {
      for (const pid of frozen) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // exited
        }
      }
    }
  }
  rmSync(dir, { recursive: true, force: true });
});

async function node(env: Record<string, string> = {}): Promise<Node> {
  const n = await startNode(url(), env);
  nodes.push(n);
  return n;
}

async function newApp(base: string) {
  const app = await admin(base, 'POST', '/apps', { name: 'Faults' });
  expect(app.status, JSON.stringify(app.body)).toBe(201);
  return { id: app.body.id as string, headers: { 'x-api-key': app.body.api_key as string, 'x-api-secret': app.body.api_secret as string } };
}

describe.skipIf(!usable)('a private PostgreSQL that freezes and restarts', () => {
  it('frozen (SIGSTOP): requests and /readyz answer 503 within the timeouts; thawed (SIGCONT): the node serves again', async () => {
    const n = await node({ PG_CONNECT_TIMEOUT_MS: '1000', PG_QUERY_TIMEOUT_MS: '2000', PG_STATEMENT_TIMEOUT_MS: '1500' });
    const app = await newApp(n.url);
    const body = (username: string) => ({ body: { username, password: 'frozen password' }, headers: app.headers });
    expect((await call(n.url, 'POST', '/sign_up', body('before_freeze'))).status).toBe(200);

    const pids = serverPids();
    for (const pid of pids) process.kill(pid, 'SIGSTOP');
    try {
      const answers = await Promise.all([
        answered(n.url, 'POST', '/sign_up', body('frozen_1')),
        answered(n.url, 'POST', '/sign_up', body('frozen_2')),
        answered(n.url, 'GET', '/readyz'),
      ]);
      for (const a of answers) {
        expect(a.status, JSON.stringify(a.body)).toBe(503);
        expect(a.body.code).toBe('service_unavailable');
      }
      // Starting while it is frozen is bounded too.
      const later = await answered(n.url, 'POST', '/sign_up', body('frozen_3'));
      expect(later.status).toBe(503);
    } finally {
      for (const pid of pids) process.kill(pid, 'SIGCONT');
    }

    let serving = false;
    for (let i = 0; i < 100 && !serving; i++) {
      const res = await answered(n.url, 'POST', '/sign_up', body('after_thaw'));
      serving = res.status === 200;
      if (!serving) await sleep(200);
    }
    expect(serving).toBe(true);
    expect((await answered(n.url, 'GET', '/readyz')).status).toBe(200);
    expect(n.process.exitCode).toBeNull();
  });

  it('pg_ctl restart -m fast, then -m immediate, under load on two nodes: both stay up, answer 2xx or 503, serve after, lose nothing acknowledged', async () => {
    const pair = [await node(), await node()];
    const app = await newApp(pair[0]!.url);
    const licenses = await admin(pair[0]!.url, 'POST', `/apps/${app.id}/licenses`, { count: 3000, minutes: 60 });
    const codes: string[] = licenses.body.licenses.map((l: { code: string }) => l.code);

    const statuses: number[] = [];
    const odd: unknown[] = [];
    const transport: string[] = [];
    const signedUp: string[] = [];
    const activated: string[] = [];
    let next = 0;
    let stop = false;
    const note = (res: Call) => {
      statuses.push(res.status);
      if (res.status !== 200 && (res.status !== 503 || res.body?.code !== 'service_unavailable')) odd.push({ status: res.status, body: res.body });
    };
    const worker = async (w: number) => {
      while (!stop && next < codes.length) {
        const n = next++;
        const base = pair[(n + w) % 2]!.url;
        const username = `restart_${n}`;
        try {
          const signed = await answered(base, 'POST', '/sign_up', { body: { username, password: 'restart password' }, headers: app.headers });
          note(signed);
          if (signed.status !== 200) continue;
          signedUp.push(username);
          const act = await answered(base, 'POST', '/activate_license', { body: { code: codes[n], username, password: 'restart password' }, headers: app.headers });
          note(act);
          if (act.status === 200) activated.push(codes[n]!);
        } catch (err) {
          transport.push((err as Error).message); // a node that died, or hung
          await sleep(100);
        }
      }
    };
    const load = Array.from({ length: 8 }, (_, w) => worker(w));
    await sleep(1000);
    pgCtl('restart', '-m', 'fast');
    await sleep(1500);
    pgCtl('restart', '-m', 'immediate');
    await sleep(1500);
    stop = true;
    await Promise.all(load);

    for (const n of pair) expect(n.process.exitCode, n.output.join('')).toBeNull();
    expect(transport, 'requests without an answer').toEqual([]);
    expect(odd, 'answers other than 200 or 503 service_unavailable').toEqual([]);
    expect(statuses.filter((s) => s === 503).length, 'the restarts were not felt').toBeGreaterThan(0);

    for (const n of pair) {
      let serving = false;
      for (let i = 0; i < 100 && !serving; i++) {
        const res = await answered(n.url, 'POST', '/sign_up', { body: { username: `after_${n.url.slice(-5)}_${i}`, password: 'restart password' }, headers: app.headers });
        serving = res.status === 200;
        if (!serving) await sleep(200);
      }
      expect(serving, `${n.url} does not serve after the restarts`).toBe(true);
    }

    expect(signedUp.length).toBeGreaterThan(0); // else the checks below check nothing
    expect(activated.length).toBeGreaterThan(0);
    for (const username of signedUp) {
      const found = await admin(pair[1]!.url, 'GET', `/apps/${app.id}/users?q=${username}`);
      expect(found.body.items.map((u: { username: string }) => u.username), `acknowledged sign-up ${username} lost`).toContain(username);
    }
    for (const code of activated) {
      const list = await admin(pair[1]!.url, 'GET', `/apps/${app.id}/licenses?q=${code}&used=true`);
      expect(list.body.items, `acknowledged activation of ${code} lost`).toHaveLength(1);
    }
  });
});
