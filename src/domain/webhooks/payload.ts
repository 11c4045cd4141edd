import type { EventRecord } from '../../store/repositories/events.js';
import type { EndpointRecord } from '../../store/repositories/webhooks.js';
import { discordBody } from './discord.js';
import { getsWithheld, withoutWithheld } from './withheld.js';

/**
 * What each endpoint is sent of an event: its kind's body, with the fields it may get (license codes,
 * variable values: withheld.ts, decided here alone: discordBody shows what it is given): the body a delivery sends.
 */

/** The event as this endpoint may see it. */
const eventFor = (event: EventRecord, endpoint: Pick<EndpointRecord, 'kind' | 'appId'>): EventRecord =>
  getsWithheld(endpoint) ? event : { ...event, data: withoutWithheld(event.type, event.data) };

/** The body of a standard endpoint: the spec's suggested shape (type, timestamp, data) with the event's id and app. */
function standardBody(event: EventRecord): string {
  return JSON.stringify({ id: event.id, type: event.type, timestamp: new Date(event.occurredAt).toISOString(), app_id: event.appId, data: event.data });
}

/** The body a delivery sends to this endpoint. */
export function deliveryBody(event: EventRecord, endpoint: Pick<EndpointRecord, 'kind' | 'appId'>): string {
  const shown = eventFor(event, endpoint);
  return endpoint.kind === 'discord' ? discordBody(shown) : standardBody(shown);
}
