/**
 * The offline side of the client: storing a lease fetched online and
 * checking it without network, with the runtime counted on a monotonic clock
 * between checks and the time aligned on the server's (the offset learned
 * from the last verified answer), so a wrong but steady local clock is no
 * rollback while a clock set back is.
 */
import type { Pinned } from './certificate.js';
import { type LeaseEntitlement, type LeasePayload } from './lease.js';
import type { Memory } from './memory.js';
import type { LeaseStore } from './store.js';
import type { Clock } from './transport.js';
export interface LeaseInfo {
    leaseId: string;
    userId: string;
    seq: number;
    isLifetime: boolean;
    /** Membership end (unix ms), null for lifetime. */
    activeUntil: number | null;
    issuedAt: number;
    /** The lease stops working offline at this time (unix ms, server time). */
    expiresAt: number;
    renewAfter: number;
    /** Past renew_after: go online and call createLease() when you can. */
    renewDue: boolean;
    /** Offline runtime used and allowed, in ms. */
    runtimeUsedMs: number;
    runtimeBudgetMs: number;
    /** Issue 24: the lease's entitlements ({code, until}: until unix ms, null for no end); [] in an older lease. */
    entitlements: LeaseEntitlement[];
    /** Issue 24: a trial user's lease (false in an older lease). */
    isTrial: boolean;
}
export declare class Offline {
    private readonly pinned;
    private readonly clock;
    private readonly memory;
    private readonly store;
    private readonly hardwareId;
    /** The highest server time verified, with the floor of amendment F. */
    private readonly maxServerTime;
    constructor(pinned: Pinned, clock: Clock, memory: Memory, store: () => Promise<LeaseStore>, hardwareId: () => Promise<string>, 
    /** The highest server time verified, with the floor of amendment F. */
    maxServerTime: (state: {
        max_server_time: number;
    }) => number);
    /** A lease just received in a verified answer at server time `t`: checked like offline, then kept. */
    keep(file: string, t: number): Promise<LeaseInfo>;
    /**
     * The offline check of docs/signing.md; throws TollgateLeaseError with the verdict unless the lease is good.
     * Read, checked and written under the state's lock: another instance's drop or new lease is seen, never undone.
     */
    check(): Promise<LeaseInfo>;
    /** The lease as stored, decoded but not checked (for display); null if none. */
    stored(): Promise<LeasePayload | null>;
    /** Drops the stored lease (as a verified refusal does): offline checks answer `dropped` until a new lease is stored. */
    drop(): Promise<void>;
    /** Whether `userId` wants a new lease at server time `now`: none stored, another user's, dropped, or its renewal due. */
    needsLease(userId: string, now: number): Promise<boolean>;
}
