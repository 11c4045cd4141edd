/**
 * The client's state, shared with every other instance of the app on this
 * machine that uses the same store (amendment E): each read and each update
 * re-reads the stored state under the store's lock and merges in what this
 * instance holds, and an update writes both copies before the lock is let go.
 * So two instances neither undo each other's drop nor lock the user out (one
 * copy read while the other was being written looked like tampering).
 */
import { freshState, merge, StateKeeper, type ClientState } from './state.js';
import { Mutex, type LeaseStore } from './store.js';

/** How far the remembered server time may move before it is written again (a write per answer would be wasteful). */
const TIME_WRITE_STEP_MS = 60_000;

/** The fields that outlive a lease: what the client learned online. */
const LEARNED = ['retired', 'known', 'keys_fetched_at', 'clock_offset_ms', 'max_server_time', 'newest_not_before', 'newest_seen_at'] as const;

export interface StateView {
  state: Readonly<ClientState>;
  /** The stored state failed its MAC, its copies disagreed, or it is gone while a lease is kept. */
  tampered: boolean;
}

/** A change to the state; returning false skips the write (nothing worth keeping changed). */
export type Change = (s: ClientState, tampered: boolean) => void | boolean | Promise<void | boolean>;

export class Memory {
  private opened?: Promise<{ store: LeaseStore; keeper: StateKeeper }>;
  /** What this instance knows: the state as last read or written, with the times learned since and not yet written. */
  private mine: ClientState = freshState();
  private ownOffset = false;
  private lastWrittenTime = 0;
  /** Serialises this instance's own readers and writers when the store has no lock of its own. */
  private readonly mutex = new Mutex();
  /** Monotonic reading of the last offline check in this process (runtime is counted between checks). */
  lastTick: number | undefined;

  /** The clock offset this instance knows (server minus local, ms), without a read of the store. */
  offset(): number {
    return this.mine.clock_offset_ms;
  }

  constructor(private readonly open: () => Promise<{ store: LeaseStore; keeper: StateKeeper }>) {}

  /** Runs `fn` under the store's lock with the stored state re-read and merged with this instance's. */
  private async locked<T>(fn: (view: { keeper: StateKeeper; state: ClientState; tampered: boolean }) => Promise<T>): Promise<T> {
    const { store, keeper } = await (this.opened ??= this.open());
    const body = async () => {
      const loaded = await keeper.load();
      // A tampered state is shown as a fresh one (its lease-bound values untrusted), keeping what we learned online.
      const state = merge(loaded.state, this.mine, this.ownOffset);
      return fn({ keeper, state, tampered: loaded.tampered });
    };
    return store.lock ? store.lock(body) : this.mutex.run(body);
  }

  /** The state now: re-read from the store (another instance may have written since), merged with ours. */
  async read(): Promise<StateView> {
    return this.locked(async ({ state, tampered }) => {
      this.mine = state;
      return { state, tampered };
    });
  }

  /**
   * Re-reads, merges, applies `change` and writes both copies, under the lock. `reset` starts again from a
   * fresh state (a new lease from the server) keeping what was learned online; `lazy` is a time-only change,
   * written once the time moved a minute; `offset` says the change measured this instance's clock offset.
   */
  async update(change: Change, opts: { reset?: boolean; lazy?: boolean; offset?: boolean } = {}): Promise<void> {
    if (opts.offset) this.ownOffset = true;
    if (opts.lazy) {
      await change(this.mine, false);
      if (Math.abs(this.mine.highest_trusted_time - this.lastWrittenTime) < TIME_WRITE_STEP_MS) return;
    }
    await this.locked(async ({ keeper, state, tampered }) => {
      let s = state;
      if (opts.reset) {
        s = freshState();
        for (const k of LEARNED) (s as unknown as Record<string, unknown>)[k] = state[k];
        tampered = false;
      }
      const write = opts.lazy ? true : await change(s, tampered);
      this.mine = s;
      // A tampered state is not written back (not even its time): only a new lease from the server clears it.
      if (tampered || write === false) return;
      this.lastWrittenTime = s.highest_trusted_time;
      await keeper.save(s);
    });
  }
}
