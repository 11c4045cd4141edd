import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { harness, type Harness, expectError } from './helpers.js';

// The Authorization forms client-plugin.ts's pattern accepts (a guard for any faster reading of it), and
// server_time as app-context.ts formats it from a cached second (docs/performance.md, Issue 14).
let h: Harness;
beforeEach(async () => {
  h = await harness();
});
afterEach(async () => h.close());

describe('the Authorization header of a client request', () => {
  it('accepts the token in every form the pattern allows, and refuses what it does not', async () => {
    const app = await h.createApp({ name: 'Bearer forms' });
    await h.activeUser(app, 'alice');
    const token = await h.login(app, 'alice');
    const get = (authorization: string) => h.inject({ method: 'GET', url: '/app_context', headers: { ...app.headers, authorization } });

    for (const form of [`Bearer ${token}`, `bearer ${token}`, `BEARER ${token}`, `Bearer  ${token}`, `Bearer\t${token}`, `Bearer ${token} `]) {
      const res = await get(form);
      expect(res.statusCode, JSON.stringify(form)).toBe(200);
      expect(res.json().user.username).toBe('alice');
    }
    for (const form of ['Bearer', 'Bearer ', `Bearer ${token} x`, `Bearer ${token}\u00e9`, `Bearer ${token.slice(0, -1)}`, `Token ${token}`, `Bearer${token}`]) {
      expectError(await get(form), 401, 'invalid_credentials');
    }
  });
});

describe('server_time of GET /app_context', () => {
  it('is the clock in ISO 8601 with milliseconds at every millisecond, across second, day and year boundaries', async () => {
    const app = await h.createApp({ name: 'Server time', anonymous_access_allowed: true });
    const get = async () => (await h.inject({ method: 'GET', url: '/app_context', headers: app.headers })).json().server_time;
    const steps = [0, 1, 8, 1, 90, 900, 1, 1, 998, 1_000, 86_399_000, 1, 5, 31_536_000_000, 999, 1];
    for (const step of steps) {
      h.clock.advance(step);
      expect(await get()).toBe(h.clock.iso());
    }
  });
});
