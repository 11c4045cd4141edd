import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MAIN, ROOT, cleanEnv, freePort, tempDir } from './cli-process.js';

/**
 * deploy/tollgate.service's RestrictAddressFamilies, applied the way systemd
 * applies it (a seccomp filter: socket() of any other family fails with
 * EAFNOSUPPORT), around a real `tollgate serve`. systemd itself is not PID 1
 * here, so test/fixtures/socket-families.c installs the filter and execs the
 * server. HOST=0.0.0.0 (docs/deploy.md's many nodes) makes Fastify list the
 * machine's interfaces at listen, which reads them over a netlink socket.
 */

const UNIT = readFileSync(join(ROOT, 'deploy/tollgate.service'), 'utf8');
const FAMILY_NUMBERS: Record<string, number> = { AF_UNIX: 1, AF_INET: 2, AF_INET6: 10, AF_NETLINK: 16, AF_PACKET: 17 };
const allowed = /^RestrictAddressFamilies=(.*)$/m.exec(UNIT)![1]!.trim().split(/\s+/);

const cc = spawnSync('sh', ['-c', 'command -v cc']).status === 0;
if (!cc) console.warn('skipped: the unit\'s RestrictAddressFamilies around serve (needs cc to build the seccomp wrapper)');

/** serve under the unit's address families: 'ready' once /readyz answers, else its exit and stderr. */
async function serveRestricted(wrapper: string, host: string): Promise<{ ready: boolean; stderr: string }> {
  const port = await freePort();
  const dir = tempDir();
  const numbers = allowed.map((name) => {
    expect(FAMILY_NUMBERS, `a family the test does not know: ${name}`).toHaveProperty(name);
    return String(FAMILY_NUMBERS[name]);
  });
  const child = spawn(wrapper, [...numbers, '--', process.execPath, MAIN, 'serve'], {
    cwd: dir,
    env: cleanEnv({ HOST: host, PORT: String(port), DATABASE_URL: `sqlite:${join(dir, 'tollgate.db')}`, TOLLGATE_ADMIN_TOKEN: 'sandbox-admin-token-0123456789', DATABASE_WAIT_MS: '0' }),
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  let ready = false;
  const deadline = Date.now() + 25_000;
  while (!ready && child.exitCode === null && Date.now() < deadline) {
    ready = await fetch(`http://127.0.0.1:${port}/readyz`).then((res) => res.status === 200, () => false);
    if (!ready) await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGTERM');
  await exited;
  return { ready, stderr };
}

describe.skipIf(!cc)('deploy/tollgate.service: serve starts under its RestrictAddressFamilies', { timeout: 90_000 }, () => {
  const wrapper = join(tempDir(), 'socket-families');

  it('the wrapper really refuses a family left out (else the tests below prove nothing)', () => {
    execFileSync('cc', ['-o', wrapper, join(ROOT, 'test/fixtures/socket-families.c')]);
    const script = "require('node:net').createServer().listen(0, '127.0.0.1', function () { console.log('listening'); this.close(); })";
    expect(spawnSync(wrapper, ['1', '2', '10', '--', process.execPath, '-e', script], { encoding: 'utf8' }).stdout).toBe('listening\n');
    const noInet = spawnSync(wrapper, ['1', '10', '--', process.execPath, '-e', script], { encoding: 'utf8' });
    expect(noInet.stdout).toBe('');
    expect(noInet.stderr).toMatch(/EAFNOSUPPORT/);
  });

  it('on 127.0.0.1 (the single node behind nginx)', async () => {
    const r = await serveRestricted(wrapper, '127.0.0.1');
    expect(r.ready, r.stderr).toBe(true);
  });

  it('on 0.0.0.0 (many nodes behind a load balancer): listing the interfaces needs AF_NETLINK', async () => {
    const r = await serveRestricted(wrapper, '0.0.0.0');
    expect(r.ready, r.stderr).toBe(true);
  });
});
