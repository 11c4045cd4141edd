import { beforeEach, inject } from 'vitest';

// No PostgreSQL this run: every test of the postgres project is reported as skipped (never as passed).
if (!inject('pgUrl')) {
  beforeEach((context) => {
    context.skip('PostgreSQL is not reachable');
  });
}
