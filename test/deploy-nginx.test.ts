import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MAIN, ROOT, cleanEnv, freePort, tempDir } from './cli-process.js';
import { scratchNginx } from './nginx-files.js';
import { STORE } from './helpers.js';
import { missingTools } from './tools.js';

/**
 * deploy/nginx.conf with its site deploy/nginx-tollgate.conf in front of the built server with the
 * TRUST_PROXY of deploy/tollgate.env.example, as an operator runs them: HTTPS
 * through nginx, clients on different loopback addresses. What must hold is
 * what TRUST_PROXY is for: an IP ban hits the banned client and nobody else,
 * and a client cannot borrow another address with its own X-Forwarded-For.
 */

const ADMIN = 'nginx-admin-token-0123456789';
const why = missingTools({ nginx: 'nginx-light', openssl: 'openssl' }) || (STORE !== 'sqlite' ? 'runs in the sqlite project only' : '');
if (why) console.warn(`skipped: nginx in front of Tollgate (${why})`);

const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) c.kill('SIGTERM');
});

/** The env example's lines that it sets (not the commented defaults). */
function envExample(): Record<string, string> {
  const text = readFileSync(join(ROOT, 'deploy/tollgate.env.example'), 'utf8');
  return Object.fromEntries([...text.matchAll(/^([A-Z][A-Z0-9_]*)=(.*)$/gm)].map((m) => [m[1]!, m[2]!]));
}

async function waitFor(url: string, ok: () => Promise<boolean>, child: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + 25_000;
  while (!(await ok())) {
    if (child.exitCode !== null) throw new Error(`${url}: exited ${child.exitCode}: ${log()}`);
    if (Date.now() > deadline) throw new Error(`${url} did not answer: ${log()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** An HTTPS request to nginx from the given loopback address (the certificate is this test's own). */
function viaProxy(port: number, from: string, path: string, headers: Record<string, string>): Promise<{ status: number; body: { code?: string } }> {
  return new Promise((done, fail) => {
    const req = request({ host: '127.0.0.1', port, path, headers, localAddress: from, rejectUnauthorized: false }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => done({ status: res.statusCode!, body: text ? JSON.parse(text) : {} }));
    });
    req.on('error', fail);
    req.end();
  });
}

describe('deploy/nginx-tollgate.conf in front of tollgate serve', () => {
  it('passes the client address through: an IP ban hits that client only, and a forged X-Forwarded-For gains nothing', async (ctx) => {
    // The reason as a note, which the closing summary prints (test/setup/skip-reasons.ts).
    if (why) ctx.skip(why);
    const dir = tempDir();
    const env = envExample();
    expect(env.TRUST_PROXY).toBe('127.0.0.1');

    const appPort = await freePort();
    const server = spawn(process.execPath, [MAIN, 'serve'], {
      cwd: dir,
      env: cleanEnv({ ...env, DATABASE_URL: `sqlite:${join(dir, 'tollgate.db')}`, PORT: String(appPort), TOLLGATE_ADMIN_TOKEN: ADMIN, LOG_LEVEL: 'warn' }),
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    children.push(server);
    let serverLog = '';
    server.stderr!.on('data', (d: Buffer) => (serverLog += d.toString()));
    await waitFor('tollgate', () => fetch(`http://127.0.0.1:${appPort}/readyz`).then((r) => r.ok, () => false), server, () => serverLog);

    // The whole nginx.conf and its site as shipped, but on free ports, loopback only, and a throw-away certificate.
    const [httpPort, httpsPort] = [await freePort(), await freePort()];
    const conf = scratchNginx(
      dir,
      (site) =>
        site
          .replace('server 127.0.0.1:8080;', `server 127.0.0.1:${appPort};`)
          .replace(/^\s*listen \[::\]:.*$/gm, '')
          .replace('listen 80;', `listen 127.0.0.1:${httpPort};`)
          .replace('listen 443 ssl http2;', `listen 127.0.0.1:${httpsPort} ssl http2;`),
      true,
    );
    const nginx = spawn('nginx', ['-p', dir, '-c', conf], { stdio: 'ignore' });
    children.push(nginx);
    const nginxLog = () => { try { return readFileSync(join(dir, 'error.log'), 'utf8'); } catch { return ''; } };
    await waitFor('nginx', () => viaProxy(httpsPort, '127.0.0.1', '/readyz', {}).then((r) => r.status === 200, () => false), nginx, nginxLog);

    const admin = { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' };
    const created = await fetch(`http://127.0.0.1:${appPort}/admin/v1/apps`, { method: 'POST', headers: admin, body: JSON.stringify({ name: 'Proxied' }) });
    expect(created.status).toBe(201);
    const app = (await created.json()) as { id: string; api_key: string; api_secret: string };
    const ban = await fetch(`http://127.0.0.1:${appPort}/admin/v1/apps/${app.id}/bans`, { method: 'POST', headers: admin, body: JSON.stringify({ type: 'ip', value: '127.0.0.2' }) });
    expect(ban.status).toBe(201);

    const creds = { 'x-api-key': app.api_key, 'x-api-secret': app.api_secret };
    const banned = await viaProxy(httpsPort, '127.0.0.2', '/app_context', creds);
    expect(banned.status).toBe(403);
    expect(banned.body.code).toBe('banned');
    // The banned client claims another address: nginx replaces the header, Tollgate reads nginx's.
    const forged = await viaProxy(httpsPort, '127.0.0.2', '/app_context', { ...creds, 'x-forwarded-for': '127.0.0.3' });
    expect(forged.body.code).toBe('banned');
    // Everyone else, nginx's own address included, is not banned.
    for (const from of ['127.0.0.3', '127.0.0.1']) {
      const other = await viaProxy(httpsPort, from, '/app_context', creds);
      expect(other.body.code, from).not.toBe('banned');
      expect(other.status, from).not.toBe(403);
    }
  }, 120_000);
});
