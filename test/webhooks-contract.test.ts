import type { LookupAddress } from 'node:dns';
import type { lookup } from 'node:dns/promises';
import { Webhook } from 'standardwebhooks';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { EgressPolicy, EgressRefused, resolveTarget, type RefusalCategory } from '../src/domain/webhooks/egress.js';
import { DeliveryWorker, FAILING_LIMIT_MS, SCHEDULE_MS } from '../src/domain/webhooks/worker.js';
import { harness, TestClock, type Harness, type TestApp } from './helpers.js';
import { captureLog } from './log-capture.js';
import { makeOperator, signIn } from './operator-helpers.js';
import { Receiver, type Received } from './webhook-receiver.js';

/**
 * The contract of issue 23's webhooks where the audit found it untested or weakly tested: event retention, the
 * 24 h disable's log line, where an endpoint's secret may appear, the whole retry schedule, the headers of each
 * retry, and which SSRF check refused. On both stores (the file runs in the sqlite and the postgres projects).
 *
 * Most tests stop the harness's background worker and drive a worker of their own with `runOnce`: nothing else
 * claims a delivery, and the jitter is pinned through the worker's `random` option.
 */

const DAY_MS = 24 * 3_600_000;

type Delivery = {
  id: string; event_id: string; event_type: string; status: string; attempts: number; next_attempt_at: string | null;
  attempt_log: { at: string; status: number | null; error: string | null }[];
};

/** The harness's worker stopped; a worker of the test's own (never started: the test calls runOnce). */
async function ownWorker(h: Harness, random: () => number = () => 0.5): Promise<DeliveryWorker> {
  await h.tollgate.outbox.worker.stop();
  return new DeliveryWorker(h.tollgate.services, { timeoutMs: 2000, pollMs: 3_600_000, batch: 64, gatherMs: 5, random });
}

async function createEndpoint(h: Harness, app: TestApp, url: string, body: Record<string, unknown> = {}): Promise<{ id: string; secret: string }> {
  const res = await h.admin('POST', `/apps/${app.id}/webhooks`, { url, ...body });
  expect(res.statusCode, res.body).toBe(201);
  return res.json();
}

async function deliveriesOf(h: Harness, app: TestApp, endpointId: string): Promise<Delivery[]> {
  const res = await h.admin('GET', `/apps/${app.id}/webhooks/${endpointId}/deliveries?limit=100`);
  expect(res.statusCode, res.body).toBe(200);
  return res.json().items;
}

const usernameOf = (r: Received): string | undefined => (JSON.parse(r.body) as { data?: { username?: string } }).data?.username;

