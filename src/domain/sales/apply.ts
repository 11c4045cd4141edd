/**
 * A verified store event, applied in ONE unit of work: the event id is
 * claimed first (its unique key makes every redelivery a no-op, also 20 at
 * once and on two nodes), then the order, its licenses, renewals and
 * revocations, and the audit entry. Nothing of it exists unless all of it
 * committed. The rules are docs/decisions.md's (issue 23, "Sales in").
 */
import { randomUUID } from 'node:crypto';
import type { Repositories } from '../../store/index.js';
import type { LicenseRecord, TemplateRecord } from '../../store/records.js';
import type { OrderRecord, ProductMappingRecord, Provider } from '../../store/repositories/sales.js';
import { codeFromMask, DEFAULT_MASK, viewLicense } from '../admin/licenses.js';
import { summary } from '../admin/users.js';
import type { AdminServices } from '../admin/audit.js';
import { DomainError } from '../errors.js';
import { endHolding, renewRedemption, shortenHolding } from '../licenses.js';
import { applyLicense, type LicenseEffect } from '../membership.js';
import { licenseData } from '../outbox/data.js';
import { MAX_TIME } from '../validation.js';
import type { Services } from '../services.js';
import { write, type AdminWork } from '../unit-of-work.js';
import type { BoughtItem, SaleAction, SaleEvent } from './parse.js';

/** A store order cannot mint more than this many codes, whatever quantity it claims. */
export const MAX_CODES_PER_ORDER = 1000;

export type SaleOutcome =
  | 'granted' | 'renewed' | 'linked' | 'cancelled' | 'refunded' | 'partially_refunded' | 'renewal_refunded'
  | 'duplicate' | 'unknown_product' | 'unknown_order' | 'unknown_subscription' | 'already_ended' | 'ignored';

export interface SaleAnswer {
  received: true;
  event_id: string;
  outcome: SaleOutcome;
  /** Tollgate's id of the order the event was about, when there is one. */
  order_id: string | null;
  /** How many licenses this event created (never the codes: a store keeps webhook answers in its logs). */
  licenses_created: number;
}

/**
 * A full refund or a cancellation of an order Tollgate has not seen is answered 409 (nothing stored, so the store
 * delivers it again) while the store's event is at most this old: the purchase may still be on its way or in
 * flight beside it (an event without a readable time too). Older, it is acknowledged as `unknown_order` or
 * `unknown_subscription` (a sale Tollgate never granted: another product of the store account, one from before
 * the integration), so no store retries it for days.
 */
export const AWAIT_ORDER_MS = 24 * 60 * 60_000;

function awaitOrder(event: SaleEvent, now: number): void {
  // Every store dates its events; one without a readable time is taken as new (its retries stop only when it is applied).
  if (event.occurredAt === null || now - event.occurredAt <= AWAIT_ORDER_MS) {
    throw new DomainError('conflict', 'The order this event is about has not arrived yet; the store will deliver this event again');
  }
}

interface Applied {
  outcome: SaleOutcome;
  orderId: string | null;
  created: number;
  details: Record<string, unknown>;
}

export async function applySale(s: Services, appId: string, provider: Provider, event: SaleEvent): Promise<SaleAnswer> {
  const now = s.clock();
  // The store is the actor of its own events in the audit log.
  const acting: AdminServices = { ...s, actor: `integration:${provider}` };
  const applied = await write(acting, async (w) => {
    const claimed = await w.tx.sales.claimEvent({ appId, provider, eventId: event.id, eventType: event.type, outcome: 'processing', orderId: null, receivedAt: now });
    if (!claimed) return null;
    const result = await apply(s, w, appId, provider, event, now);
    await w.tx.sales.settleEvent(appId, provider, event.id, result.outcome, result.orderId);
    if (result.outcome !== 'ignored') {
      await w.audit('sale.apply', appId, result.orderId, { provider, outcome: result.outcome, event_id: event.id, event_type: event.type, ...result.details });
    }
    return result;
  });
  const answer: SaleAnswer = applied === null
    ? { received: true, event_id: event.id, outcome: 'duplicate', order_id: (await s.store.sales.findEvent(appId, provider, event.id))?.orderId ?? null, licenses_created: 0 }
    : { received: true, event_id: event.id, outcome: applied.outcome, order_id: applied.orderId, licenses_created: applied.created };
  const line = {
    event: 'sale', appId, provider, eventId: event.id, type: event.type, outcome: answer.outcome, orderId: answer.order_id ?? undefined,
    ...(answer.outcome === 'ignored' && applied ? { reason: applied.details.reason } : {}),
  };
  // An unknown product or order is the operator's to look at (a missing mapping): said at warn, never a 500.
  if (answer.outcome.startsWith('unknown_')) s.log.warn({ ...line, ...(applied?.details ?? {}) }, 'sale event acknowledged but not applied');
  else s.log.info(line, 'sale event');
  return answer;
}

