import type { Repositories } from '../../store/index.js';
import { uuidv7 } from '../ids.js';
import { assertNoSecrets, type EventType } from './catalogue.js';

/**
 * Writes one event and its deliveries (one per enabled endpoint subscribed to
 * it) through the transaction's repositories: they commit with the change or
 * not at all. On PostgreSQL the fan-out is one statement whatever the number
 * of endpoints (INSERT … SELECT), so a write with subscribers makes the round
 * trips of one without. Returns how many deliveries became due.
 */
export async function recordEvent(tx: Repositories, now: number, type: EventType, appId: string | null, data: object): Promise<number> {
  assertNoSecrets(type, data);
  const id = uuidv7(now);
  await tx.events.insert({ id, type, occurredAt: now, appId, data: data as Record<string, unknown> });
  return tx.webhooks.fanOut(id, appId, type, now, () => uuidv7(now));
}
