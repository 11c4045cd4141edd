/**
 * `npm pack` / `npm publish`: rebuild dist/ from src/ when TypeScript is at hand (a clone after `npm ci` at the
 * repository root); else pack the committed dist/ (kept current by test/install.test.ts), so packing never needs
 * the vendor to install a compiler.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

let tsc;
try {
  tsc = new URL('bin/tsc', pathToFileURL(createRequire(import.meta.url).resolve('typescript/package.json'))).pathname;
} catch {
  if (!existsSync(new URL('../dist/index.js', import.meta.url))) {
    console.error('tollgate-client: no dist/ and no TypeScript to build it: run npm ci at the repository root first');
    process.exit(1);
  }
  console.warn('tollgate-client: TypeScript not installed here, packing the committed dist/');
  process.exit(0);
}
const built = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.json'], { stdio: 'inherit', cwd: new URL('..', import.meta.url) });
process.exit(built.status ?? 1);
