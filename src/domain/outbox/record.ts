import type { Repositories } from '../../store/index.js';
import { uuidv7 } from '../ids.js';
import { assertNoSecrets, type EventType } from './catalogue.js';

export interface Recorded {
  eventId: string;
  /** One per endpoint the event is to be delivered to, due at once. */
  deliveryIds: string[];
}

/**
 * Writes one event and its deliveries through the transaction's repositories: they commit with the change
 * or not at all. The deliveries go to every enabled endpoint subscribed to it, or, with `only`, to that one
 * endpoint alone (the test event of "send a test event": no change, so no other endpoint hears of it). Every
 * event, a test one too, passes the same secrets check.
 */
export async function recordEvent(tx: Repositories, now: number, type: EventType, appId: string | null, data: object, only?: string): Promise<Recorded> {
  assertNoSecrets(type, data);
  const eventId = uuidv7(now);
  await tx.events.insert({ id: eventId, type, occurredAt: now, appId, data: data as Record<string, unknown> });
  const endpoints = only !== undefined ? [only] : await tx.webhooks.subscribers(appId, type);
  const deliveryIds: string[] = [];
  for (const endpointId of endpoints) {
    const id = uuidv7(now);
    await tx.webhooks.insertDelivery({
      id, eventId, endpointId, status: 'pending', attempts: 0, nextAt: now, claimedUntil: null, lastStatus: null, createdAt: now, updatedAt: now,
    });
    deliveryIds.push(id);
  }
  return { eventId, deliveryIds };
}
