// Why: answers a client can prove (docs/signing.md). Each app pins a root key
// kept offline by its operator (only the public half is stored); the server
// signs with signing keys the root certified, which rotate and retire. Offline
// leases need a per-device sequence that only ever increases, so a client can
// tell a superseded lease.
import type { Migration } from './migration.js';

export const migration: Migration = {
  version: 6,
  name: 'signing_leases',
  up: ({ ts }) => `
ALTER TABLE apps ADD COLUMN root_public_key TEXT;
ALTER TABLE apps ADD COLUMN signatures_required INTEGER NOT NULL DEFAULT 0;
ALTER TABLE apps ADD COLUMN offline_grace_seconds INTEGER NOT NULL DEFAULT 0;
ALTER TABLE apps ADD COLUMN lease_renew_seconds INTEGER NOT NULL DEFAULT 3600;

CREATE TABLE signing_keys (
  kid TEXT PRIMARY KEY,
  app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
  public_key TEXT NOT NULL,
  private_key TEXT,
  certificate TEXT,
  not_before ${ts},
  not_after ${ts},
  status TEXT NOT NULL,
  created_at ${ts} NOT NULL,
  retired_at ${ts}
);
CREATE INDEX signing_keys_app ON signing_keys(app_id, created_at);

CREATE TABLE lease_devices (
  app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
  user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  hwid_hash TEXT NOT NULL,
  seq INTEGER NOT NULL,
  last_lease_id TEXT NOT NULL,
  issued_at ${ts} NOT NULL,
  PRIMARY KEY (app_id, user_id, hwid_hash)
);
`,
};
