/**
 * Issue 24 in the browser: license templates created, edited, applied to existing licenses and
 * deleted; licenses made from a template with the template column and filter; trials set up in the
 * settings form, counted on the overview, listed and reset; entitlements granted (with an end) and
 * revoked on the user page; support and viewer offered only what their roles allow; each page with
 * axe-core at 1280 and 390 px.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeStage, confirmDialog, openPage, openStage, pageProblems, signIn, visit, type RunningServer, type Stage, type Watched } from '../harness';

const OWNER = { username: 'olivia', password: 'owner password 1234' };
const SUPPORT = { username: 'sam', password: 'support password 1234' };

describe('templates, entitlements and trials in the dashboard', () => {
  let server: RunningServer;
  let browser: Browser;
  let watched: Watched;
  let page: Page;
  let app = { id: '', api_key: '', api_secret: '' };
  let aliceId = '';

  let stage: Stage<typeof app> | undefined;

  beforeAll(async () => {
    stage = await openStage({ owner: OWNER, others: [{ ...SUPPORT, role: 'support' }], app: { name: 'Tiered' } });
    ({ server, browser, watched, page, app } = stage);
    const signUp = await server.client<{ id: string }>(app, 'POST', '/sign_up', { username: 'alice', password: 'correct horse battery', hardware_id: 'hw-alice' });
    expect(signUp.status).toBe(200);
    aliceId = signUp.body.id;
  });
  afterAll(() => closeStage(stage));

  const row = (text: string) => page.getByRole('row').filter({ hasText: text });

  it('creates and edits a template, makes licenses from it, filters them by it, applies it to them and deletes it', async () => {
    await visit(page, server.url, `/apps/${app.id}/templates`);
    await page.getByLabel('Name').fill('Pro yearly');
    await page.getByLabel('Days of membership').fill('365');
    await page.getByLabel('Entitlements (comma-separated codes)').fill('pro, export.pdf');
    await page.getByLabel(/^Devices per user/).fill('3');
    await page.getByRole('button', { name: 'Create template' }).click();
    await expect.poll(() => row('Pro yearly').count()).toBe(1);
    expect(await row('Pro yearly').innerText()).toContain('365 days · export.pdf, pro · 3 devices');
    // The form starts empty again for the next one.
    expect(await page.getByLabel('Name').inputValue()).toBe('');

    await page.getByRole('button', { name: 'Edit Pro yearly' }).click();
    const edit = page.locator('section').filter({ has: page.getByRole('heading', { name: 'Edit Pro yearly' }) });
    expect(await edit.getByLabel('Days of membership').inputValue()).toBe('365');
    await edit.getByLabel('Name').fill('Pro annual');
    await edit.getByLabel(/^Floating seats/).fill('2');
    await edit.getByRole('button', { name: 'Save template' }).click();
    await expect.poll(() => row('Pro annual').count()).toBe(1);
    expect(await row('Pro annual').innerText()).toContain('2 seats');
    const template = (await server.admin<{ items: { id: string; name: string; max_seats: number }[] }>('GET', `/apps/${app.id}/templates`)).body.items[0]!;
    expect(template).toMatchObject({ name: 'Pro annual', max_seats: 2 });

    await visit(page, server.url, `/apps/${app.id}/licenses`);
    await page.getByLabel('How many').fill('3');
    await page.getByLabel('From a template').check();
    await page.locator('select[name="template"]').waitFor();
    await page.getByRole('button', { name: 'Create licenses' }).click();
    await expect.poll(() => page.getByTestId('notice').textContent()).toBe('Created 3 licenses');
    await page.getByRole('button', { name: 'Hide' }).click();
    // Two licenses made without it, to see the filter work.
    expect((await server.admin('POST', `/apps/${app.id}/licenses`, { count: 2, minutes: 60 })).status).toBe(201);
    await page.reload();
    await expect.poll(() => page.getByTestId('pager-status').textContent()).toBe('1–5 of 5 licenses');
    await expect.poll(() => page.getByTestId('license-template').filter({ hasText: 'Pro annual' }).count()).toBe(3);
    await page.locator('select[name="template-filter"]').selectOption({ label: 'Pro annual' });
    await expect.poll(() => page.getByTestId('pager-status').textContent()).toBe('1–3 of 3 licenses');

    // The template's name on its page links to its licenses, filtered.
    await visit(page, server.url, `/apps/${app.id}/templates`);
    await page.getByRole('link', { name: 'Pro annual' }).click();
    await expect.poll(() => page.getByTestId('pager-status').textContent()).toBe('1–3 of 3 licenses');

    await visit(page, server.url, `/apps/${app.id}/templates`);
    await page.getByRole('button', { name: 'Apply to existing: Pro annual' }).click();
    await confirmDialog(page, 'Apply Pro annual to its licenses?', 'Apply to existing');
    await expect.poll(() => page.getByTestId('notice').textContent()).toBe('Applied: 3 unused and 0 used licenses, 0 users');

    await page.getByRole('button', { name: 'Delete Pro annual' }).click();
    await confirmDialog(page, 'Delete Pro annual?', 'Delete template');
    await expect.poll(() => row('Pro annual').count()).toBe(0);
    await visit(page, server.url, `/apps/${app.id}/licenses`);
    // Its licenses keep what they copied, and no longer name it (template_id null).
    await expect.poll(() => page.getByTestId('license-template').filter({ hasText: 'Pro annual' }).count()).toBe(0);
    expect(await page.getByTestId('license-template').allInnerTexts()).toEqual(['—', '—', '—', '—', '—']);
    expect(await page.locator('select[name="template-filter"] option').allInnerTexts()).toEqual(['Any']);
  });

  it('trials set up in the settings form are counted on the overview (tile and chart), listed and reset', async () => {
    await visit(page, server.url, `/apps/${app.id}/settings`);
    await page.getByLabel('Trial length (minutes, 0: no trials)').fill('60');
    await page.getByLabel('Entitlements a trial grants (comma-separated)').fill('pro, beta');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await expect.poll(() => page.getByTestId('notice').textContent()).toBe('Settings saved');
    const saved = await server.admin<{ trial_minutes: number; trial_entitlements: string[] }>('GET', `/apps/${app.id}`);
    expect(saved.body).toMatchObject({ trial_minutes: 60, trial_entitlements: ['beta', 'pro'] });
    expect(await page.getByLabel('Entitlements a trial grants (comma-separated)').inputValue()).toBe('beta, pro');

    for (const hw of ['hw-trial-1', 'hw-trial-2']) expect((await server.client(app, 'POST', '/trial', { hardware_id: hw })).status).toBe(200);
    await visit(page, server.url, `/apps/${app.id}`);
    await expect.poll(() => page.getByTestId('trials-running').textContent()).toBe('2');
    // Trials started per bucket, from the stats answer, as a chart series (its numbers in the figure's caption).
    await expect.poll(() => page.getByRole('figure').filter({ hasText: 'Trials:' }).locator('figcaption').textContent()).toBe('Trials: 2 trials started');

    // Trial users are marked as such in the users list.
    await visit(page, server.url, `/apps/${app.id}/users`);
    await expect.poll(() => page.getByTestId('trial-badge').count()).toBe(2);
    expect(await page.getByTestId('trial-badge').first().innerText()).toMatch(/^trial until /);

    await visit(page, server.url, `/apps/${app.id}/trials`);
    await expect.poll(() => page.getByTestId('pager-status').textContent()).toBe('1–2 of 2 trials');
    await page.getByLabel('Hardware id').fill('hw-trial-2');
    await page.getByRole('button', { name: 'Find' }).click();
    await expect.poll(() => page.getByTestId('pager-status').textContent()).toBe('1–1 of 1 trials');
    await page.getByRole('button', { name: /^Reset the trial/ }).click();
    await confirmDialog(page, 'Reset this trial?', 'Reset trial');
    await expect.poll(() => page.getByTestId('pager-status').textContent()).toBe('No trials');
    // The device may start again.
    expect((await server.client(app, 'POST', '/trial', { hardware_id: 'hw-trial-2' })).status).toBe(200);
    await page.getByLabel('Status').selectOption('running');
    await expect.poll(() => page.getByTestId('pager-status').textContent()).toBe('1–1 of 1 trials');
  });

  it('grants an entitlement with an end and revokes it on the user page', async () => {
    await visit(page, server.url, `/apps/${app.id}/users/${aliceId}`);
    await page.getByRole('heading', { name: 'Entitlements (0 live)' }).waitFor();
    await page.getByLabel('Entitlement code').fill('beta');
    const inAWeek = new Date(Date.now() + 7 * 86_400_000);
    await page.getByLabel(/^Until/).fill(new Date(inAWeek.getTime() - inAWeek.getTimezoneOffset() * 60_000).toISOString().slice(0, 16));
    await page.getByRole('button', { name: 'Grant', exact: true }).click();
    await confirmDialog(page, 'Grant this entitlement?', 'Grant');
    await page.getByRole('heading', { name: 'Entitlements (1 live)' }).waitFor();
    const grant = page.getByRole('region', { name: 'Entitlement grants' }).getByRole('row').filter({ hasText: 'beta' });
    expect(await grant.innerText()).toContain('operator');
    expect(await grant.innerText()).toContain('live');
    expect(await grant.locator('time').first().getAttribute('datetime')).toBe(new Date(Math.floor(inAWeek.getTime() / 60_000) * 60_000).toISOString());

    await page.getByRole('button', { name: 'Revoke beta' }).click();
    await confirmDialog(page, 'Revoke this entitlement?', 'Revoke');
    await page.getByRole('heading', { name: 'Entitlements (0 live)' }).waitFor();
    expect(await grant.innerText()).toContain('ended');
    const detail = await server.admin<{ entitlement_grants: { code: string; live: boolean }[] }>('GET', `/apps/${app.id}/users/${aliceId}`);
    expect(detail.body.entitlement_grants).toEqual([expect.objectContaining({ code: 'beta', live: false })]);
  });

  it('support grants entitlements and resets trials but is offered no template change; the server agrees', async () => {
    const support = await openPage(browser, 1280);
    await signIn(support.page, server.url, SUPPORT.username, SUPPORT.password);
    await visit(support.page, server.url, `/apps/${app.id}/templates`);
    expect(await support.page.getByRole('button', { name: 'Create template' }).count()).toBe(0);
    const refused = await support.page.evaluate(async (appId) => {
      const session = await (await fetch('/admin/v1/session')).json() as { csrf_token: string };
      const answer = await fetch(`/admin/v1/apps/${appId}/templates`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-csrf-token': session.csrf_token }, body: JSON.stringify({ name: 'x', minutes: 1 }) });
      return [answer.status, ((await answer.json()) as { code: string }).code] as const;
    }, app.id);
    expect(refused).toEqual([403, 'forbidden']);
    await visit(support.page, server.url, `/apps/${app.id}/users/${aliceId}`);
    await support.page.getByLabel('Entitlement code').waitFor();
    await visit(support.page, server.url, `/apps/${app.id}/trials`);
    await expect.poll(() => support.page.getByRole('button', { name: /^Reset the trial/ }).count()).toBe(2);
    expect(support.pageErrors).toEqual([]);
    await support.page.context().close();
  });

  it('every new page passes axe-core at 1280 and 390 px, without sideways scrolling or a CSP report', async () => {
    expect((await server.admin('POST', `/apps/${app.id}/templates`, { name: 'Lifetime', lifetime: true, entitlements: ['pro'] })).status).toBe(201);
    const problems = await pageProblems(watched, server.url, [
      ['templates', `/apps/${app.id}/templates`], ['licenses-templates', `/apps/${app.id}/licenses`], ['trials', `/apps/${app.id}/trials`],
      ['overview-trials', `/apps/${app.id}`], ['user-entitlements', `/apps/${app.id}/users/${aliceId}`], ['settings-trials', `/apps/${app.id}/settings`],
    ]);
    expect(problems).toEqual([]);
    expect(watched.cspViolations).toEqual([]);
    expect(watched.pageErrors).toEqual([]);
  });
});
