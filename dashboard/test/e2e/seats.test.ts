/**
 * Issue 25 in the browser: seat and self-reset settings in the app settings form (a number that
 * may be unset: empty is null), the live seats of an app with their count and a release, a user's
 * seats and their release on the user page, and the user's own device resets (count and last) shown
 * there; a viewer offered no release; each page with axe-core at 1280 and 390 px.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { confirmDialog, createOperator, launchBrowser, openPage, pageProblems, signIn, startServer, visit, type RunningServer, type Watched } from '../harness';

const OWNER = { username: 'olivia', password: 'owner password 1234' };
const VIEWER = { username: 'vera', password: 'viewer password 1234' };
const PASSWORD = 'correct horse battery';

describe('seats and self-resets in the dashboard', () => {
  let server: RunningServer;
  let browser: Browser;
  let watched: Watched;
  let page: Page;
  let app = { id: '', api_key: '', api_secret: '' };
  let aliceId = '';
  const as = (username: string, hw: string) => ({ 'x-api-username': username, 'x-api-password': PASSWORD, 'x-hardware-id': hw });

  beforeAll(async () => {
    server = await startServer();
    await createOperator(server, OWNER.username, OWNER.password, 'owner');
    await createOperator(server, VIEWER.username, VIEWER.password, 'viewer');
    const created = await server.admin<typeof app>('POST', '/apps', { name: 'Seated', max_devices_per_user: 10 });
    expect(created.status).toBe(201);
    app = created.body;
    const codes = await server.admin<{ licenses: { code: string }[] }>('POST', `/apps/${app.id}/licenses`, { count: 2, lifetime: true });
    for (const [i, username] of ['alice', 'bob'].entries()) {
      const signUp = await server.client<{ id: string }>(app, 'POST', '/sign_up', { username, password: PASSWORD });
      expect(signUp.status).toBe(200);
      if (username === 'alice') aliceId = signUp.body.id;
      expect((await server.client(app, 'POST', '/activate_license', { code: codes.body.licenses[i]!.code, username, password: PASSWORD })).status).toBe(200);
    }
    browser = await launchBrowser();
    watched = await openPage(browser, 1280);
    page = watched.page;
    await signIn(page, server.url, OWNER.username, OWNER.password);
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  it('turns seats on in the settings form; empty turns them off again (null)', async () => {
    await visit(page, server.url, `/apps/${app.id}/settings`);
    const seats = page.getByLabel(/^Seats per user/);
    expect(await seats.inputValue()).toBe('');
    await seats.fill('2');
    await page.getByLabel('Seat heartbeat (seconds)').fill('120');
    await page.getByLabel('Resets per user per year (empty: no cap)').fill('3');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await expect.poll(() => page.getByTestId('notice').textContent()).toBe('Settings saved');
    const saved = await server.admin<Record<string, unknown>>('GET', `/apps/${app.id}`);
    expect(saved.body).toMatchObject({ max_seats: 2, heartbeat_seconds: 120, device_resets_per_year: 3 });

    await page.getByLabel('Resets per user per year (empty: no cap)').fill('');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await expect.poll(async () => (await server.admin<Record<string, unknown>>('GET', `/apps/${app.id}`)).body.device_resets_per_year).toBeNull();
    // A refused value shows the server's detail.
    await page.getByLabel('Seat heartbeat (seconds)').fill('5');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await expect.poll(() => page.getByTestId('error').textContent()).toContain('heartbeat_seconds');
    await page.getByRole('button', { name: 'Undo changes' }).click();
  });

  it('lists the live seats with their count and releases one', async () => {
    for (const [user, hw] of [['alice', 'alice-laptop'], ['alice', 'alice-desktop'], ['bob', 'bob-laptop']] as const) {
      expect((await server.client(app, 'POST', '/seats', undefined, as(user, hw))).status).toBe(200);
    }
    // Alice's third device finds both her seats taken.
    expect((await server.client(app, 'POST', '/seats', undefined, as('alice', 'alice-tablet'))).status).toBe(409);

    await visit(page, server.url, `/apps/${app.id}/seats`);
    await expect.poll(() => page.getByTestId('seat-total').textContent()).toBe('3 seats in use.');
    await page.getByRole('button', { name: 'Release the seat of bob-laptop' }).click();
    await confirmDialog(page, 'Release this seat?', 'Release seat');
    await expect.poll(() => page.getByTestId('seat-total').textContent()).toBe('2 seats in use.');
    expect((await server.client(app, 'POST', '/seats/heartbeat', undefined, as('bob', 'bob-laptop'))).status).toBe(404);
  });

  it('shows a user’s seats with a release, and their own device resets', async () => {
    await visit(page, server.url, `/apps/${app.id}/users/${aliceId}`);
    await page.getByRole('heading', { name: 'Live seats (2)' }).waitFor();
    expect(await page.getByTestId('self-resets').innerText()).toBe('0, never');
    await page.getByRole('button', { name: 'Release the seat of alice-desktop' }).click();
    await confirmDialog(page, 'Release this seat?', 'Release seat');
    await page.getByRole('heading', { name: 'Live seats (1)' }).waitFor();
    // The freed place is taken by her tablet.
    expect((await server.client(app, 'POST', '/seats', undefined, as('alice', 'alice-tablet'))).status).toBe(200);

    const reset = await server.client<{ reset_at: string }>(app, 'POST', '/devices/reset', undefined, as('alice', 'alice-tablet'));
    expect(reset.status).toBe(200);
    await page.reload();
    await expect.poll(() => page.getByTestId('self-resets').innerText()).toMatch(/^1, last /);
    expect(await page.getByTestId('self-resets').locator('time').getAttribute('datetime')).toBe(reset.body.reset_at);
  });

  it('a viewer sees the seats but is offered no release', async () => {
    const viewer = await openPage(browser, 1280);
    await signIn(viewer.page, server.url, VIEWER.username, VIEWER.password);
    await visit(viewer.page, server.url, `/apps/${app.id}/seats`);
    await expect.poll(() => viewer.page.getByTestId('seat-total').count()).toBe(1);
    expect(await viewer.page.getByRole('button', { name: /^Release/ }).count()).toBe(0);
    await visit(viewer.page, server.url, `/apps/${app.id}/settings`);
    await viewer.page.getByTestId('read-only').waitFor();
    expect(await viewer.page.getByLabel(/^Seats per user/).isDisabled()).toBe(true);
    await viewer.page.context().close();
  });

  it('every new page passes axe-core at 1280 and 390 px, without sideways scrolling or a CSP report', async () => {
    expect((await server.client(app, 'POST', '/seats', undefined, as('bob', 'bob-laptop'))).status).toBe(200);
    const problems = await pageProblems(watched, server.url, [
      ['seats', `/apps/${app.id}/seats`], ['user-seats', `/apps/${app.id}/users/${aliceId}`], ['settings-seats', `/apps/${app.id}/settings`],
    ]);
    expect(problems).toEqual([]);
    expect(watched.cspViolations).toEqual([]);
    expect(watched.pageErrors).toEqual([]);
  });
});
