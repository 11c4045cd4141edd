import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULTS, SETTINGS } from '../src/config/index.js';
import { ROOT } from './cli-process.js';

/**
 * README's settings table against the server's own list: every setting, its
 * flag, and its default as the server parses it. A setting added, renamed or
 * given a new default without README following fails here (the env example
 * has the same check in deploy-files.test.ts).
 */
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const rows = README.split('\n')
  .map((line) => /^\| `([A-Z_]+)` \| `(--[a-z-]+)` \| ([^|]+) \|/.exec(line))
  .filter((m): m is RegExpExecArray => m !== null)
  .map((m) => ({ env: m[1]!, flag: m[2]!, fallback: m[3]!.trim() }));

describe("README's settings table", () => {
  const settings = Object.values(SETTINGS);

  it('names every setting the server reads, once, with its flag', () => {
    expect(rows.map((r) => r.env).sort()).toEqual(settings.map((s) => s.env).sort());
    for (const s of settings) expect(rows.find((r) => r.env === s.env)?.flag, s.env).toBe(s.flag);
  });

  it('gives each default as the server parses it, and "none" where there is none', () => {
    for (const s of settings) {
      const row = rows.find((r) => r.env === s.env)!;
      const fallback = DEFAULTS[s.key];
      const literal = /^`([^`]*)`$/.exec(row.fallback)?.[1];
      if (fallback === null) {
        expect(literal, `${s.env}: README gives a default the server does not have`).toBeUndefined();
        continue;
      }
      if (literal === undefined) continue; // described in words (DASHBOARD_DIR: the package's own directory)
      expect((s.parse as (raw: string) => unknown)(literal), `${s.env}: README's default`).toEqual(fallback);
    }
  });
});
