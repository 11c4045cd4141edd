// Why: the dashboard's overview charts sign-ups, logins, activations and
// failed logins per hour and day, and which bans are hit. Each node counts in
// memory and adds its counts here every few seconds (never a write on the
// request's path), one row per app and UTC hour, one per ban and hour.
// No foreign key on ban_id: a ban deleted between a hit and the flush must
// not make the flush fail; its rows go with the app.
// The indexes make the dashboard's counts and pages index-only at 100,000
// users and licenses: users paged by creation, memberships in force, licenses
// used or unused, and the activations a license delete cascades to.
import type { Migration } from './migration.js';

export const migration: Migration = {
  version: 8,
  name: 'activity_stats',
  up: ({ ts }) => `
CREATE TABLE activity_stats (
  app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
  hour ${ts} NOT NULL,
  sign_ups INTEGER NOT NULL DEFAULT 0,
  logins INTEGER NOT NULL DEFAULT 0,
  activations INTEGER NOT NULL DEFAULT 0,
  failed_logins INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (app_id, hour)
);

CREATE TABLE ban_hit_stats (
  app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
  hour ${ts} NOT NULL,
  ban_id TEXT NOT NULL,
  hits INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (app_id, hour, ban_id)
);

CREATE INDEX users_app_created ON users(app_id, created_at, id);
CREATE INDEX users_app_membership ON users(app_id, is_lifetime, active_until);
CREATE INDEX licenses_app_used ON licenses(app_id, used_at);
CREATE INDEX activations_license ON activations(license_id);
`,
};
