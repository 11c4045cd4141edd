import type { Repositories } from '../../store/index.js';
import type { EventRecord } from '../../store/repositories/events.js';
import type { AttemptRecord, Claimed, EndpointRecord } from '../../store/repositories/webhooks.js';
import { uuidv7 } from '../ids.js';
import type { Services } from '../services.js';
import { UnsealError } from '../signing/seal.js';
import { GATHER_MS } from '../outbox/signal.js';
import { write } from '../unit-of-work.js';
import { deliveryBody } from './payload.js';
import { EgressRefused, resolveTarget } from './egress.js';
import { post, type Answer } from './send.js';
import { SERVICE_SCOPE, signatureHeader, webhookKey } from './signing.js';

/** Standard Webhooks' schedule: the delay before attempt n+1 after attempt n failed (attempt 1 goes at once). */
export const SCHEDULE_MS = [0, 5_000, 5 * 60_000, 30 * 60_000, 2 * 3_600_000, 5 * 3_600_000, 10 * 3_600_000, 14 * 3_600_000, 20 * 3_600_000, 24 * 3_600_000];
/** An endpoint every delivery to which failed for this long is disabled. */
export const FAILING_LIMIT_MS = 24 * 3_600_000;
/** Retry-After beyond this is read as this (a receiver cannot park a delivery for a year). */
const MAX_RETRY_AFTER_MS = 24 * 3_600_000;

export interface WorkerOptions {
  /** One attempt's whole exchange (default 15 s). */
  timeoutMs: number;
  /** How often an idle worker looks for due deliveries without being woken (retries, other nodes' lost notices). */
  pollMs: number;
  /** Deliveries claimed, and sent in parallel, at a time. */
  batch: number;
  /** How long a wake-up waits for the commits right behind it (default GATHER_MS). */
  gatherMs?: number;
  /** 0..1, for the jitter (injected so tests can pin it). */
  random?: () => number;
}

export type Outcome = 'delivered' | 'retrying' | 'failed' | 'disabled';

/** An outcome waiting for the next group commit: a success (`delivered`), or `fn` to run in the transaction. */
interface Queued {
  endpointId: string;
  /** The attempt to record (none when a disabled endpoint's delivery fails without one). */
  attempt: AttemptRecord | null;
  delivered?: { id: string; attempts: number; status: number; at: number };
  fn?: (tx: Repositories) => Promise<unknown>;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

/**
 * A worker runs on every node: it claims due deliveries (a claim outlives a
 * killed node by at most the timeout plus a margin, then another node's worker
 * takes the delivery), sends them, records each attempt and schedules the next.
 * At least once: a node killed after the receiver answered but before the
 * outcome was written sends that delivery again, with the same webhook-id.
 */
export class DeliveryWorker {
  private stopped = true;
  private wake: (() => void) | null = null;
  private woken = false;
  private loop: Promise<void> | null = null;
  private unsubscribe: (() => void) | null = null;
  private readonly abort = new AbortController();
  private readonly queued: Queued[] = [];
  private flushing = false;
  /** Sends out now, and the timer that records the outcomes already in while they are. */
  private sending = 0;
  private recording: NodeJS.Timeout | null = null;

  constructor(private readonly s: Services, private readonly opts: WorkerOptions) {}

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.unsubscribe = this.s.outbox.onWake(() => this.kick());
    this.loop = this.run();
  }

  /** Attempts in flight end at once (recorded as failed, retried by the schedule or another node). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    this.unsubscribe?.();
    if (this.gathering) clearTimeout(this.gathering);
    this.wakeNow();
    await this.loop;
  }

  private gathering: NodeJS.Timeout | null = null;

  /**
   * A commit's wake-up waits `gatherMs` (default GATHER_MS) for the commits right behind it, so a burst of writes
   * is claimed, sent and recorded in a few transactions rather than one set per write: what keeps an admin
   * write with subscribed endpoints close to its cost without them. The first attempt still goes well within 1 s.
   */
  private kick(): void {
    if (this.stopped) return this.wakeNow();
    if (this.gathering) return;
    this.gathering = setTimeout(() => {
      this.gathering = null;
      this.wakeNow();
    }, this.opts.gatherMs ?? GATHER_MS);
    this.gathering.unref?.();
  }

