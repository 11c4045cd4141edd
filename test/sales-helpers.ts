import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Stripe from 'stripe';
import type { LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import type { Harness, TestApp } from './helpers.js';

export type Provider = 'stripe' | 'paddle' | 'lemonsqueezy';

export const SECRETS: Record<Provider, string> = {
  stripe: 'whsec_test_5a1e6a8f0c3b4d2e9f7a6b5c4d3e2f1a',
  paddle: 'pdl_ntfset_01hv8wc7t6ty8q4kp3n9kkjq9h_Xz7n3G6v0YwJk2pQd9s8Lr4tF1mB',
  lemonsqueezy: 'lemon-signing-secret-1234',
};

/** The bytes of a store's documented sample (test/fixtures/sales/), exactly as committed. */
export function fixture(provider: Provider, name: string): Buffer {
  return readFileSync(join(import.meta.dirname, 'fixtures', 'sales', provider, `${name}.json`));
}

/** A copy of a sample with some fields changed (a new event id, another status), as a store would send it: compact JSON. */
export function variant(provider: Provider, name: string, change: (event: any) => void): Buffer {
  const event = JSON.parse(fixture(provider, name).toString('utf8'));
  change(event);
  return Buffer.from(JSON.stringify(event), 'utf8');
}

/** Stripe's own test signer (the stripe package). */
export function stripeHeader(body: Buffer, secret: string, atSeconds: number): string {
  return Stripe.webhooks.generateTestHeaderString({ payload: body.toString('utf8'), secret, timestamp: atSeconds });
}

/** Paddle Billing's scheme: `ts=…;h1=` hex HMAC-SHA256 of `{ts}:{body}`. test/sales-signers.test.ts proves Paddle's SDK accepts it. */
export function paddleHeader(body: Buffer, secret: string, atSeconds: number): string {
  return `ts=${atSeconds};h1=${createHmac('sha256', secret).update(`${atSeconds}:`).update(body).digest('hex')}`;
}

/** Lemon Squeezy's documented scheme: hex HMAC-SHA256 of the body. */
export function lemonHeader(body: Buffer, secret: string): string {
  return createHmac('sha256', secret).update(body).digest('hex');
}

export function signed(provider: Provider, body: Buffer, secret: string, atMs: number): Record<string, string> {
  const at = Math.floor(atMs / 1000);
  switch (provider) {
    case 'stripe':
      return { 'stripe-signature': stripeHeader(body, secret, at) };
    case 'paddle':
      return { 'paddle-signature': paddleHeader(body, secret, at) };
    case 'lemonsqueezy':
      return { 'x-signature': lemonHeader(body, secret) };
  }
}

/** Posts raw bytes to the store's webhook with the given headers. */
export function deliver(h: Harness, provider: Provider, appId: string, body: Buffer, headers: Record<string, string>): Promise<LightMyRequestResponse> {
  return h.inject({ method: 'POST', url: `/integrations/${provider}/${appId}`, headers: { 'content-type': 'application/json', ...headers }, payload: body });
}

/** Signs with the app's secret at the harness's clock, and posts. */
export function post(h: Harness, provider: Provider, app: TestApp, body: Buffer): Promise<LightMyRequestResponse> {
  return deliver(h, provider, app.id, body, signed(provider, body, SECRETS[provider], h.clock.ms));
}

export async function connect(h: Harness, app: TestApp, provider: Provider): Promise<void> {
  const res = await h.admin('PUT', `/apps/${app.id}/integrations/${provider}`, { signing_secret: SECRETS[provider] });
  expect(res.statusCode, res.body).toBe(200);
}

export async function map(h: Harness, app: TestApp, provider: Provider, body: Record<string, unknown>): Promise<string> {
  const res = await h.admin('POST', `/apps/${app.id}/integrations/${provider}/products`, body);
  expect(res.statusCode, res.body).toBe(201);
  return res.json().id;
}

/** The product key each sample sells (the one an operator would map). */
export const SOLD: Record<Provider, string> = {
  stripe: 'plink_1PgaflB7WZ01zgkW2Wn4ZAnp',
  paddle: 'pri_01gsz8x8sawmvhz1pv30nge1ke',
  lemonsqueezy: '1',
};
export const ORDER_SAMPLE: Record<Provider, string> = { stripe: 'checkout.session.completed', paddle: 'transaction.completed', lemonsqueezy: 'order_created' };

export async function orders(h: Harness, app: TestApp): Promise<any[]> {
  const res = await h.admin('GET', `/apps/${app.id}/orders?limit=500`);
  expect(res.statusCode, res.body).toBe(200);
  return res.json().items;
}

export async function licenseCount(h: Harness, app: TestApp): Promise<number> {
  const res = await h.admin('GET', `/apps/${app.id}/licenses?limit=500`);
  expect(res.statusCode, res.body).toBe(200);
  return res.json().items.length;
}

/** The price of test/fixtures/sales/stripe/invoice.paid.json (a subscription's first bill). */
export const STRIPE_PRICE = 'price_1MtHZ8LkdIwHu7ixzyRd6pY1';

/** The n-th renewal of that subscription: its own event and bill. */
export const stripeRenewal = (n: number): Buffer => variant('stripe', 'invoice.paid', (e) => {
  e.id = `evt_renewal_${n}`; e.data.object.id = `in_renewal_${n}`; e.data.object.billing_reason = 'subscription_cycle';
});

export async function createTemplate(h: Harness, appId: string, body: Record<string, unknown>): Promise<Record<string, any>> {
  const res = await h.admin('POST', `/apps/${appId}/templates`, body);
  expect(res.statusCode, res.body).toBe(201);
  return res.json();
}

export async function order(h: Harness, app: TestApp, orderId: string): Promise<any> {
  return (await h.admin('GET', `/apps/${app.id}/orders/${orderId}`)).json();
}

/** Sells the Stripe subscription's first bill (it must be granted) and answers with its order. */
export async function sellStripe(h: Harness, app: TestApp): Promise<any> {
  const res = await post(h, 'stripe', app, fixture('stripe', 'invoice.paid'));
  expect(res.json().outcome, res.body).toBe('granted');
  return order(h, app, res.json().order_id);
}
