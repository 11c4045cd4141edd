import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/** Whether `cmd` is an executable on PATH (looked up here: no shell needed, so a test's own PATH is honoured). */
export function has(cmd: string, path = process.env.PATH ?? ''): boolean {
  return path.split(delimiter).some((dir) => {
    try {
      accessSync(join(dir || '.', cmd), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/**
 * Why a test that needs these commands cannot run here, naming exactly the
 * missing ones and their Debian packages ('' when all are there), for
 * `ctx.skip(why)`: the closing summary (test/setup/skip-reasons.ts) prints it.
 */
export function missingTools(tools: Record<string, string>, path = process.env.PATH ?? ''): string {
  const missing = Object.keys(tools).filter((cmd) => !has(cmd, path));
  if (missing.length === 0) return '';
  const packages = [...new Set(missing.map((cmd) => tools[cmd]!))];
  return `no ${missing.join(' and no ')} here (Debian package${packages.length > 1 ? 's' : ''} ${packages.join(', ')})`;
}