  private wakeNow(): void {
    this.woken = true;
    this.wake?.();
  }

  private async run(): Promise<void> {
    let n = 0;
    while (!this.stopped) {
      // Woken by a commit, or the last batch was full: deliveries are due, so the claim goes without the read
      // that looks for them first.
      const look = !this.woken && n < this.opts.batch;
      this.woken = false;
      n = 0;
      try {
        n = await this.runOnce(look);
      } catch (err) {
        this.s.log.warn({ event: 'webhook_worker_failed', cause: err instanceof Error ? err.message : String(err) }, 'webhook deliveries could not be claimed; trying again');
      }
      if (this.stopped) break;
      if (n >= this.opts.batch || this.woken) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.opts.pollMs);
        timer.unref?.();
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = null;
    }
  }

  /**
   * Claims and sends one batch of due deliveries; resolves to how many were claimed. The claim reads each
   * delivery's event and endpoint with it (one statement on PostgreSQL). `look`: first check, with a read, that
   * anything is due (an idle node's poll then takes no write lock or transaction).
   */
  async runOnce(look = true): Promise<number> {
    const now = this.s.clock();
    if (look && !(await this.s.store.webhooks.anyDue(now))) return 0;
    // One statement on PostgreSQL (the claim reads the events and endpoints with it): sent without BEGIN/COMMIT.
    const claimed = await write(this.s, ({ tx }) => tx.webhooks.claimDueWith(now, now + this.opts.timeoutMs + 15_000, this.opts.batch), { oneStatement: this.s.store.db.dialect === 'postgres' });
    await Promise.all(claimed.map((c) => this.deliver(c).catch((err: unknown) => {
      this.s.log.warn({ event: 'webhook_delivery_error', deliveryId: c.delivery.id, cause: err instanceof Error ? err.message : String(err) }, 'a webhook delivery could not be recorded; its claim expires and it is tried again');
    })));
    return claimed.length;
  }

  private async deliver({ delivery: d, event, endpoint }: Claimed): Promise<void> {
    const s = this.s;
    if (!endpoint.enabled) {
      await this.record({ endpointId: endpoint.id, attempt: null, fn: (tx) => tx.webhooks.settle(d.id, 'failed', d.attempts, null, d.lastStatus, s.clock()) });
      return;
    }
    this.sending++;
    let answer: Answer;
    try {
      answer = await this.attempt(event, endpoint);
    } catch (err) {
      this.sent();
      throw err;
    }
    const at = s.clock();
    if (d.attempts === 0 && d.createdAt === event.occurredAt) this.noteLatency(at - event.occurredAt);
    const attempts = d.attempts + 1;
    const attempt: AttemptRecord = { id: uuidv7(at), deliveryId: d.id, at, status: answer.status, error: answer.error, body: answer.body, durationMs: answer.durationMs };
    if (answer.status !== null && answer.status >= 200 && answer.status < 300) {
      await this.record({ endpointId: endpoint.id, attempt, delivered: { id: d.id, attempts, status: answer.status, at } }, true);
      this.s.outbox.outcomes.delivered++;
      return;
    }
    const outcome = await this.record({ endpointId: endpoint.id, attempt, fn: async (tx): Promise<Outcome> => {
      // Outcomes of one endpoint's failures are written one at a time (its row locked), so a delivery settling
      // while a parallel one disables the endpoint sees the disable and is not left pending.
      await tx.webhooks.lockEndpoint(endpoint.id);
      if (answer.status === 410) {
        await tx.webhooks.settle(d.id, 'failed', attempts, null, answer.status, at);
        if (await tx.webhooks.disableEndpoint(endpoint.id, 'the receiver answered 410 Gone', at)) await tx.webhooks.failPendingOf(endpoint.id, at);
        return 'disabled';
      }
      // Disabled while this attempt was in flight (410 or the 24 h rule on a parallel delivery, or an operator): no retry.
      const last = attempts >= SCHEDULE_MS.length || !(await tx.webhooks.findEndpoint(endpoint.id))?.enabled;
      await tx.webhooks.settle(d.id, last ? 'failed' : 'pending', attempts, last ? null : at + this.delay(attempts, answer), answer.status, at);
      const since = await tx.webhooks.markFailing(endpoint.id, at);
      if (at - since >= FAILING_LIMIT_MS) {
        if (await tx.webhooks.disableEndpoint(endpoint.id, 'every delivery failed for 24 hours', at)) await tx.webhooks.failPendingOf(endpoint.id, at);
        return 'disabled';
      }
      return last ? 'failed' : 'retrying';
    } }, true) as Outcome;
    this.s.outbox.outcomes[outcome]++;
    if (outcome === 'disabled') {
      s.log.warn({ event: 'webhook_endpoint_disabled', endpointId: endpoint.id, appId: endpoint.appId, status: answer.status },
        answer.status === 410 ? 'webhook endpoint disabled: the receiver answered 410 Gone' : 'webhook endpoint disabled: every delivery to it failed for 24 hours');
    }
  }

  /**
   * Group commit: outcomes that arrive while one transaction writes earlier ones are written together in the
   * next, so a node draining a backlog commits once per group, not once per delivery (SQLite syncs each commit),
   * and a slow receiver delays no other delivery's record. A group of successes only is one statement on
   * PostgreSQL (the attempts, the settling and the failing endpoints made healthy: recordDelivered), sent without
   * BEGIN/COMMIT. A group with failures inserts its attempts and settles its successes in one statement each,
   * then writes each failure in turn, endpoints' rows taken in id order: two nodes' groups cannot deadlock on
   * them (PostgreSQL).
   */
  private record(item: Omit<Queued, 'resolve' | 'reject'>, sent = false): Promise<unknown> {
    return new Promise((resolve, reject) => {
      this.queued.push({ ...item, resolve, reject });
      // The send counts as ended only once its outcome is queued: the batch's last answer is then written with
      // the others, not in a transaction of its own after them.
      if (sent) this.sending--;
      // While other sends of the batch are still out, their outcomes are waited for (at most `gatherMs`), so a
      // batch is usually recorded in one transaction rather than one per answer.
      if (this.sending === 0) this.flush();
      else this.recording ??= setTimeout(() => this.flush(), this.opts.gatherMs ?? GATHER_MS);
    });
  }

  /** A send that ended without an outcome to record (its error escaped): what it held back is written. */
  private sent(): void {
    this.sending--;
    if (this.sending === 0 && this.queued.length > 0) this.flush();
  }

  private flush(): void {
    if (this.recording) clearTimeout(this.recording);
    this.recording = null;
    if (this.flushing) return;
    this.flushing = true;
    void this.drain();
  }

  /**
   * Writes queued outcomes, a group a transaction, until none is left. `flushing` is cleared in the same turn as
   * the loop's last look at the queue: an outcome queued after that look starts a flush of its own (when it was
   * cleared in a later `.finally`, such an outcome could wait unwritten, its delivery pending, for the next one).
   */
  private async drain(): Promise<void> {
    try {
      while (this.queued.length > 0) {
        const group = this.queued.splice(0).sort((a, b) => (a.endpointId < b.endpointId ? -1 : a.endpointId > b.endpointId ? 1 : 0));
        try {
          const results = await this.writeGroup(group);
          group.forEach((item, i) => item.resolve(results[i]));
        } catch (err) {
          for (const item of group) item.reject(err);
        }
      }
    } finally {
      this.flushing = false;
    }
  }

  /** One group's outcomes in one transaction (endpoints in id order); resolves to each item's outcome. */
  private async writeGroup(group: Queued[]): Promise<unknown[]> {
    const attempts = group.flatMap((item) => (item.attempt ? [item.attempt] : []));
    const delivered = group.flatMap((item) => (item.delivered ? [item.delivered] : []));
    if (delivered.length === group.length) {
      // Successes only: one statement on PostgreSQL (recordDelivered), sent without BEGIN/COMMIT.
      await write(this.s, ({ tx }) => tx.webhooks.recordDelivered(attempts, delivered, [...new Set(group.map((item) => item.endpointId))]),
        { oneStatement: this.s.store.db.dialect === 'postgres' });
      return group.map(() => 'delivered');
    }
    return write(this.s, async ({ tx }) => {
      await tx.webhooks.insertAttempts(attempts);
      // The successes are settled in one statement first (their rows are this node's claims; a failure's
      // failPendingOf below then leaves them delivered, as it did when they came before it). Each endpoint's
      // health then follows its outcomes in queue order, endpoints in id order (the lock order of every path, so
      // two nodes' groups cannot deadlock on endpoint rows): a run of successes to one endpoint is one
      // markHealthy, not a settle and a markHealthy per delivery.
      await tx.webhooks.settleDelivered(delivered);
      const out: unknown[] = [];
      let healthy: string | null = null;
      for (const item of group) {
        if (item.delivered) {
          if (healthy !== item.endpointId) await tx.webhooks.markHealthy(item.endpointId);
          healthy = item.endpointId;
          out.push('delivered');
        } else {
          healthy = null;
          out.push(await item.fn!(tx));
        }
      }
      return out;
    });
  }

  /** The schedule's next delay with ±10 % jitter, or the receiver's Retry-After on 429 and 503 (at most 24 h). */
  private delay(attempts: number, answer: Answer): number {
    if ((answer.status === 429 || answer.status === 503) && answer.retryAfterMs !== null) return Math.min(answer.retryAfterMs, MAX_RETRY_AFTER_MS);
    const base = SCHEDULE_MS[attempts]!;
    const r = this.opts.random ?? Math.random;
    return Math.round(base * (0.9 + 0.2 * r()));
  }

  private async attempt(event: EventRecord, endpoint: EndpointRecord): Promise<Answer> {
    const s = this.s;
    let target;
    try {
      target = await resolveTarget(endpoint.url, s.egress);
    } catch (err) {
      if (!(err instanceof EgressRefused)) throw err;
      return { status: null, body: null, error: `refused: the URL ${err.message}`, retryAfterMs: null, durationMs: 0 };
    }
    const body = deliveryBody(event, endpoint);
    let key;
    try {
      key = await webhookKey(s, endpoint.appId ?? SERVICE_SCOPE);
    } catch (err) {
      if (!(err instanceof UnsealError)) throw err;
      // Nothing can be signed: a failed attempt that says why, retried on the schedule (a node given the
      // right SIGNING_KEY_SEAL later sends it), rather than a claim that expires and comes back unrecorded.
      s.log.warn({ event: 'webhook_key_unusable', endpointId: endpoint.id, appId: endpoint.appId, cause: err.message }, 'a webhook delivery could not be signed: its webhook key cannot be opened on this node');
      return { status: null, body: null, error: `not sent: ${err.message}`, retryAfterMs: null, durationMs: 0 };
    }
    const now = s.clock();
    const timestamp = Math.floor(now / 1000);
    const headers = {
      'webhook-id': event.id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signatureHeader(endpoint, key.privateKey, event.id, timestamp, body, now),
    };
    return post(target, headers, body, this.opts.timeoutMs, this.abort.signal);
  }

  private noteLatency(ms: number): void {
    const kept = this.s.outbox.firstAttemptMs;
    kept.push(ms);
    if (kept.length > 1000) kept.shift();
  }
}
