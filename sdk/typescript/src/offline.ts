/**
 * The offline side of the client: storing a lease fetched online and
 * checking it without network, with the runtime counted on a monotonic clock
 * between checks and the time aligned on the server's (the offset learned
 * from the last verified answer), so a wrong but steady local clock is no
 * rollback while a clock set back is.
 */
import type { Pinned } from './certificate.js';
import { TollgateLeaseError, type LeaseTimes } from './errors.js';
import { checkLease, parseLease, type LeaseEntitlement, type LeasePayload, type LeaseVerdict } from './lease.js';

type LeaseVerdictOrNone = LeaseVerdict | 'no_lease';
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

const info = (p: LeasePayload, renewDue: boolean, used: number): LeaseInfo => ({
  leaseId: p.lease_id,
  userId: p.user_id,
  seq: p.seq,
  isLifetime: p.is_lifetime,
  activeUntil: p.active_until,
  issuedAt: p.iat,
  expiresAt: p.exp,
  renewAfter: p.renew_after,
  renewDue,
  runtimeUsedMs: used,
  runtimeBudgetMs: p.max_offline_runtime_s * 1000,
  entitlements: (p.entitlements ?? []).map((e) => ({ code: e.code, until: e.until })),
  isTrial: p.is_trial ?? false,
});

export class Offline {
  constructor(
    private readonly pinned: Pinned,
    private readonly clock: Clock,
    private readonly memory: Memory,
    private readonly store: () => Promise<LeaseStore>,
    private readonly hardwareId: () => Promise<string>,
    /** The highest server time verified, with the floor of amendment F. */
    private readonly maxServerTime: (state: { max_server_time: number }) => number,
  ) {}

  /** A lease just received in a verified answer at server time `t`: checked like offline, then kept. */
  async keep(file: string, t: number): Promise<LeaseInfo> {
    const { state } = await this.memory.read();
    const now = this.clock.now() + state.clock_offset_ms;
    const fresh = { highest_trusted_time: t, highest_seq: state.highest_seq, runtime_used_ms: 0, dropped: false, max_server_time: this.maxServerTime(state) };
    const check = await checkLease(file, { pinned: this.pinned, retired: new Set(state.retired), hardwareId: await this.hardwareId(), state: fresh, now });
    if (check.verdict !== 'ok') throw new TollgateLeaseError(check.verdict);
    const p = check.payload!;
    const store = await this.store();
    // The lease and its fresh state are written under the state's lock: another instance never sees one without the other.
    await this.memory.update(
      async (s) => {
        await store.writeLease(file);
        s.highest_seq = p.seq;
        s.highest_trusted_time = Math.max(t, p.iat);
      },
      { reset: true },
    );
    this.memory.lastTick = undefined;
    return info(p, check.renewDue!, 0);
  }

  /**
   * The offline check of docs/signing.md; throws TollgateLeaseError with the verdict unless the lease is good.
   * Read, checked and written under the state's lock: another instance's drop or new lease is seen, never undone.
   */
  async check(): Promise<LeaseInfo> {
    const store = await this.store();
    const hardwareId = await this.hardwareId();
    let outcome: { verdict: string; info?: LeaseInfo; times?: Partial<LeaseTimes> } = { verdict: 'no_lease' };
    await this.memory.update(async (s, tampered) => {
      const file = await store.readLease();
      if (file === null) return false;
      // Runtime since the previous check in this process (none before the first): the app checks periodically while offline.
      const tick = this.clock.monotonic();
      const used = s.runtime_used_ms + (this.memory.lastTick === undefined ? 0 : Math.max(0, tick - this.memory.lastTick));
      this.memory.lastTick = tick;
      const now = this.clock.now() + s.clock_offset_ms;
      const check = await checkLease(file, {
        pinned: this.pinned,
        retired: new Set(s.retired),
        hardwareId,
        state: { ...s, runtime_used_ms: used, max_server_time: this.maxServerTime(s) },
        now,
        tampered,
      });
      const ok = check.verdict === 'ok';
      const p = check.payload;
      // The times a message can name; from a lease that did not verify they are what it claims, for display only.
      const times = { lastSeenTime: s.highest_trusted_time || null, ...(p && { expiresAt: p.exp, runtimeLeft: Math.max(0, p.max_offline_runtime_s * 1000 - used) }) };
      outcome = { verdict: check.verdict, times, ...(ok && { info: info(check.payload!, check.renewDue!, used) }) };
      if (check.payload === undefined || check.payload.seq < s.highest_seq) return false;
      s.runtime_used_ms = used;
      // The local clock only counts as trusted time while it moves forward (and the lease is good).
      if (ok) s.highest_trusted_time = Math.max(s.highest_trusted_time, now);
      return true;
    });
    if (outcome.info === undefined) throw new TollgateLeaseError(outcome.verdict as Exclude<LeaseVerdictOrNone, 'ok'>, outcome.times);
    return outcome.info;
  }

  /** The lease as stored, decoded but not checked (for display); null if none. */
  async stored(): Promise<LeasePayload | null> {
    const file = await (await this.store()).readLease();
    return file === null ? null : (parseLease(file)?.payload ?? null);
  }

  /** Drops the stored lease (as a verified refusal does): offline checks answer `dropped` until a new lease is stored. */
  async drop(): Promise<void> {
    await this.memory.update((s) => void (s.dropped = true));
  }

  /** Whether `userId` wants a new lease at server time `now`: none stored, another user's, dropped, or its renewal due. */
  async needsLease(userId: string, now: number): Promise<boolean> {
    const stored = await this.stored();
    if (stored === null || stored.user_id !== userId || now >= stored.renew_after) return true;
    return (await this.memory.read()).state.dropped;
  }
}
