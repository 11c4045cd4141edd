import type { Queryable } from './db.js';

/** A counted key, its limit and its window's length. */
export interface Slot {
  key: string;
  limit: number;
  windowMs: number;
}

/** What `take` got: a place in every slot (to give back if the attempt succeeds), or the index of a full slot. */
export type Taken = { ok: true; giveBack(): Promise<void> } | { ok: false; full: number };

/**
 * Fixed-window counters for rate limits. A key's window is aligned to
 * multiples of its length, so every node computes the same window.
 */
export interface Counters {
  /** Current counts of these keys in their windows (0 when absent). */
  peek(keys: readonly string[], windowMs: readonly number[], now: number): Promise<number[]>;
  /** Adds one and returns the new count. */
  increment(key: string, windowMs: number, now: number): Promise<number>;
  /**
   * Takes one place in each slot's window if none is full (count < limit),
   * as one step against every concurrent taker: never read-then-write, so N
   * concurrent takers of a key with room for k get at most k places.
   * A place given back is freed in the window it was taken in.
   */
  take(slots: readonly Slot[], now: number): Promise<Taken>;
  /** 'shared' when every node sees the same counts (database, Redis), 'local' when only this process does. */
  status(): 'shared' | 'local';
  close(): Promise<void>;
}

export const windowStart = (now: number, windowMs: number): number => Math.floor(now / windowMs) * windowMs;
export const windowKey = (key: string, windowMs: number, now: number): string => `${key}@${windowStart(now, windowMs)}`;
export const windowEnd = (now: number, windowMs: number): number => windowStart(now, windowMs) + windowMs;

const MAX_MEMORY_KEYS = 200_000;

/** One process owns the store (SQLite), or Redis is away: counters in memory, bounded in size. */
export class MemoryCounters implements Counters {
  private readonly counts = new Map<string, { count: number; expires: number }>();

  async peek(keys: readonly string[], windowMs: readonly number[], now: number): Promise<number[]> {
    return keys.map((key, i) => this.count(windowKey(key, windowMs[i]!, now), now));
  }

  async increment(key: string, windowMs: number, now: number): Promise<number> {
    return this.add(windowKey(key, windowMs, now), windowEnd(now, windowMs), now);
  }

  // Atomic: no await between the comparison and the additions.
  async take(slots: readonly Slot[], now: number): Promise<Taken> {
    const keys = slots.map((s) => windowKey(s.key, s.windowMs, now));
    const full = slots.findIndex((s, i) => this.count(keys[i]!, now) >= s.limit);
    if (full >= 0) return { ok: false, full };
    slots.forEach((s, i) => this.add(keys[i]!, windowEnd(now, s.windowMs), now));
    return {
      ok: true,
      giveBack: async () => {
        for (const k of keys) {
          const entry = this.counts.get(k);
          if (entry && entry.count > 0) entry.count--;
        }
      },
    };
  }

  private count(k: string, now: number): number {
    const entry = this.counts.get(k);
    return entry && entry.expires > now ? entry.count : 0;
  }

  private add(k: string, expires: number, now: number): number {
    const entry = this.counts.get(k);
    if (entry) return ++entry.count;
    if (this.counts.size >= MAX_MEMORY_KEYS) this.evict(now);
    this.counts.set(k, { count: 1, expires });
    return 1;
  }

  /** Drops expired windows; if an attacker sprays distinct keys, also the oldest tenth (a Map iterates oldest first). */
  private evict(now: number): void {
    for (const [k, v] of this.counts) if (v.expires <= now) this.counts.delete(k);
    if (this.counts.size < MAX_MEMORY_KEYS * 0.9) return;
    let drop = Math.ceil(MAX_MEMORY_KEYS / 10);
    for (const k of this.counts.keys()) {
      if (drop-- <= 0) break;
      this.counts.delete(k);
    }
  }

  status(): 'local' {
    return 'local';
  }

  async close(): Promise<void> {}
}

/** Many nodes without Redis: counters in the database, one atomic upsert per key. */
export class DatabaseCounters implements Counters {
  private writes = 0;

  constructor(private readonly q: Queryable) {}

  async peek(keys: readonly string[], windowMs: readonly number[], now: number): Promise<number[]> {
    const wanted = keys.map((key, i) => windowKey(key, windowMs[i]!, now));
    const rows = await this.q.all<{ key: string; count: number }>(
      `SELECT key, count FROM rate_counters WHERE key IN (${wanted.map(() => '?').join(', ')}) AND expires_at > ?`,
      [...wanted, now],
    );
    const byKey = new Map(rows.map((r) => [r.key, Number(r.count)]));
    return wanted.map((k) => byKey.get(k) ?? 0);
  }

  async increment(key: string, windowMs: number, now: number): Promise<number> {
    const row = await this.q.one<{ count: number }>(
      `INSERT INTO rate_counters (key, count, expires_at) VALUES (?, 1, ?)
       ON CONFLICT (key) DO UPDATE SET count = rate_counters.count + 1 RETURNING count`,
      [windowKey(key, windowMs, now), windowEnd(now, windowMs)],
    );
    await this.sweep(now);
    return Number(row?.count ?? 1);
  }

  /**
   * Each key is one conditional upsert (the row lock makes compare-and-add
   * atomic). Across keys it is not one step: a later key found full gives
   * back the earlier ones. Meanwhile they may refuse another taker, never
   * admit one too many.
   */
  async take(slots: readonly Slot[], now: number): Promise<Taken> {
    const taken: string[] = [];
    for (const [i, slot] of slots.entries()) {
      const k = windowKey(slot.key, slot.windowMs, now);
      const row = await this.q.one<{ count: number }>(
        `INSERT INTO rate_counters (key, count, expires_at) VALUES (?, 1, ?)
         ON CONFLICT (key) DO UPDATE SET count = rate_counters.count + 1 WHERE rate_counters.count < ? RETURNING count`,
        [k, windowEnd(now, slot.windowMs), slot.limit],
      );
      if (!row) {
        await this.release(taken);
        return { ok: false, full: i };
      }
      taken.push(k);
    }
    await this.sweep(now);
    return { ok: true, giveBack: () => this.release(taken) };
  }

  private async release(keys: readonly string[]): Promise<void> {
    for (const k of keys) await this.q.run('UPDATE rate_counters SET count = count - 1 WHERE key = ? AND count > 0', [k]);
  }

  private async sweep(now: number): Promise<void> {
    if (++this.writes % 1000 === 0) await this.q.run('DELETE FROM rate_counters WHERE expires_at <= ?', [now]);
  }

  status(): 'shared' {
    return 'shared';
  }

  async close(): Promise<void> {}
}
