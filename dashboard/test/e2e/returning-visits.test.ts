/**
 * An operator coming back to the dashboard (issue 21 items 6-9): a reload or a bookmark keeps
 * the header in view, the Signing keys page of an app without a root asks nothing that fails,
 * the scripts arrive compressed, and the ban form forgets a lifted ban's reason.
 */
import { generateKeyPairSync } from 'node:crypto';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { confirmDialog, createOperator, launchBrowser, openPage, ROOT, signIn, startServer, visit, type RunningServer } from '../harness';

const OWNER = { username: 'rita', password: 'returning password 1234' };

describe('a returning operator', () => {
  let server: RunningServer;
  let browser: Browser;
  let page: Page;
  /** Every answer the page got with a 4xx or 5xx status, as "STATUS URL". */
  const failed: string[] = [];
  const consoleErrors: string[] = [];
  let app = { id: '', api_key: '', api_secret: '', name: 'Returning App' };

  beforeAll(async () => {
    server = await startServer();
    await createOperator(server, OWNER.username, OWNER.password, 'owner');
    const created = await server.admin<{ id: string; api_key: string; api_secret: string }>('POST', '/apps', { name: app.name });
    app = { ...app, ...created.body };
    browser = await launchBrowser();
    page = (await openPage(browser, 1280)).page;
    page.on('response', (response) => {
      if (response.status() >= 400) failed.push(`${response.status()} ${response.url()}`);
    });
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(message.text());
    });
    await signIn(page, server.url, OWNER.username, OWNER.password);
    // Short enough that every page is taller than the window, so a focus that scrolls would show.
    await page.setViewportSize({ width: 1280, height: 360 });
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  /** Waits until the application's name has arrived (the late render that used to move focus). */
  async function settled(): Promise<void> {
    await page.getByRole('navigation', { name: 'Main' }).getByText(app.name).waitFor();
    await expect.poll(() => page.title()).toContain(app.name);
    await page.waitForLoadState('networkidle');
  }

  async function headerInView(): Promise<{ scrollY: number; signOutTop: number; focused: string }> {
    const signOut = await page.getByRole('button', { name: 'Sign out' }).boundingBox();
    const state = await page.evaluate(() => ({ scrollY: window.scrollY, focused: document.activeElement?.tagName ?? '' }));
    return { ...state, signOutTop: signOut?.y ?? -1 };
  }

  it('item 6: a bookmark, a reload and the bare /dashboard/ address keep the header in view', async () => {
    for (const open of [
      () => visit(page, server.url, `/apps/${app.id}/keys`),
      () => page.reload(),
      () => visit(page, server.url, `/apps/${app.id}/users`),
      // Redirected to the last application's overview: still the first page shown.
      () => page.goto(server.url + '/dashboard/'),
    ]) {
      await open();
      await settled();
      const state = await headerInView();
      expect(state, page.url()).toEqual({ scrollY: 0, signOutTop: expect.any(Number), focused: 'BODY' });
      expect(state.signOutTop, page.url()).toBeGreaterThanOrEqual(0);
    }
    expect(page.url()).toBe(`${server.url}/dashboard/apps/${app.id}`);
  });

  it('item 6: moving to another page still puts focus on the page, with the header in view', async () => {
    await visit(page, server.url, `/apps/${app.id}/users`);
    await settled();
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Bans' }).click();
    await page.getByRole('heading', { name: 'Bans', level: 1 }).waitFor();
    await expect.poll(() => page.evaluate(() => document.activeElement?.tagName)).toBe('MAIN');
    const state = await headerInView();
    expect(state.scrollY).toBe(0);
    expect(state.signOutTop).toBeGreaterThanOrEqual(0);
  });

  it('item 7: the Signing keys page of an app without a root shows that, with no failed request or console error', async () => {
    failed.length = 0;
    consoleErrors.length = 0;
    await visit(page, server.url, `/apps/${app.id}/keys`);
    await page.getByText('No root key yet.').waitFor();
    expect(failed).toEqual([]);
    expect(consoleErrors).toEqual([]);

    const rootPublicKey = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x!;
    expect((await server.admin('PUT', `/apps/${app.id}/root-key`, { public_key: rootPublicKey })).status).toBe(200);
    await page.reload();
    await page.getByText(rootPublicKey).waitFor();
    expect(await page.getByText('No root key yet.').count()).toBe(0);
    expect(failed).toEqual([]);
  });

  it('item 8: the scripts and styles arrive compressed as the browser asked, with Vary, hashed ones immutable', async () => {
    const assets: { url: string; encoding: string | undefined; accepted: string; vary: string | undefined; cache: string | undefined; length: number }[] = [];
    const listener = async (response: import('playwright-core').Response) => {
      if (!/\/dashboard\/assets\/.+\.(?:js|css)$/.test(response.url())) return;
      const headers = await response.allHeaders();
      assets.push({
        url: response.url(), encoding: headers['content-encoding'], accepted: (await response.request().allHeaders())['accept-encoding'] ?? '',
        vary: headers.vary, cache: headers['cache-control'], length: Number(headers['content-length']),
      });
    };
    page.on('response', listener);
    // A fresh context: nothing cached, so every asset comes from the server.
    const fresh = (await openPage(browser, 1280)).page;
    fresh.on('response', listener);
    await fresh.goto(server.url + '/dashboard/');
    await fresh.getByLabel('Username').waitFor();
    await fresh.waitForLoadState('networkidle');
    page.off('response', listener);
    await fresh.context().close();

    expect(assets.map((a) => a.url).some((u) => u.endsWith('.js'))).toBe(true);
    for (const asset of assets) {
      const want = /\bbr\b/.test(asset.accepted) ? 'br' : 'gzip';
      const raw = statSync(join(ROOT, 'dashboard/dist', new URL(asset.url).pathname.slice('/dashboard/'.length))).size;
      expect(asset.encoding, asset.url).toBe(want);
      expect(asset.vary, asset.url).toBe('Accept-Encoding');
      expect(asset.cache, asset.url).toBe('public, max-age=31536000, immutable');
      expect(asset.length, asset.url).toBeLessThan(raw / 2);
    }
  });

  it('item 9: after Unban the ban-reason field is empty again', async () => {
    const signUp = await server.client(app, 'POST', '/sign_up', { username: 'bob', password: 'correct horse battery' });
    expect(signUp.status).toBe(200);
    const users = await server.admin<{ items: { id: string; username: string }[] }>('GET', `/apps/${app.id}/users`);
    const bob = users.body.items.find((u) => u.username === 'bob')!;
    await visit(page, server.url, `/apps/${app.id}/users/${bob.id}`);

    await page.getByLabel('Ban reason (optional)').fill('chargeback');
    await page.getByRole('button', { name: 'Ban user' }).click();
    await confirmDialog(page, 'Ban this user?', 'Ban user');
    await page.getByTestId('banned').waitFor();
    await page.getByText('chargeback').waitFor();

    await page.getByRole('button', { name: 'Unban' }).click();
    await confirmDialog(page, 'Lift the ban?', 'Unban');
    await page.getByTestId('banned').waitFor({ state: 'detached' });
    expect(await page.getByLabel('Ban reason (optional)').inputValue()).toBe('');
    const bans = await server.admin<{ items: unknown[] }>('GET', `/apps/${app.id}/bans?type=user`);
    expect(bans.body.items).toEqual([]);
  });
});
