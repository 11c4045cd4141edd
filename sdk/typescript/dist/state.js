/**
 * The client's memory between runs: the rollback state of docs/signing.md
 * (highest trusted time, highest seq, offline runtime used, dropped) and the
 * retired kids it learned. Kept in two places with an HMAC whose key derives
 * from the app id and the hardware id: public values, so the MAC only catches
 * accidental edits and naive tampering (edit, delete or restore one file, copy
 * the files to another machine); while a lease is kept both copies must be
 * there and agree. A determined user can recompute the MAC and rewrite the
 * state, or restore every file and the lease together. What still holds then: a lease ends at its exp and never
 * outlives its key's not_after.
 */
import { hmacSha256Hex, sha256 } from './crypto.js';
import { equalConstantTime, utf8 } from './encoding.js';
/** The fields in their stored order (shared with the other SDKs, which read and write the same files). */
export const freshState = () => ({
    highest_trusted_time: 0, highest_seq: 0, runtime_used_ms: 0, dropped: false, retired: [], known: [], keys_fetched_at: 0, clock_offset_ms: 0, max_server_time: 0,
    newest_not_before: 0, newest_seen_at: 0,
});
/**
 * What two instances of the app on one machine know together (amendment E): `disk` as just re-read under the
 * lock, `mine` what this instance holds (its lazily written times included). The times, seq and key-list time
 * are the max; the kids the union; the newest key the one with the later not_before. The runtime used and
 * `dropped` belong to one lease: for the same lease (seq) the max and the OR, otherwise the stored state's,
 * which is the newer (every change of them is written at once, under the lock): a new lease fetched by the
 * other instance clears a drop, and a drop by the other instance holds. The clock offset is this instance's
 * once it measured one.
 */
export function merge(disk, mine, ownOffset) {
    const sameLease = disk.highest_seq === mine.highest_seq;
    const newer = mine.newest_not_before > disk.newest_not_before ? mine : disk;
    return {
        highest_trusted_time: Math.max(disk.highest_trusted_time, mine.highest_trusted_time),
        highest_seq: disk.highest_seq,
        runtime_used_ms: sameLease ? Math.max(disk.runtime_used_ms, mine.runtime_used_ms) : disk.runtime_used_ms,
        dropped: sameLease ? disk.dropped || mine.dropped : disk.dropped,
        retired: [...disk.retired, ...mine.retired.filter((k) => !disk.retired.includes(k))],
        known: [...disk.known, ...mine.known.filter((k) => !disk.known.includes(k))],
        keys_fetched_at: Math.max(disk.keys_fetched_at, mine.keys_fetched_at),
        clock_offset_ms: ownOffset ? mine.clock_offset_ms : disk.clock_offset_ms,
        max_server_time: Math.max(disk.max_server_time, mine.max_server_time),
        newest_not_before: newer.newest_not_before,
        newest_seen_at: disk.newest_not_before === mine.newest_not_before ? Math.min(disk.newest_seen_at, mine.newest_seen_at) : newer.newest_seen_at,
    };
}
export class StateKeeper {
    store;
    key;
    constructor(store, appId, hardwareId) {
        this.store = store;
        this.key = sha256(utf8(`tollgate/state-mac/v1\n${appId}\n${hardwareId}`));
    }
    async mac(text) {
        return hmacSha256Hex(await this.key, utf8(text));
    }
    async open(record) {
        if (record === null)
            return null;
        try {
            const { state, mac } = JSON.parse(record);
            if (typeof state !== 'string' || typeof mac !== 'string' || !equalConstantTime(mac, await this.mac(state)))
                return 'bad';
            return { ...freshState(), ...JSON.parse(state) };
        }
        catch {
            return 'bad';
        }
    }
    async load() {
        const [a, b] = await Promise.all([this.store.readState(0), this.store.readState(1)]);
        const [sa, sb] = await Promise.all([this.open(a), this.open(b)]);
        if (sa === 'bad' || sb === 'bad')
            return { state: freshState(), tampered: true };
        if (sa && sb)
            return JSON.stringify(sa) === JSON.stringify(sb) ? { state: sa, tampered: false } : { state: freshState(), tampered: true };
        // While a lease is kept both copies must be there (issue 21.1): a lone copy cannot prove it is the latest (one
        // restored from a backup beside a deleted one undid a rollback verdict or a drop), so either copy missing is
        // tampering until a new lease writes both again. With no lease, a lone copy holds only what was learned online.
        if ((await this.store.readLease()) !== null)
            return { state: freshState(), tampered: true };
        return { state: (sa || sb) ? (sa ?? sb) : freshState(), tampered: false };
    }
    async save(state) {
        const text = JSON.stringify(state);
        const record = JSON.stringify({ state: text, mac: await this.mac(text) });
        await this.store.writeState(0, record);
        await this.store.writeState(1, record);
    }
}
//# sourceMappingURL=state.js.map