/**
 * The client's state, shared with every other instance of the app on this
 * machine that uses the same store (amendment E): each read and each update
 * re-reads the stored state under the store's lock and merges in what this
 * instance holds, and an update writes both copies before the lock is let go.
 * So two instances neither undo each other's drop nor lock the user out (one
 * copy read while the other was being written looked like tampering).
 */
import { StateKeeper, type ClientState } from './state.js';
import { type LeaseStore } from './store.js';
export interface StateView {
    state: Readonly<ClientState>;
    /** The stored state failed its MAC, its copies disagreed, or it is gone while a lease is kept. */
    tampered: boolean;
}
/** A change to the state; returning false skips the write (nothing worth keeping changed). */
export type Change = (s: ClientState, tampered: boolean) => void | boolean | Promise<void | boolean>;
export declare class Memory {
    private readonly open;
    private opened?;
    /** What this instance knows: the state as last read or written, with the times learned since and not yet written. */
    private mine;
    private ownOffset;
    private lastWrittenTime;
    /** Serialises this instance's own readers and writers when the store has no lock of its own. */
    private readonly mutex;
    /** Monotonic reading of the last offline check in this process (runtime is counted between checks). */
    lastTick: number | undefined;
    /** The clock offset this instance knows (server minus local, ms), without a read of the store. */
    offset(): number;
    constructor(open: () => Promise<{
        store: LeaseStore;
        keeper: StateKeeper;
    }>);
    /** Runs `fn` under the store's lock with the stored state re-read and merged with this instance's. */
    private locked;
    /** The state now: re-read from the store (another instance may have written since), merged with ours. */
    read(): Promise<StateView>;
    /**
     * Re-reads, merges, applies `change` and writes both copies, under the lock. `reset` starts again from a
     * fresh state (a new lease from the server) keeping what was learned online; `lazy` is a time-only change,
     * written once the time moved a minute; `offset` says the change measured this instance's clock offset.
     */
    update(change: Change, opts?: {
        reset?: boolean;
        lazy?: boolean;
        offset?: boolean;
    }): Promise<void>;
}
