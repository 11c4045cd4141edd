import { execFile } from 'node:child_process';
import { mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, tempDir } from './cli-process.js';
import { STORE } from './helpers.js';
import { has, missingTools } from './tools.js';

/**
 * Issue 29, item 5: every skipped test names its exact reason in the closing
 * summary (test/setup/skip-reasons.ts), and a missing tool is named alone:
 * "no nginx here", not "no nginx or openssl here" when openssl is there.
 */

/** A PATH of one directory holding links to just these commands. */
function pathWith(...commands: string[]): string {
  const dir = join(tempDir(), 'bin');
  mkdirSync(dir);
  for (const cmd of commands) {
    const home = (process.env.PATH ?? '').split(':').find((d) => has(cmd, d));
    if (home) symlinkSync(join(home, cmd), join(dir, cmd));
  }
  return dir;
}

describe('skips name their exact reason', () => {
  it('missingTools names only what is missing', () => {
    const tools = { nginx: 'nginx-light', openssl: 'openssl' };
    expect(missingTools(tools, pathWith('openssl'))).toBe(has('openssl') ? 'no nginx here (Debian package nginx-light)' : 'no nginx and no openssl here (Debian packages nginx-light, openssl)');
    expect(missingTools(tools, pathWith())).toBe('no nginx and no openssl here (Debian packages nginx-light, openssl)');
    expect(missingTools({ sh: 'dash' }, pathWith('sh'))).toBe('');
  });

  // A nested run of the two deploy test files with a PATH that has node, openssl and uname only (no nginx,
  // systemd-analyze or cc): each of their skips must reach the closing summary with its note.
  it.runIf(STORE === 'sqlite' && has('openssl'))('the closing summary gives every skip of the deploy tests its reason (SQLite project only: no store involved)', { timeout: 180_000 }, async () => {
    const path = pathWith('node', 'openssl', 'uname');
    const out = await new Promise<string>((done) => {
      execFile(
        process.execPath,
        [join(ROOT, 'node_modules/vitest/vitest.mjs'), 'run', '--project', 'sqlite', 'test/deploy-files.test.ts', 'test/deploy-nginx.test.ts'],
        { cwd: ROOT, env: { PATH: path, HOME: process.env.HOME, NO_COLOR: '1', CI: '1' }, encoding: 'utf8', timeout: 170_000 },
        (_err, stdout, stderr) => done(`${stdout}${stderr}`),
      );
    });
    const summary = out.slice(out.indexOf('\nSkipped: '));
    expect(summary, out).toMatch(/^\nSkipped: \d+ tests?/);
    const lines = summary.split('\n').filter((l) => l.trim().startsWith('↓'));
    expect(lines.length, summary).toBeGreaterThanOrEqual(4);
    // The note after " — ", on every line.
    for (const line of lines) expect(line, summary).toMatch(/ — \S/);
    const nginxLines = lines.filter((l) => /nginx/.test(l));
    expect(nginxLines, summary).toHaveLength(2);
    for (const line of nginxLines) expect(line).toMatch(/ — no nginx here \(Debian package nginx-light\)$/);
    expect(summary).not.toMatch(/nginx or openssl|no openssl/);
    expect(summary).toMatch(/systemd-analyze .* — no systemd-analyze here \(Debian package systemd\)/);
    expect(summary).toMatch(/W\^X memory — no cc here/);
  });
});
