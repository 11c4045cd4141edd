import { Paddle } from '@paddle/paddle-node-sdk';
import Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import { verifySignature } from '../src/domain/sales/verify.js';
import { fixture, lemonHeader, paddleHeader, SECRETS, stripeHeader } from './sales-helpers.js';

/**
 * The test signers are the stores' own schemes: Stripe's header comes from the stripe package, the Paddle
 * header the tests make is accepted by Paddle's SDK verifier (and a changed byte is not), and Tollgate's
 * verifier agrees with both libraries on the same bytes.
 */
describe('store signatures: the tests sign as the stores do', () => {
  const now = () => Math.floor(Date.now() / 1000);

  it("Paddle's SDK accepts the Paddle-Signature the tests make, and refuses it on other bytes or with another secret", async () => {
    const paddle = new Paddle('pdl_sdbx_apikey_01hv8wc7t6ty8q4kp3n9kkjq9h_test');
    const body = fixture('paddle', 'transaction.completed');
    const header = paddleHeader(body, SECRETS.paddle, now());
    expect(await paddle.webhooks.isSignatureValid(body.toString('utf8'), SECRETS.paddle, header)).toBe(true);
    const event = await paddle.webhooks.unmarshal(body.toString('utf8'), SECRETS.paddle, header);
    expect(event.eventId).toBe('evt_01hv8x2acma2gz9my3x3fd2y4g');
    expect(await paddle.webhooks.isSignatureValid(body.toString('utf8').replace('"quantity": 1', '"quantity": 9'), SECRETS.paddle, header)).toBe(false);
    expect(await paddle.webhooks.isSignatureValid(body.toString('utf8'), 'pdl_ntfset_other_secret', header)).toBe(false);
    // Tollgate's verifier says the same of the same header.
    expect(verifySignature('paddle', header, SECRETS.paddle, body, Date.now())).toBeNull();
    expect(verifySignature('paddle', header, 'pdl_ntfset_other_secret', body, Date.now())).toBe('mismatch');
  });

  it("Paddle: 5 s of tolerance, as Paddle's SDK enforces", async () => {
    const paddle = new Paddle('pdl_sdbx_apikey_01hv8wc7t6ty8q4kp3n9kkjq9h_test');
    const body = fixture('paddle', 'subscription.canceled');
    const old = paddleHeader(body, SECRETS.paddle, now() - 30);
    expect(await paddle.webhooks.isSignatureValid(body.toString('utf8'), SECRETS.paddle, old)).toBe(false);
    expect(verifySignature('paddle', old, SECRETS.paddle, body, Date.now())).toBe('stale');
  });

  it("Stripe: the stripe package's test header verifies, with its own constructEvent and with Tollgate's; several v1 entries", () => {
    const body = fixture('stripe', 'checkout.session.completed');
    const header = stripeHeader(body, SECRETS.stripe, now());
    const event = Stripe.webhooks.constructEvent(body.toString('utf8'), header, SECRETS.stripe);
    expect(event.id).toBe('evt_1PgafnB7WZ01zgkWk0Jn9E4P');
    expect(verifySignature('stripe', header, SECRETS.stripe, body, Date.now())).toBeNull();
    // While a secret is rolled Stripe signs with both: any one v1 may match.
    const rolled = `${header.split(',')[0]},v1=${'0'.repeat(64)},${header.split(',')[1]}`;
    expect(verifySignature('stripe', rolled, SECRETS.stripe, body, Date.now())).toBeNull();
    const stale = stripeHeader(body, SECRETS.stripe, now() - 301);
    expect(() => Stripe.webhooks.constructEvent(body.toString('utf8'), stale, SECRETS.stripe)).toThrow();
    expect(verifySignature('stripe', stale, SECRETS.stripe, body, Date.now())).toBe('stale');
    expect(verifySignature('stripe', 't=abc,v1=def', SECRETS.stripe, body, Date.now())).toBe('malformed');
  });

  it('Lemon Squeezy: hex HMAC-SHA256 of the raw body; any other body or secret does not match', () => {
    const body = fixture('lemonsqueezy', 'order_created');
    expect(verifySignature('lemonsqueezy', lemonHeader(body, SECRETS.lemonsqueezy), SECRETS.lemonsqueezy, body, Date.now())).toBeNull();
    const compact = Buffer.from(JSON.stringify(JSON.parse(body.toString('utf8'))));
    expect(verifySignature('lemonsqueezy', lemonHeader(body, SECRETS.lemonsqueezy), SECRETS.lemonsqueezy, compact, Date.now())).toBe('mismatch');
    expect(verifySignature('lemonsqueezy', lemonHeader(body, 'another'), SECRETS.lemonsqueezy, body, Date.now())).toBe('mismatch');
    expect(verifySignature('lemonsqueezy', undefined, SECRETS.lemonsqueezy, body, Date.now())).toBe('missing');
  });
});
