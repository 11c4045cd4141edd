import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { expectError, harness, PASSWORD, type Harness, type TestApp } from './helpers.js';
import { bearer, context, hwidHashOf, leaseApp, leaseOf, legacy, postLease, type LeaseSettings } from './lease-fixtures.js';
import { setUpKeys } from './signing-fixtures.js';

/**
 * POST /lease refuses as GET /app_context does, plus its own refusals; and
 * the refusals docs/signing.md lists as "drop your lease" are what a client
 * sees on /lease and /app_context after a ban, a deleted user or a device reset.
 */

let h: Harness;
beforeEach(async () => {
  h = await harness();
});
afterEach(async () => h.close());

async function keyedApp(settings: LeaseSettings = {}): Promise<{ app: TestApp; root: string }> {
  const app = await leaseApp(h, settings);
  return { app, root: (await setUpKeys(h, app)).rootPublicKey };
}

const DROP = ['banned', 'membership_inactive', 'invalid_credentials', 'invalid_license', 'device_mismatch', 'device_limit'];

describe('POST /lease: its own refusals, in order', () => {
  it('no Tollgate-Nonce: 422 nonce_required, nothing issued', async () => {
    const { app } = await keyedApp();
    const userId = await h.activeUser(app, 'alice');
    expectError(await postLease(h, app, { ...legacy('alice'), 'tollgate-nonce': undefined }), 422, 'nonce_required');
    expect(await h.tollgate.services.store.leases.seqOf(app.id, userId, hwidHashOf(app.id, 'hw-1'))).toBeUndefined();
  });

  it('a malformed Tollgate-Nonce: 422 validation_error naming the header (step 1, as on every client route)', async () => {
    const { app } = await keyedApp();
    await h.activeUser(app, 'alice');
    const body = expectError(await postLease(h, app, { ...legacy('alice'), 'tollgate-nonce': 'short' }), 422, 'validation_error');
    expect(body.errors?.[0]?.field).toBe('header.tollgate-nonce');
  });

  it('offline_grace_seconds 0 (the default): 403 leases_disabled, before any credential is tried', async () => {
    const app = await h.createApp();
    await setUpKeys(h, app);
    await h.activeUser(app, 'alice');
    expectError(await postLease(h, app, legacy('alice')), 403, 'leases_disabled');
    // A wrong password is not even looked at: the answer is the same, no attempt is made.
    expectError(await postLease(h, app, legacy('alice', 'wrong password!')), 403, 'leases_disabled');
    expectError(await postLease(h, app, { ...legacy('alice'), 'x-hardware-id': undefined }), 403, 'leases_disabled');
  });

  for (const deviceAuth of [false, true]) {
    it(`no x-hardware-id: 422 naming header.x-hardware-id (device auth ${deviceAuth ? 'on' : 'off'})`, async () => {
      const { app } = await keyedApp({ device_auth_enabled: deviceAuth });
      await h.activeUser(app, 'alice', undefined, 'hw-1');
      const token = await h.login(app, 'alice', undefined, 'hw-1');
      for (const creds of [legacy('alice'), bearer(token)]) {
        const body = expectError(await postLease(h, app, { ...creds, 'x-hardware-id': undefined }), 422, 'validation_error');
        expect(body.errors).toEqual([{ field: 'header.x-hardware-id', message: 'is required' }]);
      }
    });
  }

  it('no usable signing key: 503 service_unavailable saying so, with Retry-After (a minute: an operator must act), before the credentials', async () => {
    const app = await leaseApp(h);
    await h.activeUser(app, 'alice');
    for (const creds of [legacy('alice'), legacy('alice', 'wrong password!')]) {
      const res = await postLease(h, app, creds);
      const body = expectError(res, 503, 'service_unavailable');
      expect(body.detail).toMatch(/no usable signing key/);
      expect(res.headers['retry-after']).toBe('60');
      expect(res.headers['tollgate-signature']).toBeUndefined();
    }
  });

  it('an anonymous caller gets no lease, even where the app allows anonymous access: 401 anonymous_not_allowed', async () => {
    const { app } = await keyedApp({ anonymous_access_allowed: true });
    expect((await context(h, app, {})).statusCode).toBe(200);
    const body = expectError(await postLease(h, app), 401, 'anonymous_not_allowed');
    expect(body.detail).toMatch(/logged in user/);
  });
});

