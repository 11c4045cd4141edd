/**
 * TollgateClient: a typed call per client endpoint, each sent with a fresh
 * nonce and verified against the pinned root before its body is parsed
 * (docs/signing.md). A failed verification is a thrown
 * TollgateVerificationError; a verified error answer a thrown TollgateError.
 */
import type { Operations } from './api-types.js';
import { type DownloadOptions, type DownloadResult } from './download.js';
import { type LeaseInfo } from './offline.js';
import { type Seat, type SeatState, type Timers } from './seats.js';
import { type LeaseStore } from './store.js';
import { type Clock, type KeyList } from './transport.js';
import { TollgateSeatLostError, type TollgateException } from './errors.js';
export interface TollgateClientOptions {
    /** The server, e.g. https://licensing.example.com (a path prefix must reach the server unchanged: it is signed). */
    baseUrl: string;
    appKey: string;
    appSecret: string;
    /** Pinned: the app id and the public root key printed by `tollgate keys init`. */
    appId: string;
    rootPublicKey: string;
    /** This device's id (sent as x-hardware-id / hardware_id, binds leases). Default: hardwareId(appId) from the OS machine id, when first needed. */
    hardwareId?: string;
    /** Where the lease and the rollback state live. Default: files in the user's app-data folders (Node). */
    leaseStore?: LeaseStore;
    /** Injected clocks (tests): wall `now()` and `monotonic()`, both in ms. */
    clock?: Partial<Clock>;
    /** Your own fetch (a proxy agent, tests). Default: Node's. */
    fetch?: typeof fetch;
    /** Connect timeout in ms (Node's built-in fetch only). Default 10 000. */
    connectTimeoutMs?: number;
    /** Total timeout of a call in ms, from sending to the last byte of the answer (a download: to its headers). Default 30 000. */
    timeoutMs?: number;
    /** How often the key list is refreshed when no unknown kid forces it. Default: one day. */
    keyRefreshMs?: number;
    /**
     * A floor for the server time this install has seen (unix ms), e.g. your app's build time. Default: the SDK's
     * release time (SDK_RELEASED_AT). A key that ended before it is refused from the first answer on, so a leaked
     * private key of an ended key cannot sign a back-dated answer or lease for a fresh install (amendment F).
     */
    notBefore?: number;
    /** Called when a checked-out floating seat is lost (also: onSeatLost()); the client's next call then throws the error. */
    onSeatLost?: (err: TollgateSeatLostError) => void;
    /** Timers of the seat heartbeat (tests). Default: setTimeout, unref'd. */
    timers?: Timers;
    /** Release the seat when the process is about to exit on its own (Node's beforeExit). Default true. */
    releaseSeatOnExit?: boolean;
}
/** When this SDK version was released (unix ms): the default `notBefore`. Raise it with each release. */
export declare const SDK_RELEASED_AT: number;
/**
 * What checkAccess() answered from: the server (a verified app context; `lease` is the lease now stored, or null)
 * or the stored lease, with the online failure that led to it.
 */
export type Access = {
    source: 'online';
    context: Answer<'getAppContext'>; /** The lease renewed by this call, null when none was due (or it failed). */
    lease: LeaseInfo | null;
} | {
    source: 'lease';
    lease: LeaseInfo;
    cause: TollgateException;
};
/**
 * The failures after which checkAccess() falls back to the lease: no answer from Tollgate arrived (docs/signing.md,
 * "The SDK error model"). A verified refusal and a forged answer are not among them.
 */
