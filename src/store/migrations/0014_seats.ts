// Why: issue 25. Floating seats: a user's concurrent machines are rows, counted
// by the database under the user's lock (never in a node's memory), each alive
// while expires_at is in the future: a heartbeat or a lease pushes it on, a
// release deletes it, a seat whose deadline passed is dead and its place free.
// One row per (user, hardware id): a device holds at most one seat.
// Device self-reset: the time of the user's last one on the user row (the
// cooldown is a conditional update of it), and one row per self-reset for the
// per-year limit and the dashboard's count. The operator's resets are not rows
// here: they do not start the user's cooldown (docs/decisions.md).
// App defaults: max_seats NULL keeps today's behaviour (no seats).
import type { Migration } from './migration.js';

export const migration: Migration = {
  version: 14,
  name: 'seats',
  up: ({ ts }) => `
ALTER TABLE apps ADD COLUMN max_seats INTEGER;
ALTER TABLE apps ADD COLUMN heartbeat_seconds INTEGER NOT NULL DEFAULT 300;
ALTER TABLE apps ADD COLUMN seat_grace_seconds INTEGER NOT NULL DEFAULT 0;
ALTER TABLE apps ADD COLUMN device_reset_cooldown_seconds INTEGER NOT NULL DEFAULT 604800;
ALTER TABLE apps ADD COLUMN device_resets_per_year INTEGER;

CREATE TABLE seats (
  id TEXT PRIMARY KEY,
  app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
  user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  hardware_id TEXT NOT NULL,
  checked_out_at ${ts} NOT NULL,
  heartbeat_at ${ts} NOT NULL,
  expires_at ${ts} NOT NULL,
  UNIQUE (user_id, hardware_id)
);
CREATE INDEX seats_user_expires ON seats(user_id, expires_at);
CREATE INDEX seats_app_expires ON seats(app_id, expires_at, id);
CREATE INDEX seats_expires ON seats(expires_at);

ALTER TABLE users ADD COLUMN last_self_reset_at ${ts};

CREATE TABLE device_resets (
  id TEXT PRIMARY KEY,
  app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
  user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  at ${ts} NOT NULL,
  devices_removed INTEGER NOT NULL
);
CREATE INDEX device_resets_user ON device_resets(user_id, at);
`,
};