async function apply(s: Services, w: AdminWork, appId: string, provider: Provider, event: SaleEvent, now: number): Promise<Applied> {
  const a: SaleAction = event.action;
  const tx = w.tx;
  switch (a.kind) {
    case 'ignore':
      return { outcome: 'ignored', orderId: null, created: 0, details: { reason: a.reason } };
    case 'order':
      return order(s, w, appId, provider, event, a, now);
    case 'link': {
      const found = await tx.sales.findOrderByRef(appId, provider, a.orderRef);
      // Lemon Squeezy sends subscription_created and order_created together, in either order. Answering 409 (and
      // recording nothing) makes the store deliver this one again, by when the order is there.
      if (!found) throw new DomainError('conflict', 'The order this subscription belongs to has not arrived yet; the store will deliver this event again');
      await tx.sales.setSubscription(found.id, a.subscriptionRef, now);
      return { outcome: 'linked', orderId: found.id, created: 0, details: { subscription_ref: a.subscriptionRef } };
    }
    case 'renewal': {
      const found = await tx.sales.findOrderBySubscription(appId, provider, a.subscriptionRef);
      if (!found) return { outcome: 'unknown_subscription', orderId: null, created: 0, details: { subscription_ref: a.subscriptionRef } };
      await tx.sales.lockOrder(found.id, now);
      const current = await tx.sales.findOrder(appId, found.id);
      if (current?.status !== 'active') return { outcome: 'already_ended', orderId: found.id, created: 0, details: { status: current?.status ?? null } };
      // Each bill renews once, kept with the order for as long as the order is: a resend after the event's id was
      // forgotten (INTEGRATION_EVENT_RETENTION_DAYS), or another event type about the same bill, extends nothing.
      if (!(await tx.sales.claimRenewal(found.id, a.billRef, now))) {
        return { outcome: 'duplicate', orderId: found.id, created: 0, details: { subscription_ref: a.subscriptionRef, bill_ref: a.billRef } };
      }
      const extended = await renew(w, appId, found, now);
      return { outcome: 'renewed', orderId: found.id, created: 0, details: { subscription_ref: a.subscriptionRef, bill_ref: a.billRef, ...extended } };
    }
    case 'cancel': {
      const found = await tx.sales.findOrderBySubscription(appId, provider, a.subscriptionRef);
      if (!found) {
        // Before (or beside) its purchase: 409 so the store delivers it again (docs/decisions.md, "A revocation waits for its order").
        awaitOrder(event, now);
        return { outcome: 'unknown_subscription', orderId: null, created: 0, details: { subscription_ref: a.subscriptionRef } };
      }
      if (!(await tx.sales.advanceStatus(found.id, 'cancelled', now))) return { outcome: 'already_ended', orderId: found.id, created: 0, details: {} };
      return { outcome: 'cancelled', orderId: found.id, created: 0, details: await revoke(w, appId, found, 'cancel', now) };
    }
    case 'refund': {
      const found = (a.orderRef !== null ? await tx.sales.findOrderByRef(appId, provider, a.orderRef) : undefined)
        ?? (a.paymentRef !== null ? await tx.sales.findOrderByPayment(appId, provider, a.paymentRef) : undefined);
      if (a.partial) {
        // A partial refund (usually a goodwill discount) is recorded against the order, in the audit log, and takes
        // nothing back; that of a renewal's bill (a Stripe invoice or Paddle transaction of a cycle) against the
        // order it renewed. One naming no order takes nothing back either: acknowledged and logged at info.
        const renewed = found ?? (a.orderRef !== null ? await tx.sales.findOrderByRenewal(appId, provider, a.orderRef) : undefined);
        if (!renewed) return { outcome: 'ignored', orderId: null, created: 0, details: { reason: 'partial refund of no order Tollgate knows', order_ref: a.orderRef, payment_ref: a.paymentRef } };
        return { outcome: 'partially_refunded', orderId: renewed.id, created: 0, details: { refunded_amount: a.amount, status: renewed.status, ...(found ? {} : { bill_ref: a.orderRef }) } };
      }
      // A full refund or chargeback of a renewal's bill takes back that renewal's time, not the order.
      const renewed = found ? undefined : a.orderRef !== null ? await tx.sales.findOrderByRenewal(appId, provider, a.orderRef) : undefined;
      if (renewed && a.orderRef !== null) return refundRenewal(w, appId, renewed, a.orderRef, now);
      if (!found) {
        awaitOrder(event, now);
        return { outcome: 'unknown_order', orderId: null, created: 0, details: { order_ref: a.orderRef, payment_ref: a.paymentRef, partial: a.partial } };
      }
      if (!(await tx.sales.advanceStatus(found.id, 'refunded', now))) return { outcome: 'already_ended', orderId: found.id, created: 0, details: {} };
      return { outcome: 'refunded', orderId: found.id, created: 0, details: await revoke(w, appId, found, 'refund', now) };
    }
  }
}

