/**
 * What a store's event means for Tollgate, read from the payload each store
 * documents (test/fixtures/sales/ holds their samples). Only the fields named
 * here are read; anything else in a payload is ignored, so a store adding
 * fields changes nothing. A payload missing what its event type needs is a
 * 422 (the signature was good, the content is not something a store sends).
 */
import { createHash } from 'node:crypto';
import type { Provider } from '../../store/repositories/sales.js';
import { DomainError } from '../errors.js';

/** One bought line: the store's ids it can be mapped by (price first, then product), and how many units. */
export interface BoughtItem {
  keys: string[];
  quantity: number;
}

export type SaleAction =
  /**
   * `unpaidUntil`: set when the bill paid nothing (a subscription's free trial): the end of the period it covers
   * (ms; null when the store says none), and each minutes code grants only until then; absent for a paid bill.
   */
  | { kind: 'order'; orderRef: string; paymentRef: string | null; subscriptionRef: string | null; buyerEmail: string | null; customerRef: string | null; items: BoughtItem[]; unpaidUntil?: number | null }
  /** `billRef`: the store's id of the bill paid (Stripe invoice, Paddle transaction, Lemon Squeezy subscription invoice): one renewal each, whatever the event ids. */
  | { kind: 'renewal'; subscriptionRef: string; paymentRef: string | null; billRef: string }
  | { kind: 'link'; subscriptionRef: string; orderRef: string }
  | { kind: 'cancel'; subscriptionRef: string }
  /** `partial`: the store refunded part of the order (recorded, nothing revoked); `amount`: what it says was refunded so far, in its minor unit. */
  | { kind: 'refund'; orderRef: string | null; paymentRef: string | null; partial: boolean; amount: number | null }
  | { kind: 'ignore'; reason: string };

export interface SaleEvent {
  id: string;
  type: string;
  action: SaleAction;
  /** When the store says the event happened (ms), null when it says nothing readable: how long a revocation of an order not yet seen waits for it. */
  occurredAt: number | null;
}

type Json = Record<string, unknown>;

const invalid = (what: string) =>
  new DomainError('validation_error', `Invalid request: body.${what} is missing or not what this store sends`, [{ field: `body.${what}`, message: 'is missing or malformed' }]);

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

function obj(o: Json, key: string, path: string): Json {
  const v = o[key];
  if (!isObject(v)) throw invalid(path);
  return v;
}

/**
 * A non-empty id of at most 255 characters, without NUL and well-formed UTF-16 (so both stores keep the same
 * bytes: PostgreSQL refuses NUL, and a lone surrogate would be stored as U+FFFD); numbers (Lemon Squeezy's ids)
 * become their decimal text.
 */
function id(v: unknown): string | null {
  if (typeof v === 'number' && Number.isSafeInteger(v)) return String(v);
  if (typeof v === 'string' && v.length > 0 && v.length <= 255 && !v.includes('\0') && !/\p{Surrogate}/u.test(v)) return v;
  return null;
}

/** A part of a derived event id that a store may leave out (then empty), else an id as above: 422 otherwise. */
function optionalPart(o: Json, key: string, path: string): string {
  if (o[key] === undefined || o[key] === null) return '';
  return requiredId(o, key, path);
}

function requiredId(o: Json, key: string, path: string): string {
  const v = id(o[key]);
  if (v === null) throw invalid(path);
  return v;
}

/** Stripe sends an id, or the whole object when the field was expanded. */
function idOrObject(v: unknown): string | null {
  return isObject(v) ? id(v.id) : id(v);
}

function email(v: unknown): string | null {
  return typeof v === 'string' && v.length <= 320 && v.includes('@') && !v.includes('\0') ? v : null;
}

/** A money amount in the store's minor unit: a number (Stripe, Lemon Squeezy) or a decimal string (Paddle). */
function amount(v: unknown): number | null {
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return v;
  if (typeof v === 'string' && /^\d{1,15}$/.test(v)) return Number(v);
  return null;
}

/** An RFC 3339 time (Paddle, Lemon Squeezy) in ms, or null. */
function instant(v: unknown): number | null {
  if (typeof v !== 'string' || v.length > 64) return null;
  const ms = Date.parse(v);
  return Number.isFinite(ms) ? ms : null;
}

const TRIAL_UNIT_MS: Record<string, number> = { day: 86_400_000, week: 7 * 86_400_000, month: 30 * 86_400_000, year: 365 * 86_400_000 };

