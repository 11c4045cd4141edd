import type { Repositories } from '../../store/index.js';
import { uuidv7 } from '../ids.js';
import { assertNoSecrets, type EventType } from './catalogue.js';

/**
 * Writes one event and its deliveries (one per enabled endpoint subscribed to
 * it) through the transaction's repositories: they commit with the change or
 * not at all. Returns how many deliveries became due.
 */
export async function recordEvent(tx: Repositories, now: number, type: EventType, appId: string | null, data: object): Promise<number> {
  assertNoSecrets(type, data);
  const id = uuidv7(now);
  await tx.events.insert({ id, type, occurredAt: now, appId, data: data as Record<string, unknown> });
  const endpoints = await tx.webhooks.subscribers(appId, type);
  for (const endpointId of endpoints) {
    await tx.webhooks.insertDelivery({
      id: uuidv7(now), eventId: id, endpointId, status: 'pending', attempts: 0, nextAt: now, claimedUntil: null, lastStatus: null, createdAt: now, updatedAt: now,
    });
  }
  return endpoints.length;
}
