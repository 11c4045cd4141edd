import type { Db, Queryable } from './db.js';

/** A counted key, its limit and its window's length. */
export interface Slot {
  key: string;
  limit: number;
  windowMs: number;
}

/**
 * What `take` got. A place in every slot, held in flight until the attempt's
 * outcome is known: `keep()` when the credential was wrong (the place moves
 * into the window, where it counts until the window ends), `giveBack()`
 * otherwise. Or the index of a full slot, and whether places in flight alone
 * filled it (they free up within a verification, not at the window's end).
 */
export type Taken = { ok: true; keep(): Promise<void>; giveBack(): Promise<void> } | { ok: false; full: number; inFlightOnly: boolean };

/**
 * Fixed-window counters for rate limits. A key's window is aligned to
 * multiples of its length, so every node computes the same window.
 */
export interface Counters {
  /** Current counts of these keys in their windows (0 when absent): confirmed failures, not places in flight. */
  peek(keys: readonly string[], windowMs: readonly number[], now: number): Promise<number[]>;
  /** Adds one and returns the new count. */
  increment(key: string, windowMs: number, now: number): Promise<number>;
  /**
   * Takes one place in flight in each slot if none is full (its window's
   * count plus its places in flight < limit), as one step against every
   * concurrent taker: never read-then-write, so N concurrent takers of a key
   * with room for k get at most k places. A place in flight counts for
   * FLIGHT_SLICE_MS to twice that, then lapses by itself: a place whose
   * `keep` or `giveBack` never ran or never arrived (the store failed, the
   * answer was lost) cannot lock anybody out for longer.
   */
  take(slots: readonly Slot[], now: number): Promise<Taken>;
  /** 'shared' when every node sees the same counts (database, Redis), 'local' when only this process does. */
  status(): 'shared' | 'local';
  close(): Promise<void>;
}

export const windowStart = (now: number, windowMs: number): number => Math.floor(now / windowMs) * windowMs;
export const windowKey = (key: string, windowMs: number, now: number): string => `${key}@${windowStart(now, windowMs)}`;
export const windowEnd = (now: number, windowMs: number): number => windowStart(now, windowMs) + windowMs;

/**
 * Places in flight are counted in slices of this length: the current one and
 * the one before, so a place lapses 30 to 60 s after it was taken. Longer than
 * any credential check (an argon2 verification and queries bounded by the
 * PostgreSQL timeouts), short beside the failure windows (minutes).
 */
export const FLIGHT_SLICE_MS = 30_000;
const sliceStart = (now: number): number => Math.floor(now / FLIGHT_SLICE_MS) * FLIGHT_SLICE_MS;
/**
 * The in-flight key of a window key in a slice. `…@<window start>/<slice>`
 * can never equal a window key (`…@<digits>`), whatever the username holds.
 */
