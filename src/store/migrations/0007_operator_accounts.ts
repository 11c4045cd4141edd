// Why: the dashboard is used by a team, not by whoever holds the one token.
// Operators sign in with a username, a password (argon2id, as users) and
// optionally TOTP; their browser sessions are stored only as a digest of the
// cookie, with the CSRF token the pages send back. Roles limit what an
// operator or an admin token may do; tokens made before roles keep 'owner'.
import type { Migration } from './migration.js';

export const migration: Migration = {
  version: 7,
  name: 'operator_accounts',
  up: ({ ts }) => `
CREATE TABLE operators (
  id TEXT PRIMARY KEY,
  username TEXT NOT NULL,
  username_key TEXT NOT NULL UNIQUE,
  password_hash TEXT NOT NULL,
  role TEXT NOT NULL,
  totp_secret TEXT,
  totp_pending_secret TEXT,
  totp_enabled INTEGER NOT NULL DEFAULT 0,
  totp_last_step INTEGER NOT NULL DEFAULT 0,
  disabled INTEGER NOT NULL DEFAULT 0,
  created_at ${ts} NOT NULL,
  last_login_at ${ts}
);

CREATE TABLE operator_sessions (
  id_hash TEXT PRIMARY KEY,
  operator_id TEXT NOT NULL REFERENCES operators(id) ON DELETE CASCADE,
  csrf_token TEXT NOT NULL,
  created_at ${ts} NOT NULL,
  last_seen_at ${ts} NOT NULL,
  ip TEXT
);
CREATE INDEX operator_sessions_operator ON operator_sessions(operator_id);

ALTER TABLE admin_tokens ADD COLUMN role TEXT NOT NULL DEFAULT 'owner';
`,
};
