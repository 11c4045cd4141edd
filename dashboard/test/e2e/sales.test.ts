/**
 * Sales in (issue 23) in the browser: a store connected with its signing secret (sealed on the
 * server, only its last four characters shown back), a product mapped and unmapped, the store
 * turned off and removed; a viewer offered no change; the page with axe-core at 1280 and 390 px.
 * An order arrives as Lemon Squeezy's documented sample (test/fixtures/sales/), signed as Lemon
 * Squeezy signs (hex HMAC-SHA256 of the body), and is shown with its licenses.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeStage, confirmDialog, openPage, openStage, pageProblems, signIn, visit, ROOT, type RunningServer, type Stage, type Watched } from '../harness';

const OWNER = { username: 'olivia', password: 'owner password 1234' };
const VIEWER = { username: 'vera', password: 'viewer password 1234' };

describe('store integrations in the dashboard', () => {
  let server: RunningServer;
  let browser: Browser;
  let watched: Watched;
  let page: Page;
  let appId = '';

  let stage: Stage<{ id: string }> | undefined;

  beforeAll(async () => {
    // Store secrets are sealed under the KEK: without one the server answers 503.
    stage = await openStage({ env: { SIGNING_KEY_SEAL: randomBytes(32).toString('base64') }, owner: OWNER, others: [{ ...VIEWER, role: 'viewer' }], app: { name: 'Shop' } });
    ({ server, browser, watched, page } = stage);
    appId = stage.app.id;
  });
  afterAll(() => closeStage(stage));

  const stripe = () => page.locator('section').filter({ has: page.getByRole('heading', { name: 'Stripe', exact: true }) });

  it('connects Stripe, maps a product, turns the store off and removes it', async () => {
    await visit(page, server.url, `/apps/${appId}/sales`);
    await expect.poll(() => stripe().getByText('Not connected.').count()).toBe(1);
    await stripe().getByLabel(/^Signing secret/).fill('whsec_e2e_secret_WXYZ');
    await stripe().getByRole('button', { name: 'Connect Stripe' }).click();
    await expect.poll(() => page.getByTestId('store-stripe').textContent()).toBe('on');
    expect(await stripe().innerText()).toContain('…WXYZ');
    expect(await stripe().innerText()).not.toContain('whsec_e2e_secret');
    const integration = await server.admin<{ webhook_path: string }>('GET', `/apps/${appId}/integrations/stripe`);
    expect(await stripe().innerText()).toContain(server.url + integration.body.webhook_path);

    await stripe().getByLabel('Product or price id').fill('price_e2e_1');
    await stripe().getByLabel('Days per code (and per renewal)').fill('30');
    await stripe().getByLabel('Codes per unit bought').fill('2');
    await stripe().getByRole('button', { name: 'Map product' }).click();
    const mapped = stripe().getByRole('row').filter({ hasText: 'price_e2e_1' });
    await expect.poll(() => mapped.count()).toBe(1);
    expect(await mapped.innerText()).toMatch(/30 days\s+2/);
    // A second mapping of the same product is refused with the server's detail.
    await stripe().getByLabel('Product or price id').fill('price_e2e_1');
    await stripe().getByRole('button', { name: 'Map product' }).click();
    await expect.poll(() => stripe().getByTestId('error').count()).toBe(1);

    await stripe().getByRole('button', { name: 'Unmap price_e2e_1' }).click();
    await confirmDialog(page, 'Unmap this product?', 'Unmap product');
    await expect.poll(() => mapped.count()).toBe(0);

    await stripe().getByRole('button', { name: 'Turn off' }).click();
    await confirmDialog(page, 'Turn Stripe off?', 'Turn off');
    await expect.poll(() => page.getByTestId('store-stripe').textContent()).toBe('off: its webhooks are refused');
    expect((await server.admin<{ enabled: boolean }>('GET', `/apps/${appId}/integrations/stripe`)).body.enabled).toBe(false);

    await stripe().getByRole('button', { name: 'Remove Stripe' }).click();
    await confirmDialog(page, 'Remove Stripe?', 'Remove Stripe');
    await expect.poll(() => stripe().getByText('Not connected.').count()).toBe(1);
    expect((await server.admin('GET', `/apps/${appId}/integrations/stripe`)).status).toBe(404);
  });

  it('maps a product to a license template, shown with what the template grants', async () => {
    const template = await server.admin<{ id: string }>('POST', `/apps/${appId}/templates`, { name: 'Pro yearly', minutes: 525_600, entitlements: ['pro'], max_devices: 3 });
    expect(template.status).toBe(201);
    await visit(page, server.url, `/apps/${appId}/sales`);
    await stripe().getByLabel(/^Signing secret/).fill('whsec_e2e_tiers_WXYZ');
    await stripe().getByRole('button', { name: 'Connect Stripe' }).click();
    await expect.poll(() => page.getByTestId('store-stripe').textContent()).toBe('on');
    await stripe().getByLabel('Product or price id').fill('price_e2e_pro');
    await stripe().getByLabel('Template', { exact: true }).check();
    await stripe().getByLabel(/^License template/).selectOption({ label: 'Pro yearly — 365 days · pro · 3 devices' });
    await stripe().getByRole('button', { name: 'Map product' }).click();
    const mapped = stripe().getByRole('row').filter({ hasText: 'price_e2e_pro' });
    await expect.poll(() => mapped.count()).toBe(1);
    expect(await mapped.innerText()).toContain('template Pro yearly');
    const stored = await server.admin<{ items: { template_id: string | null; minutes: number | null }[] }>('GET', `/apps/${appId}/integrations/stripe/products`);
    expect(stored.body.items).toEqual([expect.objectContaining({ template_id: template.body.id, minutes: null })]);
    expect((await server.admin('DELETE', `/apps/${appId}/integrations/stripe`)).status).toBe(204);
  });

  it('an order from a store is listed with its licenses', async () => {
    const secret = 'lemon-e2e-signing-secret';
    await visit(page, server.url, `/apps/${appId}/sales`);
    const lemon = page.locator('section').filter({ has: page.getByRole('heading', { name: 'Lemon Squeezy', exact: true }) });
    await lemon.getByLabel(/^Signing secret/).fill(secret);
    await lemon.getByRole('button', { name: 'Connect Lemon Squeezy' }).click();
    await expect.poll(() => page.getByTestId('store-lemonsqueezy').textContent()).toBe('on');
    // The sample sells variant 1.
    await lemon.getByLabel('Product or price id').fill('1');
    await lemon.getByLabel('Lifetime').check();
    await lemon.getByRole('button', { name: 'Map product' }).click();
    await expect.poll(() => lemon.getByRole('row').filter({ hasText: 'lifetime' }).count()).toBe(1);

    const body = readFileSync(join(ROOT, 'test/fixtures/sales/lemonsqueezy/order_created.json'));
    const path = (await server.admin<{ webhook_path: string }>('GET', `/apps/${appId}/integrations/lemonsqueezy`)).body.webhook_path;
    const sent = await fetch(server.url + path, { method: 'POST', headers: { 'content-type': 'application/json', 'x-signature': createHmac('sha256', secret).update(body).digest('hex') }, body });
    expect(sent.status).toBe(200);

    await page.reload();
    const order = page.getByRole('region', { name: 'Orders' }).getByRole('row').filter({ hasText: 'gernser@yahoo.com' });
    await expect.poll(() => order.count()).toBe(1);
    expect(await order.innerText()).toContain('Lemon Squeezy');
    await order.getByRole('button', { name: /^Licenses of order/ }).click();
    await expect.poll(() => order.getByTestId('order-licenses').innerText()).toMatch(/^[A-Z0-9-]+ lifetime issued$/);
    const code = (await order.getByTestId('order-licenses').locator('code').innerText()).trim();
    const licenses = await server.admin<{ items: { code: string }[] }>('GET', `/apps/${appId}/licenses`);
    expect(licenses.body.items.map((l) => l.code)).toEqual([code]);
  });

  it('a viewer sees the stores and orders but is offered no change', async () => {
    expect((await server.admin('PUT', `/apps/${appId}/integrations/paddle`, { signing_secret: 'pdl_ntfset_e2e_ABCD' })).status).toBe(200);
    const viewer = await openPage(browser, 1280);
    await signIn(viewer.page, server.url, VIEWER.username, VIEWER.password);
    await visit(viewer.page, server.url, `/apps/${appId}/sales`);
    await expect.poll(() => viewer.page.getByTestId('store-paddle').textContent()).toBe('on');
    expect(await viewer.page.getByRole('button').filter({ hasText: /Connect|Replace secret|Turn off|Remove|Map product/ }).count()).toBe(0);
    await expect.poll(() => viewer.page.getByRole('navigation', { name: 'Pages of orders' }).getByTestId('pager-status').textContent()).toBe('1–1 orders');
    await viewer.page.context().close();
  });

  it('the sales page passes axe-core at 1280 and 390 px, without sideways scrolling or a CSP report', async () => {
    const problems = await pageProblems(watched, server.url, [['sales', `/apps/${appId}/sales`]]);
    expect(problems).toEqual([]);
    expect(watched.cspViolations).toEqual([]);
    expect(watched.pageErrors).toEqual([]);
  });
});
