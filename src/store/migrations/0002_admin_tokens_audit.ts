// Why: operators need named admin tokens they can revoke (not only the one
// from the environment), and a record of every admin write: who, what, when.
import type { Migration } from './migration.js';

export const migration: Migration = {
  version: 2,
  name: 'admin_tokens_audit',
  up: ({ ts }) => `
CREATE TABLE admin_tokens (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  token_hash TEXT NOT NULL UNIQUE,
  created_at ${ts} NOT NULL,
  last_used_at ${ts},
  revoked_at ${ts}
);

CREATE TABLE audit_log (
  id TEXT PRIMARY KEY,
  at ${ts} NOT NULL,
  actor TEXT NOT NULL,
  action TEXT NOT NULL,
  app_id TEXT,
  target_id TEXT,
  details TEXT NOT NULL
);
CREATE INDEX audit_log_at ON audit_log(at, id);
CREATE INDEX audit_log_app_at ON audit_log(app_id, at, id);
`,
};
