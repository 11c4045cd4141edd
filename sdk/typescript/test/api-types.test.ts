/**
 * The SDK's types are generated from the running server's /openapi.json
 * (scripts/generate-types.mjs): the checked-in file must be what the generator
 * writes today, every client operation must have a typed call, and the
 * package must type-check on its own (the root type check does not cover it).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { TollgateClient } from '../src/index.js';
import { ROOT, startServer, type Server } from './server.js';

const run = promisify(execFile);
const SDK = join(ROOT, 'sdk/typescript');
let server: Server;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server?.stop());

/** operationId of the document → the TollgateClient method that calls it. */
const CALLS: Record<string, keyof TollgateClient> = {
  signUp: 'signUp',
  signUpWithLicenseCode: 'signUpWithLicenseCode',
  activateLicense: 'activateLicense',
  redeemLicense: 'redeem',
  login: 'login',
  logout: 'logout',
  getAppContext: 'getAppContext',
  downloadFile: 'downloadFile',
  createLease: 'createLease',
  listSigningKeys: 'getSigningKeys',
  startTrial: 'startTrial',
  checkoutSeat: 'checkoutSeat',
  // Sent by the heartbeat checkoutSeat() starts: the app never calls it itself.
  heartbeatSeat: 'checkoutSeat',
  releaseSeat: 'releaseSeat',
  resetOwnDevices: 'resetDevices',
};

it('src/api-types.ts is what the generator writes from the running server (run npm run generate-types if not)', async () => {
  const check = await run(process.execPath, [join(SDK, 'scripts/generate-types.mjs'), '--url', server.url, '--check']).then(
    () => 'up to date',
    (err: { stderr: string }) => err.stderr,
  );
  expect(check).toBe('up to date');
});

it('every client operation of the document has a typed call', async () => {
  const doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as { paths: Record<string, Record<string, { tags?: string[]; operationId?: string }>> };
  const ids = Object.values(doc.paths).flatMap((item) => Object.values(item).filter((op) => op.tags?.includes('client')).map((op) => op.operationId));
  expect(ids.sort()).toEqual(Object.keys(CALLS).sort());
  for (const method of Object.values(CALLS)) expect(typeof TollgateClient.prototype[method]).toBe('function');
});

it('the package type-checks on its own, strict, with no runtime dependency', async () => {
  const tsc = await run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(SDK, 'tsconfig.json'), '--noEmit']).then(
    () => '',
    (err: { stdout: string }) => err.stdout,
  );
  expect(tsc).toBe('');
  const pkg = (await import('../package.json', { with: { type: 'json' } })).default as { dependencies?: object };
  expect(pkg.dependencies ?? {}).toEqual({});
});

it("the README's example app type-checks against the package", async () => {
  const example = /```ts\n([\s\S]*?)```/.exec(readFileSync(join(SDK, 'README.md'), 'utf8'))![1]!;
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-sdk-readme-'));
  try {
    writeFileSync(join(dir, 'package.json'), '{"type":"module"}');
    writeFileSync(join(dir, 'example.ts'), example);
    const compilerOptions = {
      target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, skipLibCheck: true,
      lib: ['ES2022', 'DOM'], types: ['node'], typeRoots: [join(ROOT, 'node_modules/@types')], paths: { 'tollgate-client': [join(SDK, 'src/index.ts')] },
    };
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['example.ts'] }));
    const tsc = await run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(dir, 'tsconfig.json')]).then(
      () => '',
      (err: { stdout: string }) => err.stdout,
    );
    expect(tsc).toBe('');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
