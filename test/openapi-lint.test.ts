import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { harness, STORE, type Harness } from './helpers.js';

/**
 * The document the server generates, linted with Redocly's recommended ruleset
 * (the issue's "lints clean"): no error at all; warnings are printed so a reader
 * of the test output sees them, and the known ones are named below.
 */

interface Problem {
  ruleId: string;
  severity: 'error' | 'warn';
  message: string;
  location: { pointer: string }[];
}

const REDOCLY = resolve(import.meta.dirname, '../node_modules/.bin/redocly');
const pgMissing = STORE === 'postgres' && !inject('pgUrl');
const run = promisify(execFile);

/**
 * Warnings accepted on purpose, by rule and place: /healthz and /readyz answer no 4xx of their own
 * (a probe sends nothing that could be refused), and inventing one would make the document lie.
 */
const ACCEPTED_WARNINGS = new Set(['operation-4xx-response #/paths/~1healthz/get/responses', 'operation-4xx-response #/paths/~1readyz/get/responses']);

describe.skipIf(pgMissing)('OpenAPI document: Redocly lint (recommended rules)', () => {
  let h: Harness;
  let dir: string;
  let problems: Problem[];

  beforeAll(async () => {
    h = await harness();
    const res = await h.inject({ method: 'GET', url: '/openapi.json' });
    expect(res.statusCode).toBe(200);
    dir = mkdtempSync(join(tmpdir(), 'tollgate-openapi-'));
    const file = join(dir, 'openapi.json');
    writeFileSync(file, res.body);
    // No telemetry and no update check: the test must not talk to the network.
    const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' };
    // Exit status 1 means "problems found"; the JSON report on stdout says which, so read it either way.
    const { stdout } = await run(REDOCLY, ['lint', file, '--format=json'], { env, cwd: dir, timeout: 60_000, maxBuffer: 16 * 1024 * 1024 }).catch(
      (err: { stdout?: string; stderr?: string }) => {
        if (!err.stdout) throw new Error(`redocly failed: ${err.stderr ?? String(err)}`);
        return { stdout: err.stdout };
      },
    );
    problems = (JSON.parse(stdout) as { problems: Problem[] }).problems;
  }, 90_000);
  afterAll(async () => {
    await h?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const where = (p: Problem) => `${p.ruleId} ${p.location[0]?.pointer ?? ''}`;

  it('has no errors', () => {
    const errors = problems.filter((p) => p.severity === 'error').map((p) => `${where(p)}: ${p.message}`);
    expect(errors).toEqual([]);
  });

  it('lists its warnings; none beyond the accepted ones', () => {
    const warnings = problems.filter((p) => p.severity !== 'error');
    if (warnings.length > 0) console.log(`Redocly warnings (${warnings.length}):\n${warnings.map((p) => `  ${where(p)}: ${p.message}`).join('\n')}`);
    expect(warnings.map(where).filter((w) => !ACCEPTED_WARNINGS.has(w))).toEqual([]);
  });

  it('the linter really runs the recommended rules (a broken document is reported)', async () => {
    // A document without operationId and with an undefined security scheme must fail: proves the run above is not vacuous.
    const file = join(dir, 'broken.json');
    writeFileSync(file, JSON.stringify({
      openapi: '3.1.0', info: { title: 'x', version: '1' }, servers: [{ url: '/' }],
      paths: { '/a': { get: { summary: 'a', security: [{ nowhere: [] }], responses: { 200: { description: 'ok' } } } } },
    }));
    const out = await run(REDOCLY, ['lint', file, '--format=json'], { env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' }, cwd: dir, timeout: 60_000 })
      .then((r) => r.stdout, (err: { stdout?: string }) => err.stdout ?? '');
    const rules = (JSON.parse(out) as { problems: Problem[] }).problems.map((p) => p.ruleId);
    expect(rules).toContain('security-defined');
    expect(rules).toContain('operation-operationId');
  }, 90_000);
});