/** The shortest trial of a Paddle transaction's items (`price.trial_period`: interval and frequency) from `start`, or null. */
function trialEnd(items: unknown, start: number | null): number | null {
  if (start === null || !Array.isArray(items)) return null;
  const ends = items.filter(isObject).map((item) => {
    const t = isObject(item.price) && isObject(item.price.trial_period) ? item.price.trial_period : {};
    const unit = typeof t.interval === 'string' ? TRIAL_UNIT_MS[t.interval] : undefined;
    return unit !== undefined && typeof t.frequency === 'number' && Number.isSafeInteger(t.frequency) && t.frequency > 0 ? start + unit * t.frequency : null;
  }).filter((e): e is number => e !== null);
  return ends.length > 0 ? Math.min(...ends) : null;
}

function quantity(v: unknown): number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 1 ? Math.min(v, 1000) : 1;
}

const keys = (...candidates: unknown[]): string[] => [...new Set(candidates.map(idOrObject).filter((k): k is string => k !== null))];

export function parseEvent(provider: Provider, body: unknown): SaleEvent {
  if (!isObject(body)) throw new DomainError('validation_error', 'Invalid request: the body must be a JSON object', [{ field: 'body', message: 'must be a JSON object' }]);
  switch (provider) {
    case 'stripe':
      return stripe(body);
    case 'paddle':
      return paddle(body);
    case 'lemonsqueezy':
      return lemonSqueezy(body);
  }
}

// --- Stripe: https://docs.stripe.com/api/events/object

function stripe(body: Json): SaleEvent {
  const eventId = requiredId(body, 'id', 'id');
  const type = requiredId(body, 'type', 'type');
  const object = obj(obj(body, 'data', 'data'), 'object', 'data.object');
  // Stripe's `created`: seconds since the epoch, the same on every retry of the event.
  const created = typeof body.created === 'number' && Number.isSafeInteger(body.created) ? body.created * 1000 : null;
  return { id: eventId, type, action: stripeAction(type, object), occurredAt: created };
}

function stripeAction(type: string, o: Json): SaleAction {
  switch (type) {
    case 'checkout.session.completed':
    case 'checkout.session.async_payment_succeeded': {
      // A subscription's first payment is granted by its invoice.paid (billing_reason subscription_create), once.
      if (o.mode === 'subscription') return { kind: 'ignore', reason: 'subscription checkout: granted by invoice.paid' };
      if (o.payment_status !== 'paid' && o.payment_status !== 'no_payment_required') return { kind: 'ignore', reason: `payment_status ${String(o.payment_status)}` };
      const metadata = isObject(o.metadata) ? o.metadata : {};
      const details = isObject(o.customer_details) ? o.customer_details : {};
      // A webhook never carries line_items (Stripe sends them only when fetched with expand), so a session is
      // mapped by its metadata.tollgate_product or the payment link it came from; line items are read if present.
      const lineItems = isObject(o.line_items) && Array.isArray(o.line_items.data) ? o.line_items.data.filter(isObject) : [];
      const items: BoughtItem[] = lineItems.length > 0
        ? lineItems.map((l) => {
            const price = isObject(l.price) ? l.price : {};
            return { keys: keys(price.id, price.product), quantity: quantity(l.quantity) };
          })
        : [{ keys: keys(metadata.tollgate_product, o.payment_link), quantity: 1 }];
      return {
        kind: 'order', orderRef: requiredId(o, 'id', 'data.object.id'), paymentRef: idOrObject(o.payment_intent),
        subscriptionRef: null, buyerEmail: email(details.email) ?? email(o.customer_email), customerRef: idOrObject(o.customer), items,
      };
    }
    case 'invoice.paid': {
      // API versions before 2025-03-31 carry invoice.subscription and line.price; later ones parent.subscription_details and line.pricing.
      const parent = isObject(o.parent) && isObject(o.parent.subscription_details) ? o.parent.subscription_details : {};
      const subscription = idOrObject(o.subscription) ?? idOrObject(parent.subscription);
      // From 2025-03-31 an invoice names its payments only in `payments`, which a webhook carries only when expanded.
      const payments = isObject(o.payments) && Array.isArray(o.payments.data) ? o.payments.data.filter(isObject) : [];
      const payment = payments.map((p) => (isObject(p.payment) ? p.payment : {})).find((p) => p.payment_intent || p.charge) ?? {};
      const paymentRef = idOrObject(o.payment_intent) ?? idOrObject(o.charge) ?? idOrObject(payment.payment_intent) ?? idOrObject(payment.charge);
      if (o.billing_reason === 'subscription_cycle') {
        if (subscription === null) throw invalid('data.object.subscription');
        return { kind: 'renewal', subscriptionRef: subscription, paymentRef, billRef: requiredId(o, 'id', 'data.object.id') };
      }
      if (subscription !== null && o.billing_reason !== 'subscription_create') return { kind: 'ignore', reason: `billing_reason ${String(o.billing_reason)}` };
      const lines = isObject(o.lines) && Array.isArray(o.lines.data) ? o.lines.data.filter(isObject) : [];
      const items = lines.map((l) => {
        const price = isObject(l.price) ? l.price : {};
        const details = isObject(l.pricing) && isObject(l.pricing.price_details) ? l.pricing.price_details : {};
        return { keys: keys(price.id, details.price, price.product, details.product), quantity: quantity(l.quantity) };
      });
      // A first bill of nothing (a free trial, `amount_paid` 0) covers its lines' period (the trial), not a paid one.
      const free = subscription !== null && o.amount_paid === 0;
      const ends = lines.map((l) => (isObject(l.period) && typeof l.period.end === 'number' && Number.isSafeInteger(l.period.end) ? l.period.end * 1000 : null))
        .filter((e): e is number => e !== null);
      return {
        kind: 'order', orderRef: requiredId(o, 'id', 'data.object.id'), paymentRef, subscriptionRef: subscription,
        buyerEmail: email(o.customer_email), customerRef: idOrObject(o.customer), items,
        ...(free && { unpaidUntil: ends.length > 0 ? Math.max(...ends) : null }),
      };
    }
    case 'customer.subscription.deleted':
      return { kind: 'cancel', subscriptionRef: requiredId(o, 'id', 'data.object.id') };
    case 'charge.refunded': {
      // Only a full refund takes anything back; a partial one (a discount after the fact) is recorded and leaves the licenses.
      const partial = o.refunded !== true;
      const paymentRef = idOrObject(o.payment_intent) ?? id(o.id);
      const orderRef = idOrObject(o.invoice);
      // A partial refund naming no charge changes nothing: acknowledged (a 4xx makes Stripe retry it for days).
      if (partial && paymentRef === null && orderRef === null) return { kind: 'ignore', reason: 'partial refund naming no charge' };
      return { kind: 'refund', orderRef, paymentRef: paymentRef ?? requiredId(o, 'id', 'data.object.id'), partial, amount: amount(o.amount_refunded) };
    }
    default:
      return { kind: 'ignore', reason: `event type ${type} is not used` };
  }
}

