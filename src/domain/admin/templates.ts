import { randomUUID } from 'node:crypto';
import { ForeignKeyViolation, UniqueViolation } from '../../store/db.js';
import type { Cursor } from '../../store/pagination.js';
import type { ActivationRecord, Page, TemplateRecord } from '../../store/records.js';
import { checkCodes } from '../entitlements.js';
import { DomainError, validationError } from '../errors.js';
import { grantLicenseEntitlements } from '../licenses.js';
import { iso } from '../membership.js';
import type { Services } from '../services.js';
import { write } from '../unit-of-work.js';
import { Checker } from '../validation.js';
import { getApp } from './apps.js';
import { diff, type AdminServices } from './audit.js';

/** License templates (policies): a row the rules read, not a code path per plan (STYLE.md). */
export interface TemplateInput {
  name?: string;
  minutes?: number | null;
  lifetime?: boolean;
  entitlements?: string[];
  max_devices?: number | null;
  redeem_within_minutes?: number | null;
  max_seats?: number | null;
  heartbeat_seconds?: number | null;
}

export interface TemplateView {
  id: string;
  name: string;
  minutes: number | null;
  lifetime: boolean;
  entitlements: string[];
  max_devices: number | null;
  redeem_within_minutes: number | null;
  max_seats: number | null;
  heartbeat_seconds: number | null;
  created_at: string;
  updated_at: string;
}

export function viewTemplate(t: TemplateRecord): TemplateView {
  return {
    id: t.id, name: t.name, minutes: t.minutes, lifetime: t.grantsLifetime, entitlements: [...t.entitlements], max_devices: t.maxDevices,
    redeem_within_minutes: t.redeemWithinMinutes, max_seats: t.maxSeats, heartbeat_seconds: t.heartbeatSeconds,
    created_at: iso(t.createdAt), updated_at: iso(t.updatedAt),
  };
}

const notFound = () => new DomainError('not_found', 'Template not found');
const nameTaken = () => new DomainError('conflict', 'Another template of this application has this name', [{ field: 'body.name', message: 'is already taken' }]);

/** The input laid over the template (or over nothing, on creation), checked as a whole: a duration is minutes or lifetime, never both or neither. */
function merged(base: TemplateRecord, input: TemplateInput): TemplateRecord {
  const check = new Checker();
  if (input.name !== undefined) check.text('body.name', input.name, { min: 1, max: 128 });
  check.throwIfAny();
  const next: { -readonly [K in keyof TemplateRecord]: TemplateRecord[K] } = { ...base };
  if (input.name !== undefined) next.name = input.name;
  if (input.lifetime !== undefined) next.grantsLifetime = input.lifetime;
  if (input.minutes !== undefined) next.minutes = input.minutes;
  if (input.lifetime === true && input.minutes === undefined) next.minutes = null;
  if (input.minutes != null && input.lifetime === undefined) next.grantsLifetime = false;
  if (input.entitlements !== undefined) next.entitlements = checkCodes('body.entitlements', input.entitlements);
  if (input.max_devices !== undefined) next.maxDevices = input.max_devices;
  if (input.redeem_within_minutes !== undefined) next.redeemWithinMinutes = input.redeem_within_minutes;
  if (input.max_seats !== undefined) next.maxSeats = input.max_seats;
  if (input.heartbeat_seconds !== undefined) next.heartbeatSeconds = input.heartbeat_seconds;
  if (next.grantsLifetime && next.minutes !== null) throw validationError('body.minutes', 'cannot be combined with lifetime');
  if (!next.grantsLifetime && next.minutes === null) throw validationError('body.minutes', 'is required unless lifetime is true');
  if (next.name === '') throw validationError('body.name', 'is required');
  return next;
}

export async function createTemplate(s: AdminServices, appId: string, input: TemplateInput): Promise<TemplateView> {
  await getApp(s, appId);
  const now = s.clock();
  const empty: TemplateRecord = {
    id: randomUUID(), appId, name: '', minutes: null, grantsLifetime: false, entitlements: [], maxDevices: null, redeemWithinMinutes: null,
    maxSeats: null, heartbeatSeconds: null, createdAt: now, updatedAt: now,
  };
  const template = merged(empty, input);
  if (await s.store.templates.findByName(appId, template.name)) throw nameTaken();
  const view = viewTemplate(template);
  await write(s, async ({ tx, audit, emit }) => {
    await tx.templates.insert(template);
    await audit('template.create', appId, template.id, { after: view });
    await emit('template.created', appId, view);
  }).catch(renameRace);
  return view;
}

function renameRace(err: unknown): never {
  throw err instanceof UniqueViolation ? nameTaken() : err;
}

export async function listTemplates(s: Services, appId: string, cursor: Cursor | null, limit: number): Promise<Page<TemplateView>> {
  await getApp(s, appId);
  const page = await s.store.templates.list(appId, cursor, limit);
  return { items: page.items.map(viewTemplate), nextCursor: page.nextCursor };
}

export async function getTemplate(s: Services, appId: string, id: string): Promise<TemplateView> {
  await getApp(s, appId);
  const t = await s.store.templates.findById(appId, id);
  if (!t) throw notFound();
  return viewTemplate(t);
}

