import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { write } from '../src/domain/unit-of-work.js';
import { isMaskedUrl, maskedUrl } from '../src/domain/webhooks/url-mask.js';
import { expectError, harness, TestClock, type Harness, type TestApp } from './helpers.js';
import { withToken } from './operator-helpers.js';
import { Receiver } from './webhook-receiver.js';

/**
 * A Discord webhook URL carries its token after `webhooks/<id>/`: whoever reads it can post to the
 * channel. Every view (admin API, and so the dashboard and the CLI, which show its answers) and every audit
 * entry masks it; deliveries use the stored URL. The receivers are loopback ones standing in for Discord.
 */

const TOKEN = 'Xq3vT0k3n-abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ012345_wxyz';
const OTHER_TOKEN = 'Zz9another-token-0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN_9876';

describe('maskedUrl', () => {
  it('masks the token of every discord endpoint and of Discord’s own webhook URLs, whatever the kind', () => {
    expect(maskedUrl(`https://discord.com/api/webhooks/1234/${TOKEN}`, 'discord')).toBe('https://discord.com/api/webhooks/1234/****wxyz');
    expect(maskedUrl(`https://discord.com/api/webhooks/1234/${TOKEN}`, 'standard')).toBe('https://discord.com/api/webhooks/1234/****wxyz');
    expect(maskedUrl(`https://ptb.discordapp.com/api/v10/webhooks/1234/${TOKEN}/?wait=true`, 'standard')).toBe('https://ptb.discordapp.com/api/v10/webhooks/1234/****wxyz/?wait=true');
    // A relay's query values are masked as well: which of them carries a token is the relay's own business.
    expect(maskedUrl(`https://relay.example.com/to-discord/${TOKEN}?thread_id=5`, 'discord')).toBe('https://relay.example.com/to-discord/****wxyz?thread_id=****');
    expect(maskedUrl('https://relay.example.com/hook/short', 'discord'), 'a short token shows none of itself').toBe('https://relay.example.com/hook/****');
    // Discord's Slack- and GitHub-compatible forms put a word after the token: the token is still what is masked.
    expect(maskedUrl(`https://discord.com/api/webhooks/1234/${TOKEN}/slack`, 'standard')).toBe('https://discord.com/api/webhooks/1234/****wxyz/slack');
    expect(maskedUrl(`https://discord.com/api/webhooks/1234/${TOKEN}/github`, 'discord')).toBe('https://discord.com/api/webhooks/1234/****wxyz/github');
  });

  it('masks what the review found shown whole: a trailing-dot host, an empty segment, a relay\'s token in the query', () => {
    expect(maskedUrl(`https://discord.com./api/webhooks/1234/${TOKEN}`, 'standard')).toBe('https://discord.com./api/webhooks/1234/****wxyz');
    expect(maskedUrl(`https://discord.com./api/webhooks/1234/${TOKEN}/github`, 'discord')).toBe('https://discord.com./api/webhooks/1234/****wxyz/github');
    expect(maskedUrl(`https://discord.com/api/webhooks/1234//${TOKEN}`, 'standard')).toBe('https://discord.com/api/webhooks/1234//****wxyz');
    expect(maskedUrl(`https://discord.com/api/webhooks//1234/${TOKEN}/slack`, 'standard')).toBe('https://discord.com/api/webhooks//1234/****wxyz/slack');
    expect(maskedUrl(`https://discord.com/api/v10/webhooks/1234/${TOKEN}?wait=true`, 'standard')).toBe('https://discord.com/api/v10/webhooks/1234/****wxyz?wait=true');
    expect(maskedUrl(`https://relay.example/hook?token=${TOKEN}`, 'discord')).toBe('https://relay.example/****?token=****wxyz');
    expect(maskedUrl(`https://relay.example/hook?to=a&token=${TOKEN}&token=${OTHER_TOKEN}&empty=`, 'discord'))
      .toBe('https://relay.example/****?to=****&token=****wxyz&token=****9876&empty=');
    // Shown again (a form filled from a view), each is known as masked and masks to itself.
    for (const [url, kind] of [
      [`https://discord.com./api/webhooks/1234/${TOKEN}`, 'standard'],
      [`https://discord.com/api/webhooks/1234//${TOKEN}`, 'standard'],
      [`https://relay.example/hook?token=${TOKEN}`, 'discord'],
    ] as const) {
      const shown = maskedUrl(url, kind);
      expect(isMaskedUrl(shown, kind), shown).toBe(true);
      expect(isMaskedUrl(url, kind), url).toBe(false);
      expect(maskedUrl(shown, kind)).toBe(shown);
    }
    expect(isMaskedUrl('https://relay.example/hook?token=****wxyz', 'discord')).toBe(true);
    expect(maskedUrl(`https://relay.example/api/webhooks/42/${TOKEN}?all`, 'discord'), 'nothing in the query to mask').toBe('https://relay.example/api/webhooks/42/****wxyz?all');
  });

  it('masks a credential in the user part, whatever the kind: the password (nothing of it shown), or a user name alone', () => {
    const PW = 'hunter2-relay-password';
    expect(maskedUrl(`https://relay:${PW}@relay.example/to-discord/${TOKEN}`, 'discord')).toBe('https://relay:****@relay.example/to-discord/****wxyz');
    expect(maskedUrl(`https://relay:${PW}@relay.example/hook?token=${TOKEN}`, 'discord')).toBe('https://relay:****@relay.example/****?token=****wxyz');
    expect(maskedUrl(`https://u:${PW}@discord.com/api/webhooks/1234/${TOKEN}`, 'standard')).toBe('https://u:****@discord.com/api/webhooks/1234/****wxyz');
    expect(maskedUrl(`https://crm:${PW}@crm.example.com/hooks/tollgate`, 'standard')).toBe('https://crm:****@crm.example.com/hooks/tollgate');
    expect(maskedUrl('https://crm:pw@crm.example.com/hooks/tollgate', 'standard'), 'a short password too').toBe('https://crm:****@crm.example.com/hooks/tollgate');
    // A user name alone is the key of Basic auth: masked as a token is.
    expect(maskedUrl(`https://${OTHER_TOKEN}@crm.example.com/hooks/tollgate`, 'standard')).toBe('https://****9876@crm.example.com/hooks/tollgate');
    // Shown again, each is known as masked and masks to itself; the stored one is not a masked one.
    for (const [url, kind] of [
      [`https://relay:${PW}@relay.example/to-discord/${TOKEN}`, 'discord'],
      [`https://crm:${PW}@crm.example.com/hooks/tollgate`, 'standard'],
      [`https://${OTHER_TOKEN}@crm.example.com/hooks/tollgate`, 'standard'],
    ] as const) {
      const shown = maskedUrl(url, kind);
      expect(shown).not.toContain(PW);
      expect(isMaskedUrl(shown, kind), shown).toBe(true);
      expect(isMaskedUrl(url, kind), url).toBe(false);
      expect(maskedUrl(shown, kind)).toBe(shown);
    }
  });

  it('leaves other URLs as they are, and tells a masked URL from a real one', () => {
    expect(maskedUrl('https://crm.example.com/hooks/tollgate', 'standard')).toBe('https://crm.example.com/hooks/tollgate');
    expect(maskedUrl('https://discord.com/channels/1/2', 'standard')).toBe('https://discord.com/channels/1/2');
    expect(isMaskedUrl('https://discord.com/api/webhooks/1234/****wxyz', 'discord')).toBe(true);
    expect(isMaskedUrl(`https://discord.com/api/webhooks/1234/${TOKEN}`, 'discord')).toBe(false);
    expect(isMaskedUrl('https://crm.example.com/hooks/****', 'standard')).toBe(false);
  });
});

