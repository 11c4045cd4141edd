// Why: some vendors sell one seat per license and want a user's new login to
// end their older sessions; a per-app cap on live sessions per user (0: none).
import type { Migration } from './migration.js';

export const migration: Migration = {
  version: 4,
  name: 'session_limit',
  up: () => `
ALTER TABLE apps ADD COLUMN max_sessions_per_user INTEGER NOT NULL DEFAULT 0;
CREATE INDEX sessions_user_created ON sessions(user_id, created_at);
`,
};
