import type { Queryable, Row } from '../db.js';
import { AFTER_CURSOR, cursorParams, SEEK_CURSOR, seekParam, toPage, type Cursor } from '../pagination.js';
import type { Page } from '../records.js';
import { nullableNumber } from '../rows.js';

/** The stores Tollgate takes sales from (docs/integrations.md). */
export type Provider = 'stripe' | 'paddle' | 'lemonsqueezy';
export const PROVIDERS: readonly Provider[] = ['stripe', 'paddle', 'lemonsqueezy'];

export interface IntegrationRecord {
  appId: string;
  provider: Provider;
  /** Sealed at rest (signing/seal.ts); opened only to verify a delivery. */
  signingSecret: string;
  /** The secret's last four characters, so an operator can tell which one is set. */
  secretHint: string;
  enabled: boolean;
  createdAt: number;
  updatedAt: number;
}

/**
 * What one unit of a store product grants: `codesPerUnit` licenses of `minutes` each, or lifetime ones, or
 * made from the license template `templateId` (then minutes is null and lifetime false: the template says).
 */
export interface ProductMappingRecord {
  id: string;
  appId: string;
  provider: Provider;
  productKey: string;
  minutes: number | null;
  lifetime: boolean;
  templateId: string | null;
  codesPerUnit: number;
  note: string | null;
  createdAt: number;
  updatedAt: number;
}

export type OrderStatus = 'active' | 'cancelled' | 'refunded';

export interface OrderRecord {
  id: string;
  appId: string;
  provider: Provider;
  orderRef: string;
  paymentRef: string | null;
  subscriptionRef: string | null;
  eventId: string;
  buyerEmail: string | null;
  customerRef: string | null;
  status: OrderStatus;
  createdAt: number;
  updatedAt: number;
}

/** `revoked`: the code was deleted unredeemed, or what it gave was taken back. */
export type OrderLicenseState = 'issued' | 'revoked';

export interface OrderLicenseRecord {
  orderId: string;
  licenseId: string;
  code: string;
  minutes: number | null;
  lifetime: boolean;
  /** Minutes renewals added to the redeemer's membership (not to the code): taken back with the rest on a refund. */
  renewalMinutes: number;
  state: OrderLicenseState;
}

export interface SaleEventRecord {
  appId: string;
  provider: Provider;
  eventId: string;
  eventType: string;
  outcome: string;
  orderId: string | null;
  receivedAt: number;
}

const INTEGRATION = 'app_id, provider, signing_secret, secret_hint, enabled, created_at, updated_at';
const MAPPING = 'id, app_id, provider, product_key, minutes, lifetime, template_id, codes_per_unit, note, created_at, updated_at';
const ORDER = 'id, app_id, provider, order_ref, payment_ref, subscription_ref, event_id, buyer_email, customer_ref, status, created_at, updated_at';
const ORDER_LICENSE = 'order_id, license_id, code, minutes, lifetime, renewal_minutes, state';

const toIntegration = (r: Row): IntegrationRecord => ({
  appId: r.app_id as string, provider: r.provider as Provider, signingSecret: r.signing_secret as string, secretHint: r.secret_hint as string,
  enabled: Number(r.enabled) === 1, createdAt: Number(r.created_at), updatedAt: Number(r.updated_at),
});
const toMapping = (r: Row): ProductMappingRecord => ({
  id: r.id as string, appId: r.app_id as string, provider: r.provider as Provider, productKey: r.product_key as string,
  minutes: nullableNumber(r.minutes), lifetime: Number(r.lifetime) === 1, templateId: (r.template_id as string | null) ?? null, codesPerUnit: Number(r.codes_per_unit),
  note: (r.note as string | null) ?? null, createdAt: Number(r.created_at), updatedAt: Number(r.updated_at),
});
const toOrder = (r: Row): OrderRecord => ({
  id: r.id as string, appId: r.app_id as string, provider: r.provider as Provider, orderRef: r.order_ref as string,
  paymentRef: (r.payment_ref as string | null) ?? null, subscriptionRef: (r.subscription_ref as string | null) ?? null,
  eventId: r.event_id as string, buyerEmail: (r.buyer_email as string | null) ?? null, customerRef: (r.customer_ref as string | null) ?? null,
  status: r.status as OrderStatus, createdAt: Number(r.created_at), updatedAt: Number(r.updated_at),
});
const toOrderLicense = (r: Row): OrderLicenseRecord => ({
  orderId: r.order_id as string, licenseId: r.license_id as string, code: r.code as string, minutes: nullableNumber(r.minutes),
  lifetime: Number(r.lifetime) === 1, renewalMinutes: Number(r.renewal_minutes), state: r.state as OrderLicenseState,
});

