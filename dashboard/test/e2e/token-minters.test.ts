/**
 * Issue 30, item 1, in the browser: the tokens page says who minted each token, and a token
 * whose operator was deleted shows as revoked with that operator's name still on it.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOperator, launchBrowser, openPage, signIn, startServer, visit, type RunningServer } from '../harness';

describe('the tokens page names the minting operator', () => {
  let server: RunningServer;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    server = await startServer();
    await createOperator(server, 'olivia', 'owner password 1234', 'owner');
    await createOperator(server, 'mallory', 'admin password 1234', 'admin');
    browser = await launchBrowser();
    page = (await openPage(browser, 1280)).page;
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  it('a token minted in the page shows its operator; the environment token’s shows none; a deleted operator’s is revoked', async () => {
    expect((await server.admin('POST', '/tokens', { name: 'from-env' })).status).toBe(201);

    await signIn(page, server.url, 'mallory', 'admin password 1234');
    await visit(page, server.url, '/tokens');
    await page.getByLabel('Name (who or what uses it)').fill('mallory-ci');
    await page.getByRole('button', { name: 'Create token' }).click();
    await page.getByRole('button', { name: 'I have stored it' }).click();
    const row = (name: string) => page.getByRole('row').filter({ has: page.getByRole('cell', { name, exact: true }) });
    await expect.poll(() => row('mallory-ci').count()).toBe(1);
    await expect.poll(() => row('mallory-ci').getByRole('cell').nth(2).innerText()).toBe('mallory');
    await expect.poll(() => row('from-env').getByRole('cell').nth(2).innerText()).toBe('no operator');
    await expect.poll(() => page.getByRole('columnheader', { name: 'Minted by' }).count()).toBe(1);

    const operators = await server.admin<{ items: { id: string; username: string }[] }>('GET', '/operators');
    const mallory = operators.body.items.find((o) => o.username === 'mallory')!;
    expect((await server.admin('DELETE', `/operators/${mallory.id}`)).status).toBe(204);

    await page.getByRole('button', { name: 'Sign out' }).click().catch(() => undefined);
    await signIn(page, server.url, 'olivia', 'owner password 1234');
    await visit(page, server.url, '/tokens');
    await expect.poll(() => row('mallory-ci').getByRole('cell').nth(2).innerText()).toBe('mallory');
    await expect.poll(() => row('mallory-ci').getByText('revoked').count()).toBe(1);
  });
});
