import { randomUUID } from 'node:crypto';
import type { Cursor } from '../../store/pagination.js';
import type { Page } from '../../store/records.js';
import type { AttemptRecord, DeliveryRecord, DeliveryStatus, EndpointKind, EndpointRecord } from '../../store/repositories/webhooks.js';
import type { AdminServices } from '../admin/audit.js';
import { getApp } from '../admin/apps.js';
import { DomainError, validationError } from '../errors.js';
import { iso } from '../membership.js';
import { isEventType } from '../outbox/catalogue.js';
import type { Services } from '../services.js';
import { write } from '../unit-of-work.js';
import { EgressRefused, resolveTarget } from './egress.js';
import { isMaskedUrl, maskedUrl } from './url-mask.js';
import { newSecret, OLD_SECRET_MS, SERVICE_SCOPE, webhookKey } from './signing.js';

/** An app's id, or null for the service-wide endpoints (every app's events, and the service's own). */
export type Scope = string | null;

export interface EndpointView {
  id: string;
  app_id: string | null;
  url: string;
  kind: EndpointKind;
  /** null: every event type. */
  event_types: string[] | null;
  description: string;
  enabled: boolean;
  /** Why the service disabled it (410 Gone, failing for 24 h); null otherwise. */
  disabled_reason: string | null;
  /** Since when every delivery failed; null when the last one succeeded. */
  failing_since: string | null;
  /** Until when the secret before the last rotation still signs beside the current one. */
  previous_secret_until: string | null;
  created_at: string;
  updated_at: string;
}

const ts = (ms: number | null): string | null => (ms === null ? null : iso(ms));

export function viewEndpoint(e: EndpointRecord, now: number): EndpointView {
  return {
    id: e.id, app_id: e.appId, url: maskedUrl(e.url, e.kind), kind: e.kind, event_types: e.eventTypes, description: e.description, enabled: e.enabled,
    disabled_reason: e.disabledReason, failing_since: ts(e.failingSince),
    previous_secret_until: e.previousSecretUntil !== null && e.previousSecretUntil > now ? iso(e.previousSecretUntil) : null,
    created_at: iso(e.createdAt), updated_at: iso(e.updatedAt),
  };
}

export interface EndpointInput {
  url: string;
  kind?: EndpointKind;
  event_types?: string[] | null;
  description?: string;
  enabled?: boolean;
}

function checkTypes(types: string[] | null | undefined): void {
  if (types === undefined || types === null) return;
  if (types.length === 0) throw validationError('body.event_types', 'must list at least one event type, or be null for every type');
  const unknown = types.find((t) => !isEventType(t));
  if (unknown !== undefined) throw validationError('body.event_types', `"${unknown}" is not an event type (docs/webhooks.md lists them)`);
}

/** The URL checked as every delivery will check it: https, and every address it resolves to public. */
async function checkUrl(s: Services, url: string, kind: EndpointKind): Promise<void> {
  if (url.length > 2048) throw validationError('body.url', 'must be at most 2048 characters');
  // A masked URL is what Tollgate shows, sent back (a form filled from a view): it would deliver nowhere.
  if (isMaskedUrl(url, kind)) throw validationError('body.url', 'is a masked URL (its token shown as ****): give the full webhook URL');
  try {
    await resolveTarget(url, s.egress);
  } catch (err) {
    if (err instanceof EgressRefused) throw validationError('body.url', err.message);
    throw err;
  }
}

function checkDescription(description: string | undefined): void {
  if (description !== undefined && [...description].length > 500) throw validationError('body.description', 'must be at most 500 characters');
}

async function requireScope(s: Services, scope: Scope): Promise<void> {
  if (scope !== null) await getApp(s, scope);
}

async function endpointIn(s: Services, scope: Scope, id: string): Promise<EndpointRecord> {
  await requireScope(s, scope);
  const e = await s.store.webhooks.findEndpoint(id);
  if (!e || e.appId !== scope) throw new DomainError('not_found', 'Webhook endpoint not found');
  return e;
}