describe('event retention', () => {
  for (const [env, days] of [[{}, 30], [{ EVENT_RETENTION_DAYS: '7' }, 7]] as const) {
    it(`the sweep deletes events older than ${days} days${'EVENT_RETENTION_DAYS' in env ? ' (EVENT_RETENTION_DAYS=7)' : ' (the default)'} with their deliveries and attempts, pending ones included, and keeps younger ones`, async () => {
      const h = await harness({ env: { WEBHOOK_ALLOW_HOSTS: '127.0.0.1', ...env } });
      const receiver = await Receiver.start();
      // The old event's delivery to 'old-pending' keeps failing: it is still pending (a retry scheduled) when its event ages out.
      receiver.respond = (_n, r) => ({ status: usernameOf(r) === 'old-pending' ? 500 : 200 });
      try {
        const db = h.tollgate.services.store.db;
        const worker = await ownWorker(h);
        const app = await h.createApp();
        const ep = await createEndpoint(h, app, receiver.url);
        const t0 = h.clock.ms;
        await h.signUp(app, 'old-delivered');
        await h.signUp(app, 'old-pending');
        expect(await worker.runOnce()).toBe(2);
        // One second younger (before old-pending's retry, 5 s after its first attempt, falls due).
        h.clock.advance(1000);
        await h.signUp(app, 'young');
        expect(await worker.runOnce()).toBe(1);

        const events = async () => (await db.all<{ id: string; occurred_at: number | string }>('SELECT id, occurred_at FROM events ORDER BY id')).map((e) => ({ id: e.id, at: Number(e.occurred_at) }));
        const deliveryRows = async () => db.all<{ id: string; event_id: string; status: string }>('SELECT id, event_id, status FROM webhook_deliveries ORDER BY id');
        const attemptRows = async () => (await db.all<{ delivery_id: string }>('SELECT delivery_id FROM webhook_attempts ORDER BY delivery_id')).map((a) => a.delivery_id);

        const allEvents = await events();
        const oldEvents = allEvents.filter((e) => e.at === t0).map((e) => e.id);
        const youngEvents = allEvents.filter((e) => e.at === t0 + 1000).map((e) => e.id);
        expect(oldEvents.length).toBeGreaterThanOrEqual(3); // app.created and the two sign-ups at least
        expect(youngEvents).toHaveLength(1);
        const before = await deliveryRows();
        expect(before.map((d) => d.status).sort()).toEqual(['delivered', 'delivered', 'pending']);
        const pending = before.find((d) => d.status === 'pending')!;
        expect(oldEvents).toContain(pending.event_id);
        expect(await attemptRows()).toHaveLength(3);
        const young = before.find((d) => d.event_id === youngEvents[0])!;

        // Exactly the retention old: kept (only what is older goes).
        h.clock.ms = t0 + days * DAY_MS;
        await h.tollgate.outbox.sweep();
        expect(await events()).toEqual(allEvents);
        expect(await deliveryRows()).toEqual(before);

        // One millisecond more: the old events go, with their deliveries (the pending one too: decisions.md,
        // "Retention": the cascade deletes them whatever their state) and those deliveries' attempts.
        h.clock.advance(1);
        await h.tollgate.outbox.sweep();
        expect(await events()).toEqual(allEvents.filter((e) => e.at !== t0));
        expect(await deliveryRows()).toEqual([young]);
        expect(await attemptRows()).toEqual([young.id]);
        // The pending delivery is gone for the worker too: its retry is never sent.
        const sent = receiver.received.length;
        h.clock.advance(DAY_MS);
        expect(await worker.runOnce()).toBe(0);
        expect(receiver.received).toHaveLength(sent);
        // The endpoint itself is configuration, not an event: kept.
        expect((await h.admin('GET', `/apps/${app.id}/webhooks/${ep.id}`)).statusCode).toBe(200);
        expect((await h.admin('GET', `/events?app_id=${app.id}`)).json().items.map((e: { id: string }) => e.id)).toEqual(youngEvents);
      } finally {
        await h.close();
        await receiver.close();
      }
    });
  }
});

describe('the 24 h disable', () => {
  it('an endpoint every delivery to which failed for 24 hours is disabled at 24 h exactly, logged once at warn with its id', async () => {
    const log = captureLog();
    const h = await harness({ logStream: log.stream, env: { LOG_LEVEL: 'warn', ACCESS_LOG: 'off', WEBHOOK_ALLOW_HOSTS: '127.0.0.1' } });
    const receiver = await Receiver.start();
    receiver.respond = () => ({ status: 500 });
    try {
      const worker = await ownWorker(h);
      const app = await h.createApp();
      const ep = await createEndpoint(h, app, receiver.url);
      const shown = async () => (await h.admin('GET', `/apps/${app.id}/webhooks/${ep.id}`)).json() as { enabled: boolean; disabled_reason: string | null; failing_since: string | null };
      const disabledLines = () => log.lines.filter((l) => l.event === 'webhook_endpoint_disabled');
      const t0 = h.clock.ms;
      await h.signUp(app, 'alice');
      expect(await worker.runOnce()).toBe(1);
      expect((await shown()).failing_since).toBe(new Date(t0).toISOString());

      // 1 ms short of 24 h: alice's retry and bob's first attempt fail, the endpoint stays enabled, nothing logged.
      h.clock.advance(FAILING_LIMIT_MS - 1);
      await h.signUp(app, 'bob');
      expect(await worker.runOnce()).toBe(2);
      expect(await shown()).toMatchObject({ enabled: true, disabled_reason: null });
      expect(disabledLines()).toEqual([]);

      // 24 h: carol's first attempt fails, and the endpoint is disabled (its pending deliveries fail with it).
      h.clock.advance(1);
      await h.signUp(app, 'carol');
      expect(await worker.runOnce()).toBe(1);
      expect(await shown()).toMatchObject({ enabled: false, disabled_reason: 'every delivery failed for 24 hours' });
      expect((await deliveriesOf(h, app, ep.id)).map((d) => [d.status, d.next_attempt_at])).toEqual([['failed', null], ['failed', null], ['failed', null]]);

      const lines = disabledLines();
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatchObject({
        level: 40, event: 'webhook_endpoint_disabled', endpointId: ep.id, appId: app.id, status: 500,
        msg: 'webhook endpoint disabled: every delivery to it failed for 24 hours',
      });
    } finally {
      await h.close();
      await receiver.close();
    }
  });
});

