// Why: issue 23. Nothing outside Tollgate learned that a user signed up, a code
// was redeemed or a device reset. Each state change now writes its events in
// the same transaction (the outbox: an event exists iff its change committed),
// and each event is fanned out to the webhook endpoints subscribed to it as
// deliveries, claimed by the workers of every node and retried until they
// succeed or the schedule runs out. `membership_expiries` is the claim that
// makes the periodic expiry sweep emit once per expiry with many nodes.
// (Migration 0010 belongs to another branch; the integrator renumbers.)
import type { Migration } from './migration.js';

export const migration: Migration = {
  version: 11,
  name: 'outbox',
  up: ({ ts }) => `
CREATE TABLE events (
  id TEXT PRIMARY KEY,
  type TEXT NOT NULL,
  occurred_at ${ts} NOT NULL,
  app_id TEXT,
  data TEXT NOT NULL
);
CREATE INDEX events_time ON events(occurred_at, id);
CREATE INDEX events_app_time ON events(app_id, occurred_at, id);

CREATE TABLE webhook_endpoints (
  id TEXT PRIMARY KEY,
  app_id TEXT REFERENCES apps(id) ON DELETE CASCADE,
  url TEXT NOT NULL,
  kind TEXT NOT NULL,
  event_types TEXT,
  description TEXT NOT NULL DEFAULT '',
  enabled INTEGER NOT NULL DEFAULT 1,
  disabled_reason TEXT,
  secret TEXT NOT NULL,
  previous_secret TEXT,
  previous_secret_until ${ts},
  failing_since ${ts},
  created_at ${ts} NOT NULL,
  updated_at ${ts} NOT NULL
);
CREATE INDEX webhook_endpoints_app ON webhook_endpoints(app_id, created_at, id);

CREATE TABLE webhook_keys (
  scope TEXT PRIMARY KEY,
  private_key TEXT NOT NULL,
  public_key TEXT NOT NULL,
  created_at ${ts} NOT NULL
);

CREATE TABLE webhook_deliveries (
  id TEXT PRIMARY KEY,
  event_id TEXT NOT NULL REFERENCES events(id) ON DELETE CASCADE,
  endpoint_id TEXT NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
  status TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_at ${ts},
  claimed_until ${ts},
  last_status INTEGER,
  created_at ${ts} NOT NULL,
  updated_at ${ts} NOT NULL
);
CREATE UNIQUE INDEX webhook_deliveries_event_endpoint ON webhook_deliveries(event_id, endpoint_id);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries(status, next_at);
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries(endpoint_id, created_at, id);

CREATE TABLE webhook_attempts (
  id TEXT PRIMARY KEY,
  delivery_id TEXT NOT NULL REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
  at ${ts} NOT NULL,
  status INTEGER,
  error TEXT,
  body TEXT,
  duration_ms INTEGER NOT NULL
);
CREATE INDEX webhook_attempts_delivery ON webhook_attempts(delivery_id, at, id);

CREATE TABLE membership_expiries (
  user_id TEXT NOT NULL,
  expired_at ${ts} NOT NULL,
  PRIMARY KEY (user_id, expired_at)
);
CREATE INDEX users_active_until ON users(active_until);
`,
};
