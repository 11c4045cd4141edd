/**
 * Issue 27.1: the SDK installs in one line, with no build by hand. dist/ is
 * committed, so `npm install ./sdk/typescript` (a link: no scripts run) and
 * the tarball of `npm pack` both import at once, ESM with types, in a clean
 * project. Also: the committed dist/ is what src/ builds (else a stale build
 * would ship), and the version is the server's release.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from './server.js';

const run = promisify(execFile);
const SDK = join(ROOT, 'sdk/typescript');
const TSC = join(dirname(createRequire(join(ROOT, 'package.json')).resolve('typescript/package.json')), 'bin/tsc');
const pkg = JSON.parse(readFileSync(join(SDK, 'package.json'), 'utf8'));
const temps: string[] = [];
const temp = (name: string) => {
  const dir = mkdtempSync(join(tmpdir(), `tollgate-sdk-${name}-`));
  temps.push(dir);
  return dir;
};
afterAll(() => temps.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** npm without the registry: the SDK has no runtime dependencies, so nothing needs fetching. */
const npm = (cwd: string, ...args: string[]) =>
  run('npm', [...args, '--offline', '--no-audit', '--no-fund', '--loglevel=error'], { cwd, timeout: 120_000, env: { ...process.env, npm_config_cache: temp('npm-cache') } });

/** A clean ESM project that installs `spec` and uses the SDK from JavaScript and from TypeScript (types checked). */
async function consumer(spec: string): Promise<string> {
  const dir = temp('consumer');
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'vendor-app', version: '1.0.0', private: true, type: 'module' }));
  await npm(dir, 'install', spec);
  writeFileSync(join(dir, 'app.mjs'), [
    "import { TollgateClient, TollgateException, TollgateNetworkError, MemoryLeaseStore } from 'tollgate-client';",
    "const c = new TollgateClient({ baseUrl: 'http://127.0.0.1:9', appKey: 'k', appSecret: 's', appId: 'a', rootPublicKey: 'r', hardwareId: 'h', leaseStore: new MemoryLeaseStore() });",
    "const e = await c.getAppContext(null).catch((x) => x);",
    "console.log(typeof c.checkAccess, e instanceof TollgateNetworkError && e instanceof TollgateException, e.reason);",
  ].join('\n'));
  const { stdout } = await run(process.execPath, ['app.mjs'], { cwd: dir });
  writeFileSync(join(dir, 'app.ts'), [
    "import { TollgateClient, type Access } from 'tollgate-client';",
    "export async function access(c: TollgateClient): Promise<string> { const a: Access = await c.checkAccess(); return a.source; }",
  ].join('\n'));
  await run(process.execPath, [TSC, '--noEmit', '--strict', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022', '--skipLibCheck', '--types', 'node', '--typeRoots', join(ROOT, 'node_modules/@types'), 'app.ts'], { cwd: dir });
  return stdout.trim();
}

describe('installing the TypeScript SDK', () => {
  it('the committed dist/ is what src/ builds', async () => {
    const out = temp('build');
    await run(process.execPath, [TSC, '-p', join(SDK, 'tsconfig.json'), '--outDir', out, '--sourceMap', 'false'], { cwd: SDK });
    const built = readdirSync(out).sort();
    const committed = readdirSync(join(SDK, 'dist')).filter((f) => !f.endsWith('.map')).sort();
    expect(committed).toEqual(built);
    const stale = built.filter((f) => readFileSync(join(out, f), 'utf8').replace(/\n\/\/# sourceMappingURL=.*\n?$/, '\n') !== readFileSync(join(SDK, 'dist', f), 'utf8').replace(/\n\/\/# sourceMappingURL=.*\n?$/, '\n'));
    expect(stale, 'dist/ is stale: run npm run build in sdk/typescript and commit dist/').toEqual([]);
  }, 120_000);

  it('npm install <folder> in a clean project: imports at once, with types', async () => {
    expect(await consumer(SDK)).toBe('function true connection');
  }, 240_000);

  it('npm install <the tarball of npm pack> in a clean project: imports at once, with types', async () => {
    const packs = temp('pack');
    await npm(SDK, 'pack', '--ignore-scripts', '--pack-destination', packs);
    const [tgz] = readdirSync(packs).filter((f) => f.endsWith('.tgz'));
    expect(tgz).toBe(`tollgate-client-${pkg.version}.tgz`);
    const { stdout } = await run('tar', ['-tzf', join(packs, tgz!)]);
    expect(stdout).toContain('package/dist/index.d.ts');
    expect(stdout).not.toContain('package/test/');
    expect(await consumer(join(packs, tgz!))).toBe('function true connection');
  }, 240_000);

  it("metadata: the server's version, a licence, engines as the README says", () => {
    const server = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
    expect(pkg.version).toBe(server.version);
    expect(pkg.license).toBe('MIT');
    expect(readFileSync(join(SDK, 'README.md'), 'utf8')).toContain(`Node.js ${pkg.engines.node}`);
  });
});
