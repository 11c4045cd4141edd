import type { Cursor } from '../../store/pagination.js';
import type { Page } from '../../store/records.js';
import type { EventFilter, EventRecord } from '../../store/repositories/events.js';
import { iso } from '../membership.js';
import type { Services } from '../services.js';

export interface EventView {
  id: string;
  type: string;
  occurred_at: string;
  app_id: string | null;
  data: Record<string, unknown>;
}

export const viewEvent = (e: EventRecord): EventView => ({ id: e.id, type: e.type, occurred_at: iso(e.occurredAt), app_id: e.appId, data: e.data });

export async function listEvents(s: Services, filter: EventFilter, cursor: Cursor | null, limit: number): Promise<Page<EventView>> {
  const page = await s.store.events.list(filter, cursor, limit);
  return { items: page.items.map(viewEvent), nextCursor: page.nextCursor };
}