/** What a mapping makes each code of: its own minutes or lifetime, or its template's (null: the template is gone). */
interface Made {
  minutes: number | null;
  lifetime: boolean;
  template: TemplateRecord | null;
}

/**
 * Undefined when the mapping grants nothing: a mapping's template cannot be deleted under it (the template's row
 * lock and migration 16's foreign key), so only a row written by other means; the line is then unmapped,
 * acknowledged and logged.
 */
function madeOf(m: ProductMappingRecord, templates: Map<string, TemplateRecord>): Made | undefined {
  if (m.templateId !== null) {
    const t = templates.get(m.templateId);
    return t && { minutes: t.grantsLifetime ? null : t.minutes, lifetime: t.grantsLifetime, template: t };
  }
  if (!m.lifetime && m.minutes === null) return undefined;
  return { minutes: m.lifetime ? null : m.minutes, lifetime: m.lifetime, template: null };
}

/** The mapping of a bought line: its first key (price before product) the operator mapped. */
function mappingOf(item: BoughtItem, mappings: Map<string, ProductMappingRecord>): ProductMappingRecord | undefined {
  for (const key of item.keys) {
    const m = mappings.get(key);
    if (m) return m;
  }
  return undefined;
}

async function order(s: Services, w: AdminWork, appId: string, provider: Provider, event: SaleEvent, a: Extract<SaleAction, { kind: 'order' }>, now: number): Promise<Applied> {
  const tx = w.tx;
  const mappings = new Map((await tx.sales.mappings(appId, provider)).map((m) => [m.productKey, m]));
  const matched = a.items.map((item) => ({ item, mapping: mappingOf(item, mappings) }));
  // The templates of the mappings this order's lines matched (not of every mapping of the app), read in this
  // transaction: the sold licenses copy them as they are now.
  const templates = new Map<string, TemplateRecord>();
  for (const { mapping } of matched) {
    if (!mapping || mapping.templateId === null || templates.has(mapping.templateId)) continue;
    const t = await tx.templates.findById(appId, mapping.templateId);
    if (t) templates.set(t.id, t);
  }
  const grants = matched.map((g) => ({ ...g, made: g.mapping && madeOf(g.mapping, templates) }));
  const unmapped = grants.filter((g) => !g.made).map((g) => g.item.keys);
  const mapped = grants.filter((g): g is { item: BoughtItem; mapping: ProductMappingRecord; made: Made } => g.made !== undefined);
  if (mapped.length === 0) return { outcome: 'unknown_product', orderId: null, created: 0, details: { order_ref: a.orderRef, unmapped } };
  const record: OrderRecord = {
    id: randomUUID(), appId, provider, orderRef: a.orderRef, paymentRef: a.paymentRef, subscriptionRef: a.subscriptionRef, eventId: event.id,
    buyerEmail: a.buyerEmail, customerRef: a.customerRef, status: 'active', createdAt: now, updatedAt: now,
  };
  // Another event of the same order (a store sending two kinds for one sale) came first: it granted, this one does not.
  if (!(await tx.sales.insertOrder(record))) {
    const existing = await tx.sales.findOrderByRef(appId, provider, a.orderRef);
    return { outcome: 'duplicate', orderId: existing?.id ?? null, created: 0, details: { order_ref: a.orderRef } };
  }
  // A free trial's bill: each minutes code grants until the trial's end only (never past the minutes sold), and the
  // order's row keeps the sold minutes, which the first paid bill (a renewal) adds from there. Lifetime is bound to
  // the subscription (a cancellation in the trial revokes it). docs/decisions.md, "A free trial grants its trial".
  const trialMinutes = a.unpaidUntil === undefined ? undefined
    : a.unpaidUntil === null ? 0 : Math.max(0, Math.ceil((Math.min(a.unpaidUntil, MAX_TIME) - now) / 60_000));
  const licenses: LicenseRecord[] = [];
  for (const { item, mapping, made } of mapped) {
    const count = Math.min(mapping.codesPerUnit * item.quantity, MAX_CODES_PER_ORDER - licenses.length);
    const t = made.template;
    for (let i = 0; i < count; ) {
      const license: LicenseRecord = {
        id: randomUUID(), appId, code: codeFromMask(DEFAULT_MASK, s.random),
        minutes: made.minutes !== null && trialMinutes !== undefined ? Math.min(made.minutes, trialMinutes) : made.minutes,
        grantsLifetime: made.lifetime, revokesLifetime: false, note: `${provider} order ${a.orderRef}`.slice(0, 1000),
        // A template's redeem window is for codes an operator hands out; a sold code was paid for and never dies
        // unredeemed, while its renewals extend it (docs/decisions.md, "Sold codes have no redeem window").
        expiresAt: null, createdAt: now, usedAt: null, usedByUserId: null,
        // Without a template a store's sale is an implicit one (issue 24): time only, no entitlements or limits of its own.
        templateId: t?.id ?? null, entitlements: t?.entitlements ?? [], maxDevices: t?.maxDevices ?? null, maxSeats: t?.maxSeats ?? null,
        heartbeatSeconds: t?.heartbeatSeconds ?? null,
      };
      // A duplicate code (astronomically rare at 125 bits) is drawn again, as createLicenses does.
      if (!(await tx.licenses.insert(license))) continue;
      await tx.sales.insertOrderLicense({ orderId: record.id, licenseId: license.id, code: license.code, minutes: made.minutes, lifetime: license.grantsLifetime, renewalMinutes: 0, state: 'issued' });
      i++;
      licenses.push(license);
    }
  }
  const created = licenses.length;
  // The vendor's mailer (a webhook endpoint) sends the codes to the buyer: this event, to the app's own endpoints, carries them.
  await w.emit('license.created', appId, {
    count: created, licenses: licenses.map(viewLicense), email: a.buyerEmail, order_id: record.id, order_ref: a.orderRef,
    subscription_ref: a.subscriptionRef, provider,
  });
  // The codes stay out of the audit log, as for createLicenses: they are credentials until redeemed.
  return {
    outcome: 'granted', orderId: record.id, created,
    details: { order_ref: a.orderRef, subscription_ref: a.subscriptionRef, licenses: created, ...(trialMinutes !== undefined && { trial_minutes: trialMinutes }), products: mapped.map((g) => g.mapping.productKey),
      templates: [...new Set(mapped.flatMap((g) => (g.made.template ? [g.made.template.id] : [])))], unmapped },
  };
}

