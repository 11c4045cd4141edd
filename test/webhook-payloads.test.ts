import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { EventRecord } from '../src/store/repositories/events.js';
import { deliveryBody } from '../src/domain/webhooks/payload.js';
import { harness, TestClock, type Harness, type TestApp } from './helpers.js';
import { Receiver } from './webhook-receiver.js';

/**
 * Who gets license codes (docs/decisions.md): `license.created` carries its batch's codes for the app's own
 * mailer, a standard endpoint of that app. A service-wide endpoint hears every app's events and a Discord
 * channel is read by many: both get license events without codes, and everything else of them.
 */

const APP = '0190c7a4-0000-7000-8000-000000000001';
const created: EventRecord = {
  id: '0190c7a4-0000-7000-8000-0000000000e1', type: 'license.created', occurredAt: Date.UTC(2026, 10, 27), appId: APP,
  data: { count: 2, licenses: [{ id: 'l1', code: 'AAAA-BBBB-CCCC-1111', minutes: 60 }, { id: 'l2', code: 'AAAA-BBBB-CCCC-2222', minutes: 60 }], order_id: 'o1', email: 'buyer@example.com' },
};
const dataOf = (body: string) => JSON.parse(body).data as Record<string, unknown>;

describe('deliveryBody: license codes go to the app’s own standard endpoints only', () => {
  it('an app’s standard endpoint gets the codes', () => {
    const body = deliveryBody(created, { kind: 'standard', appId: APP });
    expect(body).toContain('AAAA-BBBB-CCCC-1111');
    expect(dataOf(body)).toEqual(created.data);
  });

  it('a service-wide standard endpoint gets the event without the codes, the rest as it is', () => {
    const body = deliveryBody(created, { kind: 'standard', appId: null });
    expect(body).not.toContain('AAAA-BBBB-CCCC');
    expect(JSON.parse(body)).toMatchObject({ id: created.id, type: 'license.created', app_id: APP });
    expect(dataOf(body)).toEqual({ count: 2, licenses: [{ id: 'l1', minutes: 60 }, { id: 'l2', minutes: 60 }], order_id: 'o1', email: 'buyer@example.com' });
  });

  it('a discord endpoint, of an app or service-wide, gets no code', () => {
    for (const appId of [APP, null]) expect(deliveryBody(created, { kind: 'discord', appId })).not.toContain('AAAA-BBBB-CCCC');
  });

  it('a variable’s value goes to the app’s own standard endpoints only; its name to every one', () => {
    const put: EventRecord = { ...created, type: 'variable.updated', data: { name: 'download_key', value: 'dl-7f3a-secret' } };
    expect(dataOf(deliveryBody(put, { kind: 'standard', appId: APP }))).toEqual(put.data);
    expect(dataOf(deliveryBody(put, { kind: 'standard', appId: null }))).toEqual({ name: 'download_key' });
    for (const appId of [APP, null]) {
      const discord = deliveryBody(put, { kind: 'discord', appId });
      expect(discord).not.toContain('dl-7f3a-secret');
      expect(discord).toContain('download_key');
    }
  });

  it('a `code` that is no license code stays (an entitlement’s), on every kind', () => {
    const granted: EventRecord = { ...created, type: 'entitlement.granted', data: { user_id: 'u1', code: 'pro', until: null } };
    expect(dataOf(deliveryBody(granted, { kind: 'standard', appId: null }))).toEqual(granted.data);
    expect(JSON.parse(deliveryBody(granted, { kind: 'discord', appId: APP })).embeds[0].fields).toContainEqual({ name: 'code', value: 'pro', inline: true });
  });
});


describe('license.created end to end: codes to the app’s endpoint, none to a service-wide one', () => {
  let h: Harness;
  let app: TestApp;
  let own: Receiver;
  let service: Receiver;
  beforeEach(async () => {
    h = await harness({ clock: new TestClock(Date.now()), env: { WEBHOOK_ALLOW_HOSTS: '127.0.0.1' } });
    app = await h.createApp();
    own = await Receiver.start();
    service = await Receiver.start();
  });
  afterEach(async () => {
    await h.close();
    await own.close();
    await service.close();
  });

  it('the vendor’s mailer gets the codes; the service-wide endpoint the batch without them', async () => {
    expect((await h.admin('POST', `/apps/${app.id}/webhooks`, { url: own.url, event_types: ['license.created'] })).statusCode).toBe(201);
    expect((await h.admin('POST', '/webhooks', { url: service.url, event_types: ['license.created'] })).statusCode).toBe(201);
    const codes = await h.licenses(app, { count: 2, minutes: 60 });
    const [mine] = await own.count(1);
    const [theirs] = await service.count(1);
    for (const code of codes) {
      expect(mine!.body).toContain(code);
      expect(theirs!.body).not.toContain(code);
    }
    expect(JSON.parse(theirs!.body).data).toMatchObject({ count: 2 });
  });
});
