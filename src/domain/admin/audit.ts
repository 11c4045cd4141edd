import { uuidv7 } from '../ids.js';
import type { AuditFilter, AuditRecord } from '../../store/repositories/admin.js';
import type { Page } from '../../store/records.js';
import type { Repositories } from '../../store/index.js';
import { iso } from '../membership.js';
import type { Services } from '../services.js';

/** Services as an admin request sees them: who is acting, for the audit log. */
export interface AdminServices extends Services {
  actor: string;
}

/** Records one admin write. Pass `tx` to record it in the same transaction as the write. */
export async function audit(
  a: AdminServices, action: string, appId: string | null, targetId: string | null, details: Record<string, unknown>, tx?: Repositories,
): Promise<void> {
  // Time-ordered ids keep write order among entries of the same millisecond (the log lists newest first by (at, id)).
  await (tx ?? a.store).admin.insertAudit({ id: uuidv7(), at: a.clock(), actor: a.actor, action, appId, targetId, details });
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

export async function listAudit(s: Services, filter: AuditFilter, cursor: { at: number; id: string } | null, limit: number): Promise<Page<AuditView>> {
  const page = await s.store.admin.listAudit(filter, cursor, limit);
  return { items: page.items.map(viewAudit), nextCursor: page.nextCursor };
}
