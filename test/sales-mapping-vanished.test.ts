import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Repositories } from '../src/store/index.js';
import { expectError, harness, STORE, writableStore, type Harness, type TestApp } from './helpers.js';
import { connect, createTemplate } from './sales-helpers.js';

/**
 * A product mapping whose integration, app or template is deleted between the checks of its creation and its
 * INSERT: the foreign key refuses it, and the answer names what vanished (404 for the app or the integration, 422
 * on body.template_id for the template), as the checks would have answered after the delete. The checks' reads
 * are made stale by answering them with the rows as they were before the delete, which is what a delete that
 * commits between the check and the INSERT leaves (on PostgreSQL; SQLite's one writer never interleaves them).
 */
describe(`a mapping refused by its foreign keys (${STORE})`, () => {
  let h: Harness;
  let app: TestApp;

  beforeEach(async () => {
    h = await harness();
    app = await h.createApp();
    await connect(h, app, 'stripe');
  });
  afterEach(async () => h.close());

  /** Every write transaction from now on reads the integration (and the template) as they are now. */
  async function freezeChecks(templateId?: string): Promise<void> {
    const store = writableStore(h.tollgate.services);
    const integration = await store.sales.findIntegration(app.id, 'stripe');
    const template = templateId === undefined ? undefined : await store.templates.findById(app.id, templateId);
    const real = store.transaction.bind(store);
    store.transaction = <T>(fn: (tx: Repositories) => Promise<T>) => real((tx) => fn({
      ...tx,
      sales: { ...tx.sales, findIntegration: async () => integration },
      templates: { ...tx.templates, findLocked: async () => template },
    }));
  }
  const create = (body: Record<string, unknown>) => h.admin('POST', `/apps/${app.id}/integrations/stripe/products`, body);

  it('the integration deleted: 404 no integration, not a 422 blaming a template the request never named', async () => {
    await freezeChecks();
    expect((await h.admin('DELETE', `/apps/${app.id}/integrations/stripe`)).statusCode).toBe(204);
    const res = await create({ product_key: 'price_1', minutes: 60 });
    expect(expectError(res, 404, 'not_found').detail).toBe('This application has no integration with that store');
  });

  it('the app deleted (its integration with it): 404 application not found', async () => {
    const t = await createTemplate(h, app.id, { name: 'Pro', minutes: 60 });
    await freezeChecks(t.id);
    const gone = await h.admin('DELETE', `/apps/${app.id}?confirm=${encodeURIComponent(app.name)}`);
    expect(gone.statusCode, gone.body).toBe(204);
    const res = await create({ product_key: 'price_1', template_id: t.id });
    expect(expectError(res, 404, 'not_found').detail).toBe('Application not found');
  });

  it('the template deleted: 422 on body.template_id, as before', async () => {
    const t = await createTemplate(h, app.id, { name: 'Pro', minutes: 60 });
    await freezeChecks(t.id);
    expect((await h.admin('DELETE', `/apps/${app.id}/templates/${t.id}`)).statusCode).toBe(204);
    const res = await create({ product_key: 'price_1', template_id: t.id });
    expect(expectError(res, 422, 'validation_error').errors).toEqual([{ field: 'body.template_id', message: 'is not a template of this application' }]);
    expect((await h.admin('GET', `/apps/${app.id}/integrations/stripe/products`)).json().items).toEqual([]);
  });
});
