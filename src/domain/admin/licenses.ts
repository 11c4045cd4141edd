import { randomUUID } from 'node:crypto';
import type { Cursor } from '../../store/pagination.js';
import type { LicenseFilter } from '../../store/repositories/licenses.js';
import type { LicenseRecord, Page, TemplateRecord } from '../../store/records.js';
import type { RandomSource } from '../deps.js';
import { DomainError, validationError } from '../errors.js';
import { iso } from '../membership.js';
import type { Services } from '../service-types.js';
import { write } from '../unit-of-work.js';
import { Checker, parseTimestamp, TIMESTAMP_HINT } from '../validation.js';
import { getApp } from './apps.js';
import { type AdminServices } from './audit.js';

/** No 0/O, no 1/I/L: codes are read aloud and typed by hand. 32 symbols, 5 bits each. */
export const CODE_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';
export const DEFAULT_MASK = 'XXXXX-XXXXX-XXXXX-XXXXX-XXXXX';
const MIN_MASK_BITS = 64;
export const MAX_BATCH = 10_000;

export function maskBits(mask: string): number {
  return [...mask].filter((c) => c === 'X').length * Math.log2(CODE_ALPHABET.length);
}

/** Each X becomes one uniformly random symbol (a byte masked to 5 bits: 256 is a multiple of 32, so no bias). */
export function codeFromMask(mask: string, random: RandomSource): string {
  const bytes = random(mask.length);
  let out = '';
  let i = 0;
  for (const c of mask) out += c === 'X' ? CODE_ALPHABET[bytes[i++]! & 31] : c;
  return out;
}

export interface CreateLicensesInput {
  count: number;
  minutes?: number;
  lifetime?: boolean;
  revokes_lifetime_access?: boolean;
  mask?: string;
  note?: string;
  expires_at?: string;
  /** Made from this template (its id): its duration, entitlements, limits and redeem window. */
  template_id?: string;
}

export interface LicenseView {
  id: string;
  code: string;
  minutes: number | null;
  grants_lifetime_access: boolean;
  revokes_lifetime_access: boolean;
  note: string | null;
  expires_at: string | null;
  created_at: string;
  used_at: string | null;
  used_by_user_id: string | null;
  template_id: string | null;
  entitlements: string[];
  max_devices: number | null;
  max_seats: number | null;
  heartbeat_seconds: number | null;
}

export function viewLicense(l: LicenseRecord): LicenseView {
  return {
    id: l.id,
    code: l.code,
    minutes: l.minutes,
    grants_lifetime_access: l.grantsLifetime,
    revokes_lifetime_access: l.revokesLifetime,
    note: l.note,
    expires_at: l.expiresAt === null ? null : iso(l.expiresAt),
    created_at: iso(l.createdAt),
    used_at: l.usedAt === null ? null : iso(l.usedAt),
    used_by_user_id: l.usedByUserId,
    template_id: l.templateId,
    entitlements: [...l.entitlements],
    max_devices: l.maxDevices,
    max_seats: l.maxSeats,
    heartbeat_seconds: l.heartbeatSeconds,
  };
}

/** Creates `count` licenses in one transaction: all of them or none. */
export async function createLicenses(s: AdminServices, appId: string, input: CreateLicensesInput): Promise<LicenseView[]> {
  await getApp(s, appId);
  const mask = input.mask ?? DEFAULT_MASK;
  const check = new Checker();
  check.text('body.mask', mask, { min: 1, max: 128 });
  check.throwIfAny();
  if (maskBits(mask) < MIN_MASK_BITS) throw validationError('body.mask', `must carry at least ${MIN_MASK_BITS} random bits (13 or more X)`);
  const template = input.template_id === undefined ? null : await templateForLicenses(s, appId, input);
  const lifetime = template ? template.grantsLifetime : input.lifetime === true;
  if (!template && lifetime && input.minutes !== undefined) throw validationError('body.minutes', 'cannot be combined with lifetime');
  if (!template && !lifetime && input.minutes === undefined && input.revokes_lifetime_access !== true) {
    throw validationError('body.minutes', 'is required unless lifetime or revokes_lifetime_access is set');
  }
  const minutes = template ? template.minutes : lifetime ? null : (input.minutes ?? null);
  let expiresAt: number | null = null;
  if (input.expires_at !== undefined) {
    expiresAt = parseTimestamp(input.expires_at);
    if (expiresAt === null) throw validationError('body.expires_at', TIMESTAMP_HINT);
  } else if (template?.redeemWithinMinutes != null) {
    expiresAt = s.clock() + template.redeemWithinMinutes * 60_000;
  }
  const now = s.clock();
  const created = await write(s, async ({ tx, audit, emit }) => {
    const created: LicenseRecord[] = [];
    while (created.length < input.count) {
      const license: LicenseRecord = {
        id: randomUUID(), appId, code: codeFromMask(mask, s.random), minutes,
        grantsLifetime: lifetime, revokesLifetime: input.revokes_lifetime_access === true, note: input.note ?? null,
        expiresAt, createdAt: now, usedAt: null, usedByUserId: null,
        templateId: template?.id ?? null, entitlements: template?.entitlements ?? [], maxDevices: template?.maxDevices ?? null,
        maxSeats: template?.maxSeats ?? null, heartbeatSeconds: template?.heartbeatSeconds ?? null,
      };
      // A duplicate code (astronomically rare at >= 64 bits) is skipped and drawn again.
      if (await tx.licenses.insert(license)) created.push(license);
    }
    // The codes themselves stay out of the audit log: they are credentials until redeemed.
    await audit('licenses.create', appId, null, {
      count: input.count, minutes, lifetime, revokes_lifetime_access: input.revokes_lifetime_access === true,
      template_id: template?.id ?? null, mask, note: input.note ?? null, expires_at: input.expires_at ?? null, first_id: created[0]?.id ?? null,
    });
    // The codes go out here (the vendor's mailer delivers them), signed, to the app's own endpoints: decisions.md.
    await emit('license.created', appId, { count: created.length, licenses: created.map(viewLicense) });
    return created;
  });
  return created.map(viewLicense);
}

