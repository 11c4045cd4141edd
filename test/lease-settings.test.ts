import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { expectError, harness, type Harness } from './helpers.js';

/**
 * Issue 21 item 4: a lease's `renew_after` (iat + lease_renew_seconds) must
 * not fall after its `exp` (iat + offline_grace_seconds at most). The pair is
 * refused on create and on update with a 422 naming both settings
 * (docs/decisions.md, "Lease timing"); the CLI's side is in test/cli-terminal.test.ts.
 */

let h: Harness;
beforeEach(async () => {
  h = await harness();
});
afterEach(async () => h.close());

function namesBoth(body: { detail: string; errors?: { field: string }[] }): void {
  expect(body.detail).toMatch(/lease_renew_seconds \(3600\).*offline_grace_seconds \(8\)/);
  expect(body.errors?.map((e) => e.field).sort()).toEqual(['body.lease_renew_seconds', 'body.offline_grace_seconds']);
}

describe('offline_grace_seconds and lease_renew_seconds together', () => {
  it('create: a grace shorter than the renewal period (8 s with the default 3600) is refused, nothing created', async () => {
    namesBoth(expectError(await h.admin('POST', '/apps', { name: 'Short grace', offline_grace_seconds: 8 }), 422, 'validation_error'));
    namesBoth(expectError(await h.admin('POST', '/apps', { name: 'Short grace', offline_grace_seconds: 8, lease_renew_seconds: 3600 }), 422, 'validation_error'));
    const list = await h.admin('GET', '/apps');
    expect((list.json() as { items: { name: string }[] }).items.map((a) => a.name)).not.toContain('Short grace');
  });

  it('update: either field alone, or both, making renewal fall after the end is refused and the app is unchanged', async () => {
    const app = await h.createApp();
    namesBoth(expectError(await h.admin('PATCH', `/apps/${app.id}`, { offline_grace_seconds: 8 }), 422, 'validation_error'));
    expect((await h.admin('PATCH', `/apps/${app.id}`, { offline_grace_seconds: 7200, lease_renew_seconds: 600 })).statusCode).toBe(200);
    const raised = expectError(await h.admin('PATCH', `/apps/${app.id}`, { lease_renew_seconds: 7201 }), 422, 'validation_error');
    expect(raised.detail).toMatch(/lease_renew_seconds \(7201\).*offline_grace_seconds \(7200\)/);
    expect((await h.admin('GET', `/apps/${app.id}`)).json()).toMatchObject({ offline_grace_seconds: 7200, lease_renew_seconds: 600 });
  });

  it('allowed: no leases (0) with any renewal period, and a renewal at or before the end', async () => {
    const app = await h.createApp({ offline_grace_seconds: 0, lease_renew_seconds: 3600 } as never);
    for (const body of [{ offline_grace_seconds: 3600 }, { offline_grace_seconds: 61, lease_renew_seconds: 60 }, { offline_grace_seconds: 0, lease_renew_seconds: 86_400 }]) {
      const res = await h.admin('PATCH', `/apps/${app.id}`, body);
      expect(res.statusCode, res.body).toBe(200);
    }
  });
});