describe('the endpoint secret', () => {
  it('is in the creation and rotation answers only: never in a read, a list, a change, the deliveries, the events or the audit log, by token or dashboard session', async () => {
    const h = await harness({ env: { WEBHOOK_ALLOW_HOSTS: '127.0.0.1' } });
    const receiver = await Receiver.start();
    try {
      const app = await h.createApp();
      await makeOperator(h, 'dashboard-admin', 'admin');
      const session = await signIn(h, 'dashboard-admin');

      // One endpoint made from the dashboard (its session), one service-wide by token; both rotated.
      const made = await session.call('POST', `/apps/${app.id}/webhooks`, { url: receiver.url, description: 'from the dashboard' });
      expect(made.statusCode, made.body).toBe(201);
      const service = await h.admin('POST', '/webhooks', { url: receiver.url });
      expect(service.statusCode, service.body).toBe(201);
      const appEp = made.json() as { id: string; secret: string };
      const serviceEp = service.json() as { id: string; secret: string };
      const rotatedApp = await session.call('POST', `/apps/${app.id}/webhooks/${appEp.id}/secret`);
      const rotatedService = await h.admin('POST', `/webhooks/${serviceEp.id}/secret`);
      expect(rotatedApp.statusCode, rotatedApp.body).toBe(200);
      expect(rotatedService.statusCode, rotatedService.body).toBe(200);
      const secrets = [appEp.secret, serviceEp.secret, rotatedApp.json().secret as string, rotatedService.json().secret as string];
      for (const s of secrets) expect(s).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      expect(new Set(secrets).size).toBe(4);

      // Something in every list: a change, a test event's deliveries (sent, so attempts too), events.
      for (const [path, call] of [[`/apps/${app.id}/webhooks/${appEp.id}`, session.call], [`/webhooks/${serviceEp.id}`, h.admin]] as const) {
        const changed = await call('PATCH', path, { description: 'changed' });
        expect(changed.statusCode, changed.body).toBe(200);
        expect(changed.body).not.toContain('whsec_');
        expect((await call('POST', `${path}/test`)).statusCode).toBe(202);
      }
      await receiver.count(2);

      const reads = [
        `/apps/${app.id}/webhooks`, `/apps/${app.id}/webhooks/${appEp.id}`, `/apps/${app.id}/webhooks/${appEp.id}/deliveries`, `/apps/${app.id}/webhook-key`,
        '/webhooks', `/webhooks/${serviceEp.id}`, `/webhooks/${serviceEp.id}/deliveries`, '/webhook-key',
        '/events', `/events?app_id=${app.id}`, '/audit', `/audit?app_id=${app.id}`, `/audit?target_id=${appEp.id}`, `/audit?target_id=${serviceEp.id}`,
      ];
      for (const path of reads) {
        for (const [who, res] of [['token', await h.admin('GET', path)], ['session', await session.call('GET', path)]] as const) {
          expect(res.statusCode, `${who} GET ${path}: ${res.body}`).toBe(200);
          expect(res.body, `${who} GET ${path}`).not.toContain('whsec_');
          // Nor the key without its prefix (a view that stripped `whsec_` would still leak it).
          for (const s of secrets) expect(res.body, `${who} GET ${path}`).not.toContain(s.slice('whsec_'.length));
        }
      }
      // The reads were not vacuous: the audit log holds the writes, the deliveries their attempts.
      const actions = (await h.admin('GET', '/audit?limit=100')).json().items.map((e: { action: string }) => e.action);
      for (const action of ['webhook.create', 'webhook.rotate_secret', 'webhook.update', 'webhook.test']) expect(actions.filter((a: string) => a === action)).toHaveLength(2);
      await vi.waitFor(async () => expect((await deliveriesOf(h, app, appEp.id))[0]?.attempt_log).toHaveLength(1), { timeout: 10_000, interval: 50 });
      // Nor in what the receiver got (its signature is an HMAC by the secret, not the secret).
      for (const r of receiver.received) {
        const sent = r.body + JSON.stringify(r.headers);
        for (const s of secrets) expect(sent).not.toContain(s.slice('whsec_'.length));
      }
    } finally {
      await h.close();
      await receiver.close();
    }
  });
});

