import type { Cursor } from '../../store/pagination.js';
import type { Page } from '../../store/records.js';
import type { EventFilter, EventRecord } from '../../store/repositories/events.js';
import { validationError } from '../errors.js';
import { iso } from '../membership.js';
import { isEventType } from './catalogue.js';
import type { Services } from '../services.js';

export interface EventView {
  id: string;
  type: string;
  occurred_at: string;
  app_id: string | null;
  data: Record<string, unknown>;
}

export const viewEvent = (e: EventRecord): EventView => ({ id: e.id, type: e.type, occurred_at: iso(e.occurredAt), app_id: e.appId, data: e.data });

/** `types` is checked against the catalogue here, so every caller refuses an unknown type the same way. */
export async function listEvents(s: Services, filter: EventFilter, cursor: Cursor | null, limit: number): Promise<Page<EventView>> {
  const unknown = filter.types?.find((t) => !isEventType(t));
  if (unknown !== undefined) throw validationError('querystring.type', `"${unknown}" is not an event type`);
  const page = await s.store.events.list(filter, cursor, limit);
  return { items: page.items.map(viewEvent), nextCursor: page.nextCursor };
}
