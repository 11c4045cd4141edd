/**
 * Key certificates (`tollgate/keycert/v1`, docs/signing.md): decoded
 * strictly, checked against the pinned root by rebuilding the signed bytes
 * from the fields (never by re-serialising JSON).
 */
import { ed25519Verify } from './crypto.js';
import { b64urlDecode, decodeJsonObject, hasExactKeys, utf8 } from './encoding.js';
export const MAX_CERT_VALIDITY_MS = 90 * 24 * 3600 * 1000;
const FIELDS = ['v', 'app_id', 'kid', 'public_key', 'not_before', 'not_after', 'sig'];
export function decodeCertificate(encoded) {
    const o = decodeJsonObject(encoded);
    if (!o || !hasExactKeys(o, FIELDS) || o.v !== 1)
        return null;
    if (![o.app_id, o.kid, o.public_key, o.sig].every((x) => typeof x === 'string'))
        return null;
    if (!Number.isSafeInteger(o.not_before) || !Number.isSafeInteger(o.not_after))
        return null;
    const publicKeyBytes = b64urlDecode(o.public_key);
    const sigBytes = b64urlDecode(o.sig);
    if (publicKeyBytes?.length !== 32 || sigBytes?.length !== 64)
        return null;
    return { ...o, publicKeyBytes, sigBytes };
}
export const certificateInput = (c) => utf8(['tollgate/keycert/v1', c.app_id, c.kid, c.public_key, String(c.not_before), String(c.not_after)].join('\n'));
/** `t` inside [not_before, not_after] and a validity in (0, 90 days]. */
export const certificateCovers = (c, t) => c.not_after - c.not_before > 0 && c.not_after - c.not_before <= MAX_CERT_VALIDITY_MS && t >= c.not_before && t <= c.not_after;
/** Steps 3 and 4 of docs/signing.md: the certificate decodes, the pinned root signed it, it is this app's. */
export async function checkCertificateChain(encoded, pinned) {
    const cert = decodeCertificate(encoded);
    const root = b64urlDecode(pinned.rootPublicKey);
    if (!cert || !root || !(await ed25519Verify(root, cert.sigBytes, certificateInput(cert))))
        return { verdict: 'bad_certificate' };
    if (cert.app_id !== pinned.appId)
        return { verdict: 'wrong_app' };
    return { verdict: 'ok', cert };
}
/** A certificate on its own at time `at` (the verdicts of sdk/test-vectors/certificates.json). */
export async function checkCertificate(encoded, pinned, at) {
    const chain = await checkCertificateChain(encoded, pinned);
    if (chain.verdict !== 'ok')
        return chain.verdict;
    return certificateCovers(chain.cert, at) ? 'ok' : 'key_expired';
}
//# sourceMappingURL=certificate.js.map