import type { RollbackState } from './lease.js';
import type { LeaseStore } from './store.js';
export interface ClientState extends RollbackState {
    /** Kids learned from GET /signing_keys as retired: the set only grows. */
    retired: string[];
    /** Kids seen in verified answers or key lists: an unknown one triggers a key-list refresh. */
    known: string[];
    /** When the key list was last fetched (local clock), for the daily refresh. */
    keys_fetched_at: number;
    /** The latest server time of any verified answer (only grows): a key that ended before it is expired, whatever `t` it signs. */
    max_server_time: number;
    /** Server time minus local clock at the last verified answer: offline checks run on server-aligned time. */
    clock_offset_ms: number;
    /**
     * The newest key (by its certificate's not_before) a verified answer was signed by, and the server time of that
     * first answer: 10 minutes later, answers signed by older keys are refused (amendment D). 0: none yet.
     */
    newest_not_before: number;
    newest_seen_at: number;
}
/** The fields in their stored order (shared with the other SDKs, which read and write the same files). */
export declare const freshState: () => ClientState;
/**
 * What two instances of the app on one machine know together (amendment E): `disk` as just re-read under the
 * lock, `mine` what this instance holds (its lazily written times included). The times, seq and key-list time
 * are the max; the kids the union; the newest key the one with the later not_before. The runtime used and
 * `dropped` belong to one lease: for the same lease (seq) the max and the OR, otherwise the stored state's,
 * which is the newer (every change of them is written at once, under the lock): a new lease fetched by the
 * other instance clears a drop, and a drop by the other instance holds. The clock offset is this instance's
 * once it measured one.
 */
export declare function merge(disk: ClientState, mine: ClientState, ownOffset: boolean): ClientState;
export interface LoadedState {
    state: ClientState;
    /** The copies disagreed, a MAC failed, or a lease exists without both copies: the verdict becomes clock_rollback. */
    tampered: boolean;
}
export declare class StateKeeper {
    private readonly store;
    private key;
    constructor(store: LeaseStore, appId: string, hardwareId: string);
    private mac;
    private open;
    load(): Promise<LoadedState>;
    save(state: ClientState): Promise<void>;
}