const flightKey = (windowKeyText: string, slice: number): string => `${windowKeyText}/${slice}`;
/** The in-flight keys counted now (this slice's, where a place is taken, and the previous one), and when this slice's lapses. */
export function flights(windowKeyText: string, now: number): { current: string; previous: string; expires: number } {
  const slice = sliceStart(now);
  return { current: flightKey(windowKeyText, slice), previous: flightKey(windowKeyText, slice - FLIGHT_SLICE_MS), expires: slice + 2 * FLIGHT_SLICE_MS };
}

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
    const inFlight = keys.map((k) => flights(k, now));
    for (const [i, s] of slots.entries()) {
      const confirmed = this.count(keys[i]!, now);
      if (confirmed + this.count(inFlight[i]!.current, now) + this.count(inFlight[i]!.previous, now) >= s.limit) {
        return { ok: false, full: i, inFlightOnly: confirmed < s.limit };
      }
    }
    inFlight.forEach((f) => this.add(f.current, f.expires, now));
    const land = () => inFlight.forEach((f) => this.drop(f.current));
    return {
      ok: true,
      keep: async () => {
        slots.forEach((s, i) => this.add(keys[i]!, windowEnd(now, s.windowMs), now));
        land();
      },
      giveBack: async () => land(),
    };
  }

  private drop(k: string): void {
    const entry = this.counts.get(k);
    if (entry && entry.count > 0) entry.count--;
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

/**
 * Many nodes without Redis: counters in the database, rows locked in one order while a place is taken.
 * The one writer besides the unit of work (docs/architecture.md): its short transaction holds only
 * rate_counters rows, which are no application state, are never audited and drop no cache.
 */
export class DatabaseCounters implements Counters {
  private writes = 0;

  constructor(private readonly db: Db) {}

  async peek(keys: readonly string[], windowMs: readonly number[], now: number): Promise<number[]> {
    const wanted = keys.map((key, i) => windowKey(key, windowMs[i]!, now));
    const byKey = await this.counts(this.db, wanted, now);
    return wanted.map((k) => byKey.get(k) ?? 0);
  }

  async increment(key: string, windowMs: number, now: number): Promise<number> {
    const row = await this.db.one<{ count: number }>(
      `INSERT INTO rate_counters (key, count, expires_at) VALUES (?, 1, ?)
       ON CONFLICT (key) DO UPDATE SET count = rate_counters.count + 1 RETURNING count`,
      [windowKey(key, windowMs, now), windowEnd(now, windowMs)],
    );
    await this.sweep(now);
    return Number(row?.count ?? 1);
  }

  /**
   * One transaction: the window rows are locked first (upserted, in key
   * order, so two takers never wait on each other crosswise), then the places
   * in flight are read and one is added to each. Every taker, and every `keep`,
   * locks a window row before it touches its places in flight, so nobody
   * counts between this read and this add. If the transaction fails (even
   * after its COMMIT was sent), any place it left lapses with its slice.
   */
  async take(slots: readonly Slot[], now: number): Promise<Taken> {
    const keys = slots.map((s) => windowKey(s.key, s.windowMs, now));
    const inFlight = keys.map((k) => flights(k, now));
    const ends = slots.map((s) => windowEnd(now, s.windowMs));
    const order = [...keys.keys()].sort((a, b) => (keys[a]! < keys[b]! ? -1 : 1));
    const full = await this.db.transaction(async (tx) => {
      await this.upsert(tx, order.map((i) => [keys[i]!, ends[i]!]), 0);
      const counts = await this.counts(tx, [...keys, ...inFlight.flatMap((f) => [f.current, f.previous])], now);
      const at = slots.findIndex((s, i) => (counts.get(keys[i]!) ?? 0) + (counts.get(inFlight[i]!.current) ?? 0) + (counts.get(inFlight[i]!.previous) ?? 0) >= s.limit);
      if (at >= 0) return { at, inFlightOnly: (counts.get(keys[at]!) ?? 0) < slots[at]!.limit };
      await this.upsert(tx, order.map((i) => [inFlight[i]!.current, inFlight[i]!.expires]), 1);
      return null;
    });
    if (full) return { ok: false, full: full.at, inFlightOnly: full.inFlightOnly };
    await this.sweep(now);
    // One row per statement: a statement holding one in-flight row while waiting for another could deadlock with a taker.
    // A keep or give-back that failed part-way is tried again (Limiter): what already landed is not subtracted twice,
    // which would admit one attempt too many.
    const landed = new Set<number>();
    const land = async () => {
      for (const [i, f] of inFlight.entries()) {
        if (landed.has(i)) continue;
        await this.db.run('UPDATE rate_counters SET count = count - 1 WHERE key = ? AND count > 0', [f.current]);
        landed.add(i);
      }
    };
    let kept = false;
    return {
      ok: true,
      // The window first (counted twice for a moment, never not at all), in the takers' order.
      keep: async () => {
        if (!kept) await this.upsert(this.db, order.map((i) => [keys[i]!, ends[i]!]), 1);
        kept = true;
        await land();
      },
      giveBack: land,
    };
  }

  /** Adds `add` to each key's row (creating it), in the order given; with 0 it only locks the rows for the transaction. */
  private async upsert(q: Queryable, rows: [string, number][], add: 0 | 1): Promise<void> {
    await q.run(
      `INSERT INTO rate_counters (key, count, expires_at) VALUES ${rows.map(() => `(?, ${add}, ?)`).join(', ')}
       ON CONFLICT (key) DO UPDATE SET count = rate_counters.count + ${add}`,
      rows.flat(),
    );
  }

  private async counts(q: Queryable, keys: readonly string[], now: number): Promise<Map<string, number>> {
    const rows = await q.all<{ key: string; count: number }>(
      `SELECT key, count FROM rate_counters WHERE key IN (${keys.map(() => '?').join(', ')}) AND expires_at > ?`,
      [...keys, now],
    );
    return new Map(rows.map((r) => [r.key, Number(r.count)]));
  }

  private async sweep(now: number): Promise<void> {
    if (++this.writes % 1000 === 0) await this.db.run('DELETE FROM rate_counters WHERE expires_at <= ?', [now]);
  }

  status(): 'shared' {
    return 'shared';
  }

  async close(): Promise<void> {}
}
