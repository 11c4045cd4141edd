// Why: sessions_user (user_id) is a prefix of sessions_user_created (user_id,
// created_at) from migration 4, which serves every lookup by user as well; the
// extra index cost a random page write on every login and logout.
import type { Migration } from './migration.js';

export const migration: Migration = {
  version: 5,
  name: 'drop_session_user_index',
  up: () => `
DROP INDEX sessions_user;
`,
};
