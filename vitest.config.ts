import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

/**
 * The store-touching suite runs twice: on SQLite, and on PostgreSQL (a fresh
 * database per run, a fresh schema per test harness). The cluster tests start
 * real server processes and run separately (`npm run test:cluster`).
 */

/**
 * Files that never touch the store (configuration, the OpenAPI document and
 * its lint, the deploy files, signing vectors, pure helpers): on PostgreSQL
 * they would only repeat the same run, so they run in the sqlite project only.
 */
const STORE_INDEPENDENT = [
  'test/cli-imports.test.ts',
  'test/config.test.ts',
  'test/credential-cache.test.ts',
  'test/deploy-files.test.ts',
  'test/deploy-nginx.test.ts',
  'test/layers.test.ts',
  'test/openapi.test.ts',
  'test/openapi-lint.test.ts',
  'test/signing-vectors.test.ts',
  'test/steps.test.ts',
  'test/tick-shape.test.ts',
];

/**
 * Files every test of which is for SQLite (the CLI and SDK-facing tests run
 * the built server on a SQLite file; SQLite faults), or for PostgreSQL. They
 * run in their own project only instead of being collected and skipped in the
 * other.
 */
const SQLITE_ONLY = [
  'test/cli.test.ts',
  'test/cli-lists.test.ts',
  'test/cli-seats.test.ts',
  'test/cli-templates.test.ts',
  'test/cli-webhooks.test.ts',
  'test/keys-cli.test.ts',
  'test/keys-secrets.test.ts',
  'test/log-output.test.ts',
  'test/readme-walkthrough.test.ts',
  'test/redis-fallback.test.ts',
  'test/sales-cli.test.ts',
  'test/sqlite-faults.test.ts',
  'test/sqlite-store.test.ts',
  'test/trust-proxy.test.ts',
];
const POSTGRES_ONLY = ['test/pg-faults.test.ts', 'test/pg-freeze.test.ts', 'test/dependency-logs.test.ts', 'test/pg-migration-lock.test.ts'];

/**
 * Vitest's default is one worker per core less one: a single worker on a
 * 2-core machine, idle while a test waits for PostgreSQL, a child process or
 * a timer. Three overlap those waits (measured in /work/notes/decisions-T15.md).
 */
const WORKERS = Math.max(3, availableParallelism() - 1);

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    maxWorkers: WORKERS,
    // Every skipped test is listed at the end with why (test/setup/skip-reasons.ts).
    reporters: ['default', './test/setup/skip-reasons.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'sqlite',
          include: ['test/**/*.test.ts'],
          exclude: ['test/cluster/**', ...POSTGRES_ONLY],
          env: { TEST_STORE: 'sqlite' },
          globalSetup: ['test/setup/build.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'postgres',
          include: ['test/**/*.test.ts'],
          exclude: ['test/cluster/**', ...STORE_INDEPENDENT, ...SQLITE_ONLY],
          env: { TEST_STORE: 'postgres' },
          globalSetup: ['test/setup/build.ts', 'test/setup/postgres-global.ts'],
          setupFiles: ['test/setup/postgres-skip.ts'],
        },
      },
      // The TypeScript SDK: its tests start the built server themselves (a child process on SQLite), so they run once, not per store.
      { extends: true, test: { name: 'sdk', include: ['sdk/typescript/test/**/*.test.ts'], globalSetup: ['test/setup/build.ts', 'sdk/typescript/test/global-setup.ts'] } },
    ],
  },
});
