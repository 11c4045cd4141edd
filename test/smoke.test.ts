import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { harness, type Harness } from './helpers.js';

describe('harness', () => {
  let h: Harness;
  beforeEach(async () => {
    h = await harness();
  });
  afterEach(async () => h.close());

  it('runs the README path: app, license, sign-up, activate, login, context', async () => {
    const app = await h.createApp();
    await h.activeUser(app, 'alice');
    const token = await h.login(app, 'alice');
    const res = await h.client(app, 'GET', '/app_context', undefined, { authorization: `Bearer ${token}` });
    expect(res.statusCode).toBe(200);
    expect(res.json().user.username).toBe('alice');
    expect(res.json().user.membership.is_active).toBe(true);
  });
});
