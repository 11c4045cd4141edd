#!/usr/bin/env node
/**
 * Launcher for the C++ SDK's tests against the REAL server:
 *
 *   node harness.mjs <repo root> <command> [args...]
 *
 * starts `node dist/cli/main.js serve` on a temporary SQLite database (127.0.0.1, a free port),
 * waits for /readyz, starts a man-in-the-middle proxy in front of it (what an emulator, a replaying
 * or a tampering proxy does; its mode is set by the test through POST /__mitm), runs the command
 * with the addresses in its environment, and stops everything whatever happens. Its exit code is
 * the command's.
 *
 * Environment given to the command: TOLLGATE_TEST_URL, TOLLGATE_TEST_MITM, TOLLGATE_TEST_ADMIN_TOKEN,
 * TOLLGATE_TEST_NODE, TOLLGATE_TEST_CLI (dist/cli/main.js), TOLLGATE_TEST_DIR (a temp dir).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const [rootArg, ...command] = process.argv.slice(2);
if (!rootArg || command.length === 0) {
  console.error('usage: node harness.mjs <repo root> <command> [args...]');
  process.exit(2);
}
const ROOT = resolve(rootArg);
const MAIN = join(ROOT, 'dist/cli/main.js');
if (!existsSync(MAIN)) {
  console.error(`\n*** MISSING: ${MAIN}: build the server first (npm ci && npm run build at the repository root) ***\n`);
  process.exit(1);
}
const lib = await import(pathToFileURL(join(ROOT, 'sdk/test-vectors/lib.mjs')).href);
const ADMIN_TOKEN = 'sdk-cpp-test-admin-token-0123456789';

async function freePort() {
  return new Promise((done, fail) => {
    const srv = createNetServer();
    srv.once('error', fail);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => done(port));
    });
  });
}

const dir = mkdtempSync(join(tmpdir(), 'tollgate-cpp-'));
let server;
let mitm;
let child;
let cleaned = false;
async function cleanup() {
  if (cleaned) return;
  cleaned = true;
  if (child && child.exitCode === null) child.kill('SIGTERM');
  mitm?.close();
  if (server && server.exitCode === null) {
    server.kill('SIGTERM');
    await Promise.race([new Promise((r) => server.once('exit', r)), new Promise((r) => setTimeout(r, 5000))]);
    if (server.exitCode === null) server.kill('SIGKILL');
  }
  rmSync(dir, { recursive: true, force: true });
}
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(sig, () => cleanup().then(() => process.exit(1)));

async function main() {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const env = { PATH: process.env.PATH, HOME: dir, DATABASE_URL: `sqlite:${join(dir, 't.db')}`, PORT: String(port), HOST: '127.0.0.1', TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN, LOG_LEVEL: 'warn', RATE_LIMIT: 'off' };
  server = spawn(process.execPath, [MAIN, 'serve'], { cwd: dir, env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  server.stderr.on('data', (d) => (stderr += d.toString()));
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (server.exitCode !== null) throw new Error(`tollgate serve exited ${server.exitCode}: ${stderr}`);
    if (await fetch(`${url}/readyz`).then((r) => r.status === 200, () => false)) break;
    if (Date.now() > deadline) throw new Error(`tollgate serve not ready after 30 s: ${stderr}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  mitm = await startMitm(url);
  child = spawn(command[0], command.slice(1), {
    stdio: 'inherit',
    env: {
      ...process.env,
      TOLLGATE_TEST_URL: url,
      TOLLGATE_TEST_MITM: mitm.url,
      TOLLGATE_TEST_ADMIN_TOKEN: ADMIN_TOKEN,
      TOLLGATE_TEST_NODE: process.execPath,
      TOLLGATE_TEST_CLI: MAIN,
      TOLLGATE_TEST_DIR: dir,
    },
  });
  const code = await new Promise((r) => child.once('exit', (c, s) => r(c ?? (s ? 1 : 0))));
  if (code !== 0 && stderr.trim()) console.error(`--- server stderr ---\n${stderr.slice(-4000)}`);
  return code;
}

/**
 * The man in the middle. Modes (POST /__mitm {"mode": ..., "app_id": ...}; GET /__mitm reads the log):
 * pass, emulator_root (own root and key, signing correctly over the request), emulator_key (the real
 * certificate, another key), body_changed (a real answer made 200 with an active user), replay (the first
 * /app_context answer recorded and sent again), other_target (/app_context forwarded as /signing_keys),
 * strip (signature header removed), capture (records the /app_context answer), replay_captured, swap (the
 * credential headers named in "swap" replaced by those values, or removed when null: another user's answer),
 * emulator_keyed (a server of our own under the emulator root: "key" {seed, kid, not_before, not_after, t_shift_ms}),
 * unsigned_503 (what the server sends while its database is down, unsigned), unsigned_page (a captive portal's
 * 200 HTML page), flip_byte (the real answer with one body byte changed, its signature kept).
 * "only": a path prefix: the mode applies to those requests, the rest pass (e.g. only /signing_keys).
 */