/**
 * A renewal extends each license of the subscription's order by the minutes it was sold with: an unredeemed
 * code gains them (whoever redeems it gets the whole), a redeemed one extends its redeemer's membership. A
 * lifetime license has nothing to extend.
 */
async function renew(w: AdminWork, appId: string, found: OrderRecord, now: number): Promise<Record<string, unknown>> {
  const tx = w.tx;
  let codes = 0;
  let members = 0;
  for (const ol of await tx.sales.orderLicenses(found.id)) {
    if (ol.state !== 'issued' || ol.lifetime || ol.minutes === null) continue;
    // Conditional on used_at IS NULL: a code redeemed meanwhile falls through to its redeemer below.
    if (await tx.sales.addMinutesToUnredeemed(appId, ol.licenseId, ol.minutes)) {
      // Recorded as the redeemer's would be: whoever redeems the code gets them, and a full refund takes them back.
      await tx.sales.addRenewalMinutes(found.id, ol.licenseId, ol.minutes);
      const extended = await tx.licenses.findById(appId, ol.licenseId);
      if (extended) await w.emit('license.extended', appId, { license: licenseData(extended), minutes_added: ol.minutes, order_id: found.id, provider: found.provider });
      codes++;
      continue;
    }
    const license = await tx.licenses.findById(appId, ol.licenseId);
    const userId = license?.usedByUserId;
    if (!userId) continue;
    const effect: LicenseEffect = { minutes: ol.minutes, grantsLifetime: false, revokesLifetime: false };
    if (await changeMembership(w, appId, userId, now, (m) => applyLicense(m, effect, now))) {
      await tx.sales.addRenewalMinutes(found.id, ol.licenseId, ol.minutes);
      // What the license lends stacks as a redemption of the renewed minutes would (docs/decisions.md, "Each
      // entitlement and each template's limits stack on themselves").
      await renewRedemption(tx, license!, userId, ol.minutes, now);
      members++;
    }
  }
  return { codes_extended: codes, memberships_extended: members };
}

