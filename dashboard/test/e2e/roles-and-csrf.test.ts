/**
 * What the browser may not do: a support operator cannot delete an application (the page
 * offers no button, and the API refuses the request the page could still send), and a
 * cookie-authenticated write without the session's CSRF token is refused.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { axeViolations, createOperator, launchBrowser, openPage, screenshotPath, signIn, startServer, visit, type RunningServer } from '../harness';

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
});
