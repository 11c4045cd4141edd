import type { Services } from '../services.js';
import { write } from '../unit-of-work.js';
import { iso } from '../membership.js';

/** How far back the expiry sweep looks: a node (or every node) down for less than this misses no expiry. */
export const EXPIRY_LOOKBACK_MS = 24 * 60 * 60_000;
const BATCH = 500;

/**
 * Emits membership.expired once per expiry (a user's active_until passing),
 * with any number of nodes sweeping at once: each expiry is claimed by a row
 * whose primary key is (user, end), inserted in the same transaction as the
 * event, so of two nodes that find the same expiry one inserts and emits, the
 * other inserts nothing and emits nothing. An end moved later (an extension)
 * is a new expiry when it passes.
 */
export async function sweepExpiries(s: Services): Promise<number> {
  const now = s.clock();
  let emitted = 0;
  for (;;) {
    const due = await s.store.events.expiredBetween(now - EXPIRY_LOOKBACK_MS, now + 1, BATCH);
    if (due.length === 0) return emitted;
    emitted += await write(s, async ({ tx, emit }) => {
      let n = 0;
      for (const u of due) {
        if (!(await tx.events.claimExpiry(u.id, u.activeUntil))) continue;
        await emit('membership.expired', u.appId, { user_id: u.id, expired_at: iso(u.activeUntil) });
        n++;
      }
      return n;
    });
    if (due.length < BATCH) return emitted;
  }
}

/** Retention: events (with their deliveries and attempts) older than `retentionMs` go, in batches. */
export async function sweepOldEvents(s: Services, retentionMs: number): Promise<number> {
  const now = s.clock();
  let deleted = 0;
  for (;;) {
    const n = await write(s, ({ tx }) => tx.events.deleteOlderThan(now - retentionMs, 1000));
    deleted += n;
    if (n < 1000) break;
  }
  await write(s, ({ tx }) => tx.events.forgetExpiriesBefore(now - EXPIRY_LOOKBACK_MS - retentionMs));
  return deleted;
}
