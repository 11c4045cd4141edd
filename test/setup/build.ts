import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '../..');
const MAIN = join(ROOT, 'dist/cli/main.js');

/** Builds dist/ when any source is newer than dist/cli/main.js (tsc emits even on type errors elsewhere). */
export function buildIfStale(): void {
  const newest = (dir: string): number =>
    Math.max(0, ...readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts')).map((f) => statSync(join(dir, f)).mtimeMs));
  if (existsSync(MAIN) && statSync(MAIN).mtimeMs >= newest(join(ROOT, 'src'))) return;
  const tsc = spawnSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: ROOT, encoding: 'utf8' });
  if (tsc.status !== 0) console.warn(`tsc -p tsconfig.build.json exited ${tsc.status}:\n${tsc.stdout}${tsc.stderr}`);
  if (!existsSync(MAIN)) throw new Error(`build produced no ${MAIN}`);
}

/**
 * Once per run, before any test file: build dist/ if a source is newer. The
 * CLI and SDK tests run the built server; without this, each such file found
 * dist/ stale by itself and several tsc builds ran at once in the workers.
 */
export default function setup(): void {
  buildIfStale();
}
