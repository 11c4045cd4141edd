/**
 * Where the SDK keeps the lease and its rollback state. Pluggable: an
 * Electron renderer or a sandboxed app passes its own; the default writes
 * files under the user's app-data folders (Node only, loaded lazily).
 */
/** Two state slots: the SDK writes the same MAC'd record to both and treats a disagreement as tampering. */
export type StateSlot = 0 | 1;
export interface LeaseStore {
    readLease(): Promise<string | null>;
    writeLease(file: string): Promise<void>;
    readState(slot: StateSlot): Promise<string | null>;
    writeState(slot: StateSlot, record: string): Promise<void>;
    /**
     * Runs `fn` holding a lock shared by every instance of the app using this store: the SDK re-reads,
     * merges and writes the state under it, so two instances neither undo each other's changes nor read
     * one copy written and the other not (amendment E). Without it, only this process is serialised.
     */
    lock?<T>(fn: () => Promise<T>): Promise<T>;
}
/** A promise-chain mutex: callers run one after the other, in order. */
export declare class Mutex {
    private tail;
    run<T>(fn: () => Promise<T>): Promise<T>;
}
/** Keeps everything in memory: tests, or apps that must not touch the disk. Share one between clients to share state. */
export declare class MemoryLeaseStore implements LeaseStore {
    lease: string | null;
    readonly states: [string | null, string | null];
    private readonly mutex;
    lock<T>(fn: () => Promise<T>): Promise<T>;
    readLease(): Promise<string | null>;
    writeLease(file: string): Promise<void>;
    readState(slot: StateSlot): Promise<string | null>;
    writeState(slot: StateSlot, record: string): Promise<void>;
}
export interface Folders {
    /** The lease and the first state copy. */
    data: string;
    /** The second state copy, in another folder so one deleted folder does not take both. */
    state: string;
}
/**
 * The default folders for an app: %APPDATA% (and %LOCALAPPDATA%) on Windows,
 * ~/Library/Application Support (and ~/Library/Preferences) on macOS,
 * $XDG_DATA_HOME or ~/.local/share (and $XDG_STATE_HOME or ~/.local/state)
 * elsewhere; each under tollgate/<app_id>/.
 */
export declare function appDataFolders(appId: string, platform: string, env: Record<string, string | undefined>, home: string): Folders;
/** A lock file older than this was left by a crashed process and is taken over. */
export declare const LOCK_STALE_MS = 10000;
/** How long to wait for the lock before taking it over anyway: a stuck holder must not freeze the app. */
export declare const LOCK_WAIT_MS = 15000;
/**
 * Files: <data>/lease.tollgate, <data>/state.json and <state>/state.json; written atomically (temp file, rename).
 * The lock is <data>/state.lock, created exclusively and removed on release: the same file and rules as the
 * other Tollgate SDKs, so instances of one app in different languages also take turns.
 */
export declare class FileLeaseStore implements LeaseStore {
    readonly folders: Folders;
    private readonly local;
    private constructor();
    lock<T>(fn: () => Promise<T>): Promise<T>;
    private acquire;
    /** The store in the user's app-data folders, or in the folders given. */
    static forApp(appId: string, folders?: Folders): Promise<FileLeaseStore>;
    private path;
    private read;
    private write;
    readLease(): Promise<string | null>;
    writeLease(file: string): Promise<void>;
    readState(slot: StateSlot): Promise<string | null>;
    writeState(slot: StateSlot, record: string): Promise<void>;
}