/**
 * A full refund or chargeback of one renewal's bill (docs/decisions.md, "A refunded renewal takes back its own
 * period"): each license of the order gives back the minutes that renewal added, from the code while unredeemed,
 * else from its redeemer's membership (never before now) and what the redemption holds. The order stays as it
 * is; its other periods were paid. Once per bill: the refund claims `refunded:<bill>` beside the bill's renewal.
 */
async function refundRenewal(w: AdminWork, appId: string, found: OrderRecord, billRef: string, now: number): Promise<Applied> {
  const tx = w.tx;
  await tx.sales.lockOrder(found.id, now);
  const current = await tx.sales.findOrder(appId, found.id);
  // A refunded order gave everything back already, this renewal's minutes with the rest.
  if (!current || current.status === 'refunded') return { outcome: 'already_ended', orderId: found.id, created: 0, details: { status: current?.status ?? null, bill_ref: billRef } };
  if (!(await tx.sales.claimRenewal(found.id, `refunded:${billRef}`, now))) return { outcome: 'duplicate', orderId: found.id, created: 0, details: { bill_ref: billRef } };
  let codes = 0;
  let members = 0;
  let minutesTaken = 0;
  for (const ol of await tx.sales.orderLicenses(found.id)) {
    if (ol.state !== 'issued' || ol.lifetime || ol.minutes === null) continue;
    // What this renewal added to this license: its minutes, unless the renewal could not add them (then nothing is recorded).
    const take = Math.min(ol.minutes, ol.renewalMinutes);
    if (take <= 0) continue;
    if (await tx.sales.takeMinutesFromUnredeemed(appId, ol.licenseId, take)) {
      await tx.sales.addRenewalMinutes(found.id, ol.licenseId, -take);
      codes++;
      minutesTaken += take;
      continue;
    }
    const license = await tx.licenses.findById(appId, ol.licenseId);
    const userId = license?.usedByUserId;
    if (!userId) continue;
    const changed = await changeMembership(w, appId, userId, now, (m) =>
      m.isLifetime || m.activeUntil === null ? m : { isLifetime: false, activeUntil: Math.max(now, m.activeUntil - take * 60_000) },
    );
    if (!changed) continue;
    await tx.sales.addRenewalMinutes(found.id, ol.licenseId, -take);
    // What the redemption lends gives the renewal's minutes back too: each of its ends `take` earlier, never before now.
    await shortenHolding(tx, ol.licenseId, userId, take, now);
    members++;
    minutesTaken += take;
  }
  return { outcome: 'renewal_refunded', orderId: found.id, created: 0, details: { bill_ref: billRef, codes_shortened: codes, memberships_shortened: members, minutes_taken: minutesTaken } };
}

/**
 * Cancellation and refund (docs/decisions.md):
 * - an unredeemed code is deleted (both);
 * - a redeemed lifetime code: what it lends ends, and the redeemer's lifetime is revoked unless another lifetime
 *   license the redeemer holds, or the operator's grant, still gives it (both);
 * - a redeemed minutes code: on a refund, the minutes it and its renewals added are taken from the
 *   membership (never below now); on a cancellation the redeemer keeps the time already paid for.
 */
