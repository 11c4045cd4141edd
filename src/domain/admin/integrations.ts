import { randomUUID } from 'node:crypto';
import { ForeignKeyViolation } from '../../store/db.js';
import type { Cursor } from '../../store/pagination.js';
import type { Repositories } from '../../store/index.js';
import type { Page } from '../../store/records.js';
import type { IntegrationRecord, OrderRecord, ProductMappingRecord, Provider } from '../../store/repositories/sales.js';
import { DomainError, validationError } from '../errors.js';
import { iso } from '../membership.js';
import { sealSecret, secretHint } from '../sales/secrets.js';
import type { Services } from '../services.js';
import { write } from '../unit-of-work.js';
import { getApp } from './apps.js';
import type { AdminServices } from './audit.js';

/** The operator's side of "Sales in" (docs/integrations.md): a store's signing secret and product mappings per app. */

export interface IntegrationView {
  provider: Provider;
  enabled: boolean;
  /** The secret is never shown again after it is set: only its last four characters. */
  secret_hint: string;
  /** Where the store must send its events (append it to the server's public URL). */
  webhook_path: string;
  created_at: string;
  updated_at: string;
}

export interface MappingView {
  id: string;
  product_key: string;
  minutes: number | null;
  lifetime: boolean;
  /** The license template each code is made from (its duration, entitlements and limits); null: minutes or lifetime. */
  template_id: string | null;
  codes_per_unit: number;
  note: string | null;
  created_at: string;
  updated_at: string;
}

export interface OrderView {
  id: string;
  provider: Provider;
  order_ref: string;
  payment_ref: string | null;
  subscription_ref: string | null;
  event_id: string;
  buyer_email: string | null;
  customer_ref: string | null;
  status: OrderRecord['status'];
  created_at: string;
  updated_at: string;
}

export interface OrderLicenseView {
  license_id: string;
  code: string;
  minutes: number | null;
  lifetime: boolean;
  renewal_minutes: number;
  state: 'issued' | 'revoked';
}

const viewIntegration = (i: IntegrationRecord): IntegrationView => ({
  provider: i.provider, enabled: i.enabled, secret_hint: i.secretHint, webhook_path: `/integrations/${i.provider}/${i.appId}`,
  created_at: iso(i.createdAt), updated_at: iso(i.updatedAt),
});
const viewMapping = (m: ProductMappingRecord): MappingView => ({
  id: m.id, product_key: m.productKey, minutes: m.minutes, lifetime: m.lifetime, template_id: m.templateId, codes_per_unit: m.codesPerUnit, note: m.note,
  created_at: iso(m.createdAt), updated_at: iso(m.updatedAt),
});
export const viewOrder = (o: OrderRecord): OrderView => ({
  id: o.id, provider: o.provider, order_ref: o.orderRef, payment_ref: o.paymentRef, subscription_ref: o.subscriptionRef, event_id: o.eventId,
  buyer_email: o.buyerEmail, customer_ref: o.customerRef, status: o.status, created_at: iso(o.createdAt), updated_at: iso(o.updatedAt),
});

const noIntegration = () => new DomainError('not_found', 'This application has no integration with that store');
const noMapping = () => new DomainError('not_found', 'Product mapping not found');

export async function listIntegrations(s: Services, appId: string): Promise<IntegrationView[]> {
  await getApp(s, appId);
  return (await s.store.sales.integrations(appId)).map(viewIntegration);
}

export async function getIntegration(s: Services, appId: string, provider: Provider): Promise<IntegrationView> {
  const found = await s.store.sales.findIntegration(appId, provider);
  if (!found) throw noIntegration();
  return viewIntegration(found);
}

