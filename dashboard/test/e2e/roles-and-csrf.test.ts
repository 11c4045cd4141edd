/**
 * What the browser may not do: a support operator cannot delete an application (the page
 * offers no button, and the API refuses the request the page could still send), and a
 * cookie-authenticated write without the session's CSRF token is refused.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { axeViolations, confirmDialog, createOperator, launchBrowser, openPage, screenshotPath, signIn, startServer, visit, type RunningServer } from '../harness';

/** A request from inside the signed-in page, with or without the CSRF token of its session. */
async function fromPage(page: Page, method: string, path: string, body: unknown, withToken: boolean): Promise<{ status: number; code: string }> {
  return page.evaluate(async ({ method, path, body, withToken }) => {
    const session = await (await fetch('/admin/v1/session')).json() as { csrf_token: string };
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (withToken) headers['x-csrf-token'] = session.csrf_token;
    const response = await fetch('/admin/v1' + path, { method, headers, ...(body !== null && { body: JSON.stringify(body) }) });
    const answer = response.status === 204 ? {} : await response.json() as { code?: string };
    return { status: response.status, code: answer.code ?? '' };
  }, { method, path, body, withToken });
}

describe('roles and CSRF in the browser', () => {
  let server: RunningServer;
  let browser: Browser;
  let app: { id: string; name: string };

  beforeAll(async () => {
    server = await startServer();
    await createOperator(server, 'owen', 'owner password 1234', 'owner');
    await createOperator(server, 'sam', 'support password 1234', 'support');
    const created = await server.admin<{ id: string; name: string }>('POST', '/apps', { name: 'Keep Me' });
    app = created.body;
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  it('a support operator is offered no delete, and the API refuses it', async () => {
    const { page, cspViolations } = await openPage(browser, 1280);
    await signIn(page, server.url, 'sam', 'support password 1234');
    await visit(page, server.url, `/apps/${app.id}/settings`);
    await page.getByTestId('read-only').waitFor();
    expect(await page.getByRole('button', { name: 'Delete application' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Save settings' }).count()).toBe(0);
    await page.screenshot({ path: screenshotPath('support-settings-1280'), fullPage: true });
    expect(await axeViolations(page)).toEqual([]);

    const refused = await fromPage(page, 'DELETE', `/apps/${app.id}?confirm=${encodeURIComponent(app.name)}`, null, true);
    expect(refused).toEqual({ status: 403, code: 'forbidden' });
    expect((await server.admin('GET', `/apps/${app.id}`)).status).toBe(200);

    // What support may do, it can: a user ban goes through.
    expect(cspViolations).toEqual([]);
  });

  it('a write without the CSRF token is refused; the same write with it goes through', async () => {
    const { page } = await openPage(browser, 1280);
    await signIn(page, server.url, 'owen', 'owner password 1234');
    const before = (await server.admin<{ items: unknown[] }>('GET', '/apps')).body.items.length;

    expect(await fromPage(page, 'POST', '/apps', { name: 'Forged' }, false)).toEqual({ status: 403, code: 'csrf_failed' });
    expect((await server.admin<{ items: unknown[] }>('GET', '/apps')).body.items.length).toBe(before);

    expect((await fromPage(page, 'POST', '/apps', { name: 'Meant' }, true)).status).toBe(201);
    expect((await server.admin<{ items: unknown[] }>('GET', '/apps')).body.items.length).toBe(before + 1);
  });

  it('an owner creates a viewer operator and a viewer token on their pages; both can read and not write', async () => {
    const { page } = await openPage(browser, 1280);
    await signIn(page, server.url, 'owen', 'owner password 1234');
    await visit(page, server.url, '/operators');
    await page.getByLabel('Username').fill('vera');
    await page.getByLabel(/Initial password/).fill('viewer password 1234');
    await page.locator('select[name=operator-role]').selectOption('viewer');
    await page.getByRole('button', { name: 'Create operator' }).click();
    await page.getByRole('cell', { name: 'vera', exact: true }).waitFor();

    await visit(page, server.url, '/tokens');
    await page.getByLabel(/^Name/).fill('dashboard-reader');
    await page.locator('select[name=token-role]').selectOption('viewer');
    await page.getByRole('button', { name: 'Create token' }).click();
    const token = await page.getByTestId('revealed-secret').inputValue();
    await page.getByRole('button', { name: 'I have stored it' }).click();
    const asToken = (method: string, body?: unknown) =>
      fetch(server.url + '/admin/v1/apps', { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, ...(body !== undefined && { body: JSON.stringify(body) }) });
    expect((await asToken('GET')).status).toBe(200);
    expect((await asToken('POST', { name: 'By a viewer' })).status).toBe(403);

    // Revoking it on the page ends it.
    await page.getByRole('button', { name: 'Revoke dashboard-reader' }).click();
    await confirmDialog(page, 'Revoke dashboard-reader?', 'Revoke token');
    await expect.poll(async () => (await asToken('GET')).status).toBe(401);

    const viewer = (await openPage(browser, 390)).page;
    await signIn(viewer, server.url, 'vera', 'viewer password 1234');
    await visit(viewer, server.url, '/apps');
    expect(await viewer.getByRole('button', { name: 'Create application' }).count()).toBe(0);
    await viewer.getByRole('link', { name: 'Keep Me' }).waitFor();
  });
});
