/**
 * A list page with 100,000 licenses behind it: the browser asks for one page at a time (never
 * more than the page size), shows the total the server counted, pages forward and back, and
 * filters on the server. Also the bulk and single deletes of unused licenses from the page.
 */
import type { Browser, Response } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { confirmDialog, createOperator, launchBrowser, openPage, signIn, startServer, visit, type RunningServer } from '../harness';

const TOTAL = 100_000;

describe('the licenses page over 100,000 licenses', () => {
  let server: RunningServer;
  let browser: Browser;
  let appId = '';

  beforeAll(async () => {
    server = await startServer();
    await createOperator(server, 'lena', 'licenses password 1234', 'admin');
    appId = (await server.admin<{ id: string }>('POST', '/apps', { name: 'Big Catalogue' })).body.id;
    for (let made = 0; made < TOTAL; made += 10_000) {
      const batch = await server.admin('POST', `/apps/${appId}/licenses`, { count: 10_000, minutes: 60, note: made === 0 ? 'first batch' : 'bulk' });
      expect(batch.status).toBe(201);
    }
    browser = await launchBrowser();
  }, 300_000);
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  it('loads one page at a time and counts all of them', async () => {
    const { page } = await openPage(browser, 1280);
    const pages: number[] = [];
    page.on('response', (response: Response) => {
      if (new URL(response.url()).pathname === `/admin/v1/apps/${appId}/licenses` && response.request().method() === 'GET') {
        void response.json().then((body: { items: unknown[] }) => pages.push(body.items.length), () => undefined);
      }
    });
    await signIn(page, server.url, 'lena', 'licenses password 1234');
    await visit(page, server.url, `/apps/${appId}/licenses`);
    const status = page.getByTestId('pager-status');
    await expect.poll(() => status.textContent()).toBe(`1–25 of ${TOTAL.toLocaleString('en-US')} licenses`);
    await page.getByRole('button', { name: 'Next' }).click();
    await expect.poll(() => status.textContent()).toBe(`26–50 of ${TOTAL.toLocaleString('en-US')} licenses`);
    await page.getByRole('button', { name: 'Previous' }).click();
    await expect.poll(() => status.textContent()).toMatch(/^1–25 of/);

    await page.getByLabel('Note contains', { exact: true }).fill('first batch');
    await expect.poll(() => status.textContent()).toBe('1–25 of 10,000 licenses');
    // The first page, next, previous, the filtered first page (each body read as it arrives).
    await expect.poll(() => pages.length).toBeGreaterThanOrEqual(4);
    expect(Math.max(...pages)).toBe(25);
  });

  it('deletes one unused license, then every unused one the filter names, after asking', async () => {
    const { page } = await openPage(browser, 1280);
    await signIn(page, server.url, 'lena', 'licenses password 1234');
    await visit(page, server.url, `/apps/${appId}/licenses`);
    await page.getByLabel('Note contains', { exact: true }).fill('first batch');
    const status = page.getByTestId('pager-status');
    await expect.poll(() => status.textContent()).toBe('1–25 of 10,000 licenses');

    await page.getByRole('button', { name: /^Delete license / }).first().click();
    await confirmDialog(page, 'Delete this license?', 'Delete license');
    await expect.poll(() => status.textContent()).toBe('1–25 of 9,999 licenses');

    // Cancel first: nothing goes.
    await page.getByRole('button', { name: 'Delete unused…' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
    await expect.poll(() => status.textContent()).toBe('1–25 of 9,999 licenses');

    await page.getByRole('button', { name: 'Delete unused…' }).click();
    await confirmDialog(page, 'Delete unused licenses?', 'Delete unused licenses');
    await expect.poll(() => status.textContent()).toBe('No licenses');
    const rest = await server.admin<{ total: number }>('GET', `/apps/${appId}/licenses?with_total=true&limit=1`);
    expect(rest.body.total).toBe(TOTAL - 10_000);
  });
});