/** The secret is in this answer only. */
export async function createEndpoint(a: AdminServices, scope: Scope, input: EndpointInput): Promise<EndpointView & { secret: string }> {
  await requireScope(a, scope);
  checkTypes(input.event_types);
  checkDescription(input.description);
  await checkUrl(a, input.url, input.kind ?? 'standard');
  const now = a.clock();
  const record: EndpointRecord = {
    id: randomUUID(), appId: scope, url: input.url, kind: input.kind ?? 'standard', eventTypes: input.event_types ?? null,
    description: input.description ?? '', enabled: input.enabled ?? true, disabledReason: null, secret: newSecret(a.random),
    previousSecret: null, previousSecretUntil: null, failingSince: null, createdAt: now, updatedAt: now,
  };
  const view = viewEndpoint(record, now);
  await write(a, async ({ tx, audit }) => {
    await tx.webhooks.insertEndpoint(record);
    await audit('webhook.create', scope, record.id, { after: { url: view.url, kind: view.kind, event_types: view.event_types, description: view.description, enabled: view.enabled } });
  });
  // The scope's signing key exists before the first delivery needs it, so its public half can be shown now.
  await webhookKey(a, scope ?? SERVICE_SCOPE);
  return { ...view, secret: record.secret };
}

export async function listEndpoints(s: Services, scope: Scope, cursor: Cursor | null, limit: number): Promise<Page<EndpointView>> {
  await requireScope(s, scope);
  const page = await s.store.webhooks.listEndpoints(scope, cursor, limit);
  const now = s.clock();
  return { items: page.items.map((e) => viewEndpoint(e, now)), nextCursor: page.nextCursor };
}

export async function getEndpoint(s: Services, scope: Scope, id: string): Promise<EndpointView> {
  return viewEndpoint(await endpointIn(s, scope, id), s.clock());
}

export async function updateEndpoint(a: AdminServices, scope: Scope, id: string, patch: Partial<EndpointInput>): Promise<EndpointView> {
  const before = await endpointIn(a, scope, id);
  checkTypes(patch.event_types);
  checkDescription(patch.description);
  // The URL as the endpoint's views show it (its token masked) means "unchanged": the stored one stays.
  const url = patch.url === undefined || patch.url === maskedUrl(before.url, before.kind) ? undefined : patch.url;
  if (url !== undefined) await checkUrl(a, url, before.kind);
  const now = a.clock();
  return write(a, async ({ tx, audit }) => {
    const changes = { url, eventTypes: patch.event_types, description: patch.description, enabled: patch.enabled };
    if (!(await tx.webhooks.updateEndpoint(id, changes, now))) throw new DomainError('not_found', 'Webhook endpoint not found');
    const stored = (await tx.webhooks.findEndpoint(id))!;
    const after = viewEndpoint(stored, now);
    const was = viewEndpoint(before, now);
    // Compared as stored (a new token may mask like the old one), written as shown (masked).
    const raw = { url: [before.url, stored.url], event_types: [before.eventTypes, stored.eventTypes], description: [before.description, stored.description], enabled: [before.enabled, stored.enabled] };
    const changed = (Object.keys(raw) as (keyof typeof raw)[]).filter((f) => JSON.stringify(raw[f][0]) !== JSON.stringify(raw[f][1]));
    await audit('webhook.update', scope, id, { before: Object.fromEntries(changed.map((f) => [f, was[f]])), after: Object.fromEntries(changed.map((f) => [f, after[f]])) });
    return after;
  });
}

export async function deleteEndpoint(a: AdminServices, scope: Scope, id: string): Promise<void> {
  const before = await endpointIn(a, scope, id);
  await write(a, async ({ tx, audit }) => {
    if (!(await tx.webhooks.deleteEndpoint(id))) throw new DomainError('not_found', 'Webhook endpoint not found');
    await audit('webhook.delete', scope, id, { before: { url: maskedUrl(before.url, before.kind), kind: before.kind } });
  });
}

/** A new secret, shown once; the old one signs beside it for 24 h, so receivers can switch without missing a delivery. */
export async function rotateEndpointSecret(a: AdminServices, scope: Scope, id: string): Promise<{ secret: string; previous_secret_until: string }> {
  const secret = newSecret(a.random);
  const now = a.clock();
  await endpointIn(a, scope, id);
  await write(a, async ({ tx, audit }) => {
    const current = await tx.webhooks.findEndpoint(id);
    if (!current) throw new DomainError('not_found', 'Webhook endpoint not found');
    await tx.webhooks.rotateSecret(id, secret, current.secret, now + OLD_SECRET_MS, now);
    await audit('webhook.rotate_secret', scope, id, { previous_secret_until: iso(now + OLD_SECRET_MS) });
  });
  return { secret, previous_secret_until: iso(now + OLD_SECRET_MS) };
}

