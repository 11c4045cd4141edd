import { StoreUnavailable } from '../store/db.js';
import type { Repositories } from '../store/index.js';
import type { ActivityCounts } from '../store/repositories/stats.js';
import type { EventLog } from './events.js';

export type Activity = keyof ActivityCounts;

export const HOUR_MS = 3_600_000;
/** How often each node adds its counts to the database. A crash loses at most this much counting. */
export const FLUSH_INTERVAL_MS = 5_000;
/**
 * Pending (app, hour) and (app, hour, ban) entries kept while the database does not take them.
 * Each is a few dozen bytes; past this, new entries are dropped (and said so) rather than
 * growing without end through a long outage.
 */
export const MAX_PENDING = 20_000;

const hourOf = (ms: number) => Math.floor(ms / HOUR_MS) * HOUR_MS;
export const zeroCounts = (): ActivityCounts => ({ signUps: 0, logins: 0, activations: 0, failedLogins: 0 });

/** Adds `from` into `into`, field by field. */
export function addCounts(into: ActivityCounts, from: ActivityCounts): void {
  into.signUps += from.signUps;
  into.logins += from.logins;
  into.activations += from.activations;
  into.failedLogins += from.failedLogins;
}

/**
 * The activity counters of one node (the dashboard's overview). The request
 * path only adds to a Map entry; a timer adds the counts to the database with
 * an UPSERT that sums (so nodes add up) every FLUSH_INTERVAL_MS, and on
 * shutdown. A flush that fails puts its counts back for the next one.
 */
export class ActivityStats {
  private activity = new Map<string, ActivityCounts>();
  private banHits = new Map<string, number>();
  private flushing: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private dropped = 0;
  private failing = false;

  /** `transaction`: the unit of work (unit-of-work.ts write), which alone opens transactions. */
  constructor(private readonly transaction: (fn: (tx: Repositories) => Promise<void>) => Promise<void>, private readonly log: EventLog) {}

  /** One event of the app at `now` (the request's clock). */
  count(appId: string, what: Activity, now: number): void {
    const key = `${appId}\0${hourOf(now)}`;
    let entry = this.activity.get(key);
    if (!entry) {
      if (this.activity.size >= MAX_PENDING) return void this.dropped++;
      entry = zeroCounts();
      this.activity.set(key, entry);
    }
    entry[what]++;
  }

  /** A request refused by this ban. */
  banHit(appId: string, banId: string, now: number): void {
    const key = `${appId}\0${hourOf(now)}\0${banId}`;
    const hits = this.banHits.get(key);
    if (hits === undefined && this.banHits.size >= MAX_PENDING) return void this.dropped++;
    this.banHits.set(key, (hits ?? 0) + 1);
  }

  /** Counts not yet in the database (tests and the shutdown path look). */
  pending(): number {
    return this.activity.size + this.banHits.size;
  }

  /** Adds everything counted so far to the database in one transaction; one flush at a time. */
  flush(): Promise<void> {
    this.flushing ??= this.flushOnce().finally(() => (this.flushing = null));
    return this.flushing;
  }

  private async flushOnce(): Promise<void> {
    if (this.pending() === 0) return;
    const activity = this.activity;
    const banHits = this.banHits;
    this.activity = new Map();
    this.banHits = new Map();
    try {
      await this.transaction(async (tx) => {
        await tx.stats.addActivity([...activity].map(([key, counts]) => {
          const [appId, hour] = key.split('\0') as [string, string];
          return { appId, hour: Number(hour), counts };
        }));
        await tx.stats.addBanHits([...banHits].map(([key, hits]) => {
          const [appId, hour, banId] = key.split('\0') as [string, string, string];
          return { appId, hour: Number(hour), banId, hits };
        }));
      });
      if (this.dropped > 0) this.log.info({ event: 'stats_dropped', dropped: this.dropped }, 'activity counts lost while the database was away');
      this.failing = false;
      this.dropped = 0;
    } catch (err) {
      // Rolled back: nothing of it was added, so all of it goes back (summed with what came meanwhile).
      this.restore(activity, banHits);
      // An outage is reported by the requests that meet it (http/outage.ts); anything else once per failing streak.
      if (!this.failing && !(err instanceof StoreUnavailable)) {
        this.log.info({ event: 'stats_flush_failed', error: (err as Error).message }, 'activity counts kept for the next flush');
      }
      this.failing = true;
      throw err;
    }
  }

  private restore(activity: Map<string, ActivityCounts>, banHits: Map<string, number>): void {
    for (const [key, counts] of activity) {
      let entry = this.activity.get(key);
      if (!entry) {
        if (this.activity.size >= MAX_PENDING) {
          this.dropped += counts.signUps + counts.logins + counts.activations + counts.failedLogins;
          continue;
        }
        entry = zeroCounts();
        this.activity.set(key, entry);
      }
      addCounts(entry, counts);
    }
    for (const [key, hits] of banHits) {
      const now = this.banHits.get(key);
      if (now === undefined && this.banHits.size >= MAX_PENDING) {
        this.dropped += hits;
        continue;
      }
      this.banHits.set(key, (now ?? 0) + hits);
    }
  }

  /** The timer: unref'd, so it never keeps a process alive. */
  start(intervalMs = FLUSH_INTERVAL_MS): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.flush().catch(() => undefined), intervalMs);
    this.timer.unref();
  }

  /** Stops the timer; counting goes on, and flush() still writes. */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Stops the timer and writes what is left (before the database closes); a failure is logged, not thrown. */
  async close(): Promise<void> {
    this.stop();
    await this.flushing?.catch(() => undefined);
    await this.flush().catch(() => undefined);
  }
}
