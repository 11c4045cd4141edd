import type { MessageBus } from '../../store/db.js';

const CHANNEL = 'tollgate_outbox';

/**
 * Tells the delivery workers that a commit made deliveries due: the one on
 * this node at once, the others through the bus (PostgreSQL NOTIFY). A lost
 * notice only delays the first attempt until the worker's next poll.
 */
export class OutboxSignal {
  private readonly listeners = new Set<() => void>();

  constructor(private readonly bus: MessageBus | undefined) {}

  /** Subscribes to the other nodes' commits (once, at start). */
  async listen(): Promise<void> {
    await this.bus?.subscribe(CHANNEL, () => this.local());
  }

  onWake(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => void this.listeners.delete(fn);
  }

  /** After COMMIT only: never fails the write. */
  committed(): void {
    this.local();
    void this.bus?.publish(CHANNEL, '').catch(() => undefined);
  }

  private local(): void {
    for (const fn of this.listeners) fn();
  }
}