/** Sets (or replaces) the store's signing secret; a replaced one stops verifying at once. */
export async function putIntegration(s: AdminServices, appId: string, provider: Provider, input: { signing_secret: string; enabled?: boolean }): Promise<IntegrationView> {
  await getApp(s, appId);
  const secret = input.signing_secret;
  if (secret.trim() !== secret || secret.length < 6) throw validationError('body.signing_secret', 'must be at least 6 characters, without surrounding whitespace');
  const now = s.clock();
  return write(s, async ({ tx, audit }) => {
    const before = await tx.sales.findIntegration(appId, provider);
    const record: IntegrationRecord = {
      appId, provider, signingSecret: sealSecret(s.seal, appId, provider, secret), secretHint: secretHint(secret),
      enabled: input.enabled ?? before?.enabled ?? true, createdAt: before?.createdAt ?? now, updatedAt: now,
    };
    await tx.sales.upsertIntegration(record);
    // The secret never enters the audit log: only that it changed, and its hint.
    await audit('integration.set', appId, null, { provider, replaced: before !== undefined, secret_hint: record.secretHint, enabled: record.enabled });
    return viewIntegration(record);
  });
}

export async function setIntegrationEnabled(s: AdminServices, appId: string, provider: Provider, enabled: boolean): Promise<IntegrationView> {
  const now = s.clock();
  return write(s, async ({ tx, audit }) => {
    if (!(await tx.sales.setIntegrationEnabled(appId, provider, enabled, now))) throw noIntegration();
    await audit('integration.update', appId, null, { provider, enabled });
    return viewIntegration((await tx.sales.findIntegration(appId, provider))!);
  });
}

export async function deleteIntegration(s: AdminServices, appId: string, provider: Provider): Promise<void> {
  await write(s, async ({ tx, audit }) => {
    if (!(await tx.sales.deleteIntegration(appId, provider))) throw noIntegration();
    await audit('integration.delete', appId, null, { provider });
  });
}

export interface MappingInput {
  product_key: string;
  minutes?: number;
  lifetime?: boolean;
  /** A license template of the same app: each code is made from it (then no minutes or lifetime). */
  template_id?: string;
  codes_per_unit?: number;
  note?: string | null;
}

type Grant = { minutes: number | null; lifetime: boolean; templateId: string | null };

/** Minutes, lifetime or a template, exactly one: what each code of a sale grants. */
function grantOf(input: { minutes?: number | null; lifetime?: boolean; template_id?: string | null }): Grant {
  const lifetime = input.lifetime === true;
  const minutes = input.minutes ?? null;
  const templateId = input.template_id ?? null;
  if (templateId !== null) {
    // The template says the duration: giving one as well would be two answers to one question (as for POST …/licenses).
    if (minutes !== null) throw validationError('body.minutes', 'cannot be combined with template_id (the template sets it)');
    if (input.lifetime !== undefined) throw validationError('body.lifetime', 'cannot be combined with template_id (the template sets it)');
    return { minutes: null, lifetime: false, templateId };
  }
  if (lifetime && minutes !== null) throw validationError('body.minutes', 'cannot be combined with lifetime');
  if (!lifetime && minutes === null) throw validationError('body.minutes', 'is required unless lifetime is true or template_id is given');
  return { minutes, lifetime, templateId: null };
}

const unknownTemplate = () => validationError('body.template_id', 'is not a template of this application');

/**
 * A template named by a mapping must be one of the mapping's app (one of another app is as unknown as none). Its
 * row is read under a share lock until the mapping commits: a deletion of the template at the same moment comes
 * wholly before (no template: 422) or after (it sees the mapping: 409), never leaving a mapping that grants nothing.
 */
async function checkTemplate(tx: Repositories, appId: string, grant: Grant): Promise<void> {
  if (grant.templateId !== null && !(await tx.templates.findLocked(appId, grant.templateId, 'share'))) throw unknownTemplate();
}

/**
 * A mapping's foreign keys name its integration (which goes with its app) and its template: a refusal means one of
 * them was deleted after the checks read it. The refusal does not say which (SQLite names no constraint), so they
 * are read again, outermost first, and the answer is the one the checks would have given had they run after the
 * delete: no app, no integration (404), or no template (422). Anything else stays a store conflict (409).
 */
async function vanished(s: Services, appId: string, provider: Provider, templateId: string | null, err: unknown): Promise<never> {
  if (!(err instanceof ForeignKeyViolation)) throw err;
  await getApp(s, appId);
  if (!(await s.store.sales.findIntegration(appId, provider))) throw noIntegration();
  if (templateId !== null && !(await s.store.templates.findById(appId, templateId))) throw unknownTemplate();
  throw err;
}

