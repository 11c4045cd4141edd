import type { Dialect } from '../db.js';
import { migration as m0001 } from './0001_initial.js';
import { migration as m0002 } from './0002_admin_tokens_audit.js';
import { migration as m0003 } from './0003_rate_limits.js';
import { migration as m0004 } from './0004_session_limit.js';
import { migration as m0005 } from './0005_drop_session_user_index.js';
import { migration as m0006 } from './0006_signing_leases.js';
import { migration as m0007 } from './0007_operator_accounts.js';
import { migration as m0008 } from './0008_activity_stats.js';
import { migration as m0009 } from './0009_token_minters.js';
import { migration as m0011 } from './0011_outbox.js';
import { migration as m0012 } from './0012_sales.js';
import { migration as m0013 } from './0013_tiers.js';
import { migration as m0014 } from './0014_seats.js';
import { migration as m0015 } from './0015_seat_leases.js';
import { migration as m0016 } from './0016_sale_templates.js';
import type { DialectTypes, Migration } from './migration.js';

export type { DialectTypes, Migration } from './migration.js';

/** Numbered, forward-only, never edited after they land. */
export const migrations: readonly Migration[] = [m0001, m0002, m0003, m0004, m0005, m0006, m0007, m0008, m0009, m0011, m0012, m0013, m0014, m0015, m0016];

export function dialectTypes(dialect: Dialect): DialectTypes {
  return dialect === 'sqlite' ? { ts: 'INTEGER', blob: 'BLOB' } : { ts: 'BIGINT', blob: 'BYTEA' };
}
