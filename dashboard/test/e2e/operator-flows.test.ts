/**
 * An owner's day in the dashboard, in Chromium against the built server: first sign-in and
 * TOTP set-up, an application with a batch of codes and their CSV, a user who signs up
 * through the client API and is then extended, reset and banned, a file upload. Every page
 * is then photographed at 1280 and 390 px and checked with axe-core.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ADMIN_TOKEN, axeViolations, confirmDialog, createOperator, launchBrowser, openPage, screenshotPath, signIn, startServer, totp, visit,
  type RunningServer, type Watched,
} from '../harness';

const OWNER = { username: 'olivia', password: 'owner password 1234' };

describe('an owner in the dashboard', () => {
  let server: RunningServer;
  let browser: Browser;
  let watched: Watched;
  let page: Page;
  let secret = '';
  let app = { id: '', api_key: '', api_secret: '', name: 'Space Miner' };
  let codes: string[] = [];
  let aliceId = '';

  beforeAll(async () => {
    server = await startServer();
    await createOperator(server, OWNER.username, OWNER.password, 'owner');
    browser = await launchBrowser();
    watched = await openPage(browser, 1280);
    page = watched.page;
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  it('signs in for the first time and sets up TOTP with the QR code', async () => {
    await page.goto(server.url + '/dashboard/');
    await page.getByRole('heading', { name: 'Tollgate' }).waitFor();
    await page.screenshot({ path: screenshotPath('login-1280') });
    expect(await axeViolations(page)).toEqual([]);

    await page.getByLabel('Username').fill(OWNER.username);
    await page.getByLabel('Password').fill('wrong password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    // The page shows the server's own detail.
    const refused = await fetch(server.url + '/admin/v1/session', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: OWNER.username, password: 'wrong password' }) });
    const { detail } = (await refused.json()) as { detail: string };
    await expect.poll(() => page.getByTestId('error').textContent()).toBe(detail);

    await signIn(page, server.url, OWNER.username, OWNER.password);
    await visit(page, server.url, '/account');
    await page.getByRole('button', { name: 'Set up an authenticator' }).click();
    const qr = page.getByTestId('totp-qr');
    await qr.waitFor();
    expect(await qr.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth > 0)).toBe(true);
    secret = (await page.getByTestId('totp-secret').textContent())!.trim();
    await page.screenshot({ path: screenshotPath('account-totp-setup-1280') });
    await page.getByLabel('Code from the app').fill(totp(secret));
    await page.getByRole('button', { name: 'Turn on' }).click();
    await expect.poll(() => page.getByTestId('totp-status').textContent()).toMatch(/^On/);

    // Signing in again now asks for a code (the next step's: a code is good once).
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Username').waitFor();
    await signIn(page, server.url, OWNER.username, OWNER.password, () => totp(secret, Date.now(), 1));
    const who = await server.admin<{ items: { actor: string; action: string }[] }>('GET', '/audit?limit=20');
    expect(who.body.items.some((e) => e.actor.includes(OWNER.username))).toBe(true);
  });

  it('creates an application and sees its secret once', async () => {
    await visit(page, server.url, '/apps');
    await page.getByLabel('Name').fill(app.name);
    await page.getByRole('button', { name: 'Create application' }).click();
    const shown = page.getByTestId('revealed-secret');
    await shown.waitFor();
    app.api_secret = await shown.inputValue();
    await page.getByRole('button', { name: 'I have stored it' }).click();
    await page.getByRole('heading', { name: `${app.name}: settings` }).waitFor();
    const listed = await server.admin<{ items: { id: string; api_key: string; name: string }[] }>('GET', '/apps');
    const found = listed.body.items.find((a) => a.name === app.name)!;
    app = { ...app, id: found.id, api_key: found.api_key };
    expect(app.api_secret.length).toBeGreaterThan(10);

    // Lock users to their devices, so the user below has one to reset.
    await page.getByLabel('Lock users to their devices').check();
    await page.getByRole('button', { name: 'Save settings' }).click();
    await expect.poll(async () => (await server.admin<{ device_auth_enabled: boolean }>('GET', `/apps/${app.id}`)).body.device_auth_enabled).toBe(true);
  });

  it('creates a batch of codes and downloads them as CSV', async () => {
    await visit(page, server.url, `/apps/${app.id}/licenses`);
    await page.getByLabel('How many').fill('5');
    await page.getByLabel('Note (optional)').fill('launch sale');
    await page.getByRole('button', { name: 'Create licenses' }).click();
    const textarea = page.getByTestId('new-codes');
    await textarea.waitFor();
    codes = (await textarea.inputValue()).split('\n');
    expect(codes).toHaveLength(5);
    expect(new Set(codes).size).toBe(5);

    const [batchFile] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download these codes (CSV)' }).click()]);
    const batchCsv = readFileSync((await batchFile.path())!, 'utf8');
    for (const code of codes) expect(batchCsv).toContain(code);

    // The server's export of the filtered list: every code, with the note.
    await expect.poll(() => page.getByTestId('pager-status').textContent()).toMatch(/of 5 licenses/);
    const [exportFile] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-csv').click()]);
    const exported = readFileSync((await exportFile.path())!, 'utf8');
    expect(exported.split(/\r?\n/).filter(Boolean)).toHaveLength(6);
    for (const code of codes) expect(exported).toContain(code);
    expect(exported).toContain('launch sale');
  });

  it('shows a user who signed up through the client API', async () => {
    const signUp = await server.client(app, 'POST', '/sign_up', { username: 'alice', password: 'correct horse battery', hardware_id: 'hw-alice-1' });
    expect(signUp.status).toBe(200);
    const activate = await server.client(app, 'POST', '/activate_license', { code: codes[0], username: 'alice', password: 'correct horse battery', hardware_id: 'hw-alice-1' });
    expect(activate.status).toBe(200);

    await visit(page, server.url, `/apps/${app.id}/users`);
    await page.getByLabel('Username or user id').fill('ali');
    const link = page.getByRole('link', { name: 'alice' });
    await link.waitFor();
    await link.click();
    await page.getByRole('heading', { name: /^alice/ }).waitFor();
    aliceId = page.url().split('/').pop()!;
    await expect.poll(() => page.getByTestId('membership').textContent()).toMatch(/active until/);
    expect(await page.getByRole('cell', { name: 'hw-alice-1' }).count()).toBe(1);
  });

  it('extends alice, resets her devices, bans her, and the client API refuses her', async () => {
    const userPath = `/apps/${app.id}/users/${aliceId}`;
    const before = (await server.admin<{ membership: { active_until: string } }>('GET', userPath)).body.membership.active_until;
    await page.getByLabel('Extend by (days)').fill('10');
    await page.getByRole('button', { name: 'Extend', exact: true }).click();
    await confirmDialog(page, 'Extend the membership?', 'Extend');
    await expect.poll(async () => Date.parse((await server.admin<{ membership: { active_until: string } }>('GET', userPath)).body.membership.active_until) - Date.parse(before))
      .toBe(10 * 86_400_000);

    await page.getByRole('button', { name: 'Reset devices' }).click();
    await confirmDialog(page, 'Reset devices?', 'Reset devices');
    await expect.poll(async () => (await server.admin<{ devices: unknown[] }>('GET', userPath)).body.devices.length).toBe(0);

    // A fresh login binds a device again and reads the app context...
    const login = await server.client<{ session_token: string }>(app, 'POST', '/auth/login', { credentials: { username: 'alice', password: 'correct horse battery' }, hardware_id: 'hw-alice-2' });
    expect(login.status).toBe(200);
    const bearer = { authorization: `Bearer ${login.body.session_token}` };
    expect((await server.client(app, 'GET', '/app_context', undefined, bearer)).status).toBe(200);

    // Escape cancels a confirmation: the sessions stay.
    await page.getByRole('button', { name: 'Revoke sessions' }).click();
    await page.getByRole('dialog').getByRole('heading', { name: 'Sign out everywhere?' }).waitFor();
    await page.keyboard.press('Escape');
    await page.getByRole('dialog').waitFor({ state: 'hidden' });
    expect((await server.client(app, 'GET', '/app_context', undefined, bearer)).status).toBe(200);

    // ...until the ban.
    await page.getByLabel('Ban reason (optional)').fill('chargeback');
    await page.getByRole('button', { name: 'Ban user' }).click();
    await confirmDialog(page, 'Ban this user?', 'Ban user');
    await page.getByTestId('banned').waitFor();
    const refused = await server.client<{ code: string }>(app, 'GET', '/app_context', undefined, bearer);
    expect(refused.status).toBe(403);
    await page.screenshot({ path: screenshotPath('user-banned-1280'), fullPage: true });
  });

  it('uploads a file with a progress bar and sees it listed', async () => {
    await visit(page, server.url, `/apps/${app.id}/content`);
    // A slow uplink, so the progress bar has time to show.
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('Network.enable');
    await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: 512 * 1024 });
    const content = Buffer.alloc(1024 * 1024, 7);
    await page.getByLabel('File to upload').setInputFiles({ name: 'patch-1.2.bin', mimeType: 'application/octet-stream', buffer: content });
    await page.getByRole('button', { name: 'Upload', exact: true }).click();
    await page.getByTestId('upload-progress').waitFor();
    await page.screenshot({ path: screenshotPath('upload-progress-1280') });
    await page.getByRole('cell', { name: 'patch-1.2.bin', exact: true }).waitFor({ timeout: 30_000 });
    await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
    const files = await server.admin<{ items: { name: string; size: number }[] }>('GET', `/apps/${app.id}/files`);
    expect(files.body.items).toEqual([expect.objectContaining({ name: 'patch-1.2.bin', size: content.length })]);
  });

  it('the overview counts what happened: a sign-up, logins, an activation, a used license', async () => {
    // One failed login too (wrong password), so every series has something.
    expect((await server.client(app, 'POST', '/auth/login', { credentials: { username: 'alice', password: 'not her password' }, hardware_id: 'hw-alice-2' })).status).toBe(401);
    // Counters are flushed every few seconds: poll the API the page reads.
    await expect.poll(async () => {
      const stats = (await server.admin<{ series: { sign_ups: number; logins: number; activations: number; failed_logins: number }[] }>('GET', `/apps/${app.id}/stats?bucket=hour`)).body;
      const sum = (k: 'sign_ups' | 'logins' | 'activations' | 'failed_logins') => stats.series.reduce((a, p) => a + p[k], 0);
      return [sum('sign_ups'), sum('activations'), sum('logins') >= 1, sum('failed_logins') >= 1];
    }, { timeout: 20_000 }).toEqual([1, 1, true, true]);
    await visit(page, server.url, `/apps/${app.id}`);
    await expect.poll(() => page.getByTestId('licenses-used').textContent()).toBe('1');
    expect(await page.getByTestId('licenses-unused').textContent()).toBe('4');
    const growth = page.getByRole('figure').filter({ hasText: 'Sign-ups and activations' });
    expect(await growth.locator('figcaption').textContent()).toMatch(/1 sign-ups, 1 activations/);
    expect(await growth.locator('canvas').count()).toBeGreaterThan(0);
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.screenshot({ path: screenshotPath('overview-flow-1280'), fullPage: true });
  });

  it('lists the signing keys made with the CLI, shows a certificate, and retires a key after asking', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-root-'));
    try {
      const remote = ['--app', app.id, '--url', server.url, '--token', ADMIN_TOKEN];
      const root = join(dir, 'root.pem');
      expect((await server.cli(['keys', 'init', ...remote, '--out', root])).code).toBe(0);
      expect((await server.cli(['keys', 'rotate', ...remote, '--root-key', root])).code).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const keys = (await server.admin<{ items: { kid: string; status: string }[] }>('GET', `/apps/${app.id}/signing-keys`)).body.items;
    expect(keys.map((k) => k.status)).toEqual(['active', 'active']);
    const oldest = keys[0]!.kid;

    await visit(page, server.url, `/apps/${app.id}/keys`);
    await page.getByRole('cell', { name: oldest, exact: true }).waitFor();
    await page.getByText('Show').first().click();
    expect(await page.locator('details code').first().textContent()).toMatch(/^[A-Za-z0-9_-]{40,}$/);
    await page.getByRole('button', { name: `Retire ${oldest}` }).click();
    await confirmDialog(page, `Retire ${oldest}?`, 'Retire key');
    await expect.poll(async () => (await server.admin<{ status: string }>('GET', `/apps/${app.id}/signing-keys/${oldest}`)).body.status).toBe('retired');
    await page.getByRole('row', { name: new RegExp(oldest) }).getByText('retired').waitFor();
  });

  it('bans an IP range with a reason and an end on the bans page, then lifts it after asking', async () => {
    await visit(page, server.url, `/apps/${app.id}/bans`);
    await page.getByLabel('What to ban').selectOption('ip');
    await page.getByLabel('Value').fill('203.0.113.0/24');
    await page.getByLabel('Reason (optional)').fill('scraper');
    await page.getByLabel('Lifts itself at (optional)').fill('2030-01-02T03:04');
    await page.getByRole('button', { name: 'Create ban' }).click();
    const row = page.getByRole('row', { name: /203\.0\.113\.0\/24/ });
    await row.waitFor();
    expect(await row.textContent()).toContain('scraper');
    const stored = (await server.admin<{ items: { value: string; expires_at: string | null }[] }>('GET', `/apps/${app.id}/bans?type=ip`)).body.items;
    expect(stored).toEqual([expect.objectContaining({ value: '203.0.113.0/24', expires_at: new Date(2030, 0, 2, 3, 4).toISOString() })]);

    await row.getByRole('button', { name: /^Lift/ }).click();
    await confirmDialog(page, 'Lift this ban?', 'Lift ban');
    await row.waitFor({ state: 'detached' });
    expect((await server.admin<{ items: unknown[] }>('GET', `/apps/${app.id}/bans?type=ip`)).body.items).toEqual([]);
  });

  it('every page is usable at 1280 and 390 px, with no serious accessibility violation and no CSP report', async () => {
    const pages: [name: string, path: string][] = [
      ['overview', `/apps/${app.id}`], ['apps', '/apps'], ['settings', `/apps/${app.id}/settings`], ['licenses', `/apps/${app.id}/licenses`],
      ['users', `/apps/${app.id}/users`], ['user', `/apps/${app.id}/users/${aliceId}`], ['content', `/apps/${app.id}/content`],
      ['bans', `/apps/${app.id}/bans`], ['keys', `/apps/${app.id}/keys`], ['webhooks', `/apps/${app.id}/webhooks`], ['tokens', '/tokens'], ['operators', '/operators'],
      ['audit', '/audit'], ['account', '/account'],
    ];
    const problems: string[] = [];
    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: 900 });
      for (const [name, path] of pages) {
        try {
          await visit(page, server.url, path);
        } catch (error) {
          await page.screenshot({ path: screenshotPath(`${name}-${width}-failed`), fullPage: true });
          throw new Error(`${name} at ${width}px did not render: ${String(error)}; page errors: ${watched.pageErrors.join(' | ')}`);
        }
        await page.screenshot({ path: screenshotPath(`${name}-${width}`), fullPage: true });
        // Nothing wider than the window: a page that scrolls sideways is not readable on a phone.
        const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
        if (overflow > 1) problems.push(`${name} at ${width}px is ${overflow}px wider than the window`);
        if ((await page.getByTestId('error').count()) > 0) problems.push(`${name}: ${await page.getByTestId('error').first().textContent()}`);
        for (const v of await axeViolations(page)) problems.push(`${name} at ${width}px: ${v.impact} ${v.id} (${v.help}) on ${v.nodes.join(', ')}`);
      }
    }
    await page.getByRole('button', { name: 'Menu' }).click();
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Licenses' }).waitFor();
    await page.screenshot({ path: screenshotPath('menu-open-390') });
    expect(problems).toEqual([]);
    expect(watched.cspViolations).toEqual([]);
    expect(watched.pageErrors).toEqual([]);
  });
});
