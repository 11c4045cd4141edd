/**
 * A per-key cache that never serves what an invalidation has superseded. A
 * load still in flight when its key (or its tag, or everything) is
 * invalidated is returned to its caller but not kept. Entries also expire
 * after `ttlMs` (the bounded fallback when invalidations may be missed, as
 * across nodes) and when their value says so (`validUntil`: a ban's or a
 * session's expiry; a loader answers `validUntil: 0` for what must not be
 * kept, such as "not found"). At most `maxEntries` are kept, oldest out first.
 */
export interface CacheEntry<T> {
  value: T;
  validUntil: number; // ms since epoch; Infinity for no natural expiry
  /** Invalidating this tag drops the entry (e.g. every cached thing of one user). */
  tag?: string;
}

interface Load<T> {
  promise: Promise<CacheEntry<T>>;
  stale: boolean;
}

/** Told of each load, and of each hit when it has `hit` (LOG_LEVEL=debug and trace: observeCaches in services.ts). */
export interface CacheObserver {
  miss(ms: number, kept: boolean): void;
  hit?: () => void;
}

export interface CacheOptions {
  ttlMs?: number;
  maxEntries?: number;
}

export class InvalidatingCache<T> {
  private readonly entries = new Map<string, { value: T; expires: number; tag: string | undefined }>();
  private readonly tagged = new Map<string, Set<string>>();
  private readonly inflight = new Map<string, Load<T>>();
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private observer: CacheObserver | undefined;

  constructor(
    private readonly load: (key: string) => Promise<CacheEntry<T>>,
    private readonly clock: () => number,
    options: CacheOptions = {},
  ) {
    this.ttlMs = options.ttlMs ?? Infinity;
    this.maxEntries = options.maxEntries ?? 100_000;
  }

  /** Set once, at debug or trace only (observeCaches). */
  observe(observer: CacheObserver): void {
    this.observer = observer;
  }

  /**
   * The cached value if there is a fresh one, without loading: lets hot paths stay synchronous on a hit.
   * `now` is the request's own clock reading, when the caller has one (a clock read per lookup adds up).
   */
  peek(key: string, now = this.clock()): T | undefined {
    const hit = this.entries.get(key);
    if (hit === undefined || hit.expires <= now) return undefined;
    if (this.observer !== undefined) this.observer.hit?.();
    return hit.value;
  }

  async get(key: string): Promise<T> {
    const now = this.clock();
    const hit = this.entries.get(key);
    if (hit !== undefined) {
      if (hit.expires > now) {
        if (this.observer !== undefined) this.observer.hit?.();
        return hit.value;
      }
      this.drop(key);
    }
    let pending = this.inflight.get(key);
    if (!pending) {
      const load: Load<T> = { stale: false, promise: undefined as unknown as Promise<CacheEntry<T>> };
      const started = this.observer !== undefined ? performance.now() : undefined;
      load.promise = this.load(key).then(
        (entry) => {
          if (this.inflight.get(key) === load) this.inflight.delete(key);
          if (!load.stale) this.store(key, entry, now);
          if (started !== undefined) this.observer!.miss(performance.now() - started, !load.stale && entry.validUntil > now);
          return entry;
        },
        (err: unknown) => {
          if (this.inflight.get(key) === load) this.inflight.delete(key);
          throw err;
        },
      );
      this.inflight.set(key, load);
      pending = load;
    }
    return (await pending.promise).value;
  }

  private store(key: string, entry: CacheEntry<T>, loadedAt: number): void {
    const expires = Math.min(entry.validUntil, loadedAt + this.ttlMs);
    if (expires <= this.clock()) return;
    if (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.drop(oldest.value);
    }
    this.entries.set(key, { value: entry.value, expires, tag: entry.tag });
    if (entry.tag !== undefined) {
      let keys = this.tagged.get(entry.tag);
      if (!keys) this.tagged.set(entry.tag, (keys = new Set()));
      keys.add(key);
    }
  }

  private drop(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    if (entry.tag !== undefined) {
      const keys = this.tagged.get(entry.tag);
      keys?.delete(key);
      if (keys?.size === 0) this.tagged.delete(entry.tag);
    }
  }

  invalidate(key: string): void {
    this.drop(key);
    const load = this.inflight.get(key);
    if (load) {
      load.stale = true;
      this.inflight.delete(key);
    }
  }

  /** Drops every entry carrying this tag; loads in flight are not kept (their tag is not known yet). */
  invalidateTag(tag: string): void {
    for (const key of this.tagged.get(tag) ?? []) this.drop(key);
    this.staleInflight();
  }

  /** Drops every entry the test accepts (a scan of them all); loads in flight are not kept (their value is not known yet). */
  invalidateWhere(test: (key: string, value: T) => boolean): void {
    for (const [key, entry] of this.entries) if (test(key, entry.value)) this.drop(key);
    this.staleInflight();
  }

  clear(): void {
    this.entries.clear();
    this.tagged.clear();
    this.staleInflight();
  }

  private staleInflight(): void {
    for (const load of this.inflight.values()) load.stale = true;
    this.inflight.clear();
  }
}

/**
 * What is kept with an object, made once per object: derived from a cached
 * record (its serialisation, a key built from its fields), learnt about it
 * (the secret last verified against an app record), or one node's state kept
 * with its services. Records are Readonly and a change replaces a record, never
 * edits it (store/records.ts), so what is kept follows the record: the cache's
 * next record starts afresh, and what was kept goes with the old one. The one
 * place the project keys anything by identity.
 */
export function keptWith<O extends object, K>(make: (owner: O) => K): (owner: O) => K {
  const kept = new WeakMap<O, K>();
  return (owner) => {
    let k = kept.get(owner);
    if (k === undefined) kept.set(owner, (k = make(owner)));
    return k;
  };
}
