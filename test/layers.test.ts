import { spawnSync } from 'node:child_process';
import { appendFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

/**
 * The layer rules (docs/layers.md) are checked by `npm run check:layers`, which `npm test` runs before
 * vitest. A check that finds nothing proves nothing (dependency-cruiser reads no .ts at all when it has
 * no parser for them, and says "no violations"): here the same script runs on a copy of the tree with
 * a rule broken on purpose, and must fail naming the rule. The copy is removed after each test.
 */
const ROOT = resolve(import.meta.dirname, '..');
const COPIED = ['src', 'dashboard/src', 'sdk/typescript/src', 'package.json', '.dependency-cruiser.cjs', '.dependency-cruiser.tsx.cjs', '.dependency-cruiser-known-violations.json'];
const KNOWN = '.dependency-cruiser-known-violations.json';

let copies: string[] = [];
afterEach(() => {
  for (const dir of copies) rmSync(dir, { recursive: true, force: true });
  copies = [];
});

function copyOfTree(): string {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-layers-'));
  copies.push(dir);
  for (const path of COPIED) cpSync(join(ROOT, path), join(dir, path), { recursive: true });
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  return dir;
}

function checkLayers(cwd: string): { status: number | null; output: string } {
  const r = spawnSync('npm', ['run', '--silent', 'check:layers'], { cwd, encoding: 'utf8', timeout: 120_000 });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

/** Adds `line` at the top of `file` (relative to the copy), creating the file if it is new. */
function addImport(dir: string, file: string, line: string): void {
  const path = join(dir, file);
  mkdirSync(dirname(path), { recursive: true });
  let text = '';
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    // a new file
  }
  writeFileSync(path, `${line}\n${text}`);
}

// Each check is a few seconds of CPU (two cruises of the tree); under a loaded full suite, more.
describe('npm run check:layers', { timeout: 120_000 }, () => {
  it('passes on the tree as it is (and on its copy, so a failure below is the rule broken, not the copy)', () => {
    const here = checkLayers(ROOT);
    expect(here.status, here.output).toBe(0);
    const copy = checkLayers(copyOfTree());
    expect(copy.status, copy.output).toBe(0);
    expect(copy.output).toMatch(/\(\d{3,} modules/);
  });

  it('fails on an http → store import, naming the rule and the file', () => {
    const dir = copyOfTree();
    addImport(dir, 'src/http/errors.ts', "import type { Db } from '../store/db.js';");
    const r = checkLayers(dir);
    expect(r.status, r.output).not.toBe(0);
    expect(r.output).toContain('http-not-to-store: src/http/errors.ts → src/store/db.ts');
  });

  it('fails on each other rule broken: config, store, domain, net, sdk, dashboard (.ts and .tsx), a cycle', () => {
    const dir = copyOfTree();
    addImport(dir, 'src/config/index.ts', "import type { Services } from '../domain/services.js';");
    addImport(dir, 'src/store/db.ts', "import type { DomainError } from '../domain/errors.js';");
    addImport(dir, 'src/domain/errors.ts', "import type { ERRORS } from '../http/errors.js';");
    addImport(dir, 'src/net/address.ts', "import type { Config } from '../config/index.js';");
    addImport(dir, 'sdk/typescript/src/errors.ts', "import type { ErrorCode } from '../../../src/domain/errors.js';");
    addImport(dir, 'dashboard/src/types.ts', "import type { ErrorCode } from '../../src/domain/errors.js';");
    addImport(dir, 'dashboard/src/pages/Login.tsx', "import type { AppRecord } from '../../../src/domain/records.js';");
    appendFileSync(join(dir, 'src/domain/pagination.ts'), "export { storeFailure } from './store-failures.js';\n");
    addImport(dir, 'src/domain/store-failures.ts', "import type { Cursor } from './pagination.js';");
    const r = checkLayers(dir);
    expect(r.status, r.output).not.toBe(0);
    for (const line of [
      'config-is-a-leaf: src/config/index.ts → src/domain/services.ts',
      'store-not-upwards: src/store/db.ts → src/domain/errors.ts',
      'domain-not-upwards: src/domain/errors.ts → src/http/errors.ts',
      'net-is-the-bottom: src/net/address.ts → src/config/index.ts',
      'clients-over-http-only: sdk/typescript/src/errors.ts → src/domain/errors.ts',
      'clients-over-http-only: dashboard/src/types.ts → src/domain/errors.ts',
      'no-cycles-in-src: src/domain/pagination.ts',
    ]) expect(r.output).toContain(line);
    // The .tsx files are cruised by the second run, which stops at the first's failure: check it on its own.
    const tsx = spawnSync(join(dir, 'node_modules/.bin/depcruise'), ['dashboard', '--config', '.dependency-cruiser.tsx.cjs', '--output-type', 'err'], { cwd: dir, encoding: 'utf8', timeout: 120_000 });
    expect(tsx.status, tsx.stdout).not.toBe(0);
    expect(tsx.stdout).toContain('clients-over-http-only: dashboard/src/pages/Login.tsx → src/domain/records.ts');
  });
});

describe(`the known violations (${KNOWN})`, { timeout: 120_000 }, () => {
  interface Known {
    rule: { name: string };
    from: string;
    to: string;
    cycle?: { name: string }[];
  }
  const known = JSON.parse(readFileSync(join(ROOT, KNOWN), 'utf8')) as Known[];
  /** The circle around the services hub that issue 22's cache registry dissolves; nothing else may be waived. */
  const HUB = new Set(['services', 'unit-of-work', 'events', 'access', 'limits', 'stats', 'signing/keys', 'admin/audit'].map((f) => `src/domain/${f}.ts`));

  it('are only cycles within the services.ts circle', () => {
    for (const v of known) {
      expect(v.rule.name).toBe('no-cycles-in-src');
      for (const file of [v.from, v.to, ...(v.cycle ?? []).map((c) => c.name)]) expect(HUB, file).toContain(file);
    }
  });

  it('all still occur: one that is gone must leave the file (npx depcruise-baseline src sdk dashboard --config .dependency-cruiser.cjs)', () => {
    const r = spawnSync(join(ROOT, 'node_modules/.bin/depcruise'), ['src', 'sdk', 'dashboard', '--config', '.dependency-cruiser.cjs', '--output-type', 'json'], { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, timeout: 120_000 });
    const found = (JSON.parse(r.stdout) as { summary: { violations: Known[] } }).summary.violations;
    const key = (v: Known) => `${v.rule.name} ${v.from} ${v.to} ${(v.cycle ?? []).map((c) => c.name).join(' ')}`;
    const current = new Set(found.map(key));
    expect(known.map(key).filter((k) => !current.has(k))).toEqual([]);
  });
});
