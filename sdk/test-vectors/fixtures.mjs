/**
 * The fixed cast of the vectors: apps, keys (from fixed seeds), certificates
 * and times. Everything here is derived from labels, never from the clock or
 * a random source.
 */
import { DAY, b64url, certify, encodeJson, keyPair } from './lib.mjs';

export const APP_ID = '0b6a5c8e-4f1d-4c3b-9a77-2e5d8f1c6a01';
export const OTHER_APP_ID = '7d2e9f40-1c6b-4a85-b3e2-9f0a4d7c5e12';

/** 2026-01-01T00:00:00Z */
export const T0 = 1767225600000;

export const root = keyPair('root');
/** The emulator's own root: it can certify anything, but no client pins it. */
export const otherRoot = keyPair('other-root');
export const k1 = { ...keyPair('signing/k1'), kid: 'k1_2026-01' };
export const k2 = { ...keyPair('signing/k2'), kid: 'k2_2026-03' };
/** A key nobody certified for this app: what an emulator signs with. */
export const evil = { ...keyPair('signing/evil'), kid: 'evil' };

export const k1Fields = { app_id: APP_ID, kid: k1.kid, public_key: k1.publicKey, not_before: T0, not_after: T0 + 90 * DAY };
export const k2Fields = { app_id: APP_ID, kid: k2.kid, public_key: k2.publicKey, not_before: T0 + 60 * DAY, not_after: T0 + 150 * DAY };

export const k1Cert = certify(root, k1Fields);
export const k2Cert = certify(root, k2Fields);
export const k1CertEncoded = encodeJson(k1Cert);
export const k2CertEncoded = encodeJson(k2Cert);
/** The evil key certified by the emulator's root, and by the real root for another app. */
export const evilCertOtherRoot = encodeJson(certify(otherRoot, { ...k1Fields, kid: evil.kid, public_key: evil.publicKey }));
export const k1CertOtherApp = encodeJson(certify(root, { ...k1Fields, app_id: OTHER_APP_ID }));

/** A JSON object in a given key order, encoded as a certificate would be (for malformed variants). */
export const rawCert = (object) => encodeJson(object);

export function keysFile() {
  const pair = (k) => ({ seed_hex: k.seed.toString('hex'), public_key: k.publicKey });
  return {
    description: 'Ed25519 seeds (32 bytes, hex) and public keys (base64url of the 32 raw bytes). PKCS#8 of a seed: hex 302e020100300506032b657004220420 followed by the seed.',
    app_id: APP_ID,
    other_app_id: OTHER_APP_ID,
    root: pair(root),
    other_root: pair(otherRoot),
    signing_keys: [k1, k2, evil].map((k) => ({ kid: k.kid, ...pair(k) })),
    certificates: {
      [k1.kid]: { fields: k1Fields, certificate: k1CertEncoded },
      [k2.kid]: { fields: k2Fields, certificate: k2CertEncoded },
    },
  };
}

export const flip = (b64) => {
  const bytes = Buffer.from(b64, 'base64url');
  bytes[0] ^= 1;
  return b64url(bytes);
};
