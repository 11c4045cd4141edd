import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { expectError, harness, type Harness, type TestApp } from './helpers.js';

/**
 * A license ban must name a license of the app (404 otherwise), matched as the
 * client endpoints match codes: exactly, byte for byte. A ban that names
 * nothing would be accepted and ban nothing while the operator believes the
 * code is blocked.
 */
describe('license bans name a license of the app', () => {
  let h: Harness;
  let app: TestApp;
  beforeEach(async () => {
    h = await harness();
    app = await h.createApp();
  });
  afterEach(async () => h.close());

  const banLicense = (value: string) => h.admin('POST', `/apps/${app.id}/bans`, { type: 'license', value });
  const storedBans = async () => (await h.admin('GET', `/apps/${app.id}/bans`)).json().items as unknown[];

  it('a code that does not exist: 404 not_found, nothing stored', async () => {
    expectError(await banLicense('NO-SUCH-CODE'), 404, 'not_found');
    expectError(await banLicense('any text at all'), 404, 'not_found');
    expect(await storedBans()).toEqual([]);
  });

  it('a lower-cased or padded variant of a real code: 404 (codes match exactly), and the real code still works', async () => {
    const { code } = await h.license(app);
    for (const variant of [code.toLowerCase(), ` ${code}`, `${code} `, code.replace(/-/g, '')]) {
      expectError(await banLicense(variant), 404, 'not_found');
    }
    expect(await storedBans()).toEqual([]);
    expect((await h.client(app, 'POST', '/sign_up_with_license_code', { code })).statusCode).toBe(200);
  });

  it("another app's code: 404 in this app", async () => {
    const other = await h.createApp({ name: 'Other' });
    const { code } = await h.license(other);
    expectError(await banLicense(code), 404, 'not_found');
  });

  it('a real code: 201 with the code as the value; the code is refused on sign-up', async () => {
    const { code } = await h.license(app);
    const res = await banLicense(code);
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({ type: 'license', value: code });
    expectError(await h.client(app, 'POST', '/sign_up_with_license_code', { code }), 403, 'banned');
  });

  it('a used code (its account exists): 201, and the code is refused on /app_context and login', async () => {
    const { code } = await h.license(app);
    expect((await h.client(app, 'POST', '/sign_up_with_license_code', { code })).statusCode).toBe(200);
    expect((await h.client(app, 'GET', '/app_context', undefined, { 'x-api-license-code': code })).statusCode).toBe(200);
    expect((await banLicense(code)).statusCode).toBe(201);
    expectError(await h.client(app, 'GET', '/app_context', undefined, { 'x-api-license-code': code }), 403, 'banned');
    expectError(await h.client(app, 'POST', '/auth/login', { credentials: { code } }), 403, 'banned');
  });
});
