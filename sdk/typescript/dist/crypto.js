/**
 * The three primitives the SDK needs: SHA-256, Ed25519 verification and
 * HMAC-SHA256. WebCrypto (`crypto.subtle`) first, so the same code runs in
 * Node ≥ 20, Electron renderers and browsers; node:crypto when the platform's
 * WebCrypto has no Ed25519 (older Electron/Chromium).
 */
import { b64urlEncode, hex, utf8 } from './encoding.js';
const subtle = () => {
    const s = globalThis.crypto?.subtle;
    if (!s)
        throw new Error('tollgate-client needs WebCrypto (globalThis.crypto.subtle)');
    return s;
};
// WebCrypto wants ArrayBuffer-backed views; a copy also detaches us from the caller's buffer.
const buf = (b) => b.slice().buffer;
export async function sha256(bytes) {
    return new Uint8Array(await subtle().digest('SHA-256', buf(bytes)));
}
export const sha256Hex = async (bytes) => hex(await sha256(typeof bytes === 'string' ? utf8(bytes) : bytes));
/** Incremental SHA-256 for downloads (WebCrypto has none): node:crypto, loaded only when a file is downloaded. */
export async function incrementalSha256() {
    const { createHash } = await import('node:crypto');
    const h = createHash('sha256');
    return { update: (b) => void h.update(b), hex: () => h.digest('hex') };
}
let verifier;
const RFC8032_PUBLIC = 'd75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a';
const hexBytes = (h) => new Uint8Array(h.match(/../g).map((x) => parseInt(x, 16)));
async function webCryptoVerifier() {
    try {
        // RFC 8032 test 1's public key: a valid point, so only a missing Ed25519 can make this fail.
        await subtle().importKey('raw', buf(hexBytes(RFC8032_PUBLIC)), { name: 'Ed25519' }, false, ['verify']);
    }
    catch {
        return null;
    }
    const keys = new Map();
    return async (publicKey, signature, message) => {
        const id = hex(publicKey);
        let key = keys.get(id);
        if (!key)
            keys.set(id, (key = subtle().importKey('raw', buf(publicKey), { name: 'Ed25519' }, false, ['verify'])));
        return subtle().verify({ name: 'Ed25519' }, await key, buf(signature), buf(message));
    };
}
async function nodeVerifier() {
    const { createPublicKey, verify } = await import('node:crypto');
    return async (publicKey, signature, message) => {
        const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: b64urlEncode(publicKey) }, format: 'jwk' });
        return verify(null, message, key, signature);
    };
}
/** Ed25519 verification; false (never a throw) for a key or signature of the wrong length. */
export async function ed25519Verify(publicKey, signature, message) {
    if (publicKey.length !== 32 || signature.length !== 64)
        return false;
    verifier ??= webCryptoVerifier().then((v) => v ?? nodeVerifier());
    try {
        return await (await verifier)(publicKey, signature, message);
    }
    catch {
        return false;
    }
}
export async function hmacSha256Hex(key, message) {
    const k = await subtle().importKey('raw', buf(key), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
    return hex(new Uint8Array(await subtle().sign('HMAC', k, buf(message))));
}
/** A fresh nonce: 32 base64url characters (24 random bytes), inside the 16–64 the server accepts. */
export function newNonce() {
    const bytes = new Uint8Array(24);
    globalThis.crypto.getRandomValues(bytes);
    return b64urlEncode(bytes);
}
//# sourceMappingURL=crypto.js.map