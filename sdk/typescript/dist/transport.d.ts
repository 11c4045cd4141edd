import { TollgateException } from './errors.js';
import type { Memory } from './memory.js';
import { type SignedRequest } from './verify.js';
import type { Pinned } from './certificate.js';
export interface Clock {
    /** Wall clock, unix ms. */
    now(): number;
    /** A monotonic clock in ms (performance.now()): offline runtime is measured with it. */
    monotonic(): number;
}
export interface TransportOptions {
    baseUrl: string;
    appKey: string;
    appSecret: string;
    pinned: Pinned;
    clock: Clock;
    fetch: typeof fetch;
    /** How often the key list is fetched when no unknown kid forces it (default: daily). */
    keyRefreshMs: number;
    /** A floor for the highest server time (unix ms): the SDK's release time or the app's `notBefore` (amendment F). */
    serverTimeFloor: number;
    /** The user id of the stored lease (null when none): a refusal drops it only when it is about that user. */
    leaseUserId: () => Promise<string | null>;
    /** `fetch` is Node's own (not the app's): the connect timeout is given to it. */
    builtinFetch: boolean;
    /** Connect timeout (ms); applied to the built-in fetch only (a custom `fetch` brings its own). */
    connectTimeoutMs: number;
    /** Total timeout of one call (ms): sending, waiting and reading the answer (for a download: until its headers). */
    timeoutMs: number;
}
export interface Outgoing {
    method: 'GET' | 'POST' | 'DELETE';
    /** Path and query, e.g. `/app_context`. */
    path: string;
    json?: unknown;
    headers?: Record<string, string>;
    /** A user-authenticated request whose refusal may drop the offline lease (docs/signing.md). */
    dropsLease?: boolean;
}
export interface KeyList {
    keys: {
        kid: string;
        certificate: string;
        status: string;
    }[];
    retired: string[];
}
export interface Verified {
    status: number;
    headers: Headers;
    body: Uint8Array;
    t: number;
    /** The digest of the credential headers the request carried (whose answer this is). */
    credentialsSha256: string;
}
/** The verified refusals that tell the SDK to drop its lease: a ban, a revoked license, a deleted user, a device reset. */
export declare const DROP_CODES: ReadonlySet<string>;
/**
 * Amendment D: once an answer signed by a newer key (later not_before) has verified, answers signed by older
 * keys are refused this long after it: every node signs with the new key within the cache TTL (1 s), so an
 * older key after that is a leaked one, even when a proxy blocks GET /signing_keys so its retirement is unseen.
 */
export declare const OLDER_KEY_GRACE_MS: number;
export declare class Transport {
    private readonly o;
    private readonly memory;
    /** Unknown kids looked up in the last minute, and when (monotonic): one lookup per kid a minute. */
    private lookedUp;
    /** No key-list fetch on the way before this (monotonic): set a minute ahead by a failed one. */
    private retryAt;
    private refreshing;
    /**
     * Issue 21.2: the credential digest of each request whose verified 2xx named its user → that user's id. Only for
     * a refusal that names nobody and is not a ban (invalid_credentials, invalid_license): the server cannot say whose
     * credentials they were, so the lease drops only when this process saw them accepted for the lease's user.
     */
    private readonly users;
    constructor(o: TransportOptions, memory: Memory);
    /**
     * Sends the request; returns the answer once verified. Throws TollgateNetworkError (no answer),
     * TollgateUnavailableError (a 5xx), TollgateVerificationError, or, for a verified 4xx, TollgateError.
     */
    send(req: Outgoing): Promise<Verified>;
    /** The checks of a whole answer: an unsigned 5xx is unavailable, anything else is verified, then a 4xx refused and a 5xx unavailable. */
    answer(req: Outgoing, sent: SignedRequest, response: Response, body: Uint8Array): Promise<Verified>;
    /**
     * Sends the request with what was sent for a later verify(); with `read`, also the whole body, under the total
     * timeout; without (downloads), the response unread once its headers came. Network failures and timeouts are
     * thrown as TollgateNetworkError.
     */
    fetch(req: Outgoing, read?: boolean): Promise<{
        response: Response;
        sent: SignedRequest;
        body?: Uint8Array;
    }>;
    /** Verifies an answer (steps 1–8) and records what a verified answer teaches; throws on any failure. */
    verify(sent: SignedRequest, response: Response, responseLine: string): Promise<{
        t: number;
        kid: string;
    }>;
    /** Server time now, as far as the client knows: the local clock plus the offset of the last verified answer. */
    serverNow(): number;
    /** The highest server time verified, never below the floor (the SDK's release time or `notBefore`). */
    maxServerTime(state: {
        max_server_time: number;
    }): number;
    private learn;
    /** GET /signing_keys: learns the retired kids (the set only grows) and the current ones. Throws like any call. */
    fetchKeyList(): Promise<KeyList>;
    /**
     * The refresh done on the way: on an unknown kid or when the daily one is due. Bounded: one lookup per kid a
     * minute and a few a minute in all (an emulator inventing kids cannot make us fetch per answer); a failed
     * fetch is retried a minute later. A kid becomes known only from a verified key list, so an unknown kid
     * whose lookup failed or was skipped is looked up again later.
     */
    private refreshKeys;
    /** A verified 2xx named the user of these credentials (app_context, a lease): refusals for them may drop that user's lease. */
    noteUser(credentialsSha256: string, userId: string): void;
    /** A verified error answer: maybe drop the lease (only for a refusal about its user or this machine), then throw it as a TollgateError. */
    refuse(req: Outgoing, answer: Verified): Promise<never>;
    /** Issue 21.2 (docs/signing.md): whether a verified refusal with a drop code is about the stored lease's user. */
    private refusalDrops;
}
/** Any failure of the exchange itself (never of the app's code) as a TollgateNetworkError; the SDK's own errors pass. */
export declare function networkError(err: unknown, timedOut: boolean): TollgateException;
