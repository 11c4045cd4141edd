/**
 * Bytes and text without Node's Buffer, so the verifier also runs in an
 * Electron renderer or a browser. base64url is strict (RFC 4648 §5, no
 * padding): anything else is not a Tollgate value.
 */
const B64URL = /^[A-Za-z0-9_-]*$/;
export const utf8 = (text) => new TextEncoder().encode(text);
/** Strict UTF-8: invalid sequences are an error, not U+FFFD (a forged value must not decode to a valid one). */
export const fromUtf8 = (bytes) => new TextDecoder('utf-8', { fatal: true }).decode(bytes);
export function b64urlDecode(text) {
    if (!B64URL.test(text) || text.length % 4 === 1)
        return null;
    const padded = text.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (text.length % 4)) % 4);
    let binary;
    try {
        binary = atob(padded);
    }
    catch {
        return null;
    }
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++)
        bytes[i] = binary.charCodeAt(i);
    return bytes;
}
export function b64urlEncode(bytes) {
    let binary = '';
    for (let i = 0; i < bytes.length; i++)
        binary += String.fromCharCode(bytes[i]);
    return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}
export function hex(bytes) {
    let out = '';
    for (let i = 0; i < bytes.length; i++)
        out += bytes[i].toString(16).padStart(2, '0');
    return out;
}
export function concat(...parts) {
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) {
        out.set(p, at);
        at += p.length;
    }
    return out;
}
/** Constant-time comparison of two strings of the same public length (MACs, hashes). */
export function equalConstantTime(a, b) {
    if (a.length !== b.length)
        return false;
    let diff = 0;
    for (let i = 0; i < a.length; i++)
        diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
    return diff === 0;
}
/** Decodes base64url of a UTF-8 JSON object; null if it is not one. */
export function decodeJsonObject(text) {
    const bytes = b64urlDecode(text);
    if (!bytes)
        return null;
    try {
        const value = JSON.parse(fromUtf8(bytes));
        return value && typeof value === 'object' && !Array.isArray(value) ? value : null;
    }
    catch {
        return null;
    }
}
/** True when the object has exactly these keys (no more, no fewer). */
export const hasExactKeys = (o, keys) => Object.keys(o).sort().join(',') === [...keys].sort().join(',');
//# sourceMappingURL=encoding.js.map