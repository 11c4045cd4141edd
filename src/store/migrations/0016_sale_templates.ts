// Why: a vendor sells tiers through a store (issue 23's gaps). A product
// mapping may name a license template of its app instead of minutes or
// lifetime, so the sold license carries the template's duration,
// entitlements and limits. The reference has no ON DELETE action: deleting a
// template a mapping sells is refused by the domain (409, under a lock of the
// template's row), and the key refuses it as well in a race the lock missed;
// SET NULL would leave a mapping that grants nothing (a buyer charged, no code).
// NO ACTION (checked at the statement's end), not RESTRICT: deleting an app
// cascades to its templates and its mappings in one statement.
// integration_renewals keeps each bill (Stripe invoice, Paddle transaction,
// Lemon Squeezy subscription invoice) that renewed an order, as long as the
// order: a renewal resent after its event id was forgotten extends nothing,
// and a refund of a renewal's bill finds its order by it.
// The index on received_at serves the retention sweep of integration_events,
// which deletes across every app by age (the existing index leads with app_id).
// 15 belongs to another change of the same round; the runner never required
// consecutive numbers (docs/decisions.md, "Migration 10 stays unused").
import type { Migration } from './migration.js';

export const migration: Migration = {
  version: 16,
  name: 'sale_templates',
  up: ({ ts }) => `
ALTER TABLE integration_products ADD COLUMN template_id TEXT REFERENCES license_templates(id);
CREATE INDEX integration_products_template ON integration_products(template_id);
CREATE INDEX integration_events_received_at ON integration_events(received_at);
CREATE TABLE integration_renewals (
  order_id TEXT NOT NULL REFERENCES integration_orders(id) ON DELETE CASCADE,
  bill_ref TEXT NOT NULL,
  renewed_at ${ts} NOT NULL,
  PRIMARY KEY (order_id, bill_ref)
);
CREATE INDEX integration_renewals_bill ON integration_renewals(bill_ref);
`,
};
