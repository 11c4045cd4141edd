/**
 * The first-load budget (issue 16: 250 KiB gzipped): what index.html makes the browser fetch
 * before anything is shown, every script, module preload and stylesheet it names, measured as
 * the server sends them: the .gz and .br copies `npm run build` writes beside each file
 * (src/http/dashboard.ts picks one by Accept-Encoding; issue 21 item 8).
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../harness';

const DIST = join(ROOT, 'dashboard/dist');
const BUDGET = 250 * 1024;

function sizeOf(path: string): number {
  if (!existsSync(path)) throw new Error(`${path} is missing: npm run build writes it (dashboard/vite.config.ts, precompress)`);
  return statSync(path).size;
}

export function firstLoad(): { file: string; raw: number; gzipped: number; brotli: number }[] {
  const html = readFileSync(join(DIST, 'index.html'), 'utf8');
  const files = [...html.matchAll(/<(?:script|link)\b[^>]*?\b(?:src|href)="([^"]+)"/g)]
    .map((m) => m[1]!)
    .filter((url) => url.startsWith('/dashboard/'))
    .map((url) => url.slice('/dashboard/'.length));
  return ['index.html', ...files].map((file) => {
    const path = join(DIST, file);
    return { file, raw: sizeOf(path), gzipped: sizeOf(path + '.gz'), brotli: sizeOf(path + '.br') };
  });
}

describe('the dashboard first load', () => {
  it(`stays within ${BUDGET / 1024} KiB gzipped`, () => {
    const files = firstLoad();
    const sum = (key: 'raw' | 'gzipped' | 'brotli') => files.reduce((total, f) => total + f[key], 0);
    const kib = (n: number) => `${(n / 1024).toFixed(1)} KiB`;
    console.info(
      `dashboard first load: ${kib(sum('gzipped'))} gzipped, ${kib(sum('brotli'))} brotli (${kib(sum('raw'))} uncompressed)\n` +
        files.map((f) => `  ${f.file} ${kib(f.gzipped)} gzip, ${kib(f.brotli)} br`).join('\n'),
    );
    expect(files.some((f) => f.file.endsWith('.js'))).toBe(true);
    // gzip: what a browser that does not take brotli receives, the larger of the two.
    expect(sum('gzipped')).toBeLessThanOrEqual(BUDGET);
    for (const f of files) expect(f.brotli, f.file).toBeLessThan(f.raw);
  });

  it('has no inline script or style in index.html (the CSP would block them)', () => {
    const html = readFileSync(join(DIST, 'index.html'), 'utf8');
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/<style\b/);
    expect(html).not.toMatch(/\sstyle="/);
  });
});
