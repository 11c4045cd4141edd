import { randomUUID } from 'node:crypto';
import type { Cursor } from '../../store/pagination.js';
import type { Page, TrialRecord } from '../../store/records.js';
import type { TrialFilter } from '../../store/repositories/trials.js';
import { checkCode } from '../entitlements.js';
import { DomainError, validationError } from '../errors.js';
import { iso } from '../membership.js';
import type { Services } from '../services.js';
import { hwidHash } from '../signing/format.js';
import { write } from '../unit-of-work.js';
import { parseTimestamp, TIMESTAMP_HINT } from '../validation.js';
import { getApp } from './apps.js';
import type { AdminServices } from './audit.js';

async function requireUser(s: Services, appId: string, userId: string): Promise<void> {
  await getApp(s, appId);
  if (!(await s.store.users.findById(appId, userId))) throw new DomainError('not_found', 'User not found');
}

/** The operator grants a code directly, until a time or (no `until`) for good; a grant of its own beside any other. */
export async function grantEntitlement(
  a: AdminServices, appId: string, userId: string, input: { code: string; until?: string | null },
): Promise<{ id: string; code: string; until: string | null }> {
  checkCode('body.code', input.code);
  let until: number | null = null;
  if (input.until != null) {
    until = parseTimestamp(input.until);
    if (until === null) throw validationError('body.until', `${TIMESTAMP_HINT}, or null`);
    if (until <= a.clock()) throw validationError('body.until', 'must be in the future');
  }
  await requireUser(a, appId, userId);
  const id = randomUUID();
  await write(a, async ({ tx, audit, changed, emit }) => {
    if (!(await tx.users.findById(appId, userId))) throw new DomainError('not_found', 'User not found');
    await tx.entitlements.insert({ id, appId, userId, code: input.code, source: 'operator', licenseId: null, endsAt: until, createdAt: a.clock() });
    await audit('entitlement.grant', appId, userId, { code: input.code, until: until === null ? null : iso(until) });
    await emit('entitlement.granted', appId, { user_id: userId, code: input.code, until: until === null ? null : iso(until) });
    changed({ user: userId });
  });
  return { id, code: input.code, until: until === null ? null : iso(until) };
}

/** The operator takes a code away: every live grant of it ends now, whatever made it (license, trial, operator). */
export async function revokeEntitlement(a: AdminServices, appId: string, userId: string, code: string): Promise<{ ended: number }> {
  checkCode('params.code', code);
  await requireUser(a, appId, userId);
  return write(a, async ({ tx, audit, changed, emit }) => {
    const ended = await tx.entitlements.endCode(userId, code, a.clock());
    await audit('entitlement.revoke', appId, userId, { code, ended });
    await emit('entitlement.revoked', appId, { user_id: userId, code, ended });
    changed({ user: userId });
    return { ended };
  });
}

export interface TrialView {
  id: string;
  hwid_hash: string;
  email_key: string | null;
  user_id: string | null;
  started_at: string;
  ends_at: string;
  converted_at: string | null;
  status: 'running' | 'ended' | 'converted';
}

export function viewTrial(t: TrialRecord, now: number): TrialView {
  const status = t.convertedAt !== null ? 'converted' : t.userId !== null && t.endsAt > now ? 'running' : 'ended';
  return {
    id: t.id, hwid_hash: t.hwidHash, email_key: t.emailKey, user_id: t.userId, started_at: iso(t.startedAt), ends_at: iso(t.endsAt),
    converted_at: t.convertedAt === null ? null : iso(t.convertedAt), status,
  };
}

/** `hardwareId`: the operator looks a device up by the id the client sends; only its hash is stored and compared. */
export async function listTrials(
  s: Services, appId: string, filter: Omit<TrialFilter, 'hwidHash'> & { hardwareId?: string }, cursor: Cursor | null, limit: number, withTotal = false,
): Promise<Page<TrialView>> {
  await getApp(s, appId);
  const now = s.clock();
  const { hardwareId, ...rest } = filter;
  const f: TrialFilter = { ...rest, ...(hardwareId !== undefined && { hwidHash: hwidHash(appId, hardwareId) }) };
  const [page, total] = await Promise.all([s.store.trials.list(appId, f, now, cursor, limit), withTotal ? s.store.trials.count(appId, f, now) : undefined]);
  return { items: page.items.map((t) => viewTrial(t, now)), nextCursor: page.nextCursor, ...(total !== undefined && { total }) };
}

/**
 * The operator resets a device's trial: the record is deleted, so the device (and the email it gave)
 * may start a new trial. A trial user still running keeps their membership until it ends; they are no
 * longer shown as a trial user.
 */
export async function resetTrial(a: AdminServices, appId: string, trialId: string): Promise<void> {
  await getApp(a, appId);
  await write(a, async ({ tx, audit, changed }) => {
    const t = await tx.trials.findById(appId, trialId);
    if (!t || !(await tx.trials.delete(appId, trialId))) throw new DomainError('not_found', 'Trial not found');
    await audit('trial.reset', appId, trialId, { before: viewTrial(t, a.clock()) });
    if (t.userId !== null) changed({ user: t.userId });
  });
}
