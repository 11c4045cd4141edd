import type { Services } from '../services.js';
import { write } from '../unit-of-work.js';

/** Event ids forgotten per transaction. */
export const RETENTION_BATCH = 1000;

/**
 * Retention of `integration_events`, the ids of received store events (docs/integrations.md): ids received
 * longer than `retentionMs` ago are forgotten, in batches of their own transactions so a large backlog never
 * holds one long write. A forgotten id is harmless: a redelivered sale finds its order's unique reference, a
 * revocation the order already ended, and a renewal its bill already claimed (integration_renewals, kept with
 * the order). Every node may run it at once: each deletes what is still there.
 */
export async function sweepIntegrationEvents(s: Services, retentionMs: number, batch = RETENTION_BATCH): Promise<number> {
  const before = s.clock() - retentionMs;
  let forgotten = 0;
  for (;;) {
    const n = await write(s, ({ tx }) => tx.sales.forgetEventsBefore(before, batch));
    forgotten += n;
    if (n < batch) return forgotten;
  }
}