/** A `webhook.test` event delivered to this endpoint only (it is no change, so no other endpoint hears of it). */
export async function sendTestEvent(a: AdminServices, scope: Scope, id: string): Promise<{ event_id: string; delivery_id: string }> {
  const endpoint = await endpointIn(a, scope, id);
  if (!endpoint.enabled) throw new DomainError('conflict', 'This webhook endpoint is disabled: enable it first');
  return write(a, async ({ emit, audit }) => {
    const { eventId, deliveryId } = await emit('webhook.test', scope, { endpoint_id: id, message: 'A test event sent from Tollgate' }, id);
    await audit('webhook.test', scope, id, { event_id: eventId });
    return { event_id: eventId, delivery_id: deliveryId! };
  });
}

export interface AttemptView {
  at: string;
  status: number | null;
  error: string | null;
  body: string | null;
  duration_ms: number;
}

export interface DeliveryView {
  id: string;
  event_id: string;
  event_type: string;
  status: DeliveryStatus;
  attempts: number;
  next_attempt_at: string | null;
  last_status: number | null;
  created_at: string;
  updated_at: string;
  attempt_log: AttemptView[];
}

const viewAttempt = (a: AttemptRecord): AttemptView => ({ at: iso(a.at), status: a.status, error: a.error, body: a.body, duration_ms: a.durationMs });

function viewDelivery(d: DeliveryRecord & { eventType: string }, attempts: AttemptRecord[]): DeliveryView {
  return {
    id: d.id, event_id: d.eventId, event_type: d.eventType, status: d.status, attempts: d.attempts,
    next_attempt_at: d.status === 'pending' ? ts(d.nextAt) : null, last_status: d.lastStatus, created_at: iso(d.createdAt), updated_at: iso(d.updatedAt),
    attempt_log: attempts.filter((a) => a.deliveryId === d.id).map(viewAttempt),
  };
}

export async function listDeliveries(s: Services, scope: Scope, id: string, status: DeliveryStatus | undefined, cursor: Cursor | null, limit: number): Promise<Page<DeliveryView>> {
  await endpointIn(s, scope, id);
  const page = await s.store.webhooks.listDeliveries(id, status, cursor, limit);
  const attempts = await s.store.webhooks.attemptsOf(page.items.map((d) => d.id));
  return { items: page.items.map((d) => viewDelivery(d, attempts)), nextCursor: page.nextCursor };
}

/** Sends one delivery again from the start of the schedule (same webhook-id: receivers deduplicate on it). */
export async function replayDelivery(a: AdminServices, scope: Scope, id: string, deliveryId: string): Promise<void> {
  await endpointIn(a, scope, id);
  const now = a.clock();
  await write(a, async ({ tx, audit }) => {
    const d = await tx.webhooks.findDelivery(deliveryId);
    if (!d || d.endpointId !== id) throw new DomainError('not_found', 'Delivery not found');
    if (!(await tx.webhooks.replay(deliveryId, now))) throw new DomainError('conflict', 'This delivery is still pending: it is sent by its schedule');
    await audit('webhook.replay', scope, id, { delivery_ids: [deliveryId] });
  });
  a.outbox.committed();
}

/** Every failed delivery of the endpoint created at or after `since`, again from the start of the schedule. */
export async function replayFailed(a: AdminServices, scope: Scope, id: string, since: number): Promise<{ replayed: number }> {
  await endpointIn(a, scope, id);
  const now = a.clock();
  const replayed = await write(a, async ({ tx, audit }) => {
    const n = await tx.webhooks.replayFailedSince(id, since, now);
    await audit('webhook.replay', scope, id, { failed_since: iso(since), replayed: n });
    return n;
  });
  if (replayed > 0) a.outbox.committed();
  return { replayed };
}

/** The public half of the scope's Ed25519 webhook key (`whpk_…`), for receivers that verify v1a signatures. */
export async function webhookPublicKey(s: Services, scope: Scope): Promise<{ public_key: string }> {
  await requireScope(s, scope);
  return { public_key: (await webhookKey(s, scope ?? SERVICE_SCOPE)).publicKey };
}
