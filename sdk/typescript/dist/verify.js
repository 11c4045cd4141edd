/**
 * Verification of a signed answer (docs/signing.md, "Signed answers"): the
 * ordered checks, the first failure being the verdict. Runs before the body
 * is parsed: the caller hands over raw bytes and parses only after `ok`.
 */
import { certificateCovers, checkCertificateChain } from './certificate.js';
import { ed25519Verify, sha256Hex } from './crypto.js';
import { b64urlDecode, utf8 } from './encoding.js';
const HEADER = /^v1; kid=([A-Za-z0-9_-]{1,64}); t=(\d{1,16}); sig=([A-Za-z0-9_-]{86})$/;
export function parseSignatureHeader(value) {
    const m = HEADER.exec(value);
    if (!m)
        return null;
    const sig = b64urlDecode(m[3]);
    const t = Number(m[2]);
    return sig?.length === 64 && Number.isSafeInteger(t) ? { kid: m[1], t, sig } : null;
}
/** The headers that say who the user is, in the order they are hashed (docs/signing.md). */
export const CREDENTIAL_HEADERS = ['authorization', 'x-api-license-code', 'x-api-username', 'x-api-password', 'x-hardware-id'];
/**
 * Hex SHA-256 over `name:value\n` for each credential header sent, in CREDENTIAL_HEADERS order.
 * `headers` by lower-case name, each value as the byte string put on the wire (one char per byte:
 * the SDK sends text as its UTF-8 bytes), trimmed of spaces and tabs as the server's parser trims.
 * Without it a proxy could swap a paying user's credentials in under our nonce and hand us that
 * user's validly signed answer or lease.
 */
export async function credentialHeadersSha256(headers) {
    const bytes = [];
    const text = (s) => {
        for (let i = 0; i < s.length; i++)
            bytes.push(s.charCodeAt(i) & 0xff);
    };
    for (const name of CREDENTIAL_HEADERS) {
        const value = headers[name];
        if (value === undefined)
            continue;
        text(`${name}:`);
        text(value.replace(/^[ \t]+|[ \t]+$/g, ''));
        text('\n');
    }
    return sha256Hex(new Uint8Array(bytes));
}
export const downloadLine = (fileSha256, contentRange) => `file-sha256=${fileSha256}; content-range=${contentRange ?? ''}`;
export async function responseLineOf(body) {
    return sha256Hex(body);
}
export async function verifyAnswer(pinned, retired, request, answer) {
    // Absent, not empty: an empty header is present and malformed.
    if (answer.signature == null || answer.certificate == null)
        return { verdict: 'missing_signature' };
    const header = parseSignatureHeader(answer.signature);
    if (!header)
        return { verdict: 'malformed_signature' };
    const { kid, t } = header;
    const chain = await checkCertificateChain(answer.certificate, pinned);
    if (chain.verdict !== 'ok')
        return { verdict: chain.verdict, kid, t };
    const { cert } = chain;
    const notAfter = cert.not_after;
    const notBefore = cert.not_before;
    if (cert.kid !== kid)
        return { verdict: 'kid_mismatch', kid, t, notAfter, notBefore };
    if (retired.has(kid))
        return { verdict: 'key_retired', kid, t, notAfter, notBefore };
    if (!certificateCovers(cert, t))
        return { verdict: 'key_expired', kid, t, notAfter, notBefore };
    const lines = [
        'tollgate/response/v1',
        kid,
        String(t),
        request.nonce,
        pinned.appId,
        String(answer.status),
        `${request.method} ${request.target}`,
        await sha256Hex(request.body),
        request.credentialsSha256,
        answer.responseLine,
    ];
    const ok = await ed25519Verify(cert.publicKeyBytes, header.sig, utf8(lines.join('\n')));
    return { verdict: ok ? 'ok' : 'bad_signature', kid, t, notAfter, notBefore };
}
//# sourceMappingURL=verify.js.map