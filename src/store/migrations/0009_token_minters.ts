// Why: an admin token minted by an operator outlived that operator (issue 30):
// deleting or disabling the operator left the token answering, demoting them
// left it at the old role. Each token now records who minted it: the
// operator's id (no foreign key: the row must outlive the operator, whose
// tokens are revoked, not deleted, so the history stays readable) and their
// username at the time, which the dashboard shows after the operator is gone.
// NULL for tokens minted by TOLLGATE_ADMIN_TOKEN, the local CLI, the first
// start, and for every token minted before this migration (whose minter is
// not known: they keep their role until an owner revokes them).
import type { Migration } from './migration.js';

export const migration: Migration = {
  version: 9,
  name: 'token_minters',
  up: () => `
ALTER TABLE admin_tokens ADD COLUMN operator_id TEXT;
ALTER TABLE admin_tokens ADD COLUMN operator_username TEXT;
CREATE INDEX admin_tokens_operator ON admin_tokens(operator_id);
`,
};
