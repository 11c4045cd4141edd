// Why: the whole client interface of SPEC.md needs apps, users and their
// memberships, licenses and activations, devices, IP history, sessions,
// variables, file content and bans. Invariants live here, in the database:
// usernames unique per app by their case-folded key, codes unique per app,
// one device row per (user, hardware id), one signup per license.
import type { Migration } from './migration.js';

export const migration: Migration = {
  version: 1,
  name: 'initial',
  up: ({ ts, blob }) => `
CREATE TABLE apps (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  api_key TEXT NOT NULL UNIQUE,
  api_secret_hash TEXT NOT NULL,
  device_auth_enabled INTEGER NOT NULL DEFAULT 0,
  anonymous_access_allowed INTEGER NOT NULL DEFAULT 0,
  max_devices_per_user INTEGER NOT NULL DEFAULT 1,
  session_ttl_seconds INTEGER NOT NULL DEFAULT 86400,
  password_min_length INTEGER NOT NULL DEFAULT 8,
  registration_open INTEGER NOT NULL DEFAULT 1,
  created_at ${ts} NOT NULL,
  updated_at ${ts} NOT NULL
);

CREATE TABLE licenses (
  id TEXT PRIMARY KEY,
  app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
  code TEXT NOT NULL,
  minutes INTEGER,
  grants_lifetime_access INTEGER NOT NULL DEFAULT 0,
  revokes_lifetime_access INTEGER NOT NULL DEFAULT 0,
  note TEXT,
  expires_at ${ts},
  created_at ${ts} NOT NULL,
  used_at ${ts},
  used_by_user_id TEXT
);
CREATE UNIQUE INDEX licenses_app_code ON licenses(app_id, code);
CREATE INDEX licenses_app_created ON licenses(app_id, created_at, id);

CREATE TABLE users (
  id TEXT PRIMARY KEY,
  app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
  username TEXT NOT NULL,
  username_key TEXT NOT NULL,
  password_hash TEXT,
  signup_license_id TEXT UNIQUE REFERENCES licenses(id) ON DELETE SET NULL,
  is_lifetime INTEGER NOT NULL DEFAULT 0,
  active_until ${ts},
  device_count INTEGER NOT NULL DEFAULT 0,
  created_at ${ts} NOT NULL,
  updated_at ${ts} NOT NULL
);
CREATE UNIQUE INDEX users_app_username_key ON users(app_id, username_key);

CREATE TABLE activations (
  id TEXT PRIMARY KEY,
  app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
  user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  license_id TEXT NOT NULL REFERENCES licenses(id) ON DELETE CASCADE,
  occurred_at ${ts} NOT NULL,
  minutes INTEGER,
  grants_lifetime_access INTEGER NOT NULL,
  revokes_lifetime_access INTEGER NOT NULL
);
CREATE INDEX activations_user ON activations(user_id, occurred_at);

CREATE TABLE devices (
  id TEXT PRIMARY KEY,
  app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
  user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  hardware_id TEXT NOT NULL,
  created_at ${ts} NOT NULL,
  last_seen_at ${ts} NOT NULL
);
CREATE UNIQUE INDEX devices_user_hwid ON devices(user_id, hardware_id);

CREATE TABLE user_ips (
  user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  ip TEXT NOT NULL,
  first_seen_at ${ts} NOT NULL,
  last_seen_at ${ts} NOT NULL,
  seen_count INTEGER NOT NULL DEFAULT 1,
  PRIMARY KEY (user_id, ip)
);

CREATE TABLE sessions (
  id TEXT PRIMARY KEY,
  app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
  user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  token_hash TEXT NOT NULL UNIQUE,
  hardware_id TEXT,
  ip TEXT,
  created_at ${ts} NOT NULL,
  expires_at ${ts} NOT NULL
);
CREATE INDEX sessions_user ON sessions(user_id);

CREATE TABLE variables (
  app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  value TEXT NOT NULL,
  updated_at ${ts} NOT NULL,
  PRIMARY KEY (app_id, name)
);

CREATE TABLE blobs (
  id TEXT PRIMARY KEY,
  app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
  created_at ${ts} NOT NULL
);

CREATE TABLE blob_chunks (
  blob_id TEXT NOT NULL REFERENCES blobs(id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  data ${blob} NOT NULL,
  PRIMARY KEY (blob_id, seq)
);

CREATE TABLE files (
  id TEXT PRIMARY KEY,
  app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  mime_type TEXT NOT NULL,
  is_encrypted INTEGER NOT NULL DEFAULT 0,
  blob_id TEXT NOT NULL REFERENCES blobs(id),
  size ${ts} NOT NULL,
  sha256 TEXT NOT NULL,
  chunk_size INTEGER NOT NULL,
  created_at ${ts} NOT NULL,
  updated_at ${ts} NOT NULL
);
CREATE INDEX files_app ON files(app_id, name);

CREATE TABLE bans (
  id TEXT PRIMARY KEY,
  app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
  type TEXT NOT NULL,
  value TEXT NOT NULL,
  reason TEXT,
  expires_at ${ts},
  created_at ${ts} NOT NULL
);
CREATE INDEX bans_app ON bans(app_id, created_at, id);
`,
};
