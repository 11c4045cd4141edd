import { createPublicKey, randomBytes, verify } from 'node:crypto';
import { createServer, type AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { listEvents } from '../src/domain/outbox/events.js';
import { KeySeal } from '../src/domain/signing/seal.js';
import { EgressPolicy } from '../src/domain/webhooks/egress.js';
import { DeliveryWorker, SCHEDULE_MS, type WorkerOptions } from '../src/domain/webhooks/worker.js';
import type { Db, Queryable } from '../src/store/db.js';
import { harness, PASSWORD, STORE, TestClock, type Harness, type TestApp } from './helpers.js';
import { captureLog } from './log-capture.js';
import { Receiver, type Received } from './webhook-receiver.js';
import { waitFor } from './wait.js';

/**
 * Webhooks out, against real loopback receivers (WEBHOOK_ALLOW_HOSTS lets the tests reach 127.0.0.1 over http).
 * Signatures are checked with the `standardwebhooks` package (the spec's reference library) for v1, and with
 * node:crypto per the spec's asymmetric section for v1a (the package verifies v1 only).
 */

const headersOf = (r: Received) => ({
  'webhook-id': r.headers['webhook-id'] as string,
  'webhook-timestamp': r.headers['webhook-timestamp'] as string,
  'webhook-signature': r.headers['webhook-signature'] as string,
});

function verifyV1a(publicKey: string, r: Received): boolean {
  const h = headersOf(r);
  const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(publicKey.slice('whpk_'.length), 'base64').toString('base64url') }, format: 'jwk' });
  const content = Buffer.from(`${h['webhook-id']}.${h['webhook-timestamp']}.${r.body}`);
  return h['webhook-signature'].split(' ').filter((e) => e.startsWith('v1a,')).some((e) => verify(null, content, key, Buffer.from(e.slice(4), 'base64')));
}

/**
 * Runs the worker until `done` holds, a turn at a time with a pause between (the background loop may take a batch
 * first: either way it is sent once); throws if it does not hold within `ms`.
 */
