/**
 * An idle session ends (the server runs with ADMIN_SESSION_IDLE_SECONDS=2): the next thing the
 * operator does lands on the sign-in form with the reason, and the old cookie opens nothing.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOperator, launchBrowser, openPage, screenshotPath, signIn, startServer, visit, type RunningServer } from '../harness';

describe('an idle dashboard session', () => {
  let server: RunningServer;
  let browser: Browser;

  beforeAll(async () => {
    server = await startServer({ ADMIN_SESSION_IDLE_SECONDS: '2' });
    await createOperator(server, 'ida', 'idle password 1234', 'owner');
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  it('expires, and the page asks to sign in again', async () => {
    const { page } = await openPage(browser, 1280);
    await signIn(page, server.url, 'ida', 'idle password 1234');
    await visit(page, server.url, '/apps');
    // Idle for longer than the timeout: no request in between (each would refresh it).
    await new Promise((r) => setTimeout(r, 3500));
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Audit log' }).click();
    const reason = page.getByTestId('signed-out-reason');
    await reason.waitFor();
    expect(await reason.textContent()).toMatch(/signed out/i);
    expect(await page.getByLabel('Username').isVisible()).toBe(true);
    await page.screenshot({ path: screenshotPath('session-expired-1280') });

    const status = await page.evaluate(async () => (await fetch('/admin/v1/session')).status);
    expect(status).toBe(401);

    // Signing in again, with the keyboard alone, goes on where the operator was.
    await page.getByLabel('Username').fill('ida');
    await page.keyboard.press('Tab');
    await page.keyboard.type('idle password 1234');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Audit log' }).waitFor();
  });
});
