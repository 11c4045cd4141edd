import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { resealKeys } from '../src/domain/signing/reseal.js';
import { kek, KeySeal } from '../src/domain/signing/seal.js';
import { expectError, harness, writableStore, type Harness } from './helpers.js';
import { connect, fixture, map, post, SECRETS } from './sales-helpers.js';

/** A store's signing secret is sealed at rest like the signing keys, never shown back, never logged in the audit. */
describe('store signing secrets', () => {
  let h: Harness;
  afterEach(async () => h.close());

  const stored = async (appId: string) =>
    (await h.tollgate.services.store.db.one<{ signing_secret: string }>('SELECT signing_secret FROM integrations WHERE app_id = ?', [appId]))!.signing_secret;

  it('with SIGNING_KEY_SEAL the stored secret is sealed; answers and the audit log show only its last four characters', async () => {
    h = await harness({ env: { SIGNING_KEY_SEAL: randomBytes(32).toString('base64') } });
    const app = await h.createApp();
    const put = await h.admin('PUT', `/apps/${app.id}/integrations/stripe`, { signing_secret: SECRETS.stripe });
    expect(put.json()).toEqual({
      provider: 'stripe', enabled: true, secret_hint: `…${SECRETS.stripe.slice(-4)}`, webhook_path: `/integrations/stripe/${app.id}`,
      created_at: h.clock.iso(), updated_at: h.clock.iso(),
    });
    expect(await stored(app.id)).toMatch(/^seal1\./);
    expect(await stored(app.id)).not.toContain(Buffer.from(SECRETS.stripe).toString('base64'));
    const everything = [
      (await h.admin('GET', `/apps/${app.id}/integrations`)).body,
      (await h.admin('GET', `/apps/${app.id}/integrations/stripe`)).body,
      (await h.admin('GET', `/audit?limit=50`)).body,
    ].join('\n');
    expect(everything).not.toContain(SECRETS.stripe);
    // Sealed, it still verifies.
    await map(h, app, 'stripe', { product_key: 'plink_1PgaflB7WZ01zgkW2Wn4ZAnp', minutes: 60 });
    expect((await post(h, 'stripe', app, fixture('stripe', 'checkout.session.completed'))).json().outcome).toBe('granted');
  });

  it('a node that cannot open the sealed secret answers 503 (the store retries) and grants nothing', async () => {
    h = await harness({ env: { SIGNING_KEY_SEAL: randomBytes(32).toString('base64') } });
    const app = await h.createApp();
    await connect(h, app, 'stripe');
    await map(h, app, 'stripe', { product_key: 'plink_1PgaflB7WZ01zgkW2Wn4ZAnp', minutes: 60 });
    // As a node started without SIGNING_KEY_SEAL would be.
    h.tollgate.services.seal = new KeySeal(null);
    const res = await post(h, 'stripe', app, fixture('stripe', 'checkout.session.completed'));
    expectError(res, 503, 'service_unavailable');
    expect(res.headers['retry-after']).toBeDefined();
    expect((await h.admin('GET', `/apps/${app.id}/orders`)).json().items).toEqual([]);
  });

  it('`tollgate reseal-keys` (resealKeys) seals a secret stored before SIGNING_KEY_SEAL was set, and it still verifies', async () => {
    h = await harness();
    const app = await h.createApp();
    await connect(h, app, 'paddle');
    await map(h, app, 'paddle', { product_key: 'pri_01gsz8x8sawmvhz1pv30nge1ke', minutes: 60 });
    expect(await stored(app.id)).toBe(Buffer.from(SECRETS.paddle).toString('base64'));
    const seal = new KeySeal(kek(randomBytes(32)));
    const { resealed, unopenable } = await resealKeys(writableStore(h.tollgate.services), seal);
    expect({ resealed, unopenable }).toEqual({ resealed: ['integration:paddle'], unopenable: [] });
    expect(await stored(app.id)).toMatch(/^seal1\./);
    h.tollgate.services.seal = seal;
    expect((await post(h, 'paddle', app, fixture('paddle', 'transaction.completed'))).json().outcome).toBe('granted');
  });

  it('a replaced secret stops verifying at once; a mapping twice is 409; a short secret 422; another app cannot see this one', async () => {
    h = await harness();
    const app = await h.createApp();
    const other = await h.createApp({ name: 'Other' });
    await connect(h, app, 'lemonsqueezy');
    await map(h, app, 'lemonsqueezy', { product_key: '1', minutes: 60 });
    expect((await h.admin('PUT', `/apps/${app.id}/integrations/lemonsqueezy`, { signing_secret: 'the-new-secret' })).statusCode).toBe(200);
    expectError(await post(h, 'lemonsqueezy', app, fixture('lemonsqueezy', 'order_created')), 401, 'invalid_signature');
    expectError(await h.admin('POST', `/apps/${app.id}/integrations/lemonsqueezy/products`, { product_key: '1', minutes: 5 }), 409, 'conflict');
    expectError(await h.admin('PUT', `/apps/${app.id}/integrations/paddle`, { signing_secret: 'short' }), 422, 'validation_error');
    expectError(await h.admin('POST', `/apps/${app.id}/integrations/lemonsqueezy/products`, { product_key: '2', minutes: 5, lifetime: true }), 422, 'validation_error');
    expectError(await h.admin('POST', `/apps/${app.id}/integrations/lemonsqueezy/products`, { product_key: '2' }), 422, 'validation_error');
    expectError(await h.admin('GET', `/apps/${other.id}/integrations/lemonsqueezy`), 404, 'not_found');
    expectError(await h.admin('GET', `/apps/${other.id}/integrations/lemonsqueezy/products`), 404, 'not_found');
    const mappingId = (await h.admin('GET', `/apps/${app.id}/integrations/lemonsqueezy/products`)).json().items[0].id;
    expectError(await h.admin('DELETE', `/apps/${other.id}/integrations/lemonsqueezy/products/${mappingId}`), 404, 'not_found');
    expectError(await h.admin('PUT', `/apps/${app.id}/integrations/gumroad`, { signing_secret: 'whatever-secret' }), 422, 'validation_error');
  });
});