/** What the audit entry of a mapping change records of it. */
const audited = (m: ProductMappingRecord) => ({
  provider: m.provider, product_key: m.productKey, minutes: m.minutes, lifetime: m.lifetime, template_id: m.templateId, codes_per_unit: m.codesPerUnit,
});

export async function listMappings(s: Services, appId: string, provider: Provider): Promise<MappingView[]> {
  if (!(await s.store.sales.findIntegration(appId, provider))) throw noIntegration();
  return (await s.store.sales.mappings(appId, provider)).map(viewMapping);
}

export async function createMapping(s: AdminServices, appId: string, provider: Provider, input: MappingInput): Promise<MappingView> {
  const grant = grantOf(input);
  const now = s.clock();
  const record: ProductMappingRecord = {
    id: randomUUID(), appId, provider, productKey: input.product_key, ...grant, codesPerUnit: input.codes_per_unit ?? 1,
    note: input.note ?? null, createdAt: now, updatedAt: now,
  };
  return write(s, async ({ tx, audit }) => {
    if (!(await tx.sales.findIntegration(appId, provider))) throw noIntegration();
    await checkTemplate(tx, appId, grant);
    if (!(await tx.sales.insertMapping(record))) throw new DomainError('conflict', 'This product or price id is already mapped for this store');
    await audit('integration.product_create', appId, record.id, audited(record));
    return viewMapping(record);
  }).catch((err: unknown) => vanished(s, appId, provider, grant.templateId, err));
}

/** Changes what future sales grant; licenses already sold keep what they were sold with. */
export async function updateMapping(s: AdminServices, appId: string, provider: Provider, id: string, input: Partial<Omit<MappingInput, 'product_key'>>): Promise<MappingView> {
  const now = s.clock();
  return write(s, async ({ tx, audit }) => {
    const before = await tx.sales.findMapping(appId, provider, id);
    if (!before) throw noMapping();
    // A new grant given (a template, minutes or lifetime) replaces the old one whole; none given keeps it.
    let grant: Grant;
    if (input.template_id !== undefined) grant = grantOf(input);
    else if (input.minutes !== undefined || input.lifetime !== undefined) {
      const lifetime = input.lifetime ?? (input.minutes !== undefined ? false : before.lifetime);
      grant = grantOf({ lifetime, minutes: lifetime ? (input.minutes ?? null) : (input.minutes ?? before.minutes) });
    } else grant = { minutes: before.minutes, lifetime: before.lifetime, templateId: before.templateId };
    await checkTemplate(tx, appId, grant);
    const after: ProductMappingRecord = {
      ...before, ...grant, codesPerUnit: input.codes_per_unit ?? before.codesPerUnit, note: input.note === undefined ? before.note : input.note, updatedAt: now,
    };
    await tx.sales.updateMapping(after);
    await audit('integration.product_update', appId, id, audited(after));
    return viewMapping(after);
  }).catch((err: unknown) => vanished(s, appId, provider, input.template_id ?? null, err));
}

export async function deleteMapping(s: AdminServices, appId: string, provider: Provider, id: string): Promise<void> {
  await write(s, async ({ tx, audit }) => {
    const before = await tx.sales.findMapping(appId, provider, id);
    if (!before || !(await tx.sales.deleteMapping(appId, provider, id))) throw noMapping();
    await audit('integration.product_delete', appId, id, { provider, product_key: before.productKey });
  });
}

export async function listOrders(s: Services, appId: string, cursor: Cursor | null, limit: number): Promise<Page<OrderView>> {
  await getApp(s, appId);
  const page = await s.store.sales.listOrders(appId, cursor, limit);
  return { items: page.items.map(viewOrder), nextCursor: page.nextCursor };
}

export async function getOrder(s: Services, appId: string, id: string): Promise<OrderView & { licenses: OrderLicenseView[] }> {
  const found = await s.store.sales.findOrder(appId, id);
  if (!found) throw new DomainError('not_found', 'Order not found');
  const licenses = (await s.store.sales.orderLicenses(id)).map((l) => ({
    license_id: l.licenseId, code: l.code, minutes: l.minutes, lifetime: l.lifetime, renewal_minutes: l.renewalMinutes, state: l.state,
  }));
  return { ...viewOrder(found), licenses };
}