/** Changes future licenses only: licenses already made keep the effects they copied (see applyTemplate). */
export async function updateTemplate(s: AdminServices, appId: string, id: string, input: TemplateInput): Promise<TemplateView> {
  await getApp(s, appId);
  return write(s, async ({ tx, audit, emit }) => {
    const before = await tx.templates.findById(appId, id);
    if (!before) throw notFound();
    const after = { ...merged(before, input), updatedAt: s.clock() };
    if (after.name !== before.name && (await tx.templates.findByName(appId, after.name))) throw nameTaken();
    await tx.templates.update(after);
    const view = viewTemplate(after);
    const { created_at: _c, updated_at: _u, ...b } = viewTemplate(before);
    const { created_at: _c2, updated_at: _u2, ...a } = view;
    await audit('template.update', appId, id, diff(b, a));
    await emit('template.updated', appId, view);
    return view;
  }).catch(renameRace);
}

/**
 * The explicit bulk action: the template's current effects are copied onto every license made from
 * it. Unused licenses take all of them (duration included); used ones take the entitlements and
 * limits, and their redemptions' grants are rewritten with the new codes, each keeping the end its
 * redemption computed (time already added to a membership is not taken back or added again). A store's order
 * that sold an unused one renews and refunds it by its new duration (docs/decisions.md).
 */
export async function applyTemplate(s: AdminServices, appId: string, id: string): Promise<{ unused_licenses: number; used_licenses: number; users: number }> {
  await getApp(s, appId);
  return write(s, async ({ tx, audit, changed, emit }) => {
    const t = await tx.templates.findById(appId, id);
    if (!t) throw notFound();
    const counts = await tx.licenses.applyTemplate(appId, id, t);
    // The orders that sold the unused ones follow in the same unit of work: a store's refund or renewal then
    // takes back or adds what the license grants now, not what it was sold with. After the rewrite, which holds
    // those rows: a redemption racing it is wholly before (the license is used in both statements) or after.
    await tx.sales.regrantUnusedOfTemplate(appId, id, t.minutes, t.grantsLifetime);
    const activations = await tx.licenses.activationsOfTemplate(appId, id);
    const users = new Set<string>();
    const rewritten = new Set<string>();
    const before = new Map<string, { userId: string; code: string; until: number | null }[]>();
    for (const a of activations) {
      if (!rewritten.has(a.licenseId)) {
        before.set(a.licenseId, await tx.entitlements.ofLicense(a.licenseId));
        await tx.entitlements.deleteOfLicense(a.licenseId);
        rewritten.add(a.licenseId);
      }
      await grantLicenseEntitlements(tx, a, keptEnds(a, before.get(a.licenseId) ?? [], t.entitlements), a.occurredAt);
      users.add(a.userId);
    }
    // One notice for them all (one per user was a bus message each, and NOTIFY holds no list of thousands):
    // the app's users, a superset, reload once from the store, as the cache TTL has them do anyway.
    if (users.size > 0) changed({ appUsers: appId });
    const answer = { unused_licenses: counts.unused, used_licenses: counts.used, users: users.size };
    await audit('template.apply', appId, id, { ...answer, template: viewTemplate(t) });
    await emit('template.applied', appId, { template: viewTemplate(t), ...answer });
    return answer;
  });
}

/**
 * The ends of a redemption's grants rewritten with `codes`: a code it granted keeps the end it had (each code
 * stacked on itself at redemption, entitlements.ts lentEnds); a code new to it takes the latest end the
 * redemption gave any code, or, when it gave none, its holding's end: no time is added again or taken back.
 */
function keptEnds(a: ActivationRecord, had: readonly { userId: string; code: string; until: number | null }[], codes: readonly string[]): { code: string; endsAt: number | null }[] {
  const mine = had.filter((g) => g.userId === a.userId);
  const latest = (of: readonly { until: number | null }[]): number | null | undefined =>
    of.length === 0 ? undefined : of.some((g) => g.until === null) ? null : Math.max(...of.map((g) => g.until as number));
  const any = latest(mine);
  return codes.map((code) => {
    const own = latest(mine.filter((g) => g.code === code));
    return { code, endsAt: own !== undefined ? own : any !== undefined ? any : a.endsAt };
  });
}

/**
 * Licenses made from it keep what they copied; they show no template from then on. A template a store's product
 * mapping sells is refused (409): its next sale would otherwise grant nothing (docs/integrations.md). Its row is
 * locked first, so a mapping created at the same moment is seen here, or finds no template; the mapping's
 * foreign key (no ON DELETE, migration 16) refuses what a lock would miss, answered the same 409.
 */
export async function deleteTemplate(s: AdminServices, appId: string, id: string): Promise<void> {
  await getApp(s, appId);
  const sells = (what: string) => new DomainError('conflict', `A store sells this template (${what}): map those products to something else first`);
  await write(s, async ({ tx, audit, emit }) => {
    const t = await tx.templates.findLocked(appId, id, 'update');
    if (!t) throw notFound();
    const sold = await tx.sales.mappingsOfTemplate(appId, id);
    if (sold.length > 0) throw sells(sold.map((m) => `${m.provider} ${m.productKey}`).join(', '));
    if (!(await tx.templates.delete(appId, id))) throw notFound();
    await audit('template.delete', appId, id, { before: viewTemplate(t) });
    await emit('template.deleted', appId, viewTemplate(t));
  }).catch((err: unknown) => {
    throw err instanceof ForeignKeyViolation ? sells('a product mapping names it') : err;
  });
}
