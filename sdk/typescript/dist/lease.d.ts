/**
 * Offline leases (docs/signing.md, "Offline leases"): parsing the armoured
 * file and the ordered offline check. Pure: the rollback state and the
 * clock are inputs (see state.ts for how the SDK keeps them).
 */
import { type Pinned } from './certificate.js';
export type LeaseVerdict = 'ok' | 'malformed' | 'bad_certificate' | 'wrong_app' | 'bad_signature' | 'key_expired' | 'key_retired' | 'hardware_mismatch' | 'superseded' | 'dropped' | 'clock_rollback' | 'expired' | 'runtime_exhausted';
export interface LeasePayload {
    lease_id: string;
    seq: number;
    app_id: string;
    user_id: string;
    hwid_hash: string;
    is_lifetime: boolean;
    active_until: number | null;
    iat: number;
    renew_after: number;
    exp: number;
    max_offline_runtime_s: number;
    /**
     * Issue 24: the user's entitlements at `iat`, one per code, sorted by code; `until` (unix ms) the latest end of
     * that code's live grants, null when one never ends. Absent in a lease of an older server: none.
     */
    entitlements?: LeaseEntitlement[];
    /** Issue 24: a trial user's lease (its exp is at most the trial's end). Absent in an older lease: false. */
    is_trial?: boolean;
}
export interface LeaseEntitlement {
    code: string;
    until: number | null;
}
/** The client's rollback state as the check sees it (state.ts stores it). */
export interface RollbackState {
    highest_trusted_time: number;
    highest_seq: number;
    runtime_used_ms: number;
    dropped: boolean;
    /** The highest server time the client has verified (default 0): a certificate that ended 5 minutes before it is key_expired. */
    max_server_time?: number;
}
export interface LeaseCheck {
    verdict: LeaseVerdict;
    /** Present once the lease parsed; trusted only when the verdict is ok (or a verdict after bad_signature). */
    payload?: LeasePayload;
    kid?: string;
    /** ok only: now >= renew_after, the app should go online and renew. */
    renewDue?: boolean;
}
/** How far the local clock may lag the highest trusted time before it is a rollback (clock drift, NTP steps). */
export declare const ROLLBACK_TOLERANCE_MS: number;
export declare const hwidHash: (appId: string, hardwareId: string) => Promise<string>;
interface ParsedLease {
    kid: string;
    cert: string;
    payloadBytes: Uint8Array;
    payload: LeasePayload;
    sig: Uint8Array;
}
export declare function parseLease(file: string): ParsedLease | null;
/** The codes of a verified lease that are live at trusted time `now`: present and (`until` null or now < until). */
export declare function liveEntitlements(p: Pick<LeasePayload, 'entitlements'>, now: number): string[];
export interface LeaseCheckInput {
    pinned: Pinned;
    retired: ReadonlySet<string>;
    hardwareId: string;
    state: RollbackState;
    now: number;
    /** The stored state failed its MAC or its copies disagree: a rollback by other means (docs/signing.md). */
    tampered?: boolean;
}
/** The offline check, in the order of docs/signing.md (the first failure is the verdict). */
export declare function checkLease(file: string, input: LeaseCheckInput): Promise<LeaseCheck>;
export {};
