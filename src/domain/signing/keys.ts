/**
 * The signing keys the server answers with (docs/signing.md, "Keys"): one
 * key ring per app, cached on every node and dropped by any key change of the
 * app (Change.keys), here at once and elsewhere through the bus, never served
 * longer than the cache TTL. The hot path (signing every answer) reads only
 * this cache; the private key objects are parsed once per load.
 */
import { createPrivateKey, type KeyObject } from 'node:crypto';
import type { Store } from '../../store/index.js';
import type { SigningKeyRecord } from '../../store/repositories/signing-keys.js';
import { InvalidatingCache } from '../cache.js';
import type { Services } from '../services.js';
import { write } from '../unit-of-work.js';
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

/** Key rings per app id. Validity is judged at read time against the caller's `now`, so nothing here expires by itself. */
export function keyRingCache(store: Store, clock: () => number, ttlMs: number | undefined, seal: KeySeal, report: UnsealedReport): InvalidatingCache<KeyRing> {
  const reported = new Map<string, number>();
  return new InvalidatingCache<KeyRing>(async (appId) => {
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
  }, clock, { ttlMs });
}

/** Why the app has no key that signs, when the reason is sealing (for answers and log lines); null otherwise. */
export async function unsealedCause(s: Services, appId: string): Promise<string | null> {
  return sealedCauseOf(await s.caches.signingKeys.get(appId));
}

/** The same, of a key ring at hand (undefined: not loaded, so no cause known). */
export function sealedCauseOf(ring: KeyRing | undefined): string | null {
  return ring !== undefined && ring.signers.length === 0 && ring.unopened.length > 0 ? ring.unopened[0]!.reason : null;
}

/** The key that signs at `now`: the first (newest) signer whose validity contains it. */
export function pick(ring: KeyRing, now: number): SigningKey | null {
  for (const k of ring.signers) if (k.notBefore <= now && now < k.notAfter) return k;
  return null;
}

/** The newest active key of the app at `now` (certified, not retired, now within its validity), cached; null if none. */
export async function currentSigningKey(s: Services, appId: string, now: number): Promise<SigningKey | null> {
  const ring = await s.caches.signingKeys.get(appId);
  if (ring.signers.some((k) => k.notAfter <= now)) forgetInBackground(s, appId, now);
  return pick(ring, now);
}

/**
 * Amendment C: a key past its not_after has its private half deleted (set to
 * NULL), so backups stop holding every past key and a leaked backup signs
 * nothing new. Done where the key ring is (re)loaded, never in the signing
 * hook itself: in the background, at most one attempt per app a minute (a
 * database outage must not turn into a write per request); the next load
 * retries. The admin key list and key view do it before answering.
 */
export async function forgetEndedKeys(s: Services, appId: string, now: number): Promise<string[]> {
  return write(s, async ({ tx, changed }) => {
    const kids = await tx.signingKeys.forgetEnded(appId, now);
    if (kids.length > 0) changed({ keys: appId });
    return kids;
  });
}

const FORGET_RETRY_MS = 60_000;
const forgetTried = new WeakMap<Services, Map<string, number>>();

function forgetInBackground(s: Services, appId: string, now: number): void {
  let tried = forgetTried.get(s);
  if (!tried) forgetTried.set(s, (tried = new Map()));
  const last = tried.get(appId);
  if (last !== undefined && now - last < FORGET_RETRY_MS && now >= last) return;
  if (tried.size >= 10_000) tried.clear();
  tried.set(appId, now);
  forgetEndedKeys(s, appId, now).then(
    () => tried.delete(appId),
    () => undefined,
  );
}

/** The same, synchronously from the cache, or undefined on a miss (hot path). */
export function peekSigningKey(s: Services, appId: string, now: number): SigningKey | null | undefined {
  const ring = s.caches.signingKeys.peek(appId, now);
  return ring === undefined ? undefined : pick(ring, now);
}

/** The client key list of docs/signing.md: certified keys not yet expired at `now`, and every retired kid. */
export async function clientKeyList(s: Services, appId: string, now: number): Promise<{ keys: { kid: string; certificate: string; status: 'active' }[]; retired: string[] }> {
  const ring = await s.caches.signingKeys.get(appId);
  return {
    keys: ring.certified.filter((k) => now < k.notAfter).map((k) => ({ kid: k.kid, certificate: k.certificate, status: 'active' as const })),
    retired: ring.retired,
  };
}