// --- Paddle Billing: https://developer.paddle.com/webhooks/overview

function paddle(body: Json): SaleEvent {
  const eventId = requiredId(body, 'event_id', 'event_id');
  const type = requiredId(body, 'event_type', 'event_type');
  const data = obj(body, 'data', 'data');
  return { id: eventId, type, action: paddleAction(type, data), occurredAt: instant(body.occurred_at) };
}

function paddleAction(type: string, d: Json): SaleAction {
  switch (type) {
    case 'transaction.completed': {
      const subscription = id(d.subscription_id);
      if (d.origin === 'subscription_recurring') {
        if (subscription === null) throw invalid('data.subscription_id');
        const transaction = requiredId(d, 'id', 'data.id');
        return { kind: 'renewal', subscriptionRef: subscription, paymentRef: transaction, billRef: transaction };
      }
      // A plan change or a payment-method update is billed as a transaction of its subscription: no new sale.
      if (d.origin === 'subscription_update' || d.origin === 'subscription_payment_method_change') return { kind: 'ignore', reason: `origin ${String(d.origin)}` };
      if (!Array.isArray(d.items)) throw invalid('data.items');
      const items = d.items.filter(isObject).map((item) => {
        const price = isObject(item.price) ? item.price : {};
        return { keys: keys(price.id, item.price_id, price.product_id), quantity: quantity(item.quantity) };
      });
      const custom = isObject(d.custom_data) ? d.custom_data : {};
      // A Paddle transaction names its customer by id only; the email is read from custom_data when the checkout passed one.
      // A subscription's first transaction of nothing (a free trial: `details.totals.grand_total` "0") covers its
      // `billing_period`, which Paddle sets to the trial while the subscription is trialing.
      const details = isObject(d.details) && isObject(d.details.totals) ? d.details.totals : {};
      const free = subscription !== null && amount(details.grand_total ?? details.total) === 0;
      const period = isObject(d.billing_period) ? d.billing_period : {};
      return {
        kind: 'order', orderRef: requiredId(d, 'id', 'data.id'), paymentRef: null, subscriptionRef: subscription,
        buyerEmail: email(custom.email), customerRef: id(d.customer_id), items,
        ...(free && { unpaidUntil: instant(period.ends_at) ?? trialEnd(d.items, instant(period.starts_at) ?? instant(d.billed_at)) }),
      };
    }
    case 'subscription.canceled':
      return { kind: 'cancel', subscriptionRef: requiredId(d, 'id', 'data.id') };
    case 'adjustment.created':
    case 'adjustment.updated': {
      // A refund starts pending_approval and is approved later (adjustment.updated); a chargeback is approved at once.
      if (d.action !== 'refund' && d.action !== 'chargeback') return { kind: 'ignore', reason: `adjustment action ${String(d.action)}` };
      if (d.status !== 'approved') return { kind: 'ignore', reason: `adjustment status ${String(d.status)}` };
      const totals = isObject(d.totals) ? d.totals : {};
      return {
        kind: 'refund', orderRef: requiredId(d, 'transaction_id', 'data.transaction_id'), paymentRef: null,
        partial: d.type !== undefined && d.type !== 'full', amount: amount(totals.total),
      };
    }
    default:
      return { kind: 'ignore', reason: `event type ${type} is not used` };
  }
}