/** A template names the license's effects: giving them as well would be two answers to one question. */
async function templateForLicenses(s: Services, appId: string, input: CreateLicensesInput): Promise<TemplateRecord> {
  for (const field of ['minutes', 'lifetime'] as const) {
    if (input[field] !== undefined) throw validationError(`body.${field}`, 'cannot be combined with template_id (the template sets it)');
  }
  const template = await s.store.templates.findById(appId, input.template_id!);
  if (!template) throw validationError('body.template_id', 'is not a template of this application');
  return template;
}

export async function listLicenses(
  s: Services, appId: string, filter: LicenseFilter, cursor: Cursor | null, limit: number, withTotal = false,
): Promise<Page<LicenseView>> {
  await getApp(s, appId);
  const [page, total] = await Promise.all([
    s.store.licenses.list(appId, filter, cursor, limit), withTotal ? s.store.licenses.count(appId, filter) : undefined,
  ]);
  return { items: page.items.map(viewLicense), nextCursor: page.nextCursor, ...(total !== undefined && { total }) };
}

export async function getLicense(s: Services, appId: string, id: string): Promise<LicenseView> {
  const license = await s.store.licenses.findById(appId, id);
  if (!license) throw new DomainError('not_found', 'License not found');
  return viewLicense(license);
}

const notFound = () => new DomainError('not_found', 'License not found');
const used = () => new DomainError('conflict', 'A used license cannot be deleted');

export async function deleteLicense(s: AdminServices, appId: string, id: string): Promise<void> {
  const license = await s.store.licenses.findById(appId, id);
  if (!license) throw notFound();
  if (license.usedAt !== null) throw used();
  await write(s, async ({ tx, audit, emit }) => {
    // Redeemed or deleted meanwhile: the conditional delete refuses, and nothing is recorded.
    if (!(await tx.licenses.deleteUnused(appId, id))) throw (await tx.licenses.findById(appId, id)) ? used() : notFound();
    await audit('license.delete', appId, id, { note: license.note });
    await emit('license.deleted', appId, { license_ids: [id] });
  });
}

/**
 * Deletes every unused license matching the filter (the list's note and creation-time filters), in
 * one transaction with its audit entry; used licenses are part of users' histories and stay.
 */
export async function deleteUnusedLicenses(s: AdminServices, appId: string, filter: Pick<LicenseFilter, 'note' | 'createdFrom' | 'createdTo'>): Promise<{ deleted: number }> {
  await getApp(s, appId);
  return write(s, async ({ tx, audit, emit }) => {
    const ids = await tx.licenses.deleteUnusedMatching(appId, filter);
    const deleted = ids.length;
    await audit('licenses.delete_unused', appId, null, {
      deleted, note: filter.note ?? null,
      created_from: filter.createdFrom === undefined ? null : iso(filter.createdFrom), created_to: filter.createdTo === undefined ? null : iso(filter.createdTo),
    });
    if (deleted > 0) await emit('license.deleted', appId, { license_ids: ids });
    return { deleted };
  });
}

const CSV_COLUMNS = ['id', 'code', 'minutes', 'grants_lifetime_access', 'revokes_lifetime_access', 'note', 'expires_at', 'created_at', 'used_at', 'used_by_user_id'] as const;

/**
 * RFC 4180 quoting; any text starting with = + - @ (or a tab or CR) is
 * prefixed with ' so spreadsheets do not run it as a formula. The code too,
 * not only the note: a mask's literal characters are the creator's choice,
 * and the file is opened by whoever may read the list.
 */
function csvCell(value: unknown): string {
  if (value === null || value === undefined) return '';
  let text = String(value);
  if (typeof value === 'string' && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

export function licensesCsvHeader(): string {
  return CSV_COLUMNS.join(',') + '\r\n';
}

export function licenseCsvRow(l: LicenseView): string {
  return CSV_COLUMNS.map((c) => csvCell(l[c])).join(',') + '\r\n';
}

/** Every license matching the filter as CSV lines, read a page at a time (bounded memory for any count). */
export async function* exportLicensesCsv(s: Services, appId: string, filter: LicenseFilter): AsyncGenerator<string> {
  await getApp(s, appId);
  yield licensesCsvHeader();
  let cursor: Cursor | null = null;
  for (;;) {
    const page = await s.store.licenses.list(appId, filter, cursor, 500);
    let chunk = '';
    for (const l of page.items) chunk += licenseCsvRow(viewLicense(l));
    if (chunk) yield chunk;
    const last = page.items.at(-1);
    if (!page.nextCursor || !last) return;
    cursor = { at: last.createdAt, id: last.id };
  }
}
