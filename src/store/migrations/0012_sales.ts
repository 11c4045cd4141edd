// Why: licenses are sold through stores (issue 23, "Sales in"). A store's
// webhook arrives signed with a secret the operator copied from the store
// (sealed here like the signing keys, since it must be read back to verify).
// The operator maps a store's product or price id to what a purchase grants.
// Each delivered event id is kept under a unique key, so a redelivery (or 20
// at once, or two nodes at once) grants nothing twice; each order keeps the
// licenses it created, so a renewal extends and a refund takes back exactly
// those. Licenses have no foreign key from here: a revoked unredeemed code is
// deleted, and the order keeps the row that says so.
import type { Migration } from './migration.js';

export const migration: Migration = {
  version: 12,
  name: 'sales',
  up: ({ ts }) => `
CREATE TABLE integrations (
  app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
  provider TEXT NOT NULL,
  signing_secret TEXT NOT NULL,
  secret_hint TEXT NOT NULL,
  enabled INTEGER NOT NULL DEFAULT 1,
  created_at ${ts} NOT NULL,
  updated_at ${ts} NOT NULL,
  PRIMARY KEY (app_id, provider)
);

CREATE TABLE integration_products (
  id TEXT PRIMARY KEY,
  app_id TEXT NOT NULL,
  provider TEXT NOT NULL,
  product_key TEXT NOT NULL,
  minutes INTEGER,
  lifetime INTEGER NOT NULL DEFAULT 0,
  codes_per_unit INTEGER NOT NULL DEFAULT 1,
  note TEXT,
  created_at ${ts} NOT NULL,
  updated_at ${ts} NOT NULL,
  UNIQUE (app_id, provider, product_key),
  FOREIGN KEY (app_id, provider) REFERENCES integrations(app_id, provider) ON DELETE CASCADE
);

CREATE TABLE integration_events (
  app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
  provider TEXT NOT NULL,
  event_id TEXT NOT NULL,
  event_type TEXT NOT NULL,
  outcome TEXT NOT NULL,
  order_id TEXT,
  received_at ${ts} NOT NULL,
  PRIMARY KEY (app_id, provider, event_id)
);
CREATE INDEX integration_events_received ON integration_events(app_id, received_at);

CREATE TABLE integration_orders (
  id TEXT PRIMARY KEY,
  app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
  provider TEXT NOT NULL,
  order_ref TEXT NOT NULL,
  payment_ref TEXT,
  subscription_ref TEXT,
  event_id TEXT NOT NULL,
  buyer_email TEXT,
  customer_ref TEXT,
  status TEXT NOT NULL,
  created_at ${ts} NOT NULL,
  updated_at ${ts} NOT NULL,
  UNIQUE (app_id, provider, order_ref)
);
CREATE INDEX integration_orders_subscription ON integration_orders(app_id, provider, subscription_ref);
CREATE INDEX integration_orders_payment ON integration_orders(app_id, provider, payment_ref);
CREATE INDEX integration_orders_created ON integration_orders(app_id, created_at, id);

CREATE TABLE integration_order_licenses (
  order_id TEXT NOT NULL REFERENCES integration_orders(id) ON DELETE CASCADE,
  license_id TEXT NOT NULL,
  code TEXT NOT NULL,
  minutes INTEGER,
  lifetime INTEGER NOT NULL DEFAULT 0,
  renewal_minutes INTEGER NOT NULL DEFAULT 0,
  state TEXT NOT NULL,
  PRIMARY KEY (order_id, license_id)
);
`,
};
