import { defineConfig } from 'vitest/config';

/**
 * The whole suite runs twice: on SQLite, and on PostgreSQL (a fresh database
 * per run, a fresh schema per test harness). The cluster tests start real
 * server processes and run separately (`npm run test:cluster`).
 */
export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    projects: [
      {
        extends: true,
        test: { name: 'sqlite', include: ['test/**/*.test.ts'], exclude: ['test/cluster/**'], env: { TEST_STORE: 'sqlite' } },
      },
      {
        extends: true,
        test: {
          name: 'postgres',
          include: ['test/**/*.test.ts'],
          exclude: ['test/cluster/**', 'test/config.test.ts'],
          env: { TEST_STORE: 'postgres' },
          globalSetup: ['test/setup/postgres-global.ts'],
          setupFiles: ['test/setup/postgres-skip.ts'],
        },
      },
      // The TypeScript SDK: its tests start the built server themselves (a child process on SQLite), so they run once, not per store.
      { extends: true, test: { name: 'sdk', include: ['sdk/typescript/test/**/*.test.ts'], globalSetup: ['sdk/typescript/test/global-setup.ts'] } },
    ],
  },
});
