import type { Repositories } from '../../store/index.js';
import { uuidv7 } from '../ids.js';
import { assertNoSecrets, type EventType } from './catalogue.js';

/**
 * Writes one event and its deliveries (one per enabled endpoint subscribed to
 * it) through the transaction's repositories: they commit with the change or
 * not at all. The fan-out is one statement whatever the number of endpoints
 * (INSERT … SELECT), so a write with subscribers costs what one without does
 * plus the rows. Returns how many deliveries became due.
 */
export async function recordEvent(tx: Repositories, now: number, type: EventType, appId: string | null, data: object): Promise<number> {
  assertNoSecrets(type, data);
  const id = uuidv7(now);
  await tx.events.insert({ id, type, occurredAt: now, appId, data: data as Record<string, unknown> });
  // The deliveries' ids: this UUIDv7's time and counter, and a random tail the database draws per row.
  return tx.webhooks.fanOut(id, appId, type, now, uuidv7(now).slice(0, 19));
}