export function salesRepository(q: Queryable) {
  return {
    // --- Integrations (one per app and provider)

    /** Inserts or replaces the secret of the app's integration with this provider. */
    async upsertIntegration(i: IntegrationRecord): Promise<void> {
      await q.run(
        `INSERT INTO integrations (${INTEGRATION}) VALUES (?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (app_id, provider) DO UPDATE SET signing_secret = excluded.signing_secret, secret_hint = excluded.secret_hint,
           enabled = excluded.enabled, updated_at = excluded.updated_at`,
        [i.appId, i.provider, i.signingSecret, i.secretHint, i.enabled, i.createdAt, i.updatedAt],
      );
    },

    async setIntegrationEnabled(appId: string, provider: Provider, enabled: boolean, now: number): Promise<boolean> {
      return (await q.run('UPDATE integrations SET enabled = ?, updated_at = ? WHERE app_id = ? AND provider = ?', [enabled, now, appId, provider])) === 1;
    },

    async findIntegration(appId: string, provider: Provider): Promise<IntegrationRecord | undefined> {
      const r = await q.one(`SELECT ${INTEGRATION} FROM integrations WHERE app_id = ? AND provider = ?`, [appId, provider]);
      return r && toIntegration(r);
    },

    async integrations(appId: string): Promise<IntegrationRecord[]> {
      return (await q.all(`SELECT ${INTEGRATION} FROM integrations WHERE app_id = ? ORDER BY provider`, [appId])).map(toIntegration);
    },

    /** Every stored signing secret (for `tollgate reseal-keys`, which moves them to the current KEK with the signing keys). */
    async storedSecrets(): Promise<{ appId: string; provider: Provider; signingSecret: string }[]> {
      return (await q.all('SELECT app_id, provider, signing_secret FROM integrations ORDER BY app_id, provider')).map((r) => ({
        appId: r.app_id as string, provider: r.provider as Provider, signingSecret: r.signing_secret as string,
      }));
    },

    /** Conditional on the stored form read before, so a secret replaced meanwhile is left as it now is. */
    async replaceStoredSecret(appId: string, provider: Provider, before: string, after: string): Promise<boolean> {
      return (await q.run('UPDATE integrations SET signing_secret = ? WHERE app_id = ? AND provider = ? AND signing_secret = ?', [after, appId, provider, before])) === 1;
    },

    /** Its product mappings go with it (cascade); orders and events stay, as the history of what was sold. */
    async deleteIntegration(appId: string, provider: Provider): Promise<boolean> {
      return (await q.run('DELETE FROM integrations WHERE app_id = ? AND provider = ?', [appId, provider])) === 1;
    },

    // --- Product mappings

    /** False when the app already maps this product key for this provider. */
    async insertMapping(m: ProductMappingRecord): Promise<boolean> {
      return (await q.run(
        `INSERT INTO integration_products (${MAPPING}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (app_id, provider, product_key) DO NOTHING`,
        [m.id, m.appId, m.provider, m.productKey, m.minutes, m.lifetime, m.templateId, m.codesPerUnit, m.note, m.createdAt, m.updatedAt],
      )) === 1;
    },

    async updateMapping(m: ProductMappingRecord): Promise<boolean> {
      return (await q.run(
        'UPDATE integration_products SET minutes = ?, lifetime = ?, template_id = ?, codes_per_unit = ?, note = ?, updated_at = ? WHERE id = ? AND app_id = ? AND provider = ?',
        [m.minutes, m.lifetime, m.templateId, m.codesPerUnit, m.note, m.updatedAt, m.id, m.appId, m.provider],
      )) === 1;
    },

    async findMapping(appId: string, provider: Provider, id: string): Promise<ProductMappingRecord | undefined> {
      const r = await q.one(`SELECT ${MAPPING} FROM integration_products WHERE id = ? AND app_id = ? AND provider = ?`, [id, appId, provider]);
      return r && toMapping(r);
    },

    async mappings(appId: string, provider: Provider): Promise<ProductMappingRecord[]> {
      return (await q.all(`SELECT ${MAPPING} FROM integration_products WHERE app_id = ? AND provider = ? ORDER BY product_key`, [appId, provider])).map(toMapping);
    },

    /** The product keys of the mappings (any store) that sell this template: a template in use is not deleted. */
    async mappingsOfTemplate(appId: string, templateId: string): Promise<{ provider: Provider; productKey: string }[]> {
      return (await q.all('SELECT provider, product_key FROM integration_products WHERE app_id = ? AND template_id = ? ORDER BY provider, product_key', [appId, templateId]))
        .map((r) => ({ provider: r.provider as Provider, productKey: r.product_key as string }));
    },

    async deleteMapping(appId: string, provider: Provider, id: string): Promise<boolean> {
      return (await q.run('DELETE FROM integration_products WHERE id = ? AND app_id = ? AND provider = ?', [id, appId, provider])) === 1;
    },

    // --- Delivered events (the idempotency key)

    /**
     * Claims an event id: true for the first delivery only. The primary key decides, so of 20 identical
     * deliveries at once (on one node or several) exactly one transaction inserts; on PostgreSQL the others
     * wait for it and then insert nothing, and if it rolled back, the next one claims it instead.
     * An event recorded as unknown_product may be claimed again: once the operator has added the
     * mapping, the store's "resend" grants it (and only once, by the same key).
     */
    async claimEvent(e: SaleEventRecord): Promise<boolean> {
      return (await q.run(
        `INSERT INTO integration_events (app_id, provider, event_id, event_type, outcome, order_id, received_at) VALUES (?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (app_id, provider, event_id) DO UPDATE SET outcome = excluded.outcome, received_at = excluded.received_at
         WHERE integration_events.outcome = 'unknown_product'`,
        [e.appId, e.provider, e.eventId, e.eventType, e.outcome, e.orderId, e.receivedAt],
      )) === 1;
    },

    async settleEvent(appId: string, provider: Provider, eventId: string, outcome: string, orderId: string | null): Promise<void> {
      await q.run('UPDATE integration_events SET outcome = ?, order_id = ? WHERE app_id = ? AND provider = ? AND event_id = ?', [outcome, orderId, appId, provider, eventId]);
    },

    async findEvent(appId: string, provider: Provider, eventId: string): Promise<SaleEventRecord | undefined> {
      const r = await q.one('SELECT app_id, provider, event_id, event_type, outcome, order_id, received_at FROM integration_events WHERE app_id = ? AND provider = ? AND event_id = ?', [appId, provider, eventId]);
      return r && {
        appId: r.app_id as string, provider: r.provider as Provider, eventId: r.event_id as string, eventType: r.event_type as string,
        outcome: r.outcome as string, orderId: (r.order_id as string | null) ?? null, receivedAt: Number(r.received_at),
      };
    },

    /**
     * Retention: forgets up to `batch` event ids received before `before` (oldest first), across apps. Row values
     * pick the composite key on both dialects; the received_at index (migration 16) finds them.
     */
    async forgetEventsBefore(before: number, batch: number): Promise<number> {
      return q.run(
        `DELETE FROM integration_events WHERE (app_id, provider, event_id) IN (
           SELECT app_id, provider, event_id FROM integration_events WHERE received_at < ? ORDER BY received_at LIMIT ${Math.trunc(batch)})`,
        [before],
      );
    },

    // --- Orders and the licenses each created

    /** False when this order was already recorded (another event of the same order came first). */
    async insertOrder(o: OrderRecord): Promise<boolean> {
      return (await q.run(
        `INSERT INTO integration_orders (${ORDER}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (app_id, provider, order_ref) DO NOTHING`,
        [o.id, o.appId, o.provider, o.orderRef, o.paymentRef, o.subscriptionRef, o.eventId, o.buyerEmail, o.customerRef, o.status, o.createdAt, o.updatedAt],
      )) === 1;
    },

    async findOrderByRef(appId: string, provider: Provider, orderRef: string): Promise<OrderRecord | undefined> {
      const r = await q.one(`SELECT ${ORDER} FROM integration_orders WHERE app_id = ? AND provider = ? AND order_ref = ?`, [appId, provider, orderRef]);
      return r && toOrder(r);
    },

    async findOrderByPayment(appId: string, provider: Provider, paymentRef: string): Promise<OrderRecord | undefined> {
      const r = await q.one(`SELECT ${ORDER} FROM integration_orders WHERE app_id = ? AND provider = ? AND payment_ref = ? ORDER BY created_at LIMIT 1`, [appId, provider, paymentRef]);
      return r && toOrder(r);
    },

    /** The order a renewal's bill (claimRenewal) renewed: what a refund of that bill names. */
    async findOrderByRenewal(appId: string, provider: Provider, billRef: string): Promise<OrderRecord | undefined> {
      const r = await q.one(
        `SELECT ${ORDER} FROM integration_orders WHERE app_id = ? AND provider = ? AND id IN (SELECT order_id FROM integration_renewals WHERE bill_ref = ?)
         ORDER BY created_at, id LIMIT 1`,
        [appId, provider, billRef],
      );
      return r && toOrder(r);
    },

    /** The order that started a subscription (its first, which holds the licenses). */
    async findOrderBySubscription(appId: string, provider: Provider, subscriptionRef: string): Promise<OrderRecord | undefined> {
      const r = await q.one(`SELECT ${ORDER} FROM integration_orders WHERE app_id = ? AND provider = ? AND subscription_ref = ? ORDER BY created_at, id LIMIT 1`, [appId, provider, subscriptionRef]);
      return r && toOrder(r);
    },

    async findOrder(appId: string, id: string): Promise<OrderRecord | undefined> {
      const r = await q.one(`SELECT ${ORDER} FROM integration_orders WHERE id = ? AND app_id = ?`, [id, appId]);
      return r && toOrder(r);
    },

    /** Links a subscription to its order (Lemon Squeezy tells which order started it in a separate event). */
    async setSubscription(orderId: string, subscriptionRef: string, now: number): Promise<void> {
      await q.run('UPDATE integration_orders SET subscription_ref = ?, updated_at = ? WHERE id = ?', [subscriptionRef, now, orderId]);
    },

    /**
     * Moves an order to a later status only: active → cancelled → refunded. False when it already was
     * there (or past it), so two revocations of one order at once do their work once; on PostgreSQL the
     * row lock of this UPDATE also orders them.
     */
    async advanceStatus(orderId: string, to: Exclude<OrderStatus, 'active'>, now: number): Promise<boolean> {
      const from = to === 'cancelled' ? ['active'] : ['active', 'cancelled'];
      return (await q.run(
        `UPDATE integration_orders SET status = ?, updated_at = ? WHERE id = ? AND status IN (${from.map(() => '?').join(', ')})`,
        [to, now, orderId, ...from],
      )) === 1;
    },

    /** Takes the order's row lock (PostgreSQL) so renewals and revocations of one order run one after another. */
    async lockOrder(orderId: string, now: number): Promise<void> {
      await q.run('UPDATE integration_orders SET updated_at = ? WHERE id = ?', [now, orderId]);
    },

    /**
     * Whether the user holds lifetime from something besides the license `licenseId` (a sold lifetime code being
     * taken back): another lifetime license's redemption still held (its activation never ends until a revocation
     * ends it: a revoking license, the operator, a sale's refund or cancellation), or the operator's grant, when the
     * operator's last lifetime change was a grant and no revoking license was redeemed after it.
     */
    async otherLifetimeSource(appId: string, userId: string, licenseId: string): Promise<'license' | 'operator' | null> {
      const held = await q.one(
        'SELECT license_id FROM activations WHERE app_id = ? AND user_id = ? AND license_id <> ? AND grants_lifetime_access = 1 AND ends_at IS NULL LIMIT 1',
        [appId, userId, licenseId],
      );
      if (held) return 'license';
      const changes = await q.all("SELECT at, details FROM audit_log WHERE app_id = ? AND target_id = ? AND action = 'user.update' ORDER BY at DESC, id DESC", [appId, userId]);
      for (const r of changes) {
        let d: { before?: { membership?: { is_lifetime?: unknown } }; after?: { membership?: { is_lifetime?: unknown } } };
        try {
          d = JSON.parse(r.details as string);
        } catch {
          continue;
        }
        const before = d.before?.membership?.is_lifetime;
        const after = d.after?.membership?.is_lifetime;
        if (before === after) continue;
        if (after !== true) return null;
        const revokedSince = await q.one('SELECT 1 AS x FROM activations WHERE app_id = ? AND user_id = ? AND revokes_lifetime_access = 1 AND occurred_at > ? LIMIT 1', [appId, userId, Number(r.at)]);
        return revokedSince ? null : 'operator';
      }
      return null;
    },

    /** A refunded renewal takes its minutes back from a code nobody has redeemed yet; false when it was redeemed (or deleted) meanwhile. */
    async takeMinutesFromUnredeemed(appId: string, licenseId: string, minutes: number): Promise<boolean> {
      return (await q.run('UPDATE licenses SET minutes = minutes - ? WHERE id = ? AND app_id = ? AND used_at IS NULL AND minutes IS NOT NULL AND minutes >= ?', [minutes, licenseId, appId, minutes])) === 1;
    },

    async listOrders(appId: string, cursor: Cursor | null, limit: number): Promise<Page<OrderRecord>> {
      const rows = await q.all(
        `SELECT ${ORDER} FROM integration_orders WHERE app_id = ? AND ${SEEK_CURSOR} AND ${AFTER_CURSOR} ORDER BY created_at, id LIMIT ?`,
        [appId, seekParam(cursor), ...cursorParams(cursor), limit + 1],
      );
      return toPage(rows, limit, toOrder, (r) => ({ at: Number(r.created_at), id: r.id as string }));
    },

    async insertOrderLicense(l: OrderLicenseRecord): Promise<void> {
      await q.run(`INSERT INTO integration_order_licenses (${ORDER_LICENSE}) VALUES (?, ?, ?, ?, ?, ?, ?)`, [
        l.orderId, l.licenseId, l.code, l.minutes, l.lifetime, l.renewalMinutes, l.state,
      ]);
    },

    async orderLicenses(orderId: string): Promise<OrderLicenseRecord[]> {
      return (await q.all(`SELECT ${ORDER_LICENSE} FROM integration_order_licenses WHERE order_id = ? ORDER BY code`, [orderId])).map(toOrderLicense);
    },

    /**
     * An applied template rewrote the duration of its unused licenses (applyTemplate): the orders that sold them
     * grant what the licenses now grant, so a renewal adds and a refund takes back that (docs/decisions.md). A
     * sold code keeps the minutes renewals added to it while unredeemed (paid for), on top of its new duration.
     */
    async regrantUnusedOfTemplate(appId: string, templateId: string, minutes: number | null, lifetime: boolean): Promise<number> {
      const sold = `SELECT license_id FROM integration_order_licenses WHERE state = 'issued' AND renewal_minutes > 0`;
      await q.run(
        `UPDATE licenses SET minutes = minutes + (SELECT ol.renewal_minutes FROM integration_order_licenses ol WHERE ol.license_id = licenses.id AND ol.state = 'issued')
         WHERE app_id = ? AND template_id = ? AND used_at IS NULL AND minutes IS NOT NULL AND id IN (${sold})`,
        [appId, templateId],
      );
      return q.run(
        `UPDATE integration_order_licenses SET minutes = ?, lifetime = ? WHERE state = 'issued' AND license_id IN
         (SELECT id FROM licenses WHERE app_id = ? AND template_id = ? AND used_at IS NULL)`,
        [minutes, lifetime, appId, templateId],
      );
    },

    /** Records that the order's bill `billRef` renewed it; false when it already had (migration 16's integration_renewals). */
    async claimRenewal(orderId: string, billRef: string, now: number): Promise<boolean> {
      return (await q.run(
        'INSERT INTO integration_renewals (order_id, bill_ref, renewed_at) VALUES (?, ?, ?) ON CONFLICT (order_id, bill_ref) DO NOTHING',
        [orderId, billRef, now],
      )) === 1;
    },

    async addRenewalMinutes(orderId: string, licenseId: string, minutes: number): Promise<void> {
      await q.run('UPDATE integration_order_licenses SET renewal_minutes = renewal_minutes + ? WHERE order_id = ? AND license_id = ?', [minutes, orderId, licenseId]);
    },

    async markRevoked(orderId: string, licenseId: string): Promise<void> {
      await q.run("UPDATE integration_order_licenses SET state = 'revoked' WHERE order_id = ? AND license_id = ?", [orderId, licenseId]);
    },

    /** Adds minutes to a code nobody has redeemed yet; false when it was redeemed (or deleted) meanwhile. */
    async addMinutesToUnredeemed(appId: string, licenseId: string, minutes: number): Promise<boolean> {
      return (await q.run('UPDATE licenses SET minutes = minutes + ? WHERE id = ? AND app_id = ? AND used_at IS NULL AND minutes IS NOT NULL', [minutes, licenseId, appId])) === 1;
    },
  };
}

export type SalesRepository = ReturnType<typeof salesRepository>;
