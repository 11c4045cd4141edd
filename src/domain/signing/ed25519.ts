/**
 * The one Ed25519 signer of the server: signed answers (http/signed-answer.ts), offline leases (lease.ts) and
 * webhooks' `v1a` signatures (webhooks/signing.ts) all sign here (docs/decisions.md, "Ed25519 signing through
 * sodium-native when it loads").
 *
 * libsodium's `crypto_sign_detached` (the optional dependency sodium-native, prebuilt N-API binaries) signs
 * in about half the time of Node's `crypto.sign(null, …, KeyObject)`, which sets up an OpenSSL context on every
 * call. Ed25519 is deterministic (RFC 8032): the same key and message give the same 64 bytes either way, so
 * nothing a client sees changes. When sodium-native is not installed, or does not load on this platform or
 * runtime, node:crypto signs, as before.
 *
 * The keys stay KeyObjects everywhere else. libsodium's secret key (seed || public key, 64 bytes) is derived
 * once per KeyObject from its PKCS#8 export, kept beside it in a WeakMap (gone with it), never logged and
 * never exported; the DER it came from is zeroed at once. It lives in an ordinary zero-filled Buffer, not
 * sodium_malloc's locked pages: the same key already sits unlocked in OpenSSL's heap (the KeyObject) and
 * passes through a Buffer when unsealed, and key rings are rebuilt every cache TTL with new KeyObjects, so
 * guarded allocations (four pages and an mlock each) would pile up mappings until the garbage collector ran.
 */
import { createPublicKey, generateKeyPairSync, sign as nodeSign, type KeyObject } from 'node:crypto';
import { createRequire } from 'node:module';

/** What the signer uses of sodium-native (its functions take and fill Buffers / Uint8Arrays). */
export interface SodiumEd25519 {
  crypto_sign_BYTES: number;
  crypto_sign_SECRETKEYBYTES: number;
  crypto_sign_PUBLICKEYBYTES: number;
  crypto_sign_SEEDBYTES: number;
  crypto_sign_seed_keypair(publicKey: Uint8Array, secretKey: Uint8Array, seed: Uint8Array): void;
  crypto_sign_detached(signature: Uint8Array, message: Uint8Array, secretKey: Uint8Array): void;
  sodium_memzero(buffer: Uint8Array): void;
}

export type Ed25519Backend = 'sodium-native' | 'node:crypto';

export interface Ed25519Signer {
  /** Which implementation signs. */
  readonly backend: Ed25519Backend;
  /** The 64-byte signature of `message` by the Ed25519 private key `key`: a Buffer of its own. */
  sign(message: Uint8Array, key: KeyObject): Buffer;
}

/** The DER of an Ed25519 private key as node:crypto exports it (PKCS#8 v1, RFC 8410): these 16 bytes, then the 32-byte seed. */
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

/** sodium-native, or null when it is not installed or does not load here (`load` is for tests). */
export function loadSodium(load: (id: string) => unknown = createRequire(import.meta.url)): SodiumEd25519 | null {
  try {
    const sodium = load('sodium-native') as Partial<SodiumEd25519> | null;
    if (typeof sodium?.crypto_sign_detached !== 'function' || typeof sodium.crypto_sign_seed_keypair !== 'function' || typeof sodium.sodium_memzero !== 'function') {
      return null;
    }
    if (sodium.crypto_sign_BYTES !== 64 || sodium.crypto_sign_SECRETKEYBYTES !== 64 || sodium.crypto_sign_SEEDBYTES !== 32) return null;
    return sodium as SodiumEd25519;
  } catch {
    return null;
  }
}

/** node:crypto's signer (one OpenSSL context per call). */
export const nodeEd25519: Ed25519Signer = {
  backend: 'node:crypto',
  sign: (message, key) => nodeSign(null, message, key),
};

/**
 * A signer over `sodium` (null: node:crypto's). It must sign a probe as node:crypto does first: a libsodium built
 * to hedge its signatures (ED25519_NONDETERMINISTIC) or a broken binary would change the bytes clients see.
 */
export function ed25519Signer(sodium: SodiumEd25519 | null): Ed25519Signer {
  if (sodium === null) return nodeEd25519;
  const signer = sodiumSigner(sodium);
  const probe = Buffer.from('tollgate/ed25519-probe\n');
  const { privateKey } = generateKeyPairSync('ed25519');
  try {
    return signer.sign(probe, privateKey).equals(nodeSign(null, probe, privateKey)) ? signer : nodeEd25519;
  } catch {
    return nodeEd25519;
  }
}

function sodiumSigner(sodium: SodiumEd25519): Ed25519Signer {
  /** libsodium's secret key of each KeyObject; null for a key it cannot take (then node:crypto signs with it). */
  const secretKeys = new WeakMap<KeyObject, Buffer | null>();
  const secretKeyOf = (key: KeyObject): Buffer | null => {
    let sk = secretKeys.get(key);
    if (sk === undefined) secretKeys.set(key, (sk = sodiumSecretKey(sodium, key)));
    return sk;
  };
  return {
    backend: 'sodium-native',
    sign(message, key) {
      const sk = secretKeyOf(key);
      if (sk === null) return nodeSign(null, message, key);
      const signature = Buffer.allocUnsafe(64);
      sodium.crypto_sign_detached(signature, message, sk);
      return signature;
    },
  };
}

/** seed || public key of an Ed25519 private KeyObject, or null if it is not one (node:crypto then answers as it always did). */
function sodiumSecretKey(sodium: SodiumEd25519, key: KeyObject): Buffer | null {
  if (key.type !== 'private' || key.asymmetricKeyType !== 'ed25519') return null;
  const der = key.export({ format: 'der', type: 'pkcs8' });
  try {
    if (der.length !== PKCS8_ED25519_PREFIX.length + 32 || !der.subarray(0, PKCS8_ED25519_PREFIX.length).equals(PKCS8_ED25519_PREFIX)) return null;
    const sk = Buffer.alloc(64);
    const pk = Buffer.alloc(32);
    sodium.crypto_sign_seed_keypair(pk, sk, der.subarray(PKCS8_ED25519_PREFIX.length));
    // The public half libsodium derived must be the KeyObject's own (SPKI: 12 bytes, then the 32-byte key).
    if (pk.equals(createPublicKey(key).export({ format: 'der', type: 'spki' }).subarray(12))) return sk;
    sodium.sodium_memzero(sk);
    return null;
  } finally {
    der.fill(0);
  }
}

/** The server's signer: sodium-native's when it loads, node:crypto's otherwise. */
export const ed25519: Ed25519Signer = ed25519Signer(loadSodium());
