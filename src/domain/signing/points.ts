/**
 * Ed25519 public keys given as base64url of their 32 raw bytes. OpenSSL
 * takes any 32 bytes as a raw public key, so the point is checked here: a
 * root key that is not on the curve would verify nothing, and the operator
 * should learn it when uploading, not when every client refuses.
 */
import { createPublicKey, type KeyObject } from 'node:crypto';

const P = 2n ** 255n - 19n;
// d = -121665 / 121666 mod p (RFC 8032 §5.1)
const D = (((-121665n * pow(121666n, P - 2n)) % P) + P) % P;

function pow(base: bigint, exp: bigint): bigint {
  let result = 1n;
  let b = ((base % P) + P) % P;
  for (let e = exp; e > 0n; e >>= 1n) {
    if (e & 1n) result = (result * b) % P;
    b = (b * b) % P;
  }
  return result;
}

/** Whether 32 bytes decode to a point of edwards25519 (RFC 8032 §5.1.3). */
export function isEd25519Point(bytes: Uint8Array): boolean {
  if (bytes.length !== 32) return false;
  const sign = bytes[31]! >> 7;
  let y = 0n;
  for (let i = 31; i >= 0; i--) y = (y << 8n) | BigInt(i === 31 ? bytes[i]! & 0x7f : bytes[i]!);
  if (y >= P) return false;
  const y2 = (y * y) % P;
  const u = (y2 - 1n + P) % P;
  const v = (D * y2 + 1n) % P; // never 0: d is not a square
  const x2 = (u * pow(v, P - 2n)) % P;
  if (x2 === 0n) return sign === 0;
  return pow(x2, (P - 1n) / 2n) === 1n; // Euler's criterion: x² must have a root
}

/** The key object for base64url of a valid Ed25519 point, or null. */
export function ed25519PublicKey(b64url: string): KeyObject | null {
  if (!/^[A-Za-z0-9_-]{43}$/.test(b64url)) return null;
  const bytes = Buffer.from(b64url, 'base64url');
  // Canonical encoding only (the last character carries 2 unused bits): one key, one spelling.
  if (bytes.length !== 32 || bytes.toString('base64url') !== b64url || !isEd25519Point(bytes)) return null;
  return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: b64url }, format: 'jwk' });
}
