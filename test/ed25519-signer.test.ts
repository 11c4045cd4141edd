/**
 * src/domain/signing/ed25519.ts: the server's one Ed25519 signer signs through sodium-native when it loads and
 * through node:crypto otherwise. Ed25519 is deterministic, so both must give the same 64 bytes for any key and
 * message (or a client would see signatures change with the platform); a missing or broken module must leave
 * node:crypto signing; and signed answers, leases and webhooks' v1a signatures all go through it.
 */
import { createPrivateKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ed25519, ed25519Signer, loadSodium, nodeEd25519, type SodiumEd25519 } from '../src/domain/signing/ed25519.js';
import { signedLease } from '../src/domain/lease.js';
import type { SigningKey } from '../src/domain/signing/keys.js';
import { signatureHeader as webhookSignatureHeader } from '../src/domain/webhooks/signing.js';
import type { EndpointRecord } from '../src/store/repositories/webhooks.js';
import { NO_BODY_SHA256, signatureOf } from '../src/http/signed-answer.js';

const sodium = loadSodium();
const seedKey = (seed: Uint8Array): KeyObject =>
  createPrivateKey({ key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed]), format: 'der', type: 'pkcs8' });

afterEach(() => {
  vi.restoreAllMocks();
});

describe('the Ed25519 signer', () => {
  it('loads sodium-native here (an optional dependency the lockfile installs) and the server signs with it', () => {
    expect(sodium).not.toBeNull();
    expect(ed25519.backend).toBe('sodium-native');
  });

  it('gives node:crypto\'s signature byte for byte, for random keys and messages', () => {
    const signer = ed25519Signer(sodium);
    // libsodium's bytes against node:crypto's, not node:crypto's against themselves.
    expect(signer.backend).toBe('sodium-native');
    fc.assert(fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), fc.uint8Array({ maxLength: 2048 }), (seed, bytes) => {
      const key = seedKey(seed);
      const message = Buffer.from(bytes);
      const signature = signer.sign(message, key);
      expect(signature.length).toBe(64);
      expect(signature.equals(sign(null, message, key))).toBe(true);
      // The same KeyObject again (its libsodium key is kept): still the same bytes.
      expect(signer.sign(message, key).equals(signature)).toBe(true);
    }), { numRuns: 300 });
  });

  it('falls back to node:crypto when sodium-native is not installed or does not load', () => {
    const absent = () => {
      throw Object.assign(new Error("Cannot find module 'sodium-native'"), { code: 'MODULE_NOT_FOUND' });
    };
    expect(loadSodium(absent)).toBeNull();
    expect(loadSodium(() => ({}))).toBeNull(); // something else under that name
    expect(loadSodium(() => ({ ...sodium, crypto_sign_BYTES: 32 }))).toBeNull();
    const signer = ed25519Signer(loadSodium(absent));
    expect(signer).toBe(nodeEd25519);
    expect(signer.backend).toBe('node:crypto');
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const message = Buffer.from('tollgate/response/v1\n…');
    const signature = signer.sign(message, privateKey);
    expect(signature.equals(sign(null, message, privateKey))).toBe(true);
    expect(verify(null, message, publicKey, signature)).toBe(true);
  });

  it('signs through the module it was given, deriving each key once', () => {
    const seedKeypair = vi.fn(sodium!.crypto_sign_seed_keypair);
    const detached = vi.fn(sodium!.crypto_sign_detached);
    const signer = ed25519Signer({ ...sodium!, crypto_sign_seed_keypair: seedKeypair, crypto_sign_detached: detached });
    const { privateKey } = generateKeyPairSync('ed25519');
    expect(signer.backend).toBe('sodium-native');
    seedKeypair.mockClear(); // its probe, signed once at creation
    detached.mockClear();
    for (let i = 0; i < 3; i++) signer.sign(Buffer.from([i]), privateKey);
    expect(detached).toHaveBeenCalledTimes(3);
    expect(seedKeypair).toHaveBeenCalledTimes(1);
  });

  it('is node:crypto\'s when the module signs a probe otherwise (hedged or broken): clients never see other bytes', () => {
    const hedged = ed25519Signer({
      ...sodium!,
      crypto_sign_detached: (sig, m, sk) => {
        sodium!.crypto_sign_detached(sig, m, sk);
        sig[63]! ^= 1;
      },
    });
    expect(hedged).toBe(nodeEd25519);
    expect(ed25519Signer({ ...sodium!, crypto_sign_detached: () => { throw new Error('status: -1'); } })).toBe(nodeEd25519);
  });

  it('leaves a key to node:crypto when the module derives another public key from it (a broken binary signs nothing)', () => {
    const detached = vi.fn();
    const signer = ed25519Signer({
      ...sodium!,
      crypto_sign_seed_keypair: (pk, sk, seed) => {
        sodium!.crypto_sign_seed_keypair(pk, sk, seed);
        pk[0]! ^= 1;
      },
      crypto_sign_detached: detached,
    });
    const { privateKey } = generateKeyPairSync('ed25519');
    const message = Buffer.from('m');
    expect(signer.sign(message, privateKey).equals(sign(null, message, privateKey))).toBe(true);
    expect(detached).not.toHaveBeenCalled();
  });

  it('signed answers, offline leases and webhooks\' v1a signatures all sign through it', () => {
    const spy = vi.spyOn(ed25519, 'sign');
    const { privateKey } = generateKeyPairSync('ed25519');
    const key: SigningKey = { kid: 'kid_0123', appId: 'a', privateKey, certificate: 'c', notBefore: 0, notAfter: 1 };
    signatureOf(key, 1, { nonce: 'n'.repeat(16), appId: 'a', status: 200, method: 'GET', target: '/app_context', requestBodySha256: NO_BODY_SHA256, credentialsSha256: NO_BODY_SHA256, responseLine: NO_BODY_SHA256 });
    expect(spy).toHaveBeenCalledTimes(1);
    signedLease(key, { v: 1 } as unknown as Parameters<typeof signedLease>[1]);
    expect(spy).toHaveBeenCalledTimes(2);
    const endpoint = { secret: 'whsec_' + Buffer.alloc(32).toString('base64'), previousSecret: null, previousSecretUntil: null } as unknown as EndpointRecord;
    webhookSignatureHeader(endpoint, privateKey, 'msg_1', 1, '{}', 0);
    expect(spy).toHaveBeenCalledTimes(3);
    expect(spy.mock.calls.every(([, k]) => k === privateKey)).toBe(true);
  });
});
