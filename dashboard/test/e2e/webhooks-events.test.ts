/**
 * Webhooks out and the event outbox (issue 23) in the browser, against receivers on loopback
 * (WEBHOOK_ALLOW_HOSTS lets the server reach 127.0.0.1 over http): an endpoint created with its
 * secret shown once, a test event delivered with the receiver's answer in the log, an endpoint the
 * receiver disables with 410 shown as disabled on the list and its page, enabled again and its
 * failures replayed since a time; service-wide endpoints; the events list and its type filter; a
 * viewer offered no change; every new page with axe-core at 1280 and 390 px.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeStage, confirmDialog, openPage, openStage, pageProblems, signIn, visit, type RunningServer, type Stage, type Watched } from '../harness';

const OWNER = { username: 'olivia', password: 'owner password 1234' };
const VIEWER = { username: 'vera', password: 'viewer password 1234' };

describe('webhooks and events in the dashboard', () => {
  let server: RunningServer;
  let browser: Browser;
  let watched: Watched;
  let page: Page;
  let receiver: Server;
  let receiverUrl = '';
  /** What each receiver path answers; the test changes it as it goes. */
  const answers: Record<string, number> = { '/ok': 200, '/gone': 410 };
  const received: string[] = [];
  let appId = '';
  let stage: Stage<{ id: string }> | undefined;

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        received.push(req.url ?? '');
        res.writeHead(answers[req.url ?? ''] ?? 404, { 'content-type': 'text/plain' }).end(`answer of ${req.url}`);
      });
    });
    await new Promise<void>((done) => receiver.listen(0, '127.0.0.1', done));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    stage = await openStage({ env: { WEBHOOK_ALLOW_HOSTS: '127.0.0.1', WEBHOOK_TIMEOUT_MS: '2000' }, owner: OWNER, others: [{ ...VIEWER, role: 'viewer' }], app: { name: 'Hooked' } });
    ({ server, browser, watched, page } = stage);
    appId = stage.app.id;
  });
  afterAll(async () => {
    await closeStage(stage);
    await new Promise((done) => receiver?.close(done));
  });

  const row = (text: string) => page.getByRole('row').filter({ hasText: text });

  it('creates an endpoint (secret shown once), sends a test event and shows the 200 answer in the delivery log', async () => {
    await visit(page, server.url, `/apps/${appId}/webhooks`);
    await page.getByLabel('URL (https)').fill(receiverUrl + '/ok');
    await page.getByLabel(/^Event types/).fill('user.created, webhook.test');
    await page.getByRole('button', { name: 'Create endpoint' }).click();
    const secret = page.getByTestId('revealed-secret');
    await secret.waitFor();
    expect(await secret.inputValue()).toMatch(/^whsec_/);
    await page.getByRole('button', { name: 'I have stored it' }).click();
    await expect.poll(() => row('/ok').count()).toBe(1);
    await expect.poll(() => row('/ok').getByText('enabled').count()).toBe(1);
    const key = await server.admin<{ public_key: string }>('GET', `/apps/${appId}/webhook-key`);
    expect(key.body.public_key).toMatch(/^whpk_/);
    expect(await page.getByTestId('webhook-public-key').textContent()).toBe(key.body.public_key);
    expect(await row('/ok').innerText()).toContain('user.created, webhook.test');

    await row('/ok').getByRole('link').click();
    await page.getByRole('heading', { name: receiverUrl + '/ok' }).waitFor();
    // Moving between pages focuses the new page (the existing pages' rule).
    await expect.poll(() => page.evaluate(() => document.activeElement?.id)).toBe('main');
    await page.getByRole('button', { name: 'Send test event' }).click();
    await expect.poll(() => page.getByTestId('notice').textContent()).toBe('Test event queued');
    await expect.poll(async () => {
      await page.reload();
      await page.waitForLoadState('networkidle');
      return page.getByTestId('delivery').filter({ hasText: 'delivered' }).count();
    }).toBe(1);
    const delivery = page.getByTestId('delivery').first();
    expect(await delivery.innerText()).toContain('webhook.test');
    await delivery.getByText('1 answer').click();
    await expect.poll(() => delivery.innerText()).toContain('HTTP 200');
    expect(await delivery.innerText()).toContain('answer of /ok');
    expect(received).toContain('/ok');
  });

  it('a receiver answering 410 disables its endpoint: shown on the list and its page; enabled again, its failures are replayed since a time', async () => {
    const before = new Date(Date.now() - 60_000);
    await visit(page, server.url, `/apps/${appId}/webhooks`);
    await page.getByLabel('URL (https)').fill(receiverUrl + '/gone');
    await page.getByRole('button', { name: 'Create endpoint' }).click();
    await page.getByRole('button', { name: 'I have stored it' }).click();
    await row('/gone').getByRole('link').click();
    await page.getByRole('button', { name: 'Send test event' }).click();
    await expect.poll(async () => {
      await page.reload();
      await page.waitForLoadState('networkidle');
      return page.getByTestId('disabled-banner').count();
    }).toBe(1);
    expect(await page.getByTestId('disabled-banner').innerText()).toContain('the receiver answered 410 Gone');
    expect(await page.getByRole('button', { name: 'Send test event' }).isDisabled()).toBe(true);
    await expect.poll(() => page.getByTestId('delivery').filter({ hasText: 'failed' }).count()).toBe(1);
    expect(await page.getByTestId('delivery').first().innerText()).toContain('HTTP 410');

    await visit(page, server.url, `/apps/${appId}/webhooks`);
    await expect.poll(() => row('/gone').getByTestId('endpoint-disabled').innerText()).toBe('disabled: the receiver answered 410 Gone');
    expect(await row('/ok').getByTestId('endpoint-disabled').count()).toBe(0);

    // The receiver is back: enable, then replay every failure since a minute before.
    answers['/gone'] = 200;
    await row('/gone').getByRole('link').click();
    await page.getByRole('button', { name: 'Enable again' }).click();
    await confirmDialog(page, 'Enable this endpoint?', 'Enable');
    await expect.poll(() => page.getByTestId('disabled-banner').count()).toBe(0);
    const local = new Date(before.getTime() - before.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
    await page.getByLabel('Replay failures created since').fill(local);
    await page.getByRole('button', { name: 'Replay failed' }).click();
    await confirmDialog(page, 'Send the failed deliveries again?', 'Replay failures');
    await expect.poll(() => page.getByTestId('notice').textContent()).toBe('1 deliveries queued again');
    await expect.poll(async () => {
      await page.reload();
      await page.waitForLoadState('networkidle');
      return page.getByTestId('delivery').filter({ hasText: 'delivered' }).count();
    }).toBe(1);

    // Replaying one delivery from the log: queued again, delivered again.
    const sent = received.filter((r) => r === '/gone').length;
    await page.getByRole('button', { name: /^Replay the delivery of webhook.test/ }).first().click();
    // The replay's 202 has no body: the page takes it as done (an error would show in the error box).
    await expect.poll(async () => (await page.getByTestId('notice').textContent()) || (await page.getByTestId('error').allTextContents()).join()).toBe('Delivery queued again');
    await expect.poll(() => received.filter((r) => r === '/gone').length).toBe(sent + 1);
  });

  it('service-wide endpoints have their own page; the events list filters by type on the server', async () => {
    await visit(page, server.url, '/webhooks');
    await page.getByRole('heading', { name: 'Service-wide webhooks' }).waitFor();
    // A Discord URL's last segment is its token: the page shows it masked, as the API answers it.
    const token = 'discord-token-0123456789abcdefghijklmnop-wxyz';
    await page.getByLabel('URL (https)').fill(`${receiverUrl}/api/webhooks/42/${token}?all`);
    await page.getByLabel('Format').selectOption('discord');
    await page.getByRole('button', { name: 'Create endpoint' }).click();
    // A Discord endpoint has no signing secret to show.
    await expect.poll(() => row('/api/webhooks/42/****wxyz?all').count()).toBe(1);
    expect(await page.getByTestId('revealed-secret').count()).toBe(0);
    expect(await row('/api/webhooks/42/****wxyz?all').innerText()).toContain('every event');
    expect(await page.content()).not.toContain(token);

    await visit(page, server.url, `/apps/${appId}/events`);
    await expect.poll(() => page.getByRole('cell', { name: 'app.created', exact: true }).count()).toBe(1);
    await page.getByLabel(/^Type/).fill('webhook.test');
    await expect.poll(() => page.getByRole('cell', { name: 'app.created', exact: true }).count()).toBe(0);
    expect(await page.getByRole('cell', { name: 'webhook.test', exact: true }).count()).toBe(2);
    await page.getByLabel(/^Type/).fill('no.such_type');
    await expect.poll(() => page.getByTestId('error').textContent()).toContain('"no.such_type" is not an event type');

    await visit(page, server.url, '/events');
    await expect.poll(() => page.getByRole('cell', { name: 'app.created', exact: true }).count()).toBe(1);
  });

  it('a viewer reads endpoints and deliveries but is offered no change', async () => {
    const viewer = await openPage(browser, 1280);
    await signIn(viewer.page, server.url, VIEWER.username, VIEWER.password);
    await visit(viewer.page, server.url, `/apps/${appId}/webhooks`);
    await expect.poll(() => viewer.page.getByRole('row').filter({ hasText: '/gone' }).count()).toBe(1);
    expect(await viewer.page.getByRole('button', { name: 'Create endpoint' }).count()).toBe(0);
    expect(await viewer.page.getByRole('button', { name: /^Delete/ }).count()).toBe(0);
    await viewer.page.getByRole('row').filter({ hasText: '/gone' }).getByRole('link').click();
    await expect.poll(() => viewer.page.getByTestId('delivery').count()).toBeGreaterThan(0);
    for (const name of ['Send test event', 'Disable', 'Replace secret', 'Replay failed']) expect(await viewer.page.getByRole('button', { name }).count()).toBe(0);
    expect(viewer.pageErrors).toEqual([]);
    await viewer.page.context().close();
  });

  it('every webhook and event page passes axe-core at 1280 and 390 px, without sideways scrolling or a CSP report', async () => {
    const list = await server.admin<{ items: { id: string; url: string }[] }>('GET', `/apps/${appId}/webhooks`);
    const gone = list.body.items.find((e) => e.url.endsWith('/gone'))!;
    const service = await server.admin<{ items: { id: string }[] }>('GET', '/webhooks');
    const problems = await pageProblems(watched, server.url, [
      ['webhooks', `/apps/${appId}/webhooks`], ['webhook-endpoint', `/apps/${appId}/webhooks/${gone.id}`], ['events', `/apps/${appId}/events`],
      ['service-webhooks', '/webhooks'], ['service-webhook-endpoint', `/webhooks/${service.body.items[0]!.id}`], ['service-events', '/events'],
    ]);
    expect(problems).toEqual([]);
    expect(watched.cspViolations).toEqual([]);
    expect(watched.pageErrors).toEqual([]);
  });
});
