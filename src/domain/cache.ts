/**
 * A per-key cache that never serves what an invalidation has superseded:
 * each key has a generation, bumped by invalidate(); a load that started
 * before the bump is returned to its caller but not kept. Entries also expire
 * after `ttlMs` (the bounded fallback when invalidations may be missed, as
 * across nodes) and when their value says so (`validUntil`, e.g. a ban's expiry).
 */
export interface CacheEntry<T> {
  value: T;
  validUntil: number; // ms since epoch; Infinity for no natural expiry
}

export class InvalidatingCache<T> {
  private readonly entries = new Map<string, { entry: CacheEntry<T>; expires: number }>();
  private readonly generations = new Map<string, number>();
  private readonly inflight = new Map<string, Promise<CacheEntry<T>>>();

  constructor(
    private readonly load: (key: string) => Promise<CacheEntry<T>>,
    private readonly clock: () => number,
    private readonly ttlMs: number = Infinity,
  ) {}

  async get(key: string): Promise<T> {
    const now = this.clock();
    const hit = this.entries.get(key);
    if (hit && hit.expires > now) return hit.entry.value;
    let pending = this.inflight.get(key);
    if (!pending) {
      const generation = this.generations.get(key) ?? 0;
      pending = this.load(key).then(
        (entry) => {
          this.inflight.delete(key);
          if ((this.generations.get(key) ?? 0) === generation) {
            this.entries.set(key, { entry, expires: Math.min(entry.validUntil, now + this.ttlMs) });
          }
          return entry;
        },
        (err: unknown) => {
          this.inflight.delete(key);
          throw err;
        },
      );
      this.inflight.set(key, pending);
    }
    return (await pending).value;
  }

  invalidate(key: string): void {
    this.generations.set(key, (this.generations.get(key) ?? 0) + 1);
    this.entries.delete(key);
    this.inflight.delete(key);
  }

  clear(): void {
    for (const key of new Set([...this.entries.keys(), ...this.inflight.keys()])) this.invalidate(key);
  }
}
