import { defineConfig } from 'vitest/config';

/** Real server processes (the built CLI) against one PostgreSQL database, and crash tests on both stores. */
export default defineConfig({
  test: {
    include: ['test/cluster/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    fileParallelism: false,
    globalSetup: ['test/setup/postgres-global.ts'],
  },
});