describe('the retry schedule', () => {
  // One per delay the worker draws (after attempts 1 to 9): the lowest, the highest and points between.
  const RANDOMS = [0, 1, 0.25, 0.75, 0.5, 0.1, 0.9, 0.3, 0.6];
  const jittered = (attempt: number) => Math.round(SCHEDULE_MS[attempt]! * (0.9 + 0.2 * RANDOMS[attempt - 1]!));

  let h: Harness;
  let receiver: Receiver;
  beforeEach(async () => {
    h = await harness({ clock: new TestClock(Date.parse('2026-03-01T00:00:00.000Z')), env: { WEBHOOK_ALLOW_HOSTS: '127.0.0.1' } });
    receiver = await Receiver.start();
  });
  afterEach(async () => {
    await h.close();
    await receiver.close();
  });

  /**
   * Every attempt at alice's event fails (500); the endpoint's other deliveries succeed. One of them, delivered
   * 1 ms before each retry falls due, keeps the endpoint out of the 24 h rule (not every delivery failed), so
   * alice's delivery runs the whole schedule. The clock stands at each retry's due time; 1 ms earlier, nothing is sent.
   */
  async function wholeSchedule() {
    receiver.respond = (_n, r) => ({ status: usernameOf(r) === 'alice' ? 500 : 200 });
    const drawn: number[] = [];
    const worker = await ownWorker(h, () => {
      const r = RANDOMS[drawn.length];
      if (r === undefined) throw new Error('the worker drew more jitter than there were retries');
      drawn.push(r);
      return r;
    });
    const app = await h.createApp();
    const ep = await createEndpoint(h, app, receiver.url, { event_types: ['user.created'] });
    const aliceRequests = () => receiver.received.filter((r) => usernameOf(r) === 'alice');
    const alice = async () => (await deliveriesOf(h, app, ep.id)).find((d) => d.event_id === aliceEventId)!;
    const t0 = h.clock.ms;
    await h.signUp(app, 'alice');
    const aliceEventId = (await h.admin('GET', `/events?app_id=${app.id}&type=user.created`)).json().items[0].id as string;
    const attemptTimes = [t0];
    expect(await worker.runOnce()).toBe(1);
    for (let attempt = 2; attempt <= 10; attempt++) {
      const d = await alice();
      expect(d).toMatchObject({ status: 'pending', attempts: attempt - 1 });
      const due = Date.parse(d.next_attempt_at!);
      expect(due - attemptTimes.at(-1)!, `the wait before attempt ${attempt}`).toBe(jittered(attempt - 1));
      h.clock.ms = due - 1;
      await h.signUp(app, `healthy-${attempt}`);
      expect(await worker.runOnce(), `1 ms before attempt ${attempt}: only the healthy delivery`).toBe(1);
      expect(aliceRequests()).toHaveLength(attempt - 1);
      h.clock.ms = due;
      expect(await worker.runOnce()).toBe(1);
      expect(aliceRequests()).toHaveLength(attempt);
      attemptTimes.push(due);
    }
    return { app, ep, worker, drawn, attemptTimes, aliceEventId, alice, aliceRequests, t0 };
  }

  it('a delivery that always fails is tried at once, then after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h and 24 h (jitter pinned), and after the 10th attempt is failed with no next attempt', async () => {
    const { app, ep, worker, drawn, attemptTimes, alice, aliceRequests, t0 } = await wholeSchedule();
    expect(drawn).toEqual(RANDOMS);
    // The pinned jitter spans the ±10 %: 4500 ms (r = 0) and 330000 ms (r = 1) for the first two waits.
    expect([jittered(1), jittered(2)]).toEqual([4_500, 330_000]);
    const gaps = attemptTimes.slice(1).map((t, i) => t - attemptTimes[i]!);
    expect(gaps).toEqual(SCHEDULE_MS.slice(1).map((_, i) => jittered(i + 1)));
    expect(SCHEDULE_MS).toEqual([0, 5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 50_400_000, 72_000_000, 86_400_000]);
    const d = await alice();
    expect(d).toMatchObject({ status: 'failed', attempts: 10, next_attempt_at: null });
    expect(d.attempt_log.map((a) => [Date.parse(a.at) - t0, a.status])).toEqual(attemptTimes.map((t) => [t - t0, 500]));
    // Nothing more, however long one waits; the endpoint stayed enabled (its other deliveries succeeded).
    h.clock.advance(7 * DAY_MS);
    expect(await worker.runOnce()).toBe(0);
    expect(aliceRequests()).toHaveLength(10);
    expect((await h.admin('GET', `/apps/${app.id}/webhooks/${ep.id}`)).json()).toMatchObject({ enabled: true, failing_since: new Date(attemptTimes[9]!).toISOString() });
  });

  it('each retry carries its own webhook-timestamp (the attempt’s time), the event id as webhook-id, and verifies with standardwebhooks', async () => {
    const { ep, attemptTimes, aliceEventId, aliceRequests } = await wholeSchedule();
    const requests = aliceRequests();
    expect(requests).toHaveLength(10);
    const timestamps = requests.map((r) => r.headers['webhook-timestamp']);
    expect(timestamps).toEqual(attemptTimes.map((t) => String(Math.floor(t / 1000))));
    expect(new Set(timestamps).size).toBe(10);
    expect(requests.map((r) => r.headers['webhook-id'])).toEqual(new Array(10).fill(aliceEventId));
    // The body is the event's, the same on every retry; only the timestamp and so the signature change.
    expect(new Set(requests.map((r) => r.body)).size).toBe(1);
    expect(new Set(requests.map((r) => r.headers['webhook-signature'])).size).toBe(10);
    const headersOf = (r: Received, timestamp = r.headers['webhook-timestamp'] as string) => ({
      'webhook-id': r.headers['webhook-id'] as string, 'webhook-timestamp': timestamp, 'webhook-signature': r.headers['webhook-signature'] as string,
    });
    // The receiver's clock at each attempt's time: the package refuses a timestamp 5 minutes off its clock.
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      requests.forEach((r, i) => {
        vi.setSystemTime(attemptTimes[i]!);
        expect(new Webhook(ep.secret).verify(r.body, headersOf(r)), `attempt ${i + 1}`).toMatchObject({ id: aliceEventId, type: 'user.created' });
        // Signed over its own timestamp: the same request with another attempt's timestamp does not verify.
        if (i > 0) expect(() => new Webhook(ep.secret).verify(r.body, headersOf(r, timestamps[i - 1] as string))).toThrow();
      });
      // And at the last attempt's time, the first attempt's request is stale (the timestamp is the attempt's, not the event's).
      expect(() => new Webhook(ep.secret).verify(requests[0]!.body, headersOf(requests[0]!))).toThrow(/timestamp/i);
    } finally {
      vi.useRealTimers();
    }
  });

  it('a receiver failing everything for 24 hours ends the schedule early: the attempt 24 h after the first failure fails the delivery and disables the endpoint', async () => {
    receiver.respond = () => ({ status: 500 });
    const worker = await ownWorker(h);
    const app = await h.createApp();
    const ep = await createEndpoint(h, app, receiver.url, { event_types: ['user.created'] });
    const t0 = h.clock.ms;
    await h.signUp(app, 'alice');
    expect(await worker.runOnce()).toBe(1);
    // Unjittered (r = 0.5): attempts at 0, 5 s, 5 min 5 s, 35 min 5 s, 2 h 35 min 5 s, 7 h 35 min 5 s, 17 h 35 min 5 s;
    // the 8th, 31 h 35 min 5 s after the first failure, is the first at or past 24 h.
    for (let attempt = 2; attempt <= 8; attempt++) {
      const [d] = await deliveriesOf(h, app, ep.id);
      expect(d).toMatchObject({ status: 'pending', attempts: attempt - 1 });
      h.clock.ms = Date.parse(d!.next_attempt_at!);
      expect(await worker.runOnce()).toBe(1);
    }
    const [d] = await deliveriesOf(h, app, ep.id);
    expect(d).toMatchObject({ status: 'failed', attempts: 8, next_attempt_at: null });
    expect(h.clock.ms - t0).toBe(SCHEDULE_MS.slice(1, 8).reduce((a, b) => a + b, 0));
    expect((await h.admin('GET', `/apps/${app.id}/webhooks/${ep.id}`)).json()).toMatchObject({ enabled: false, disabled_reason: 'every delivery failed for 24 hours' });
    h.clock.advance(DAY_MS);
    expect(await worker.runOnce()).toBe(0);
    expect(receiver.received).toHaveLength(8);
  });
});

