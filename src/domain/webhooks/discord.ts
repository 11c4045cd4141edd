import type { EventRecord } from '../../store/repositories/events.js';
import { EVENT_CATALOGUE, isEventType } from '../outbox/catalogue.js';

const GREEN = 0x2ecc71;
const RED = 0xe74c3c;
const BLUE = 0x3498db;

const colour = (type: string): number => (/deleted|expired|revoked|retired|ban\.created/.test(type) ? RED : /created|redeemed|registered/.test(type) ? GREEN : BLUE);

/** Discord's limits: 25 fields, 256-character names, 1024-character values. */
function fields(data: Record<string, unknown>): { name: string; value: string; inline: boolean }[] {
  return Object.entries(data)
    .filter(([, v]) => v !== null && v !== undefined)
    .slice(0, 25)
    .map(([name, v]) => {
      const text = typeof v === 'object' ? JSON.stringify(v) : String(v);
      return { name: name.slice(0, 256), value: (text.length > 1000 ? `${text.slice(0, 1000)}…` : text) || '—', inline: typeof v !== 'object' };
    });
}

/** A `discord` endpoint's body: one embed per event (Discord's execute-webhook JSON), of the event deliveryBody gives it (without the withheld fields: withheld.ts, payload.ts). */
export function discordBody(event: EventRecord): string {
  const summary = isEventType(event.type) ? EVENT_CATALOGUE[event.type].split('. data:')[0] : event.type;
  return JSON.stringify({
    username: 'Tollgate',
    embeds: [{
      title: event.type,
      description: summary,
      color: colour(event.type),
      timestamp: new Date(event.occurredAt).toISOString(),
      fields: fields({ ...(event.appId !== null && { app_id: event.appId }), ...event.data }),
      footer: { text: event.id },
    }],
  });
}
