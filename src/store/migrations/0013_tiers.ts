// Why: issue 24 sells more than "minutes or lifetime". License templates
// (policies) are rows the rules read: a license copies its template's effects
// when it is made (editing a template changes future licenses only, unless the
// operator applies it to existing ones), so a license carries its own
// entitlements and limits. Each activation records until when it holds them
// (ends_at, computed at redemption from the stacked membership end; NULL: never),
// and each entitlement it grants is a row (one per code) with the same end, as
// are the operator's direct grants and a trial's: a user's entitlements are
// the codes of the rows still live. Trials are one per (app, hash of the
// hardware id) ever, and one per normalised email: unique indexes, so racing
// requests cannot start two; the row outlives its user (ON DELETE SET NULL).
// max_seats and heartbeat_seconds belong to issue 25 (seats); stored here.
import type { Migration } from './migration.js';

export const migration: Migration = {
  version: 13,
  name: 'tiers',
  up: ({ ts }) => `
CREATE TABLE license_templates (
  id TEXT PRIMARY KEY,
  app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  minutes INTEGER,
  grants_lifetime_access INTEGER NOT NULL DEFAULT 0,
  entitlements TEXT NOT NULL DEFAULT '[]',
  max_devices INTEGER,
  redeem_within_minutes INTEGER,
  max_seats INTEGER,
  heartbeat_seconds INTEGER,
  created_at ${ts} NOT NULL,
  updated_at ${ts} NOT NULL
);
CREATE UNIQUE INDEX license_templates_app_name ON license_templates(app_id, name);
CREATE INDEX license_templates_app_created ON license_templates(app_id, created_at, id);

ALTER TABLE licenses ADD COLUMN template_id TEXT REFERENCES license_templates(id) ON DELETE SET NULL;
ALTER TABLE licenses ADD COLUMN entitlements TEXT NOT NULL DEFAULT '[]';
ALTER TABLE licenses ADD COLUMN max_devices INTEGER;
ALTER TABLE licenses ADD COLUMN max_seats INTEGER;
ALTER TABLE licenses ADD COLUMN heartbeat_seconds INTEGER;
CREATE INDEX licenses_template ON licenses(template_id);

ALTER TABLE activations ADD COLUMN ends_at ${ts};

CREATE TABLE entitlement_grants (
  id TEXT PRIMARY KEY,
  app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
  user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  code TEXT NOT NULL,
  source TEXT NOT NULL,
  license_id TEXT REFERENCES licenses(id) ON DELETE SET NULL,
  ends_at ${ts},
  created_at ${ts} NOT NULL
);
CREATE INDEX entitlement_grants_user ON entitlement_grants(user_id, code);
CREATE INDEX entitlement_grants_app_code ON entitlement_grants(app_id, code, user_id);
CREATE INDEX entitlement_grants_license ON entitlement_grants(license_id);

ALTER TABLE apps ADD COLUMN trial_minutes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE apps ADD COLUMN trial_entitlements TEXT NOT NULL DEFAULT '[]';
ALTER TABLE apps ADD COLUMN trial_blocked_domains TEXT NOT NULL DEFAULT '[]';

CREATE TABLE trials (
  id TEXT PRIMARY KEY,
  app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
  hwid_hash TEXT NOT NULL,
  email_key TEXT,
  user_id TEXT REFERENCES users(id) ON DELETE SET NULL,
  started_at ${ts} NOT NULL,
  ends_at ${ts} NOT NULL,
  converted_at ${ts}
);
CREATE UNIQUE INDEX trials_app_hwid ON trials(app_id, hwid_hash);
CREATE UNIQUE INDEX trials_app_email ON trials(app_id, email_key);
CREATE UNIQUE INDEX trials_user ON trials(user_id);
CREATE INDEX trials_app_started ON trials(app_id, started_at, id);
`,
};