describe('POST /lease: the checks of GET /app_context', () => {
  it('403 banned for a banned user, a banned hardware id, a banned IP', async () => {
    const { app, root } = await keyedApp();
    const userId = await h.activeUser(app, 'alice');
    await h.activeUser(app, 'bob');
    leaseOf(await postLease(h, app, legacy('bob'), '203.0.113.7'), root);
    await h.ban(app, 'user', userId);
    await h.ban(app, 'hardware_id', 'hw-banned');
    await h.ban(app, 'ip', '203.0.113.7');
    expectError(await postLease(h, app, legacy('alice')), 403, 'banned');
    expectError(await postLease(h, app, { ...legacy('bob'), 'x-hardware-id': 'hw-banned' }), 403, 'banned');
    expectError(await postLease(h, app, legacy('bob'), '203.0.113.7'), 403, 'banned');
    leaseOf(await postLease(h, app, legacy('bob'), '203.0.113.8'), root);
  });

  it('403 membership_inactive for a user without an active membership, and once it has run out', async () => {
    const { app } = await keyedApp();
    await h.signUp(app, 'idle');
    expectError(await postLease(h, app, legacy('idle')), 403, 'membership_inactive');
    await h.activeUser(app, 'alice');
    h.clock.minutes(61);
    expectError(await postLease(h, app, legacy('alice')), 403, 'membership_inactive');
  });

  it('device auth: another device beyond the limit is 401 (device_mismatch at 1, device_limit above)', async () => {
    const one = await keyedApp({ device_auth_enabled: true, max_devices_per_user: 1 });
    await h.activeUser(one.app, 'alice', undefined, 'hw-1');
    leaseOf(await postLease(h, one.app, legacy('alice')), one.root);
    expectError(await postLease(h, one.app, { ...legacy('alice'), 'x-hardware-id': 'hw-2' }), 401, 'device_mismatch');

    const two = await keyedApp({ device_auth_enabled: true, max_devices_per_user: 2 });
    await h.activeUser(two.app, 'bob', undefined, 'hw-1');
    leaseOf(await postLease(h, two.app, { ...legacy('bob'), 'x-hardware-id': 'hw-2' }), two.root);
    expectError(await postLease(h, two.app, { ...legacy('bob'), 'x-hardware-id': 'hw-3' }), 401, 'device_limit');
  });

  it('a session bound to one device cannot get a lease for another (401 device_mismatch)', async () => {
    const { app } = await keyedApp({ device_auth_enabled: true });
    await h.activeUser(app, 'alice', undefined, 'hw-1');
    const token = await h.login(app, 'alice', undefined, 'hw-1');
    expectError(await postLease(h, app, { ...bearer(token), 'x-hardware-id': 'hw-2' }), 401, 'device_mismatch');
  });
});

describe('dropping a lease online: the next /lease and /app_context answers carry a "drop" code', () => {
  async function leased(settings: LeaseSettings = {}) {
    const { app, root } = await keyedApp(settings);
    const userId = await h.activeUser(app, 'alice', undefined, 'hw-1');
    const token = await h.login(app, 'alice', undefined, 'hw-1');
    leaseOf(await postLease(h, app, bearer(token)), root);
    return { app, root, userId, token };
  }

  async function expectDrop(app: TestApp, headers: Record<string, string>, code: string): Promise<void> {
    expect(DROP).toContain(code);
    expectError(await postLease(h, app, headers), code === 'invalid_credentials' || code.startsWith('device') ? 401 : 403, code);
    expectError(await context(h, app, headers), code === 'invalid_credentials' || code.startsWith('device') ? 401 : 403, code);
  }

  it('after a user ban: banned', async () => {
    const { app, userId, token } = await leased();
    await h.ban(app, 'user', userId);
    await expectDrop(app, { ...bearer(token), 'x-hardware-id': 'hw-1' }, 'banned');
  });

  it('after the license is banned (revoked): banned', async () => {
    const { app, root } = await keyedApp();
    const { code } = await h.license(app, { minutes: 60 });
    const res = await h.client(app, 'POST', '/sign_up_with_license_code', { code });
    expect(res.statusCode).toBe(200);
    leaseOf(await postLease(h, app, { 'x-api-license-code': code }), root);
    await h.ban(app, 'license', code);
    await expectDrop(app, { 'x-api-license-code': code, 'x-hardware-id': 'hw-1' }, 'banned');
  });

  it('after the user is deleted: invalid_credentials, by token and by password', async () => {
    const { app, userId, token } = await leased();
    expect((await h.admin('DELETE', `/apps/${app.id}/users/${userId}`)).statusCode).toBe(204);
    await expectDrop(app, { ...bearer(token), 'x-hardware-id': 'hw-1' }, 'invalid_credentials');
    await expectDrop(app, { ...legacy('alice'), 'x-hardware-id': 'hw-1' }, 'invalid_credentials');
    // The user's lease sequence went with them.
    expect(await h.tollgate.services.store.leases.seqOf(app.id, userId, hwidHashOf(app.id, 'hw-1'))).toBeUndefined();
  });

  it('after a device reset and another machine taking the slot: device_mismatch on the old machine', async () => {
    const { app, root, userId } = await leased({ device_auth_enabled: true, max_devices_per_user: 1 });
    expect((await h.admin('POST', `/apps/${app.id}/users/${userId}/reset-devices`)).statusCode).toBe(204);
    leaseOf(await postLease(h, app, { ...legacy('alice'), 'x-hardware-id': 'hw-new' }), root);
    await expectDrop(app, { ...legacy('alice'), 'x-hardware-id': 'hw-1' }, 'device_mismatch');
  });
});

describe('POST /lease: the rate limits of legacy headers', () => {
  it('failed passwords on /lease and /app_context count together; at the limit /lease is 429 even with the right password', async () => {
    const limited = await harness({ env: { RATE_LIMIT: 'on' } });
    try {
      const app = await leaseApp(limited);
      await setUpKeys(limited, app);
      await limited.admin('PATCH', `/apps/${app.id}`, { rate_failures_per_identity: 2, rate_failures_per_identity_window_seconds: 60 });
      await limited.activeUser(app, 'alice');
      expectError(await context(limited, app, legacy('alice', 'wrong password 1')), 401, 'invalid_credentials');
      // Counted per (username, address): the same address as /app_context's (inject's default).
      expectError(await postLease(limited, app, legacy('alice', 'wrong password 2')), 401, 'invalid_credentials');
      expectError(await postLease(limited, app, legacy('alice', PASSWORD)), 429, 'rate_limited');
      // The owner on another address is not locked out by them.
      expect((await postLease(limited, app, legacy('alice', PASSWORD), '198.51.100.3')).statusCode).toBe(200);
    } finally {
      await limited.close();
    }
  });
});