export declare function noAnswerFromTollgate(err: unknown): err is TollgateException;
/** How a call authenticates its user: a session (after login), a license code, or a username and password. */
/** POST /redeem's answer: the activation as activateLicense() answers it, and the user after it. */
export interface Redemption {
    activation: Answer<'activateLicense'>;
    user: NonNullable<Answer<'getAppContext'>['user']>;
}
export type UserAuth = {
    sessionToken: string;
} | {
    licenseCode: string;
} | {
    username: string;
    password: string;
};
type Body<K extends keyof Operations> = Operations[K]['body'];
type Answer<K extends keyof Operations> = Operations[K]['answer'];
export declare class TollgateClient {
    private readonly options;
    /** The user of the calls that need one; set by login() (or by you), cleared by logout(). */
    auth: UserAuth | null;
    private readonly transport;
    private readonly offline;
    private readonly hwid;
    /** The app answered leases_disabled: checkAccess() stops asking for leases in this process. */
    private leasesDisabled;
    /**
     * What has() answers from (issue 24): the last verified answer carrying the user (online), or the last lease that
     * checked good (offline); null when neither, or after a verified refusal, a failed lease check or logout().
     */
    private entitledBy;
    private heartbeat;
    private seatLost;
    private readonly seatListeners;
    private readonly clock;
    private exitHook;
    constructor(options: TollgateClientOptions);
    signUp(body: Body<'signUp'>): Promise<Answer<'signUp'>>;
    signUpWithLicenseCode(body: Body<'signUpWithLicenseCode'>): Promise<Answer<'signUpWithLicenseCode'>>;
    activateLicense(body: Body<'activateLicense'>): Promise<Answer<'activateLicense'>>;
    /**
     * POST /trial (issue 24): starts, or resumes, this device's trial; the session is then the client's `auth`, as
     * after login(). `hardwareId` defaults to the client's. Refusals: 403 trials_disabled, trial_used, banned.
     */
    startTrial(hardwareId?: string, email?: string): Promise<Answer<'startTrial'>>;
    /**
     * POST /redeem (issue 24): the user of `auth` (default the client's; a trial's session too, which has no password
     * for activateLicense()) redeems a license code, and a trial converts. The answer's user is noted as
     * getAppContext()'s is. Refusals (TollgateError): 401 invalid_license or license_used, 403 banned, 422. Not a
     * call whose refusal drops the lease: an invalid code says nothing about the user.
     */
    redeem(code: string, auth?: UserAuth | null): Promise<Redemption>;
    /** Logs in; the session is then used by the calls that need a user. */
    login(body: Body<'login'>): Promise<Answer<'login'>>;
    logout(): Promise<void>;
    /** The application (variables, files) and the user; `auth` defaults to the client's. */
    getAppContext(auth?: UserAuth | null): Promise<Answer<'getAppContext'>>;
    /** Downloads a file to `destination`, resuming an interrupted download, verified against the signed file hash. */
    downloadFile(fileId: string, destination: string, opts?: DownloadOptions & {
        auth?: UserAuth | null;
    }): Promise<DownloadResult>;
    /** Fetches an offline lease for this user and device and keeps it in the lease store. */
    createLease(auth?: UserAuth | null): Promise<LeaseInfo>;
    /**
     * Online first, the lease when no answer from Tollgate arrived (docs/signing.md, "The SDK error model"): a
     * verified app context is `source: 'online'` (and the lease is renewed, best effort, when none is stored, it is
     * another user's, it was dropped or its renew_after passed); a network error, an unavailable service or an unsigned answer falls back to the stored
     * lease (`source: 'lease'`, the failure as `cause`), which throws TollgateLeaseError (with that `cause`) when it
     * is not good. A verified refusal (TollgateError) and a forged answer (TollgateVerificationError) are thrown.
     */
    checkAccess(auth?: UserAuth | null): Promise<Access>;
    /** The lease renewal of checkAccess(): errors are swallowed (the app is online anyway); the new lease, or null when none was fetched. */
    private renewLease;
    /** Checks the stored lease without network; throws TollgateLeaseError with the verdict unless it is good. Call it periodically while offline. */
    checkLease(): Promise<LeaseInfo>;
    /**
     * Whether the user holds entitlement `code` now: online from the last verified answer carrying the user
     * (getAppContext(), checkAccess(), sign-up, startTrial()), offline from the lease the last checkLease() (or
     * checkAccess() falling back) found good: the code present and its `until` not reached on the trusted clock.
     * False when neither is known: an unsigned or unverified answer never grants anything.
     */
    has(code: string): boolean;
    /** The entitlement codes the user holds now (sorted), by the rule of has(). */
    entitlements(): string[];
    /** Whether the user is a trial user: `membership.is_trial` online, the lease's `is_trial` offline; false when unknown. */
    isTrial(): boolean;
    private entitledFrom;
    /**
     * POST /seats: checks a floating seat out for this device (the same seat again if it holds one) and starts the
     * heartbeat (POST /seats/heartbeat at a third of heartbeat_seconds, a failed beat retried before the seat
     * expires). A lost seat (404 seat_not_found, a 409, or the expiry passed with no beat through) is reported to the
     * onSeatLost listeners and thrown as TollgateSeatLostError by the next call. 409 seats_exhausted (err.extra:
     * in_use, max, next_free_at) and seats_not_enabled are thrown as TollgateError.
     */
    checkoutSeat(auth?: UserAuth | null): Promise<Seat>;
    /** The seat held now (as last confirmed by a heartbeat), or null. */
    get seat(): Seat | null;
    /** 'held' while the heartbeat runs, 'lost' from a loss until the next call has thrown it, else 'none'. */
    get seatState(): SeatState;
    /** Listens for a lost seat; returns the function that stops listening. */
    onSeatLost(listener: (err: TollgateSeatLostError) => void): () => void;
    /**
     * DELETE /seats: stops the heartbeat and releases this device's seat. A seat an offline lease holds (issue 25)
     * stays taken on the server until the lease ends, whatever the device says (a floating license must not become
     * unlimited by going offline): the answer is then `released: false` with `held_until`, and the stored lease is
     * kept, so the device may go on offline until then. Any other answer (released, or no seat) drops the stored
     * lease: the server no longer counts a seat for this device. A failed call keeps it (nothing was freed).
     */
    releaseSeat(auth?: UserAuth | null): Promise<Answer<'releaseSeat'>>;
    /**
     * Clean shutdown: releases the seat when one is held (errors ignored: the server frees it when its heartbeats
     * stop). Call it before your app exits; Node's beforeExit does it for you when the process ends on its own, but
     * not on process.exit() or a signal.
     */
    close(): Promise<void>;
    private seatHeaders;
    private seatCall;
    private loseSeat;
    /** The lost seat, thrown once by the next call. */
    private throwIfSeatLost;
    private hookExit;
    private unhookExit;
    /**
     * POST /devices/reset: frees the user's devices (as the operator's reset does). It ends every session of the
     * user, this client's included: a session `auth` is cleared (log in again). Refusals: 429 reset_cooldown
     * (err.retryAfter seconds, err.lastResetAt), 403 reset_disabled, 403 banned.
     */
    resetDevices(auth?: UserAuth | null): Promise<Answer<'resetOwnDevices'>>;
    /** GET /signing_keys; also refreshes the retired kids the client refuses. */
    getSigningKeys(): Promise<KeyList>;
    private json;
    /**
     * The hardware id for a call that takes one: the app's, else the default hardwareId(appId) (amendment F: on
     * every such call, so device authentication sees the same id on login as on /lease). Undefined only when the
     * OS has no machine id and the app gave none (the call then goes without, as the server allows).
     */
    private deviceId;
    private withHardware;
    private userHeaders;
}
export {};
