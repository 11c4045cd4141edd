import type { AuditFilter, AuditRecord } from '../../store/repositories/admin.js';
import type { Page } from '../../store/records.js';
import { iso } from '../membership.js';
import type { Services } from '../service-types.js';

/** Services as an admin request sees them: who is acting, for the audit log (written by unit-of-work.ts). */
export interface AdminServices extends Services {
  actor: string;
  /** The HTTP request's id, on the admin_write event line (events.ts). */
  reqId?: string;
}

/** Only the fields that changed, before and after. */
export function diff(before: Record<string, unknown>, after: Record<string, unknown>): { before: Record<string, unknown>; after: Record<string, unknown> } {
  const b: Record<string, unknown> = {};
  const c: Record<string, unknown> = {};
  for (const key of Object.keys(after)) {
    if (JSON.stringify(before[key]) !== JSON.stringify(after[key])) {
      b[key] = before[key];
      c[key] = after[key];
    }
  }
  return { before: b, after: c };
}

export interface AuditView {
  id: string;
  at: string;
  actor: string;
  action: string;
  app_id: string | null;
  target_id: string | null;
  details: Record<string, unknown>;
}

const viewAudit = (r: AuditRecord): AuditView => ({
  id: r.id, at: iso(r.at), actor: r.actor, action: r.action, app_id: r.appId, target_id: r.targetId, details: r.details,
});

export async function listAudit(
  s: Services, filter: AuditFilter, cursor: { at: number; id: string } | null, limit: number, withTotal = false,
): Promise<Page<AuditView>> {
  const [page, total] = await Promise.all([s.store.admin.listAudit(filter, cursor, limit), withTotal ? s.store.admin.countAudit(filter) : undefined]);
  return { items: page.items.map(viewAudit), nextCursor: page.nextCursor, ...(total !== undefined && { total }) };
}
