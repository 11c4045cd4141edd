import { sweepExpiries, sweepOldEvents } from '../outbox/sweeper.js';
import { sweepIntegrationEvents } from '../sales/retention.js';
import { sweepDeadSeats } from '../seats.js';
import type { Services } from '../services.js';
import { DeliveryWorker } from './worker.js';

const DAY_MS = 24 * 3_600_000;

export interface OutboxSettings {
  timeoutMs: number;
  retentionDays: number;
  /** Days the ids of received store events are kept (INTEGRATION_EVENT_RETENTION_DAYS). */
  integrationEventRetentionDays: number;
  /** Default 1 s: how often an idle worker looks for retries that came due. */
  pollMs?: number;
  /** Default 5 min: the expiry sweep and retention. */
  sweepMs?: number;
}

/**
 * What runs in the background on every node: the delivery worker (one per
 * node; PostgreSQL's SKIP LOCKED shares the work between nodes), and the
 * sweeps (membership expiries, once each across nodes; dead seats; the retention of events and of received
 * store event ids).
 */
export class OutboxRunner {
  readonly worker: DeliveryWorker;
  private timer: NodeJS.Timeout | null = null;
  private sweeping: Promise<void> | null = null;

  constructor(private readonly s: Services, private readonly settings: OutboxSettings) {
    this.worker = new DeliveryWorker(s, { timeoutMs: settings.timeoutMs, pollMs: settings.pollMs ?? 1000, batch: 64 });
  }

  start(): void {
    this.worker.start();
    this.timer = setInterval(() => {
      this.sweeping ??= this.sweep().finally(() => (this.sweeping = null));
    }, this.settings.sweepMs ?? 5 * 60_000);
    this.timer.unref();
  }

  async sweep(): Promise<void> {
    try {
      await sweepExpiries(this.s);
      await sweepDeadSeats(this.s);
      await sweepOldEvents(this.s, this.settings.retentionDays * DAY_MS);
      await sweepIntegrationEvents(this.s, this.settings.integrationEventRetentionDays * DAY_MS);
    } catch (err) {
      this.s.log.warn({ event: 'outbox_sweep_failed', cause: err instanceof Error ? err.message : String(err) }, 'the event sweep failed; it runs again later');
    }
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.sweeping;
    await this.worker.stop();
  }
}
