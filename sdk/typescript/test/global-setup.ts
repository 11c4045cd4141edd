/**
 * Builds the server (dist/) once before the SDK's tests when any source is
 * newer than dist/cli/main.js: the tests run the built CLI, as an operator does.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';

export default function setup(): void {
  const root = resolve(import.meta.dirname, '../../..');
  const main = join(root, 'dist/cli/main.js');
  const src = join(root, 'src');
  const newest = Math.max(0, ...readdirSync(src, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts')).map((f) => statSync(join(src, f)).mtimeMs));
  if (existsSync(main) && statSync(main).mtimeMs >= newest) return;
  // tsc emits even when a file elsewhere has a type error; the tests then say whether the server works.
  const tsc = spawnSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: root, encoding: 'utf8' });
  if (!existsSync(main)) throw new Error(`the server build produced no dist/cli/main.js: ${tsc.stdout}${tsc.stderr}`);
}
