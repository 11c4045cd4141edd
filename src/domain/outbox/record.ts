import type { Repositories } from '../../store/index.js';
import { uuidv7 } from '../ids.js';
import { assertNoSecrets, type EventType } from './catalogue.js';

export interface Recorded {
  eventId: string;
  /** How many deliveries became due at once. */
  deliveries: number;
  /** With `only`: that endpoint's delivery. */
  deliveryId?: string;
}

/**
 * Writes one event and its deliveries through the transaction's repositories: they commit with the change
 * or not at all. The deliveries go to every enabled endpoint subscribed to it, or, with `only`, to that one
 * endpoint alone (the test event of "send a test event": no change, so no other endpoint hears of it). Every
 * event, a test one too, passes the same secrets check. On PostgreSQL the fan-out is one statement whatever
 * the number of endpoints (INSERT … SELECT), so a write with subscribers makes the round trips of one without.
 */
export async function recordEvent(tx: Repositories, now: number, type: EventType, appId: string | null, data: object, only?: string): Promise<Recorded> {
  assertNoSecrets(type, data);
  const eventId = uuidv7(now);
  await tx.events.insert({ id: eventId, type, occurredAt: now, appId, data: data as Record<string, unknown> });
  if (only === undefined) return { eventId, deliveries: await tx.webhooks.fanOut(eventId, appId, type, now, () => uuidv7(now)) };
  const deliveryId = uuidv7(now);
  await tx.webhooks.insertDelivery({
    id: deliveryId, eventId, endpointId: only, status: 'pending', attempts: 0, nextAt: now, claimedUntil: null, lastStatus: null, createdAt: now, updatedAt: now,
  });
  return { eventId, deliveries: 1, deliveryId };
}
