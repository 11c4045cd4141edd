import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { resolve } from 'node:path';

export const ADMIN_TOKEN = 'cluster-admin-token-0123456789';
const MAIN = resolve(import.meta.dirname, '../../dist/cli/main.js');

export interface Node {
  url: string;
  process: ChildProcess;
  output: string[];
}

async function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const srv = createServer();
    srv.once('error', fail);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => done(port));
    });
  });
}

/** Starts one real server process (the built CLI) and waits until /readyz answers 200. */
export async function startNode(databaseUrl: string, env: Record<string, string> = {}): Promise<Node> {
  const port = await freePort();
  const child = spawn(process.execPath, [MAIN, 'serve'], {
    env: { ...process.env, DATABASE_URL: databaseUrl, PORT: String(port), HOST: '127.0.0.1', TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN, LOG_LEVEL: 'warn', RATE_LIMIT: 'off', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  child.stdout!.on('data', (d: Buffer) => output.push(d.toString()));
  child.stderr!.on('data', (d: Buffer) => output.push(d.toString()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`node exited with ${child.exitCode}: ${output.join('')}`);
    try {
      if ((await fetch(`${url}/readyz`)).status === 200) return { url, process: child, output };
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGKILL');
  throw new Error(`node did not become ready: ${output.join('')}`);
}

export async function stopNode(node: Node, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
  if (node.process.exitCode !== null) return node.process.exitCode;
  const exited = new Promise<number | null>((r) => node.process.once('exit', (code) => r(code)));
  node.process.kill(signal);
  return exited;
}

export interface Call {
  status: number;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

export async function call(base: string, method: string, path: string, opts: { body?: unknown; headers?: Record<string, string> } = {}): Promise<Call> {
  const res = await fetch(base + path, {
    method,
    headers: { ...(opts.body !== undefined && { 'content-type': 'application/json' }), ...opts.headers },
    ...(opts.body !== undefined && { body: JSON.stringify(opts.body) }),
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // binary or empty
  }
  return { status: res.status, body };
}

export const admin = (base: string, method: string, path: string, body?: unknown) =>
  call(base, method, `/admin/v1${path}`, { ...(body !== undefined && { body }), headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });

/** Polls `check` until it returns true or `ms` pass; resolves to the time it took, or throws. */
export async function within(ms: number, check: () => Promise<boolean>): Promise<number> {
  const start = Date.now();
  for (;;) {
    if (await check()) return Date.now() - start;
    if (Date.now() - start > ms) throw new Error(`not observed within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
