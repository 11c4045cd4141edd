import type { MessageBus } from '../../store/db.js';

const CHANNEL = 'tollgate_outbox';
/**
 * The other nodes' notice waits this long for the commits behind it: the worker's own gather time (webhooks/
 * worker.ts, GATHER_MS), since a worker woken sooner waits that long anyway. Was 50 ms: on PostgreSQL a NOTIFY is a
 * query, and the node hears its own notice back, so a sequential writer paid about one round trip each way per
 * 50 ms; the others still hear within 150 ms + their gather, well inside the first attempt's 1 s (and their 1 s
 * poll finds due deliveries without any notice). docs/decisions.md, "Webhook delivery cost on PostgreSQL".
 */
const PUBLISH_MS = 150;

/**
 * Tells the delivery workers that a commit made deliveries due: the one on
 * this node at once, the others through the bus (PostgreSQL NOTIFY). A lost
 * notice only delays the first attempt until the worker's next poll.
 */
export class OutboxSignal {
  private readonly listeners = new Set<() => void>();
  /** This node's delivery attempts by outcome since start (the metrics read them; the worker counts). */
  readonly outcomes = { delivered: 0, retrying: 0, failed: 0, disabled: 0 };
  /** Milliseconds from an event to its first attempt's answer, the last 1000 on this node (the bench reads them). */
  readonly firstAttemptMs: number[] = [];

  constructor(private readonly bus: MessageBus | undefined) {}

  /** Subscribes to the other nodes' commits (once, at start). */
  async listen(): Promise<void> {
    await this.bus?.subscribe(CHANNEL, () => this.local());
  }

  onWake(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => void this.listeners.delete(fn);
  }

  private publishing: NodeJS.Timeout | null = null;

  /**
   * After COMMIT only: never fails the write. This node's worker hears at once; the other nodes' notice is
   * coalesced to one NOTIFY per PUBLISH_MS, so a burst of writes does not add a query to each (this node's worker
   * sends what this node committed; the notice lets the others share a backlog).
   */
  committed(): void {
    this.local();
    if (!this.bus || this.publishing) return;
    this.publishing = setTimeout(() => {
      this.publishing = null;
      void this.bus?.publish(CHANNEL, '').catch(() => undefined);
    }, PUBLISH_MS);
    this.publishing.unref?.();
  }

  private local(): void {
    for (const fn of this.listeners) fn();
  }
}
