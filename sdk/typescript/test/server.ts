/**
 * The REAL server for the SDK's tests: the built CLI (`node dist/cli/main.js
 * serve`) as a child process on a temporary SQLite database, apps and keys
 * made through the admin API and `tollgate keys init`, as an operator does.
 * Also a man-in-the-middle proxy that forwards to it and lets a test replay,
 * swap, alter or re-sign answers (what an emulator or a tampering proxy does).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createPrivateKey, type KeyObject } from 'node:crypto';
import { MemoryLeaseStore, TollgateClient, type TollgateClientOptions } from '../src/index.js';

export const ROOT = resolve(import.meta.dirname, '../../..');
const MAIN = join(ROOT, 'dist/cli/main.js');
export const ADMIN_TOKEN = 'sdk-test-admin-token-0123456789';
export const PASSWORD = 'correct horse battery';

export async function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const srv = createNetServer();
    srv.once('error', fail);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => done(port));
    });
  });
}

export interface TestApp {
  id: string;
  apiKey: string;
  apiSecret: string;
  rootPublicKey: string;
  rootKeyFile: string;
  kid: string;
}

export interface Server {
  url: string;
  dir: string;
  admin<T = any>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }>;
  /** Runs the tollgate CLI against this server; its parsed --json output. */
  cli<T = any>(...args: string[]): Promise<T>;
  /** An app with a root key and a first signing key (`tollgate keys init`). */
  app(settings?: Record<string, unknown>): Promise<TestApp>;
  rootKey(app: TestApp): KeyObject;
  /** A user with an active membership (sign-up, then a license); returns the user id. */
  activeUser(app: TestApp, username: string, minutes?: number): Promise<string>;
  client(app: TestApp, options?: Partial<TollgateClientOptions>): TollgateClient;
  stop(): Promise<void>;
}

export async function startServer(): Promise<Server> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-sdk-'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const env = { PATH: process.env.PATH, HOME: dir, TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN, RATE_LIMIT: 'off', LOG_LEVEL: 'error' };
  const child: ChildProcess = spawn(process.execPath, [MAIN, 'serve', '--port', String(port), '--host', '127.0.0.1', '--database-url', `sqlite:${join(dir, 'tollgate.db')}`], {
    cwd: dir,
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`tollgate serve exited ${child.exitCode}: ${stderr}`);
    if (await fetch(`${url}/readyz`).then((r) => r.status === 200, () => false)) break;
    if (Date.now() > deadline) throw new Error(`tollgate serve not ready after 20 s: ${stderr}`);
    await new Promise((r) => setTimeout(r, 100));
  }

  const admin: Server['admin'] = async (method, path, body) => {
    const res = await fetch(`${url}/admin/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };
  const cli: Server['cli'] = (...args) =>
    new Promise((done, fail) =>
      execFile(process.execPath, [MAIN, '--json', '--url', url, '--token', ADMIN_TOKEN, ...args], { cwd: dir, env, timeout: 20_000 }, (err, stdout, stderr) =>
        err ? fail(new Error(`tollgate ${args.join(' ')}: ${stderr || err.message}`)) : done(stdout.trim() ? JSON.parse(stdout) : undefined),
      ),
    );
  const must = async <T>(p: Promise<{ status: number; body: T }>, status: number, what: string): Promise<T> => {
    const res = await p;
    if (res.status !== status) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  };

  let apps = 0;
  const server: Server = {
    url,
    dir,
    admin,
    cli,
    async app(settings = {}) {
      const created = await must(admin('POST', '/apps', { name: `SDK app ${++apps}`, ...settings }), 201, 'create app');
      const rootKeyFile = join(dir, `root-${created.id}.pem`);
      const init = await cli('keys', 'init', '--app', created.id, '--out', rootKeyFile);
      return { id: created.id, apiKey: created.api_key, apiSecret: created.api_secret, rootPublicKey: init.root_public_key, rootKeyFile, kid: init.signing_key.kid };
    },
    rootKey: (app) => createPrivateKey(readFileSync(app.rootKeyFile)),
    async activeUser(app, username, minutes = 60) {
      const c = server.client(app);
      const user = await c.signUp({ username, password: PASSWORD });
      const { licenses } = await must(admin('POST', `/apps/${app.id}/licenses`, { count: 1, minutes }), 201, 'license');
      await c.activateLicense({ code: licenses[0].code, username, password: PASSWORD });
      return user.id;
    },
    client: (app, options = {}) =>
      new TollgateClient({ baseUrl: url, appKey: app.apiKey, appSecret: app.apiSecret, appId: app.id, rootPublicKey: app.rootPublicKey, hardwareId: 'test-machine-1', leaseStore: new MemoryLeaseStore(), ...options }),
    async stop() {
      child.kill('SIGTERM');
      if (child.exitCode === null) await new Promise((r) => child.once('exit', r));
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return server;
}

export interface Exchange {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export interface Answer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/** A proxy in front of `target`: `handle` gets each request and a way to forward it, and returns the answer sent. */
export async function proxy(target: string, handle: (req: Exchange, forward: (req?: Exchange) => Promise<Answer>) => Promise<Answer>): Promise<{ url: string; close(): Promise<void> }> {
  const forward = async (req: Exchange): Promise<Answer> => {
    const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => !['host', 'connection', 'content-length'].includes(k))) as Record<string, string>;
    const res = await fetch(target + req.path, { method: req.method, headers, body: req.body.length ? req.body : undefined });
    const out: Record<string, string> = {};
    res.headers.forEach((v, k) => (out[k] = v));
    delete out['content-length'];
    delete out['transfer-encoding'];
    return { status: res.status, headers: out, body: Buffer.from(await res.arrayBuffer()) };
  };
  const srv = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const ex: Exchange = { method: req.method!, path: req.url!, headers: req.headers, body: Buffer.concat(chunks) };
      handle(ex, (r = ex) => forward(r)).then(
        (a) => {
          res.writeHead(a.status, { ...a.headers, 'content-length': String(a.body.length) });
          res.end(a.body);
        },
        (err) => {
          res.writeHead(599);
          res.end(String(err));
        },
      );
    });
  });
  const port = await freePort();
  await new Promise<void>((r) => srv.listen(port, '127.0.0.1', () => r()));
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise<void>((r) => srv.close(() => r())) };
}
