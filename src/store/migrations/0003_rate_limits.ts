// Why: failed credential attempts and sign-ups are rate limited per app with
// settings the operator can change, and nodes without Redis share their
// counters through the database.
import type { Migration } from './migration.js';

export const migration: Migration = {
  version: 3,
  name: 'rate_limits',
  up: ({ ts }) => `
ALTER TABLE apps ADD COLUMN rate_failures_per_identity INTEGER NOT NULL DEFAULT 10;
ALTER TABLE apps ADD COLUMN rate_failures_per_identity_window_seconds INTEGER NOT NULL DEFAULT 900;
ALTER TABLE apps ADD COLUMN rate_failures_per_ip INTEGER NOT NULL DEFAULT 30;
ALTER TABLE apps ADD COLUMN rate_failures_per_ip_window_seconds INTEGER NOT NULL DEFAULT 300;
ALTER TABLE apps ADD COLUMN rate_signups_per_ip INTEGER NOT NULL DEFAULT 20;
ALTER TABLE apps ADD COLUMN rate_signups_per_ip_window_seconds INTEGER NOT NULL DEFAULT 3600;
ALTER TABLE apps ADD COLUMN rate_signups_per_app INTEGER NOT NULL DEFAULT 0;
ALTER TABLE apps ADD COLUMN rate_signups_per_app_window_seconds INTEGER NOT NULL DEFAULT 3600;

CREATE TABLE rate_counters (
  key TEXT PRIMARY KEY,
  count INTEGER NOT NULL,
  expires_at ${ts} NOT NULL
);
CREATE INDEX rate_counters_expiry ON rate_counters(expires_at);
`,
};
