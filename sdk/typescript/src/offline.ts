/**
 * The offline side of the client: storing a lease fetched online and
 * checking it without network, with the runtime counted on a monotonic clock
 * between checks and the time aligned on the server's (the offset learned
 * from the last verified answer), so a wrong but steady local clock is no
 * rollback while a clock set back is.
 */
import type { Pinned } from './certificate.js';
import { TollgateLeaseError } from './errors.js';
import { checkLease, parseLease, type LeasePayload } from './lease.js';
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
});

export class Offline {
  constructor(
    private readonly pinned: Pinned,
    private readonly clock: Clock,
    private readonly memory: Memory,
    private readonly store: () => Promise<LeaseStore>,
    private readonly hardwareId: () => Promise<string>,
  ) {}

  /** A lease just received in a verified answer at server time `t`: checked like offline, then kept. */
  async keep(file: string, t: number): Promise<LeaseInfo> {
    const { state } = await this.memory.read();
    const now = this.clock.now() + state.clock_offset_ms;
    const fresh = { highest_trusted_time: t, highest_seq: state.highest_seq, runtime_used_ms: 0, dropped: false };
    const check = await checkLease(file, { pinned: this.pinned, retired: new Set(state.retired), hardwareId: await this.hardwareId(), state: fresh, now });
    if (check.verdict !== 'ok') throw new TollgateLeaseError(check.verdict);
    const p = check.payload!;
    await (await this.store()).writeLease(file);
    const offset = state.clock_offset_ms;
    await this.memory.update(
      (s) => {
        s.highest_seq = p.seq;
        s.highest_trusted_time = Math.max(t, p.iat);
        s.clock_offset_ms = offset;
      },
      { reset: true },
    );
    this.memory.lastTick = undefined;
    return info(p, check.renewDue!, 0);
  }

  /** The offline check of docs/signing.md; throws TollgateLeaseError with the verdict unless the lease is good. */
  async check(): Promise<LeaseInfo> {
    const file = await (await this.store()).readLease();
    if (file === null) throw new TollgateLeaseError('no_lease');
    const { state, tampered } = await this.memory.read();
    // Runtime since the previous check in this process (none before the first): the app checks periodically while offline.
    const tick = this.clock.monotonic();
    const used = state.runtime_used_ms + (this.memory.lastTick === undefined ? 0 : Math.max(0, tick - this.memory.lastTick));
    this.memory.lastTick = tick;
    const now = this.clock.now() + state.clock_offset_ms;
    const check = await checkLease(file, {
      pinned: this.pinned,
      retired: new Set(state.retired),
      hardwareId: await this.hardwareId(),
      state: { ...state, runtime_used_ms: used },
      now,
      tampered,
    });
    const ok = check.verdict === 'ok';
    const sameLease = check.payload !== undefined && check.payload.seq >= state.highest_seq;
    if (sameLease) {
      await this.memory.update((s) => {
        s.runtime_used_ms = used;
        // The local clock only counts as trusted time while it moves forward (and the lease is good).
        if (ok) s.highest_trusted_time = Math.max(s.highest_trusted_time, now);
      });
    }
    if (!ok) throw new TollgateLeaseError(check.verdict as Exclude<typeof check.verdict, 'ok'>);
    return info(check.payload!, check.renewDue!, used);
  }

  /** The lease as stored, decoded but not checked (for display); null if none. */
  async stored(): Promise<LeasePayload | null> {
    const file = await (await this.store()).readLease();
    return file === null ? null : (parseLease(file)?.payload ?? null);
  }
}