describe('SSRF: which check refused', () => {
  /** Each refused URL, the category of the check that refused it, and the refusal's exact words. */
  const CASES: [url: string, category: RefusalCategory, message: string][] = [
    ['https://127.0.0.1/hook', 'loopback', 'resolves to 127.0.0.1, a loopback address'],
    ['https://127.9.9.9/hook', 'loopback', 'resolves to 127.9.9.9, a loopback address'],
    ['https://[::1]/hook', 'loopback', 'resolves to ::1, a loopback address'],
    ['https://10.1.2.3/hook', 'private', 'resolves to 10.1.2.3, a private address'],
    ['https://172.16.0.1/hook', 'private', 'resolves to 172.16.0.1, a private address'],
    ['https://192.168.1.1/hook', 'private', 'resolves to 192.168.1.1, a private address'],
    ['https://[fd12:3456::1]/hook', 'private', 'resolves to fd12:3456::1, a private address'],
    ['https://100.64.0.1/hook', 'shared', 'resolves to 100.64.0.1, a shared address (CGNAT)'],
    ['https://169.254.10.20/hook', 'link-local', 'resolves to 169.254.10.20, a link-local address'],
    ['https://[fe80::1]/hook', 'link-local', 'resolves to fe80::1, a link-local address'],
    ['https://169.254.169.254/latest/meta-data/', 'metadata', 'resolves to 169.254.169.254, a cloud metadata address (link-local)'],
    ['https://[fd00:ec2::254]/latest/meta-data/', 'metadata', 'resolves to fd00:ec2::254, a cloud metadata address (private)'],
    ['https://224.0.0.1/hook', 'multicast', 'resolves to 224.0.0.1, a multicast address'],
    ['https://[ff02::1]/hook', 'multicast', 'resolves to ff02::1, a multicast address'],
    // IPv4-mapped IPv6: checked, and named, as the IPv4 address it is.
    ['https://[::ffff:127.0.0.1]/hook', 'loopback', 'resolves to 127.0.0.1, a loopback address'],
    ['https://[::ffff:10.0.0.1]/hook', 'private', 'resolves to 10.0.0.1, a private address'],
    ['https://[::ffff:169.254.169.254]/hook', 'metadata', 'resolves to 169.254.169.254, a cloud metadata address (link-local)'],
    ['https://0.0.0.0/hook', 'unspecified', 'resolves to 0.0.0.0, an unspecified address'],
    ['https://[::]/hook', 'unspecified', 'resolves to ::, an unspecified address'],
    ['https://192.0.2.10/hook', 'reserved', 'resolves to 192.0.2.10, a reserved address'],
    ['https://[2001:db8::1]/hook', 'reserved', 'resolves to 2001:db8::1, a reserved address'],
    ['http://example.com/hook', 'scheme', 'must be https'],
    ['https://user:pw@example.com/hook', 'credentials', 'must not carry a user name or password'],
    ['not a url', 'url', 'is not a URL'],
  ];

  /** A resolver the test controls: names to addresses (the URL's literal addresses never reach it). */
  const resolver = (names: Record<string, string[]>) =>
    (async (host: string) => {
      const addresses = names[host];
      if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
      return addresses.map((address): LookupAddress => ({ address, family: address.includes(':') ? 6 : 4 }));
    }) as unknown as typeof lookup;

  it('each refusal names its category (the domain check)', async () => {
    const none = new EgressPolicy([]);
    for (const [url, category, message] of CASES) {
      const refused = await resolveTarget(url, none, resolver({})).then(() => null, (err: unknown) => err);
      expect(refused, url).toBeInstanceOf(EgressRefused);
      expect({ url, category: (refused as EgressRefused).category, message: (refused as EgressRefused).message }).toEqual({ url, category, message });
    }
    // A name is refused by the category of any of its addresses, not only the first; one that does not resolve says so.
    const names = resolver({ 'mixed.example': ['93.184.216.34', '2606:2800:220:1::1', '10.0.0.5'], 'meta.example': ['fd00:ec2::254'], 'public.example': ['93.184.216.34'] });
    await expect(resolveTarget('https://mixed.example/hook', none, names)).rejects.toMatchObject({ category: 'private', message: 'resolves to 10.0.0.5, a private address' });
    await expect(resolveTarget('https://meta.example/hook', none, names)).rejects.toMatchObject({ category: 'metadata', message: 'resolves to fd00:ec2::254, a cloud metadata address (private)' });
    await expect(resolveTarget('https://nowhere.example/hook', none, names)).rejects.toMatchObject({ category: 'unresolvable', message: 'its host does not resolve (ENOTFOUND)' });
    await expect(resolveTarget('https://public.example/hook', none, names)).resolves.toMatchObject({ address: '93.184.216.34', family: 4 });
    await expect(resolveTarget('https://8.8.8.8/hook', none, names)).resolves.toMatchObject({ address: '8.8.8.8', family: 4 });
  });

  describe('through the API', () => {
    let h: Harness;
    let app: TestApp;
    beforeEach(async () => {
      h = await harness();
      app = await h.createApp();
    });
    afterEach(async () => h.close());

    it('at creation: a 422 on body.url whose message names the check that refused', async () => {
      for (const [url, , message] of CASES) {
        const res = await h.admin('POST', `/apps/${app.id}/webhooks`, { url });
        expect(res.statusCode, `${url}: ${res.body}`).toBe(422);
        expect(res.json().errors, url).toEqual([{ field: 'body.url', message }]);
      }
      expect((await h.admin('GET', `/apps/${app.id}/webhooks`)).json().items).toEqual([]);
    });

    it('at delivery: the attempt’s error names the check that refused, and nothing is sent', async () => {
      const worker = await ownWorker(h);
      const services = h.tollgate.services as { egress: EgressPolicy };
      const atDelivery: [url: string, address: string, error: string][] = [
        ['https://127.0.0.1:9/hook', '127.0.0.1', 'refused: the URL resolves to 127.0.0.1, a loopback address'],
        ['https://10.255.255.1:9/hook', '10.255.255.1', 'refused: the URL resolves to 10.255.255.1, a private address'],
        ['https://169.254.169.254/latest/meta-data/', '169.254.169.254', 'refused: the URL resolves to 169.254.169.254, a cloud metadata address (link-local)'],
        ['https://[::ffff:127.0.0.1]:9/hook', '127.0.0.1', 'refused: the URL resolves to 127.0.0.1, a loopback address'],
        ['https://0.0.0.0:9/hook', '0.0.0.0', 'refused: the URL resolves to 0.0.0.0, an unspecified address'],
      ];
      const endpoints: string[] = [];
      for (const [url, address] of atDelivery) {
        // Allowed when saved (the setting named the address then), refused at delivery (it no longer does).
        services.egress = new EgressPolicy([address]);
        endpoints.push((await createEndpoint(h, app, url, { event_types: ['user.created'] })).id);
      }
      services.egress = new EgressPolicy([]);
      await h.signUp(app, 'alice');
      expect(await worker.runOnce()).toBe(atDelivery.length);
      for (const [i, [, , error]] of atDelivery.entries()) {
        const [d] = await deliveriesOf(h, app, endpoints[i]!);
        expect(d!.attempt_log.map((a) => ({ status: a.status, error: a.error }))).toEqual([{ status: null, error }]);
        expect(d!.status).toBe('pending');
      }
    });
  });
});
