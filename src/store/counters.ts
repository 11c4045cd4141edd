import { Redis } from 'ioredis';
import type { Queryable } from './db.js';

/**
 * Fixed-window counters for rate limits. A key's window is aligned to
 * multiples of its length, so every node computes the same window.
 */
export interface Counters {
  /** Current counts of these keys in their windows (0 when absent). */
  peek(keys: readonly string[], windowMs: readonly number[], now: number): Promise<number[]>;
  /** Adds one and returns the new count. */
  increment(key: string, windowMs: number, now: number): Promise<number>;
  close(): Promise<void>;
}

export const windowStart = (now: number, windowMs: number): number => Math.floor(now / windowMs) * windowMs;
const windowKey = (key: string, windowMs: number, now: number): string => `${key}@${windowStart(now, windowMs)}`;

const MAX_MEMORY_KEYS = 200_000;

/** One process owns the store (SQLite): counters in memory, bounded in size. */
export class MemoryCounters implements Counters {
  private readonly counts = new Map<string, { count: number; expires: number }>();

  async peek(keys: readonly string[], windowMs: readonly number[], now: number): Promise<number[]> {
    return keys.map((key, i) => {
      const entry = this.counts.get(windowKey(key, windowMs[i]!, now));
      return entry && entry.expires > now ? entry.count : 0;
    });
  }

  async increment(key: string, windowMs: number, now: number): Promise<number> {
    const k = windowKey(key, windowMs, now);
    const entry = this.counts.get(k);
    if (entry) return ++entry.count;
    if (this.counts.size >= MAX_MEMORY_KEYS) this.evict(now);
    this.counts.set(k, { count: 1, expires: windowStart(now, windowMs) + windowMs });
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

  async close(): Promise<void> {}
}

/** Many nodes without Redis: counters in the database, one atomic upsert per increment. */
export class DatabaseCounters implements Counters {
  private increments = 0;

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
      [windowKey(key, windowMs, now), windowStart(now, windowMs) + windowMs],
    );
    if (++this.increments % 1000 === 0) await this.q.run('DELETE FROM rate_counters WHERE expires_at <= ?', [now]);
    return Number(row?.count ?? 1);
  }

  async close(): Promise<void> {}
}

/** Many nodes with Redis (REDIS_URL): INCR with an expiry at the window's end. */
export class RedisCounters implements Counters {
  private readonly redis: Redis;

  constructor(url: string) {
    this.redis = new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 2, enableOfflineQueue: true });
    this.redis.on('error', () => undefined); // reconnects on its own; a failed call surfaces as a rejected promise
  }

  async peek(keys: readonly string[], windowMs: readonly number[], now: number): Promise<number[]> {
    if (keys.length === 0) return [];
    const values = await this.redis.mget(...keys.map((key, i) => `tollgate:rl:${windowKey(key, windowMs[i]!, now)}`));
    return values.map((v) => (v === null ? 0 : Number(v)));
  }

  async increment(key: string, windowMs: number, now: number): Promise<number> {
    const k = `tollgate:rl:${windowKey(key, windowMs, now)}`;
    // A relative expiry: `now` is the service's clock, which need not be Redis's.
    const ttl = windowStart(now, windowMs) + windowMs - now + 1000;
    const result = await this.redis.multi().incr(k).pexpire(k, ttl).exec();
    return Number(result?.[0]?.[1] ?? 1);
  }

  async ping(): Promise<boolean> {
    return (await this.redis.ping()) === 'PONG';
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => undefined);
  }
}