async function startMitm(target) {
  let mode = 'pass';
  let appId = '';
  let recorded;
  let captured;
  let swap = {};
  let emuKey;
  let only = '';
  let log = { nonces: [], ranges: [], paths: [], hardware_ids: [] };
  const forward = async (req) => {
    const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => !['host', 'connection', 'content-length'].includes(k)));
    const res = await fetch(target + req.path, { method: req.method, headers, body: req.body.length ? req.body : undefined });
    const out = {};
    res.headers.forEach((v, k) => (out[k] = v));
    delete out['content-length'];
    delete out['transfer-encoding'];
    return { status: res.status, headers: out, body: Buffer.from(await res.arrayBuffer()) };
  };
  const activeContext = () =>
    Buffer.from(JSON.stringify({ application: { id: appId, name: 'x', variables: [], files: [] }, user: { id: 'u', username: 'alice', membership: { is_active: true, is_lifetime: true, active_until: null } }, server_time: new Date().toISOString() }));
  const sign = (req, answer, key, certificate) => {
    const t = Date.now();
    const input = lib.responseInput({
      kid: key.kid, t, nonce: String(req.headers['tollgate-nonce']), appId, status: answer.status,
      method: req.method, target: req.path, requestBodySha256: lib.sha256Hex(req.body),
      credentialsSha256: lib.credentialsSha256(req.headers, 'latin1'), responseLine: lib.sha256Hex(answer.body),
    });
    return { ...answer, headers: { ...answer.headers, 'tollgate-signature': lib.signatureHeader(key.kid, t, lib.ed25519(key, input)), 'tollgate-key-cert': certificate } };
  };
  const handle = async (req) => {
    log.paths.push(req.path);
    // The hardware id each request carried: `<path> header=<x-hardware-id or -> body=<body's hardware_id or ->`.
    let bodyHwid = '-';
    try {
      bodyHwid = JSON.parse(req.body.toString('utf8')).hardware_id ?? '-';
    } catch {}
    log.hardware_ids.push(`${req.path} header=${req.headers['x-hardware-id'] ?? '-'} body=${bodyHwid}`);
    if (req.headers['tollgate-nonce']) log.nonces.push(String(req.headers['tollgate-nonce']));
    if (req.path.includes('/download')) log.ranges.push(req.headers.range ? String(req.headers.range) : '');
    const ctx = req.path.startsWith('/app_context');
    if (only && !req.path.startsWith(only)) return forward(req);
    switch (mode) {
      case 'unsigned_503':
        return {
          status: 503,
          headers: { 'content-type': 'application/json', 'retry-after': '2' },
          body: Buffer.from(JSON.stringify({ detail: 'The service is temporarily unavailable; try again shortly', code: 'service_unavailable' })),
        };
      case 'unsigned_page':
        return { status: 200, headers: { 'content-type': 'text/html' }, body: Buffer.from('<html>Sign in to the hotel Wi-Fi</html>') };
      case 'flip_byte': {
        const real = await forward(req);
        const body = Buffer.from(real.body);
        if (body.length > 0) body[body.length >> 1] ^= 0x01;
        return { ...real, body };
      }
      case 'emulator_root': {
        const root = lib.keyPair('cpp-emulator-root');
        const key = { ...lib.keyPair('cpp-emulator-key'), kid: 'emu1' };
        const cert = lib.encodeJson(lib.certify(root, { app_id: appId, kid: key.kid, public_key: key.publicKey, not_before: Date.now() - 1000, not_after: Date.now() + 86_400_000 }));
        return sign(req, { status: 200, headers: { 'content-type': 'application/json' }, body: activeContext() }, key, cert);
      }
      case 'emulator_keyed': {
        // A server of our own (the client pins the emulator root): the key given (seed, kid, validity), t shifted.
        const root = lib.keyPair('cpp-emulator-root');
        const key = { ...lib.keyPair(`cpp-emulator-${emuKey.seed}`), kid: emuKey.kid };
        const cert = lib.encodeJson(lib.certify(root, { app_id: appId, kid: key.kid, public_key: key.publicKey, not_before: emuKey.not_before, not_after: emuKey.not_after }));
        const body = req.path.startsWith('/signing_keys')
          ? Buffer.from(JSON.stringify({ keys: [{ kid: key.kid, certificate: cert, status: 'active' }], retired: [] }))
          : activeContext();
        const signed = sign(req, { status: 200, headers: { 'content-type': 'application/json' }, body }, key, cert);
        if (!emuKey.t_shift_ms) return signed;
        const t = Date.now() + emuKey.t_shift_ms;
        const input = lib.responseInput({
          kid: key.kid, t, nonce: String(req.headers['tollgate-nonce']), appId, status: 200, method: req.method, target: req.path,
          requestBodySha256: lib.sha256Hex(req.body), credentialsSha256: lib.credentialsSha256(req.headers, 'latin1'), responseLine: lib.sha256Hex(body),
        });
        return { ...signed, headers: { ...signed.headers, 'tollgate-signature': lib.signatureHeader(key.kid, t, lib.ed25519(key, input)) } };
      }
      case 'emulator_key': {
        const real = await forward(req);
        const kid = /kid=([^;]+)/.exec(real.headers['tollgate-signature'] ?? '')?.[1] ?? 'x';
        return sign(req, { ...real, status: 200, body: activeContext() }, { ...lib.keyPair('cpp-emulator-key'), kid }, real.headers['tollgate-key-cert']);
      }
      case 'body_changed': {
        const real = await forward(req);
        return { ...real, status: 200, body: activeContext() };
      }
      case 'replay':
        if (!ctx) return forward(req);
        recorded ??= await forward(req);
        return recorded;
      case 'other_target':
        return forward(ctx ? { ...req, path: '/signing_keys' } : req);
      case 'swap': {
        // The credential headers replaced by another (paying) user's: the server answers for that user.
        const headers = { ...req.headers };
        for (const name of lib.CREDENTIAL_HEADERS) if (name in swap) delete headers[name];
        for (const [k, v] of Object.entries(swap)) if (v !== null) headers[k] = Buffer.from(v, 'utf8').toString('latin1');
        return forward({ ...req, headers });
      }
      case 'strip': {
        const real = await forward(req);
        delete real.headers['tollgate-signature'];
        return real;
      }
      case 'capture':
        if (!ctx) return forward(req);
        captured = await forward(req);
        return captured;
      case 'replay_captured':
        return ctx && captured ? captured : forward(req);
      default:
        return forward(req);
    }
  };
  const srv = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (req.url === '/__mitm') {
        if (req.method === 'POST') {
          const set = JSON.parse(body.toString() || '{}');
          mode = set.mode ?? 'pass';
          appId = set.app_id ?? appId;
          swap = set.swap ?? {};
          emuKey = set.key;
          only = set.only ?? '';
          recorded = undefined;
          log = { nonces: [], ranges: [], paths: [], hardware_ids: [] };
        }
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ mode, ...log, emulator_root_public_key: lib.keyPair('cpp-emulator-root').publicKey }));
        return;
      }
      handle({ method: req.method, path: req.url, headers: req.headers, body }).then(
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
  await new Promise((r) => srv.listen(port, '127.0.0.1', () => r()));
  return { url: `http://127.0.0.1:${port}`, close: () => srv.close() };
}

let code = 1;
try {
  code = await main();
} catch (err) {
  console.error(`harness: ${err?.stack ?? err}`);
  code = 1;
} finally {
  await cleanup();
}
process.exit(code);
