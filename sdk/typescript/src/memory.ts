/**
 * The client's state in memory, loaded once from the store and written back
 * when it changes: what the transport learns online (server time, kids,
 * drops) and what the offline check needs.
 */
import { freshState, StateKeeper, type ClientState } from './state.js';
import type { LeaseStore } from './store.js';

/** How far the remembered server time may move before it is written again (a write per answer would be wasteful). */
const TIME_WRITE_STEP_MS = 60_000;

export class Memory {
  private loaded?: Promise<{ keeper: StateKeeper; state: ClientState; tampered: boolean }>;
  private lastWrittenTime = 0;
  /** Monotonic reading of the last offline check in this process (runtime is counted between checks). */
  lastTick: number | undefined;

  constructor(private readonly open: () => Promise<{ store: LeaseStore; keeper: StateKeeper }>) {}

  private load() {
    this.loaded ??= this.open().then(async ({ keeper }) => {
      const { state, tampered } = await keeper.load();
      this.lastWrittenTime = state.highest_trusted_time;
      return { keeper, state, tampered };
    });
    return this.loaded;
  }

  async read(): Promise<{ state: Readonly<ClientState>; tampered: boolean }> {
    const { state, tampered } = await this.load();
    return { state, tampered };
  }

  /** Changes the state and writes it to both copies. `reset` starts again from a fresh state (a new lease from the server). */
  async update(change: (s: ClientState) => void, opts: { reset?: boolean; lazy?: boolean } = {}): Promise<void> {
    const m = await this.load();
    if (opts.reset) {
      const { retired, known, keys_fetched_at, max_server_time } = m.state;
      m.state = { ...freshState(), retired, known, keys_fetched_at, max_server_time };
      m.tampered = false;
    }
    change(m.state);
    // A tampered state is not written back (not even its time): only a new lease from the server clears it.
    if (m.tampered) return;
    if (opts.lazy && Math.abs(m.state.highest_trusted_time - this.lastWrittenTime) < TIME_WRITE_STEP_MS) return;
    this.lastWrittenTime = m.state.highest_trusted_time;
    await m.keeper.save(m.state);
  }
}
