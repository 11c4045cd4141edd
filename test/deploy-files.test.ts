import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULTS, SETTINGS, loadConfig } from '../src/config/index.js';
import { scratchNginx } from './nginx-files.js';
import { has, missingTools } from './tools.js';

/**
 * The files of deploy/ as an operator installs them: the systemd unit passes
 * systemd-analyze verify, the environment file names exactly the settings the
 * server reads (each commented default is the real default), and the whole
 * nginx.conf with its site passes nginx -t. Tools that are not installed skip their test, saying so.
 */

const ROOT = resolve(import.meta.dirname, '..');
const DEPLOY = join(ROOT, 'deploy');
const UNIT = readFileSync(join(DEPLOY, 'tollgate.service'), 'utf8');
const ENV_EXAMPLE = readFileSync(join(DEPLOY, 'tollgate.env.example'), 'utf8');

const tmp = mkdtempSync(join(tmpdir(), 'tollgate-deploy-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** KEY=value lines, commented (`#KEY=value`: the default) or set. */
function envLines(text: string): { name: string; value: string; commented: boolean }[] {
  return text
    .split('\n')
    .map((line) => /^(#?)([A-Z][A-Z0-9_]*)=(.*)$/.exec(line))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ commented: m[1] === '#', name: m[2]!, value: m[3]! }));
}

describe('deploy/tollgate.env.example', () => {
  const lines = envLines(ENV_EXAMPLE);
  const settings = Object.values(SETTINGS);

  it('names every setting the server reads, once, and nothing else', () => {
    const names = lines.map((l) => l.name);
    expect(new Set(names).size, 'a setting appears twice').toBe(names.length);
    expect([...names].sort()).toEqual(settings.map((s) => s.env).sort());
  });

  it('shows each setting that has a default with that default, as the server parses it', () => {
    for (const s of settings) {
      const line = lines.find((l) => l.name === s.env)!;
      const fallback = DEFAULTS[s.key];
      if (line.value === '') {
        expect(fallback, `${s.env}= is empty but has a default`).toBeNull();
        continue;
      }
      const parsed = (s.parse as (raw: string) => unknown)(line.value);
      if (line.commented && fallback !== null) expect(parsed, `#${s.env}=${line.value} is not the default`).toEqual(fallback);
    }
  });

  it('starts a server as written: the lines it sets are valid together', () => {
    const env = Object.fromEntries(lines.filter((l) => !l.commented).map((l) => [l.name, l.value]));
    expect(env.DATABASE_URL).toBe('sqlite:/var/lib/tollgate/tollgate.db');
    const config = loadConfig(env);
    expect(config.trustProxy).toEqual(['127.0.0.1']);
    expect(config.host).toBe('127.0.0.1');
  });
});

describe('deploy/tollgate.service', () => {
  it('runs the installed command as its own user, with the environment file and the state directory', () => {
    const directive = (name: string) => UNIT.split('\n').filter((l) => l.startsWith(`${name}=`)).map((l) => l.slice(name.length + 1));
    expect(directive('ExecStart')).toEqual(['/usr/bin/tollgate serve']);
    expect(directive('User')).toEqual(['tollgate']);
    expect(directive('EnvironmentFile')).toEqual(['/etc/tollgate/tollgate.env']);
    expect(directive('StateDirectory')).toEqual(['tollgate']);
    expect(directive('ReadWritePaths')).toEqual(['/var/lib/tollgate']);
    expect(directive('ProtectSystem')).toEqual(['strict']);
    expect(directive('CapabilityBoundingSet')).toEqual(['']);
    // V8 cannot run under it (see the last test).
    expect(directive('MemoryDenyWriteExecute')).toEqual([]);
  });

  const noAnalyze = missingTools({ 'systemd-analyze': 'systemd' });
  if (noAnalyze) console.warn(`skipped: systemd-analyze verify (${noAnalyze})`);
  it('passes systemd-analyze verify with no warning', (ctx) => {
    if (noAnalyze) ctx.skip(noAnalyze);
    // verify refuses an ExecStart that is not an executable file; this machine has no global
    // install, so the copy points at a stand-in. Everything else is the file as shipped.
    const dir = mkdtempSync(join(tmp, 'unit-'));
    const stand_in = join(dir, 'tollgate');
    writeFileSync(stand_in, '#!/bin/sh\nexit 0\n');
    chmodSync(stand_in, 0o755);
    writeFileSync(join(dir, 'tollgate.service'), UNIT.replace('ExecStart=/usr/bin/tollgate ', `ExecStart=${stand_in} `));
    const r = spawnSync('systemd-analyze', ['verify', '--man=no', join(dir, 'tollgate.service')], { encoding: 'utf8', cwd: dir });
    expect(`${r.stdout}${r.stderr}`).toBe('');
    expect(r.status).toBe(0);
  });

  it('would be caught by that check if a directive were misspelt', (ctx) => {
    if (noAnalyze) ctx.skip(noAnalyze);
    const dir = mkdtempSync(join(tmp, 'unit-'));
    writeFileSync(join(dir, 'tollgate.service'), UNIT.replace('ExecStart=/usr/bin/tollgate ', '# ').replace('RestrictAddressFamilies=AF_INET ', 'RestrictAddressFamilies=AF_INETX '));
    const r = spawnSync('systemd-analyze', ['verify', '--man=no', join(dir, 'tollgate.service')], { encoding: 'utf8', cwd: dir });
    expect(`${r.stdout}${r.stderr}`).toMatch(/AF_INETX|ExecStart/);
  });

  // The kernel's own W^X switch (prctl PR_SET_MDWE, Linux 6.3+) refuses what MemoryDenyWriteExecute refuses:
  // making memory executable after the fact. Needs a C compiler to make the call before exec.
  const kernel = execFileSync('uname', ['-r'], { encoding: 'utf8' }).trim();
  const noMdwe = !has('cc')
    ? 'no cc here (Debian package gcc), needed to call prctl PR_SET_MDWE'
    : Number(/^(\d+)\.(\d+)/.exec(kernel)?.slice(1, 3).reduce((a, b) => `${a}.${b.padStart(3, '0')}`)) < 6.003
      ? `Linux ${kernel} has no prctl PR_SET_MDWE (6.3+)`
      : '';
  if (noMdwe) console.warn(`skipped: Node under W^X (${noMdwe})`);
  it('leaves out MemoryDenyWriteExecute because Node does not start under W^X memory', (ctx) => {
    if (noMdwe) ctx.skip(noMdwe);
    const src = join(tmp, 'mdwe.c');
    writeFileSync(
      src,
      '#include <sys/prctl.h>\n#include <unistd.h>\n#include <stdio.h>\n' +
        'int main(int c, char **v) { if (prctl(65 /* PR_SET_MDWE */, 1 /* REFUSE_EXEC_GAIN */, 0, 0, 0)) { perror("prctl"); return 2; }\n' +
        '  execv(v[1], v + 1); perror("execv"); return 3; }\n',
    );
    execFileSync('cc', ['-o', join(tmp, 'mdwe'), src]);
    const plain = spawnSync(process.execPath, ['-e', 'console.log("ran")'], { encoding: 'utf8' });
    expect(plain.stdout).toBe('ran\n');
    const locked = spawnSync(join(tmp, 'mdwe'), [process.execPath, '-e', 'console.log("ran")'], { encoding: 'utf8' });
    expect(locked.status, locked.stderr).not.toBe(0);
    expect(locked.stdout).toBe('');
  });
});

describe('deploy/nginx.conf with deploy/nginx-tollgate.conf', () => {
  const noNginx = missingTools({ nginx: 'nginx-light', openssl: 'openssl' });
  if (noNginx) console.warn(`skipped: nginx -t of deploy/nginx.conf (${noNginx})`);
  it('the whole file, including the site beside it, passes nginx -t with a throw-away certificate', (ctx) => {
    if (noNginx) ctx.skip(noNginx);
    const dir = mkdtempSync(join(tmp, 'nginx-'));
    const r = spawnSync('nginx', ['-t', '-p', dir, '-c', scratchNginx(dir)], { encoding: 'utf8' });
    expect(r.stderr).toContain('test is successful');
    expect(r.stderr).not.toMatch(/\[(warn|emerg|error)\]/);
    expect(r.status).toBe(0);
  });
});

describe('deploy/Caddyfile', () => {
  const noCaddy = missingTools({ caddy: 'caddy' });
  if (noCaddy) console.warn(`skipped: caddy validate of deploy/Caddyfile (${noCaddy})`);
  it('passes caddy validate', (ctx) => {
    if (noCaddy) ctx.skip(noCaddy);
    const r = spawnSync('caddy', ['validate', '--config', join(DEPLOY, 'Caddyfile'), '--adapter', 'caddyfile'], { encoding: 'utf8', env: { ...process.env, HOME: tmp, XDG_DATA_HOME: tmp, XDG_CONFIG_HOME: tmp } });
    expect(`${r.stdout}${r.stderr}`).toContain('Valid configuration');
    expect(r.status).toBe(0);
  });
});

describe('docs/deploy.md', () => {
  it('states the Node.js versions of package.json\'s engines, and nowhere that one of them is not yet supported', () => {
    const doc = readFileSync(join(ROOT, 'docs/deploy.md'), 'utf8');
    const engines = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } }).engines.node;
    const majors = [...engines.matchAll(/\^(\d+)\./g)].map((m) => m[1]!);
    expect(majors).toEqual(['22', '24']);
    const statement = /^It runs on Node\.js [^\n]*\n[^\n]*/m.exec(doc)?.[0] ?? '';
    for (const major of majors) expect(statement, 'the opening statement of Node versions').toContain(major);
    expect(doc).not.toMatch(/not yet 2\d/);
    expect(doc).toMatch(/Node\.js 22 or 24 on Debian 12/);
  });
});
