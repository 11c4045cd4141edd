import { defineConfig } from 'vitest/config';

/**
 * The dashboard in a real browser (Debian's Chromium) against the built server: `npm run test:e2e`
 * builds both first. One file at a time: each starts a server and a browser, and the machine
 * has two cores.
 */
export default defineConfig({
  test: {
    root: import.meta.dirname,
    include: ['e2e/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    fileParallelism: false,
    // A page's answer can take seconds on a busy two-core machine; expect.poll's 1 s default is too short.
    expect: { poll: { timeout: 15_000, interval: 100 } },
  },
});
