/**
 * Offline leases (docs/signing.md, "Offline leases"): parsing the armoured
 * file and the ordered offline check. Pure: the rollback state and the
 * clock are inputs (see state.ts for how the SDK keeps them).
 */
import { certificateCovers, checkCertificateChain } from './certificate.js';
import { ed25519Verify, sha256Hex } from './crypto.js';
import { b64urlDecode, concat, decodeJsonObject, fromUtf8, hasExactKeys, utf8 } from './encoding.js';
/** How far the local clock may lag the highest trusted time before it is a rollback (clock drift, NTP steps). */
export const ROLLBACK_TOLERANCE_MS = 5 * 60_000;
const BEGIN = '-----BEGIN TOLLGATE LEASE-----';
const END = '-----END TOLLGATE LEASE-----';
const LEASE_FIELDS = ['v', 'kid', 'cert', 'payload', 'sig'];
const PAYLOAD_FIELDS = ['lease_id', 'seq', 'app_id', 'user_id', 'hwid_hash', 'is_lifetime', 'active_until', 'iat', 'renew_after', 'exp', 'max_offline_runtime_s'];
/** Issue 24's fields: both present (a lease of a server with entitlements) or both absent (an older lease). */
const PAYLOAD_FIELDS_24 = [...PAYLOAD_FIELDS, 'entitlements', 'is_trial'];
export const hwidHash = (appId, hardwareId) => sha256Hex(`${appId}\n${hardwareId}`);
export function parseLease(file) {
    const lines = file.trim().split(/\r?\n/);
    if (lines.length < 3 || lines[0] !== BEGIN || lines[lines.length - 1] !== END)
        return null;
    const o = decodeJsonObject(lines.slice(1, -1).join(''));
    if (!o || !hasExactKeys(o, LEASE_FIELDS) || o.v !== 1)
        return null;
    if (typeof o.kid !== 'string' || typeof o.cert !== 'string' || typeof o.payload !== 'string' || typeof o.sig !== 'string')
        return null;
    const payloadBytes = b64urlDecode(o.payload);
    const sig = b64urlDecode(o.sig);
    if (!payloadBytes || !sig)
        return null;
    let p;
    try {
        p = JSON.parse(fromUtf8(payloadBytes));
    }
    catch {
        return null;
    }
    return isPayload(p) ? { kid: o.kid, cert: o.cert, payloadBytes, payload: p, sig } : null;
}
function isPayload(p) {
    if (!p || typeof p !== 'object' || Array.isArray(p))
        return false;
    const o = p;
    const int = (x) => Number.isSafeInteger(x);
    return ((hasExactKeys(o, PAYLOAD_FIELDS) || (hasExactKeys(o, PAYLOAD_FIELDS_24) && typeof o.is_trial === 'boolean' && isEntitlementList(o.entitlements))) &&
        [o.lease_id, o.app_id, o.user_id, o.hwid_hash].every((x) => typeof x === 'string') &&
        int(o.seq) && o.seq >= 1 &&
        typeof o.is_lifetime === 'boolean' &&
        (o.active_until === null || int(o.active_until)) &&
        [o.iat, o.renew_after, o.exp, o.max_offline_runtime_s].every(int) &&
        // Amendment B: a lease ends after it starts and within its own runtime budget.
        o.exp >= o.iat &&
        o.exp - o.iat <= o.max_offline_runtime_s * 1000);
}
function isEntitlementList(x) {
    return (Array.isArray(x) &&
        x.every((e) => {
            if (!e || typeof e !== 'object' || Array.isArray(e))
                return false;
            const o = e;
            return hasExactKeys(o, ['code', 'until']) && typeof o.code === 'string' && (o.until === null || Number.isSafeInteger(o.until));
        }));
}
/** The codes of a verified lease that are live at trusted time `now`: present and (`until` null or now < until). */
export function liveEntitlements(p, now) {
    return (p.entitlements ?? []).filter((e) => e.until === null || now < e.until).map((e) => e.code);
}
/** The offline check, in the order of docs/signing.md (the first failure is the verdict). */
export async function checkLease(file, input) {
    const lease = parseLease(file);
    if (!lease)
        return { verdict: 'malformed' };
    const { payload, kid } = lease;
    const chain = await checkCertificateChain(lease.cert, input.pinned);
    if (chain.verdict !== 'ok')
        return { verdict: chain.verdict, kid };
    if (payload.app_id !== input.pinned.appId)
        return { verdict: 'wrong_app', kid };
    const { cert } = chain;
    if (cert.kid !== kid)
        return { verdict: 'bad_signature', kid };
    if (input.retired.has(kid))
        return { verdict: 'key_retired', kid };
    // Amendment B: a lease never outlives its key, so a leaked private key of an ended key cannot mint a long one.
    if (!certificateCovers(cert, payload.iat) || payload.exp > cert.not_after)
        return { verdict: 'key_expired', kid };
    if (!(await ed25519Verify(cert.publicKeyBytes, lease.sig, concat(utf8('tollgate/lease/v1\n'), lease.payloadBytes))))
        return { verdict: 'bad_signature', kid };
    // As for answers: a key that ended before the server time we have verified is expired, whatever iat it signs.
    if (cert.not_after < (input.state.max_server_time ?? 0) - ROLLBACK_TOLERANCE_MS)
        return { verdict: 'key_expired', kid };
    const verdict = await verdictOfPayload(payload, input);
    return verdict === 'ok' ? { verdict, payload, kid, renewDue: input.now >= payload.renew_after } : { verdict, payload, kid };
}
async function verdictOfPayload(p, { hardwareId, state, now, pinned, tampered }) {
    if (p.hwid_hash !== (await hwidHash(pinned.appId, hardwareId)))
        return 'hardware_mismatch';
    if (p.seq < state.highest_seq)
        return 'superseded';
    if (state.dropped)
        return 'dropped';
    if (tampered || now < Math.max(state.highest_trusted_time, p.iat) - ROLLBACK_TOLERANCE_MS)
        return 'clock_rollback';
    if (now >= p.exp)
        return 'expired';
    if (state.runtime_used_ms >= p.max_offline_runtime_s * 1000)
        return 'runtime_exhausted';
    return 'ok';
}
//# sourceMappingURL=lease.js.map