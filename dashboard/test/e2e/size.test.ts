/**
 * The first-load budget (issue 16: 250 KiB gzipped): what index.html makes the browser fetch
 * before anything is shown, every script, module preload and stylesheet it names, each
 * gzipped as a server or proxy would send it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../harness';

const DIST = join(ROOT, 'dashboard/dist');
const BUDGET = 250 * 1024;

export function firstLoad(): { file: string; gzipped: number }[] {
  const html = readFileSync(join(DIST, 'index.html'), 'utf8');
  const files = [...html.matchAll(/<(?:script|link)\b[^>]*?\b(?:src|href)="([^"]+)"/g)]
    .map((m) => m[1]!)
    .filter((url) => url.startsWith('/dashboard/'));
  return [{ file: 'index.html', gzipped: gzipSync(html, { level: 9 }).length }].concat(
    files.map((url) => ({ file: url, gzipped: gzipSync(readFileSync(join(DIST, url.slice('/dashboard/'.length))), { level: 9 }).length })),
  );
}

describe('the dashboard first load', () => {
  it(`stays within ${BUDGET / 1024} KiB gzipped`, () => {
    const files = firstLoad();
    const total = files.reduce((sum, f) => sum + f.gzipped, 0);
    console.info(`dashboard first load: ${(total / 1024).toFixed(1)} KiB gzipped\n` + files.map((f) => `  ${f.file} ${(f.gzipped / 1024).toFixed(1)} KiB`).join('\n'));
    expect(files.some((f) => f.file.endsWith('.js'))).toBe(true);
    expect(total).toBeLessThanOrEqual(BUDGET);
  });

  it('has no inline script or style in index.html (the CSP would block them)', () => {
    const html = readFileSync(join(DIST, 'index.html'), 'utf8');
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/<style\b/);
    expect(html).not.toMatch(/\sstyle="/);
  });
});
