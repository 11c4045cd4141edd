/**
 * The client's memory between runs: the rollback state of docs/signing.md
 * (highest trusted time, highest seq, offline runtime used, dropped) and the
 * retired kids it learned. Kept in two places with an HMAC whose key derives
 * from the app id and the hardware id. This stops casual clock games (set the
 * clock back, delete or edit a file, copy the files to another machine), not a
 * patched binary: the key derivation ships inside the app.
 */
import { hmacSha256Hex, sha256 } from './crypto.js';
import { equalConstantTime, utf8 } from './encoding.js';
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
}

export const freshState = (): ClientState => ({ highest_trusted_time: 0, highest_seq: 0, runtime_used_ms: 0, dropped: false, retired: [], known: [], keys_fetched_at: 0, clock_offset_ms: 0, max_server_time: 0 });

export interface LoadedState {
  state: ClientState;
  /** The copies disagreed, a MAC failed, or a lease exists with no state at all: the verdict becomes clock_rollback. */
  tampered: boolean;
}

export class StateKeeper {
  private key: Promise<Uint8Array>;

  constructor(private readonly store: LeaseStore, appId: string, hardwareId: string) {
    this.key = sha256(utf8(`tollgate/state-mac/v1\n${appId}\n${hardwareId}`));
  }

  private async mac(text: string): Promise<string> {
    return hmacSha256Hex(await this.key, utf8(text));
  }

  private async open(record: string | null): Promise<ClientState | null | 'bad'> {
    if (record === null) return null;
    try {
      const { state, mac } = JSON.parse(record) as { state: string; mac: string };
      if (typeof state !== 'string' || typeof mac !== 'string' || !equalConstantTime(mac, await this.mac(state))) return 'bad';
      return { ...freshState(), ...(JSON.parse(state) as ClientState) };
    } catch {
      return 'bad';
    }
  }

  async load(): Promise<LoadedState> {
    const [a, b] = await Promise.all([this.store.readState(0), this.store.readState(1)]);
    const [sa, sb] = await Promise.all([this.open(a), this.open(b)]);
    if (sa === 'bad' || sb === 'bad') return { state: freshState(), tampered: true };
    if (sa && sb) return JSON.stringify(sa) === JSON.stringify(sb) ? { state: sa, tampered: false } : { state: freshState(), tampered: true };
    // One copy gone (a cleaner, a lost folder) is not tampering: the other is whole and its MAC holds.
    if (sa || sb) return { state: (sa ?? sb)!, tampered: false };
    // Both gone while a lease is kept: someone wiped the state to reset the clock and the runtime.
    return { state: freshState(), tampered: (await this.store.readLease()) !== null };
  }

  async save(state: ClientState): Promise<void> {
    const text = JSON.stringify(state);
    const record = JSON.stringify({ state: text, mac: await this.mac(text) });
    await this.store.writeState(0, record);
    await this.store.writeState(1, record);
  }
}