async function revoke(w: AdminWork, appId: string, found: OrderRecord, mode: 'cancel' | 'refund', now: number): Promise<Record<string, unknown>> {
  const tx = w.tx;
  await tx.sales.lockOrder(found.id, now);
  let deleted = 0;
  let lifetimeRevoked = 0;
  let lifetimeKept = 0;
  let minutesTaken = 0;
  let kept = 0;
  for (const ol of await tx.sales.orderLicenses(found.id)) {
    if (ol.state !== 'issued') continue;
    const before = await tx.licenses.findById(appId, ol.licenseId);
    const reason = mode === 'refund' ? 'refund' : 'cancellation';
    const revoked = (license: LicenseRecord, userId: string | null) =>
      w.emit('license.revoked', appId, { license: licenseData(license), order_id: found.id, provider: found.provider, reason, deleted: userId === null, user_id: userId });
    if (before && (await tx.licenses.deleteUnused(appId, ol.licenseId))) {
      await tx.sales.markRevoked(found.id, ol.licenseId);
      await revoked(before, null);
      deleted++;
      continue;
    }
    // Redeemed: read again, since a redemption may have committed between the read above and the delete.
    const license = await tx.licenses.findById(appId, ol.licenseId);
    const userId = license?.usedByUserId ?? null;
    if (license === undefined || userId === null) {
      // Deleted by an operator already: nothing left to take back.
      await tx.sales.markRevoked(found.id, ol.licenseId);
      continue;
    }
    if (ol.lifetime) {
      // What this license lends (a template's entitlements and limits) ends with the lifetime it granted; what other
      // licenses lend stays. Unlike an operator's revocation (endLifetimeHoldings), a refund takes back one sale.
      await endHolding(tx, ol.licenseId, userId, now);
      // Lifetime is one flag: only what this sale granted is taken. It stays while the user holds it from
      // elsewhere: another lifetime license redeemed and not taken back, or the operator's grant (docs/decisions.md,
      // "A sale's refund takes back its own lifetime only"). Read under the user's row lock.
      await tx.users.lockRow(userId, now);
      if (await tx.sales.otherLifetimeSource(appId, userId, ol.licenseId)) lifetimeKept++;
      else await changeMembership(w, appId, userId, now, (m) => ({ isLifetime: false, activeUntil: m.activeUntil }));
      await tx.sales.markRevoked(found.id, ol.licenseId);
      await revoked(license, userId);
      lifetimeRevoked++;
      continue;
    }
    if (mode === 'cancel') {
      kept++;
      continue;
    }
    const take = ((ol.minutes ?? 0) + ol.renewalMinutes) * 60_000;
    await changeMembership(w, appId, userId, now, (m) =>
      m.isLifetime || m.activeUntil === null ? m : { isLifetime: false, activeUntil: Math.max(now, m.activeUntil - take) },
    );
    await endHolding(tx, ol.licenseId, userId, now);
    await tx.sales.markRevoked(found.id, ol.licenseId);
    await revoked(license, userId);
    minutesTaken += (ol.minutes ?? 0) + ol.renewalMinutes;
  }
  return { codes_deleted: deleted, lifetime_revoked: lifetimeRevoked, lifetime_kept: lifetimeKept, minutes_taken: minutesTaken, memberships_kept: kept };
}

/** Read-modify-write of one membership under its row lock, with its user.updated event; false when the user is gone. Caches drop after commit. */
async function changeMembership(
  w: AdminWork, appId: string, userId: string, now: number,
  next: (m: { isLifetime: boolean; activeUntil: number | null }) => { isLifetime: boolean; activeUntil: number | null },
): Promise<boolean> {
  const tx: Repositories = w.tx;
  await tx.users.lockRow(userId, now);
  const user = await tx.users.findById(appId, userId);
  if (!user) return false;
  const m = next({ isLifetime: user.isLifetime, activeUntil: user.activeUntil });
  await tx.users.setMembership(userId, m.isLifetime, m.activeUntil, now);
  await w.emit('user.updated', appId, summary({ ...user, isLifetime: m.isLifetime, activeUntil: m.activeUntil }, now));
  w.changed({ user: userId });
  return true;
}
