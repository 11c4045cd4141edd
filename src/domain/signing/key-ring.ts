/**
 * One app's signing keys as the hot path holds them (docs/signing.md, "Keys"): a key ring, cached on every
 * node by the cache registry (caches.ts) and dropped by any key change of the app (Change.keys). The private
 * key objects are parsed once per load. What uses the ring is signing/keys.ts.
 */
import { createPrivateKey, type KeyObject } from 'node:crypto';
import type { Store } from '../../store/index.js';
import type { SigningKeyRecord } from '../../store/repositories/signing-keys.js';
import type { CacheEntry } from '../cache.js';
import { UnsealError, type KeySeal } from './seal.js';

export interface SigningKey {
  kid: string;
  appId: string;
  privateKey: KeyObject;
  /** The encoded certificate (header Tollgate-Key-Cert, a lease's `cert`). */
  certificate: string;
  notBefore: number;
  notAfter: number;
}

/** What a client may learn about a certified key (GET /signing_keys). */
export interface ListedKey {
  kid: string;
  certificate: string;
  notAfter: number;
}

/** Everything cached about one app's keys: the keys that can sign, the certified ones, the retired kids. */
export interface KeyRing {
  /** Certified, unretired, with a private key: newest first (not_before, then created_at, then kid: UUIDv7, time-ordered). */
  signers: SigningKey[];
  /** Certified and not retired (whatever their validity), oldest first. */
  certified: ListedKey[];
  retired: string[];
  /** Keys that would sign but whose private key this node cannot unseal (a backup restored without its KEK), and why. */
  unopened: { kid: string; reason: string }[];
}

export function buildKeyRing(records: SigningKeyRecord[], seal: KeySeal): KeyRing {
  const usable = records.filter(
    (k): k is SigningKeyRecord & { privateKey: string; certificate: string; notBefore: number; notAfter: number } =>
      k.status === 'active' && k.privateKey !== null && k.certificate !== null && k.notBefore !== null && k.notAfter !== null,
  );
  usable.sort((a, b) => b.notBefore - a.notBefore || b.createdAt - a.createdAt || (a.kid < b.kid ? 1 : -1));
  const signers: SigningKey[] = [];
  const unopened: KeyRing['unopened'] = [];
  for (const k of usable) {
    let der: Buffer;
    try {
      der = seal.open(k.appId, k.kid, k.privateKey);
    } catch (err) {
      // Left out of the signers: an older key this node can open still signs; none left answers as "no usable key", saying why.
      if (!(err instanceof UnsealError)) throw err;
      unopened.push({ kid: k.kid, reason: err.message });
      continue;
    }
    signers.push({
      kid: k.kid,
      appId: k.appId,
      privateKey: createPrivateKey({ key: der, format: 'der', type: 'pkcs8' }),
      certificate: k.certificate,
      notBefore: k.notBefore,
      notAfter: k.notAfter,
    });
  }
  return {
    signers,
    unopened,
    certified: records
      .filter((k) => k.status === 'active' && k.certificate !== null && k.notAfter !== null)
      .map((k) => ({ kid: k.kid, certificate: k.certificate!, notAfter: k.notAfter! })),
    retired: records.filter((k) => k.status === 'retired').map((k) => k.kid),
  };
}

/** Where a key this node cannot unseal is reported: the server's log at error, once per key a minute (rings reload every TTL). */
export type UnsealedReport = (appId: string, kid: string, reason: string) => void;
const REPORT_EVERY_MS = 60_000;

/**
 * The cache registry's loader of key rings per app id (caches.ts). Validity is judged at read time against the
 * caller's `now`, so nothing here expires by itself. Keys this node cannot unseal are reported once a minute each.
 */
export function loadKeyRing(store: Store, clock: () => number, seal: KeySeal, report: UnsealedReport): (appId: string) => Promise<CacheEntry<KeyRing>> {
  const reported = new Map<string, number>();
  return async (appId) => {
    const ring = buildKeyRing(await store.signingKeys.all(appId), seal);
    const now = clock();
    for (const { kid, reason } of ring.unopened) {
      const last = reported.get(kid);
      if (last !== undefined && now - last < REPORT_EVERY_MS && now >= last) continue;
      if (reported.size >= 10_000) reported.clear();
      reported.set(kid, now);
      report(appId, kid, reason);
    }
    return { value: ring, validUntil: Infinity };
  };
}