// --- Lemon Squeezy: https://docs.lemonsqueezy.com/help/webhooks

function lemonSqueezy(body: Json): SaleEvent {
  const meta = obj(body, 'meta', 'meta');
  const type = requiredId(meta, 'event_name', 'meta.event_name');
  const data = obj(body, 'data', 'data');
  const dataId = requiredId(data, 'id', 'data.id');
  const a = obj(data, 'attributes', 'data.attributes');
  // Lemon Squeezy sends no event id: the event name and the object it is about identify a delivery (a redelivery
  // carries both again). Each subscription payment is its own subscription-invoice object, so renewals stay apart.
  // Every part is bounded (an id: 255 characters, no NUL), so the key is too, alike on both stores.
  let eventId = `${type}:${optionalPart(data, 'type', 'data.type')}:${dataId}`;
  // Each refund of an order is an order_refunded about the same order: its status and the amount refunded so far
  // tell them apart, so a partial refund's key does not make the later full refund a duplicate.
  if (type === 'order_refunded') eventId += `:${optionalPart(a, 'status', 'data.attributes.status')}:${amount(a.refunded_amount) ?? ''}`;
  // Stripe's and Paddle's ids are at most 255 characters: so is this key (a real one is far shorter). A longer one
  // is kept by its digest, so the stored key and the primary key's index entry stay small on both stores.
  if (eventId.length > 255) eventId = `sha256:${createHash('sha256').update(eventId).digest('hex')}`;
  // No event time: the object's `updated_at` is when it was refunded or cancelled.
  return { id: eventId, type, action: lemonAction(type, dataId, a), occurredAt: instant(a.updated_at) };
}

function lemonAction(type: string, dataId: string, a: Json): SaleAction {
  switch (type) {
    case 'order_created': {
      if (a.status !== 'paid') return { kind: 'ignore', reason: `order status ${String(a.status)}` };
      const item = obj(a, 'first_order_item', 'data.attributes.first_order_item');
      return {
        kind: 'order', orderRef: dataId, paymentRef: null, subscriptionRef: null, buyerEmail: email(a.user_email), customerRef: id(a.customer_id),
        items: [{ keys: keys(item.variant_id, item.price_id, item.product_id), quantity: quantity(item.quantity) }],
      };
    }
    case 'subscription_created':
      return { kind: 'link', subscriptionRef: dataId, orderRef: requiredId(a, 'order_id', 'data.attributes.order_id') };
    case 'subscription_payment_success':
      // The first payment is the order_created sale; only renewals extend.
      if (a.billing_reason !== 'renewal') return { kind: 'ignore', reason: `billing_reason ${String(a.billing_reason)}` };
      return { kind: 'renewal', subscriptionRef: requiredId(a, 'subscription_id', 'data.attributes.subscription_id'), paymentRef: dataId, billRef: dataId };
    case 'subscription_cancelled':
    case 'subscription_expired':
      return { kind: 'cancel', subscriptionRef: dataId };
    case 'order_refunded':
      // status `refunded` (the whole order; `refunded: true`), or `partial_refund` with the amount refunded so far.
      return { kind: 'refund', orderRef: dataId, paymentRef: null, partial: a.status !== 'refunded', amount: amount(a.refunded_amount) };
    default:
      return { kind: 'ignore', reason: `event type ${type} is not used` };
  }
}