describe('a discord endpoint’s URL in views and the audit log', () => {
  let h: Harness;
  let app: TestApp;
  let receiver: Receiver;
  beforeEach(async () => {
    h = await harness({ clock: new TestClock(Date.now()), env: { WEBHOOK_ALLOW_HOSTS: '127.0.0.1', WEBHOOK_TIMEOUT_MS: '500' } });
    app = await h.createApp();
    receiver = await Receiver.start();
  });
  afterEach(async () => {
    await h.close();
    await receiver.close();
  });

  const discordUrl = (token: string) => receiver.url.replace(/\/hook$/, `/api/webhooks/1234/${token}`);
  const masked = (token: string) => receiver.url.replace(/\/hook$/, `/api/webhooks/1234/****${token.slice(-4)}`);
  const base = () => `/apps/${app.id}/webhooks`;
  const stored = async (id: string) => (await h.tollgate.services.store.webhooks.findEndpoint(id))!.url;
  const audit = async () => (await h.admin('GET', `/audit?app_id=${app.id}`)).body;

  it('creation, reading and listing show the token masked, to a viewer too; the audit entry too; the delivery uses the real URL', async () => {
    const created = await h.admin('POST', base(), { url: discordUrl(TOKEN), kind: 'discord', event_types: ['user.created'] });
    expect(created.statusCode, created.body).toBe(201);
    const id = created.json().id as string;
    expect(created.json().url).toBe(masked(TOKEN));
    const viewer = (await h.admin('POST', '/tokens', { name: 'viewer', role: 'viewer' })).json().token as string;
    const got = await withToken(h, viewer, 'GET', `${base()}/${id}`);
    const listed = await withToken(h, viewer, 'GET', base());
    expect(got.json().url).toBe(masked(TOKEN));
    expect(listed.json().items[0].url).toBe(masked(TOKEN));
    for (const body of [created.body, got.body, listed.body, await audit()]) expect(body).not.toContain(TOKEN);
    expect(await audit()).toContain('****wxyz');
    expect(await stored(id)).toBe(discordUrl(TOKEN));
    await h.signUp(app, 'alice');
    const [delivered] = await receiver.count(1);
    expect(delivered!.path).toBe(`/api/webhooks/1234/${TOKEN}`);
  });

  it('an update that sends the masked URL back keeps the real one (a form filled from a view); a foreign masked URL is refused', async () => {
    const id = (await h.admin('POST', base(), { url: discordUrl(TOKEN), kind: 'discord' })).json().id as string;
    const same = await h.admin('PATCH', `${base()}/${id}`, { url: masked(TOKEN), description: 'alerts' });
    expect(same.statusCode, same.body).toBe(200);
    expect(same.json()).toMatchObject({ url: masked(TOKEN), description: 'alerts' });
    expect(await stored(id)).toBe(discordUrl(TOKEN));
    const entry = (await h.admin('GET', `/audit?app_id=${app.id}&action=webhook.update`)).json().items[0];
    expect(entry.details).toEqual({ before: { description: '' }, after: { description: 'alerts' } });
    const foreign = expectError(await h.admin('PATCH', `${base()}/${id}`, { url: masked(OTHER_TOKEN) }), 422, 'validation_error');
    expect(foreign.errors![0]).toMatchObject({ field: 'body.url', message: expect.stringMatching(/masked/) });
    expect(await stored(id)).toBe(discordUrl(TOKEN));
    const fresh = expectError(await h.admin('POST', base(), { url: masked(TOKEN), kind: 'discord' }), 422, 'validation_error');
    expect(fresh.errors![0]).toMatchObject({ field: 'body.url', message: expect.stringMatching(/masked/) });
  });

  it('a relay URL with a password in its user part (a row not saved through the API, which refuses it) is shown and audited without it', async () => {
    const PW = 'hunter2-relay-password';
    const url = receiver.url.replace('http://', `http://relay:${PW}@`).replace(/\/hook$/, `/to-discord/${TOKEN}`);
    expect((await h.admin('POST', base(), { url, kind: 'discord' })).statusCode, 'refused when saved through the API').toBe(422);
    const now = h.clock.ms;
    const id = randomUUID();
    await write(h.tollgate.services, ({ tx }) => tx.webhooks.insertEndpoint({
      id, appId: app.id, url, kind: 'discord', eventTypes: null, description: '', enabled: true, disabledReason: null, secret: 'whsec_restored',
      previousSecret: null, previousSecretUntil: null, failingSince: null, createdAt: now, updatedAt: now,
    }));
    const shown = receiver.url.replace('http://', 'http://relay:****@').replace(/\/hook$/, '/to-discord/****wxyz');
    const got = await h.admin('GET', `${base()}/${id}`);
    const listed = await h.admin('GET', base());
    expect(got.json().url).toBe(shown);
    expect(listed.json().items[0].url).toBe(shown);
    // A form sending the shown URL back changes nothing; the deletion's audit entry shows it masked.
    const same = await h.admin('PATCH', `${base()}/${id}`, { url: shown, description: 'restored' });
    expect(same.statusCode, same.body).toBe(200);
    expect(await stored(id)).toBe(url);
    expect((await h.admin('DELETE', `${base()}/${id}`)).statusCode).toBe(204);
    const deleted = (await h.admin('GET', `/audit?app_id=${app.id}&action=webhook.delete`)).json().items[0];
    expect(deleted.details.before.url).toBe(shown);
    for (const body of [got.body, listed.body, same.body, await audit()]) {
      expect(body).not.toContain(PW);
      expect(body).not.toContain(TOKEN);
    }
  });

  it('a new token is stored whole, and audited masked on both sides; so is the deletion', async () => {
    const id = (await h.admin('POST', base(), { url: discordUrl(TOKEN), kind: 'discord' })).json().id as string;
    const changed = await h.admin('PATCH', `${base()}/${id}`, { url: discordUrl(OTHER_TOKEN) });
    expect(changed.statusCode, changed.body).toBe(200);
    expect(changed.json().url).toBe(masked(OTHER_TOKEN));
    expect(await stored(id)).toBe(discordUrl(OTHER_TOKEN));
    const entry = (await h.admin('GET', `/audit?app_id=${app.id}&action=webhook.update`)).json().items[0];
    expect(entry.details).toEqual({ before: { url: masked(TOKEN) }, after: { url: masked(OTHER_TOKEN) } });
    expect((await h.admin('DELETE', `${base()}/${id}`)).statusCode).toBe(204);
    const log = await audit();
    expect(log).not.toContain(TOKEN);
    expect(log).not.toContain(OTHER_TOKEN);
  });
});