async function workUntil(worker: DeliveryWorker, done: () => Promise<boolean> | boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error('condition not reached');
    await worker.runOnce();
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * An attempt's timeout for tests whose receivers answer: finite, and far above a loopback answer's few ms, so a
 * healthy receiver answering late on a loaded machine is not counted as a failure. A case about the timeout
 * itself sets its own.
 */
const TIMEOUT_MS = 10_000;

describe('webhooks', () => {
  let h: Harness;
  let app: TestApp;
  let receiver: Receiver;
  /** The worker `until` turns: the harness's, or the test's own (ownWorker). */
  let worker: DeliveryWorker;
  let own: DeliveryWorker | null = null;
  beforeEach(async () => {
    // The clock starts at the real time: standardwebhooks checks webhook-timestamp against the wall clock (5 min).
    h = await harness({ clock: new TestClock(Date.now()), env: { WEBHOOK_ALLOW_HOSTS: '127.0.0.1', WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS) } });
    worker = h.tollgate.outbox.worker;
    app = await h.createApp();
    receiver = await Receiver.start();
  });
  afterEach(async () => {
    await own?.stop();
    own = null;
    await h.close();
    await receiver.close();
  });

  /**
   * The harness's background worker stopped, and one with these options running in its place (woken by commits,
   * polling each second, as the harness's): for a case that needs a setting the server's configuration does not
   * have, such as the gather window.
   */
  const ownWorker = async (opts: Partial<WorkerOptions>) => {
    await h.tollgate.outbox.worker.stop();
    own = new DeliveryWorker(h.tollgate.services, { timeoutMs: TIMEOUT_MS, pollMs: 1000, batch: 64, ...opts });
    own.start();
    worker = own;
  };

  const endpoint = async (body: Record<string, unknown> = {}, path = `/apps/${app.id}/webhooks`) => {
    const res = await h.admin('POST', path, { url: receiver.url, ...body });
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as { id: string; secret: string; enabled: boolean };
  };
  const deliveries = async (id: string, path = `/apps/${app.id}/webhooks`) => {
    const res = await h.admin('GET', `${path}/${id}/deliveries`);
    expect(res.statusCode, res.body).toBe(200);
    return res.json().items as { id: string; status: string; attempts: number; next_attempt_at: string | null; attempt_log: { status: number | null; error: string | null; body: string | null }[] }[];
  };
  const until = (done: () => Promise<boolean> | boolean, ms?: number) => workUntil(worker, done, ms);

  it('a committed write reaches the endpoint, signed per Standard Webhooks (v1 by the package, v1a by its public key)', async () => {
    const ep = await endpoint();
    expect(ep.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const started = Date.now();
    const userId = await h.signUp(app, 'alice');
    const [got] = await receiver.count(1);
    expect(Date.now() - started, 'first attempt within 1 s of the commit').toBeLessThan(1000);
    const payload = new Webhook(ep.secret).verify(got!.body, headersOf(got!)) as { id: string; type: string; data: { id: string } };
    expect(payload).toMatchObject({ type: 'user.created', app_id: app.id, data: { id: userId, username: 'alice' } });
    expect(got!.headers['webhook-id']).toBe(payload.id);
    const key = (await h.admin('GET', `/apps/${app.id}/webhook-key`)).json().public_key as string;
    expect(key).toMatch(/^whpk_[A-Za-z0-9+/]{43}=$/);
    expect(verifyV1a(key, got!)).toBe(true);
    // A forged body fails both.
    const forged = { ...got!, body: got!.body.replace('alice', 'mallory') };
    expect(() => new Webhook(ep.secret).verify(forged.body, headersOf(forged))).toThrow();
    expect(verifyV1a(key, forged)).toBe(false);
    // The event is listed with the same id.
    const events = await h.admin('GET', `/events?app_id=${app.id}&type=user.created`);
    expect(events.json().items.map((e: { id: string }) => e.id)).toEqual([payload.id]);
  });

  it('only subscribed types, only enabled endpoints, only the app’s own events (plus service-wide endpoints)', async () => {
    const other = await h.createApp({ name: 'Other' });
    const own = await endpoint({ event_types: ['license.created'] });
    // Subscribed to both types, but disabled: nothing is queued for it, so nothing reaches the receiver from it.
    const disabled = await endpoint({ event_types: ['user.created', 'license.created'], enabled: false });
    expect(disabled.enabled).toBe(false);
    const service = await Receiver.start();
    try {
      const res = await h.admin('POST', '/webhooks', { url: service.url, event_types: ['user.created'] });
      expect(res.statusCode, res.body).toBe(201);
      await h.signUp(app, 'alice');
      await h.signUp(other, 'bob');
      await h.licenses(other); // the other app's license.created: not for this app's endpoint
      await h.licenses(app);
      await service.count(2);
      await receiver.count(1);
      // What must not arrive has no event to wait for: a while for a wrong delivery to show (the stored deliveries
      // below say it without waiting).
      await new Promise((r) => setTimeout(r, 300));
      // Subscribed type only (no user.created), own app only (not Other's license.created), enabled endpoints only.
      expect(receiver.received.map((r) => [JSON.parse(r.body).type, JSON.parse(r.body).app_id])).toEqual([['license.created', app.id]]);
      expect(await deliveries(own.id)).toHaveLength(1);
      expect(await deliveries(disabled.id)).toEqual([]);
      // The service-wide endpoint hears its type from every app, and only its type.
      expect(service.received.map((r) => JSON.parse(r.body).type)).toEqual(['user.created', 'user.created']);
      expect(service.received.map((r) => JSON.parse(r.body).data.username).sort()).toEqual(['alice', 'bob']);
    } finally {
      await service.close();
    }
  });

  it('a receiver failing twice gets the retries of the schedule, same webhook-id, each answer kept', async () => {
    receiver.respond = (n) => (n <= 2 ? { status: 500, body: `failure ${n} ${'x'.repeat(3000)}` } : { status: 204 });
    const ep = await endpoint();
    await h.signUp(app, 'alice');
    await receiver.count(1);
    await until(async () => (await deliveries(ep.id))[0]?.attempts === 1);
    let [d] = await deliveries(ep.id);
    expect(d!.status).toBe('pending');
    const wait = Date.parse(d!.next_attempt_at!) - h.clock.ms;
    expect(wait).toBeGreaterThanOrEqual(SCHEDULE_MS[1]! * 0.9);
    expect(wait).toBeLessThanOrEqual(SCHEDULE_MS[1]! * 1.1);
    h.clock.advance(wait - 1);
    await h.tollgate.outbox.worker.runOnce();
    expect(receiver.received).toHaveLength(1); // not due yet
    h.clock.advance(1);
    await until(async () => (await deliveries(ep.id))[0]?.attempts === 2);
    [d] = await deliveries(ep.id);
    expect(Date.parse(d!.next_attempt_at!) - h.clock.ms).toBeGreaterThanOrEqual(SCHEDULE_MS[2]! * 0.9);
    h.clock.advance(SCHEDULE_MS[2]! * 1.1);
    await until(async () => (await deliveries(ep.id))[0]?.status === 'delivered');
    [d] = await deliveries(ep.id);
    expect(d!.attempts).toBe(3);
    expect(d!.attempt_log.map((a) => a.status)).toEqual([500, 500, 204]);
    expect(d!.attempt_log[0]!.body).toHaveLength(2048);
    expect(d!.attempt_log[0]!.body!.startsWith('failure 1 ')).toBe(true);
    expect(new Set(receiver.received.map((r) => r.headers['webhook-id'])).size).toBe(1);
  });

  it('one event to two endpoints: a delivery each, with its own UUIDv7; a success after a failure makes the endpoint healthy', async () => {
    const other = await Receiver.start();
    try {
      receiver.respond = (n) => (n === 1 ? { status: 500 } : { status: 200 });
      const ep = await endpoint({ event_types: ['user.created'] });
      const res = await h.admin('POST', `/apps/${app.id}/webhooks`, { url: other.url, event_types: ['user.created'] });
      expect(res.statusCode, res.body).toBe(201);
      const ep2 = res.json() as { id: string };
      await h.signUp(app, 'alice');
      await other.count(1);
      await until(async () => (await deliveries(ep.id))[0]?.attempts === 1);
      const [d1] = await deliveries(ep.id);
      const [d2] = await deliveries(ep2.id);
      const v7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
      expect(d1!.id).toMatch(v7);
      expect(d2!.id).toMatch(v7);
      expect(d1!.id).not.toBe(d2!.id);
      expect((await h.admin('GET', `/apps/${app.id}/webhooks/${ep.id}`)).json().failing_since).not.toBeNull();
      h.clock.advance(SCHEDULE_MS[1]! * 1.1);
      await until(async () => (await deliveries(ep.id))[0]?.status === 'delivered');
      expect((await h.admin('GET', `/apps/${app.id}/webhooks/${ep.id}`)).json().failing_since).toBeNull();
      expect((await deliveries(ep2.id))[0]!.status).toBe('delivered');
    } finally {
      await other.close();
    }
  });

  /** The transactions the store runs from now on, each with its statements and whether it was sent as one statement. */
  const watchTransactions = () => {
    const db = h.tollgate.services.store.db as { transaction: Db['transaction'] };
    const original = db.transaction.bind(db);
    const seen: { oneStatement: boolean; sql: string[] }[] = [];
    db.transaction = (fn, options) => original((tx) => {
      const entry = { oneStatement: options?.oneStatement === true, sql: [] as string[] };
      seen.push(entry);
      const log = (sql: string) => void entry.sql.push(sql.replace(/\s+/g, ' ').trim());
      const q: Queryable = {
        one: (sql, params) => (log(sql), tx.one(sql, params)),
        all: (sql, params) => (log(sql), tx.all(sql, params)),
        run: (sql, params) => (log(sql), tx.run(sql, params)),
      };
      return fn(q);
    }, options);
    return {
      /** The transactions that wrote attempts (a group of outcomes each). */
      groups: () => seen.filter((t) => t.sql.some((sql) => sql.includes('INSERT INTO webhook_attempts'))),
      claims: () => seen.filter((t) => t.sql.some((sql) => sql.includes('SET claimed_until'))),
    };
  };

  /**
   * The group commit gathers a batch's answers for GATHER_MS (150 ms) after the first: on a loaded machine the
   * second receiver's answer can come later than that, and the batch is then written in two groups. These cases
   * are about what one group writes, not about the window's length: their worker gathers for 2 s.
   */
  const GROUP_GATHER_MS = 2000;

  it('a batch’s outcomes, the last answer’s too, are one transaction; on PostgreSQL a claim and a group of successes are one statement each', async () => {
    const other = await Receiver.start();
    try {
      await ownWorker({ gatherMs: GROUP_GATHER_MS });
      await endpoint({ event_types: ['user.created'] });
      expect((await h.admin('POST', `/apps/${app.id}/webhooks`, { url: other.url, event_types: ['user.created'] })).statusCode).toBe(201);
      const watch = watchTransactions();
      await h.signUp(app, 'alice');
      await receiver.count(1);
      await other.count(1);
      const eps = (await h.admin('GET', `/apps/${app.id}/webhooks`)).json().items as { id: string }[];
      await until(async () => (await Promise.all(eps.map(async (e) => (await deliveries(e.id))[0]?.status))).every((x) => x === 'delivered'));
      // Both deliveries were claimed together (one fan-out), so their outcomes are written together.
      expect(watch.groups()).toHaveLength(1);
      for (const t of [...watch.groups(), ...watch.claims()]) {
        expect(t.oneStatement).toBe(STORE === 'postgres');
        if (STORE === 'postgres') expect(t.sql).toHaveLength(1);
      }
      for (const e of eps) expect((await h.admin('GET', `/apps/${app.id}/webhooks/${e.id}`)).json().failing_since).toBeNull();
    } finally {
      await other.close();
    }
  });

  it('a group with a success and a failure: the success is settled and its failing endpoint made healthy, the failure retried, in one transaction', async () => {
    const other = await Receiver.start();
    try {
      await ownWorker({ gatherMs: GROUP_GATHER_MS });
      receiver.respond = (n) => (n === 1 ? { status: 500 } : { status: 200 });
      other.respond = () => ({ status: 500, body: 'no' });
      const ep = await endpoint({ event_types: ['user.created'] });
      await h.signUp(app, 'alice');
      await until(async () => (await deliveries(ep.id))[0]?.attempts === 1);
      expect((await h.admin('GET', `/apps/${app.id}/webhooks/${ep.id}`)).json().failing_since).not.toBeNull();
      const res = await h.admin('POST', `/apps/${app.id}/webhooks`, { url: other.url, event_types: ['user.created'] });
      expect(res.statusCode, res.body).toBe(201);
      const ep2 = res.json() as { id: string };
      const watch = watchTransactions();
      await h.signUp(app, 'bob');
      await receiver.count(2);
      await other.count(1);
      await until(async () => (await deliveries(ep2.id))[0]?.attempts === 1 && (await deliveries(ep.id))[0]?.status === 'delivered');
      expect(watch.groups()).toHaveLength(1);
      const [bobs, alices] = await deliveries(ep.id);
      expect(bobs).toMatchObject({ status: 'delivered', attempts: 1, next_attempt_at: null });
      expect(bobs!.attempt_log.map((a) => a.status)).toEqual([200]);
      // Alice's first delivery is not due yet (5 s): the success of another one does not settle it.
      expect(alices).toMatchObject({ status: 'pending', attempts: 1 });
      const [failed] = await deliveries(ep2.id);
      expect(failed).toMatchObject({ status: 'pending', attempts: 1 });
      expect(failed!.attempt_log.map((a) => [a.status, a.body])).toEqual([[500, 'no']]);
      expect((await h.admin('GET', `/apps/${app.id}/webhooks/${ep.id}`)).json().failing_since).toBeNull();
      expect((await h.admin('GET', `/apps/${app.id}/webhooks/${ep2.id}`)).json().failing_since).not.toBeNull();
    } finally {
      await other.close();
    }
  });

  it.runIf(STORE === 'postgres')('a one-statement transaction refuses a second statement (PostgreSQL sends it without BEGIN)', async () => {
    const db = h.tollgate.services.store.db;
    await expect(db.transaction(async (q) => {
      await q.one('SELECT 1 AS x');
      await q.one('SELECT 2 AS x');
    }, { oneStatement: true })).rejects.toThrow(/second statement/);
    expect(await db.transaction(async (q) => (await q.one<{ x: number }>('SELECT 3 AS x'))!.x, { oneStatement: true })).toBe(3);
  });

  it('429 and 503 with Retry-After: the next attempt waits exactly that long', async () => {
    receiver.respond = (n) => (n === 1 ? { status: 429, headers: { 'retry-after': '120' } } : n === 2 ? { status: 503, headers: { 'retry-after': '7' } } : { status: 200 });
    const ep = await endpoint();
    await h.signUp(app, 'alice');
    await until(async () => (await deliveries(ep.id))[0]?.attempts === 1);
    expect(Date.parse((await deliveries(ep.id))[0]!.next_attempt_at!) - h.clock.ms).toBe(120_000);
    h.clock.advance(120_000);
    await until(async () => (await deliveries(ep.id))[0]?.attempts === 2);
    expect(Date.parse((await deliveries(ep.id))[0]!.next_attempt_at!) - h.clock.ms).toBe(7_000);
    h.clock.advance(7_000);
    await until(async () => (await deliveries(ep.id))[0]?.status === 'delivered');
  });

  it('410 Gone disables the endpoint: no more deliveries until it is enabled again', async () => {
    receiver.respond = () => ({ status: 410 });
    const ep = await endpoint();
    await h.signUp(app, 'alice');
    await until(async () => (await h.admin('GET', `/apps/${app.id}/webhooks/${ep.id}`)).json().enabled === false);
    const shown = (await h.admin('GET', `/apps/${app.id}/webhooks/${ep.id}`)).json();
    expect(shown.disabled_reason).toMatch(/410/);
    expect((await deliveries(ep.id))[0]!.status).toBe('failed');
    await h.signUp(app, 'bob');
    expect(await deliveries(ep.id)).toHaveLength(1);
    const enabled = await h.admin('PATCH', `/apps/${app.id}/webhooks/${ep.id}`, { enabled: true });
    expect(enabled.json()).toMatchObject({ enabled: true, disabled_reason: null });
  });

  it('a hanging receiver is cut at the timeout; the attempt records why', async () => {
    await ownWorker({ timeoutMs: 500 });
    receiver.respond = () => 'hang';
    const ep = await endpoint();
    await h.signUp(app, 'alice');
    await until(async () => (await deliveries(ep.id))[0]?.attempts === 1);
    const [d] = await deliveries(ep.id);
    expect(d!.attempt_log[0]).toMatchObject({ status: null, body: null });
    expect(d!.attempt_log[0]!.error).toMatch(/no answer within 500 ms/);
  });

  it('a redirect is not followed: a 3xx is a failed attempt', async () => {
    receiver.respond = () => ({ status: 302, headers: { location: 'http://169.254.169.254/latest/meta-data/' } });
    const ep = await endpoint();
    await h.signUp(app, 'alice');
    await until(async () => (await deliveries(ep.id))[0]?.attempts === 1);
    expect((await deliveries(ep.id))[0]!.attempt_log[0]!.status).toBe(302);
    expect(receiver.received).toHaveLength(1);
  });

  it('every delivery failing for 24 hours disables the endpoint', async () => {
    receiver.respond = () => ({ status: 500 });
    const ep = await endpoint();
    await h.signUp(app, 'alice');
    await until(async () => (await deliveries(ep.id))[0]?.attempts === 1);
    h.clock.advance(24 * 3_600_000);
    await h.signUp(app, 'bob');
    await until(async () => (await h.admin('GET', `/apps/${app.id}/webhooks/${ep.id}`)).json().enabled === false);
    expect((await h.admin('GET', `/apps/${app.id}/webhooks/${ep.id}`)).json().disabled_reason).toMatch(/24 hours/);
    // Alice's retry may be claimed (the 1 s poll) before bob's write commits, and disable the endpoint while bob's
    // delivery is not yet visible to its failPendingOf: that delivery is then failed when it is claimed (its
    // endpoint disabled), a moment after the endpoint reads disabled.
    await until(async () => (await deliveries(ep.id)).every((d) => d.status !== 'pending'));
    expect((await deliveries(ep.id)).map((d) => d.status)).toEqual(['failed', 'failed']);
  });

  it('after a rotation both secrets sign for 24 hours, then only the new one', async () => {
    const ep = await endpoint();
    const rotated = await h.admin('POST', `/apps/${app.id}/webhooks/${ep.id}/secret`);
    expect(rotated.statusCode, rotated.body).toBe(200);
    const fresh = rotated.json().secret as string;
    expect(fresh).not.toBe(ep.secret);
    await h.signUp(app, 'alice');
    const [got] = await receiver.count(1);
    expect(got!.headers['webhook-signature']!.toString().split(' ').filter((e) => e.startsWith('v1,'))).toHaveLength(2);
    new Webhook(ep.secret).verify(got!.body, headersOf(got!));
    new Webhook(fresh).verify(got!.body, headersOf(got!));
    h.clock.advance(24 * 3_600_000 + 1);
    await h.signUp(app, 'bob');
    const [, second] = await receiver.count(2);
    expect(second!.headers['webhook-signature']!.toString().split(' ').filter((e) => e.startsWith('v1,'))).toHaveLength(1);
  });

  it('a discord endpoint gets embeds', async () => {
    await endpoint({ kind: 'discord', event_types: ['user.created'] });
    await h.signUp(app, 'alice');
    const [got] = await receiver.count(1);
    const body = JSON.parse(got!.body);
    expect(body.embeds[0]).toMatchObject({ title: 'user.created' });
    expect(body.embeds[0].fields).toContainEqual({ name: 'username', value: 'alice', inline: true });
  });

  it('a discord endpoint gets license.created without the codes (credentials), a standard one with them', async () => {
    await endpoint({ kind: 'discord', event_types: ['license.created'] });
    const made = await h.admin('POST', `/apps/${app.id}/licenses`, { count: 2, minutes: 60 });
    expect(made.statusCode, made.body).toBe(201);
    const codes: string[] = made.json().licenses.map((l: { code: string }) => l.code);
    const [got] = await receiver.count(1);
    const body = JSON.parse(got!.body);
    expect(body.embeds[0]).toMatchObject({ title: 'license.created' });
    for (const code of codes) expect(got!.body).not.toContain(code);
    const events = await h.admin('GET', `/events?app_id=${app.id}&type=license.created`);
    for (const code of codes) expect(events.body).toContain(code); // the event itself keeps them
  });

  it('test event, replay of one delivery and of every failure since a time', async () => {
    receiver.respond = (n) => (n <= 2 ? { status: 500 } : { status: 200 });
    const ep = await endpoint();
    const test = await h.admin('POST', `/apps/${app.id}/webhooks/${ep.id}/test`);
    expect(test.statusCode, test.body).toBe(202);
    await receiver.count(1);
    expect(JSON.parse(receiver.received[0]!.body).type).toBe('webhook.test');
    // Make it fail for good: a disabled-then-enabled endpoint keeps its failed deliveries to replay.
    await until(async () => (await deliveries(ep.id))[0]?.attempts === 1);
    await h.admin('PATCH', `/apps/${app.id}/webhooks/${ep.id}`, { enabled: false });
    h.clock.advance(10_000);
    await until(async () => (await deliveries(ep.id))[0]?.status === 'failed');
    await h.admin('PATCH', `/apps/${app.id}/webhooks/${ep.id}`, { enabled: true });
    const [d] = await deliveries(ep.id);
    const replay = await h.admin('POST', `/apps/${app.id}/webhooks/${ep.id}/deliveries/${d!.id}/replay`);
    expect(replay.statusCode, replay.body).toBe(202);
    await receiver.count(2);
    await until(async () => (await deliveries(ep.id))[0]?.attempts === 1 && (await deliveries(ep.id))[0]?.status === 'pending');
    await h.admin('PATCH', `/apps/${app.id}/webhooks/${ep.id}`, { enabled: false });
    h.clock.advance(10_000);
    await until(async () => (await deliveries(ep.id))[0]?.status === 'failed');
    await h.admin('PATCH', `/apps/${app.id}/webhooks/${ep.id}`, { enabled: true });
    const all = await h.admin('POST', `/apps/${app.id}/webhooks/${ep.id}/replay`, { since: new Date(h.clock.ms - 3_600_000).toISOString() });
    expect(all.json()).toEqual({ replayed: 1 });
    await until(async () => (await deliveries(ep.id))[0]?.status === 'delivered');
    const audit = await h.admin('GET', `/audit?app_id=${app.id}&action=webhook.replay`);
    expect(audit.json().items).toHaveLength(2);
  });
});

describe('a webhook key this node cannot open', () => {
  it('records a failed attempt that says why, follows the schedule and logs at warn, rather than retrying unrecorded', async () => {
    const log = captureLog();
    const h = await harness({
      clock: new TestClock(Date.now()), logStream: log.stream,
      env: { LOG_LEVEL: 'warn', ACCESS_LOG: 'off', SIGNING_KEY_SEAL: randomBytes(32).toString('base64'), WEBHOOK_ALLOW_HOSTS: '127.0.0.1', WEBHOOK_TIMEOUT_MS: '500' },
    });
    const receiver = await Receiver.start();
    try {
      const app = await h.createApp();
      const created = await h.admin('POST', `/apps/${app.id}/webhooks`, { url: receiver.url });
      expect(created.statusCode, created.body).toBe(201);
      const ep = created.json() as { id: string };
      // As on a node started without the SIGNING_KEY_SEAL the webhook key was sealed under (or after it was lost).
      h.tollgate.services.seal = new KeySeal(null);
      await h.signUp(app, 'alice');
      type Delivery = { status: string; attempts: number; next_attempt_at: string | null; attempt_log: { status: number | null; error: string | null }[] };
      const list = async () => (await h.admin('GET', `/apps/${app.id}/webhooks/${ep.id}/deliveries`)).json().items as Delivery[];
      await workUntil(h.tollgate.outbox.worker, async () => (await list())[0]?.attempts === 1);
      const [d] = await list();
      expect(d!.status).toBe('pending');
      expect(d!.attempt_log).toHaveLength(1);
      expect(d!.attempt_log[0]!.status).toBeNull();
      expect(d!.attempt_log[0]!.error).toMatch(/^not sent: .*SIGNING_KEY_SEAL is not set/);
      // The schedule's second step (5 s ± 10 %), not an expired claim's 15 s and more, nor at once.
      const wait = Date.parse(d!.next_attempt_at!) - h.clock.ms;
      expect(wait).toBeGreaterThanOrEqual(SCHEDULE_MS[1]! * 0.9);
      expect(wait).toBeLessThanOrEqual(SCHEDULE_MS[1]! * 1.1);
      expect(receiver.received).toHaveLength(0);
      const warned = log.lines.filter((l) => l.event === 'webhook_key_unusable');
      expect(warned.length).toBeGreaterThanOrEqual(1);
      expect(warned[0]!.level).toBe(40);
      expect(warned[0]!.endpointId).toBe(ep.id);
      expect(log.lines.filter((l) => l.event === 'webhook_delivery_error')).toEqual([]);
    } finally {
      await h.close();
      await receiver.close();
    }
  });
});

describe('SSRF: where a webhook may go', () => {
  let h: Harness;
  let app: TestApp;
  beforeEach(async () => {
    h = await harness();
    app = await h.createApp();
  });
  afterEach(async () => h.close());

  for (const [url, why] of [
    ['http://example.com/hook', /https/],
    ['ftp://example.com/hook', /https/],
    ['https://127.0.0.1/hook', /loopback/],
    ['https://localhost/hook', /loopback/],
    ['https://10.1.2.3/hook', /private/],
    ['https://192.168.1.1/hook', /private/],
    ['https://169.254.169.254/latest/meta-data/', /link-local/],
    ['https://[fd00:ec2::254]/hook', /private/],
    ['https://[::1]/hook', /loopback/],
    ['https://[::ffff:127.0.0.1]/hook', /loopback/],
    ['https://224.0.0.1/hook', /multicast/],
    // Forms a node with an IPv6-to-IPv4 translator would carry to an IPv4 or internal host, and Azure's platform address.
    ['https://[::127.0.0.1]/hook', /reserved/],
    ['https://[::ffff:0:127.0.0.1]/hook', /reserved/],
    ['https://[fec0::1]/hook', /reserved/],
    ['https://168.63.129.16/hook', /metadata/],
    ['https://user:pw@example.com/hook', /user name/],
    ['not a url', /not a URL/],
  ] as const) {
    it(`refuses ${url} at creation`, async () => {
      const res = await h.admin('POST', `/apps/${app.id}/webhooks`, { url });
      expect(res.statusCode, res.body).toBe(422);
      expect(res.json().errors[0]).toMatchObject({ field: 'body.url' });
      expect(res.json().errors[0].message).toMatch(why);
    });
  }

  it('checks the scheme again at every delivery: an http URL allowed at creation and refused later is not contacted', async () => {
    const receiver = await Receiver.start();
    try {
      const services = h.tollgate.services as { egress: EgressPolicy };
      services.egress = new EgressPolicy(['127.0.0.1']);
      const res = await h.admin('POST', `/apps/${app.id}/webhooks`, { url: receiver.url });
      expect(res.statusCode, res.body).toBe(201);
      services.egress = new EgressPolicy([]);
      await h.signUp(app, 'alice');
      const list = async () => (await h.admin('GET', `/apps/${app.id}/webhooks/${res.json().id}/deliveries`)).json().items;
      await workUntil(h.tollgate.outbox.worker, async () => (await list())[0]?.attempts === 1);
      const [d] = await list();
      expect(d.attempt_log[0]).toMatchObject({ status: null, error: expect.stringMatching(/^refused: the URL must be https/) });
      expect(receiver.received).toEqual([]);
    } finally {
      await receiver.close();
    }
  });

  it('checks the address again at every delivery: an https URL whose host passed at creation and now resolves to loopback is not contacted', async () => {
    // A bare TCP listener: an https attempt that got through would show as a connection (its TLS would then fail).
    let connections = 0;
    const listener = createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    try {
      const url = `https://localhost:${(listener.address() as AddressInfo).port}/hook`;
      const services = h.tollgate.services as { egress: EgressPolicy };
      // At creation the host is allow-listed by name (WEBHOOK_ALLOW_HOSTS=localhost), so its loopback address passes.
      services.egress = new EgressPolicy(['localhost']);
      const res = await h.admin('POST', `/apps/${app.id}/webhooks`, { url });
      expect(res.statusCode, res.body).toBe(201);
      // Then the setting no longer names it: the scheme still passes (https), the delivery's address check refuses.
      services.egress = new EgressPolicy([]);
      await h.signUp(app, 'alice');
      const list = async () => (await h.admin('GET', `/apps/${app.id}/webhooks/${res.json().id}/deliveries`)).json().items;
      await workUntil(h.tollgate.outbox.worker, async () => (await list())[0]?.attempts === 1);
      const [d] = await list();
      expect(d.attempt_log[0]).toMatchObject({ status: null, error: expect.stringMatching(/^refused: the URL resolves to (127\.0\.0\.1|::1), a loopback/) });
      expect(connections).toBe(0);
    } finally {
      await new Promise<void>((resolve) => listener.close(() => resolve()));
    }
  });

  it('unknown event types and a bad kind are 422', async () => {
    expect((await h.admin('POST', `/apps/${app.id}/webhooks`, { url: 'https://example.com/', event_types: ['nope'] })).statusCode).toBe(422);
    expect((await h.admin('POST', `/apps/${app.id}/webhooks`, { url: 'https://example.com/', kind: 'slack' })).statusCode).toBe(422);
    expect((await h.admin('GET', '/events?type=nope')).statusCode).toBe(422);
    // The catalogue's check is the domain's: every caller of the events list refuses an unknown type alike.
    await expect(listEvents(h.tollgate.services, { types: ['user.created', 'nope'] }, null, 10)).rejects.toMatchObject({ code: 'validation_error', fieldErrors: [{ field: 'querystring.type' }] });
  });
});

describe('the events list', () => {
  let h: Harness;
  beforeEach(async () => {
    h = await harness();
  });
  afterEach(async () => h.close());

  it('filters by type, app and time, newest first, with the cursor of the other lists', async () => {
    const app = await h.createApp();
    await h.signUp(app, 'alice', PASSWORD);
    h.clock.minutes(1);
    await h.signUp(app, 'bob', PASSWORD);
    await h.licenses(app);
    const page1 = await h.admin('GET', `/events?app_id=${app.id}&type=user.created&limit=1`);
    expect(page1.json().items.map((e: { data: { username: string } }) => e.data.username)).toEqual(['bob']);
    const page2 = await h.admin('GET', `/events?app_id=${app.id}&type=user.created&limit=1&cursor=${page1.json().next_cursor}`);
    expect(page2.json().items.map((e: { data: { username: string } }) => e.data.username)).toEqual(['alice']);
    expect(page2.json().next_cursor).toBeNull();
    const before = await h.admin('GET', `/events?app_id=${app.id}&to=${encodeURIComponent(h.clock.iso())}`);
    expect(before.json().items.map((e: { type: string }) => e.type)).toEqual(['user.created', 'app.created']);
    const both = await h.admin('GET', `/events?app_id=${app.id}&type=license.created,user.created&from=${encodeURIComponent(h.clock.iso())}`);
    expect(both.json().items.map((e: { type: string }) => e.type)).toEqual(['license.created', 'user.created']);
  });
});

describe('webhook metrics', () => {
  it('deliveries by outcome, queue depth and the age of the oldest pending delivery', async () => {
    const METRICS_TOKEN = 'metrics-token-0123456789';
    const h = await harness({ clock: new TestClock(Date.now()), env: { METRICS_TOKEN, WEBHOOK_ALLOW_HOSTS: '127.0.0.1' } });
    const ok = await Receiver.start();
    const failing = await Receiver.start();
    failing.respond = () => ({ status: 500 });
    try {
      const app = await h.createApp();
      for (const r of [ok, failing]) expect((await h.admin('POST', `/apps/${app.id}/webhooks`, { url: r.url, event_types: ['user.created'] })).statusCode).toBe(201);
      await h.signUp(app, 'alice');
      await ok.count(1);
      await failing.count(1);
      const metrics = async () => (await h.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).body;
      // Both outcomes recorded (the receivers have answered; their records commit right after).
      const recorded = (body: string) => /outcome="retrying"\} 1/.test(body) && /outcome="delivered"\} 1/.test(body);
      await waitFor('both outcomes in the metrics', async () => recorded(await metrics()));
      h.clock.advance(3000);
      const body = await metrics();
      expect(body).toMatch(/tollgate_webhook_deliveries_total\{outcome="delivered"\} 1/);
      expect(body).toMatch(/tollgate_webhook_deliveries_total\{outcome="retrying"\} 1/);
      expect(body).toMatch(/tollgate_webhook_queue_depth 1/);
      expect(body).toMatch(/tollgate_webhook_oldest_pending_seconds 3\b/);
    } finally {
      await h.close();
      await ok.close();
      await failing.close();
    }
  });
});
