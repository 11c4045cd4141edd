/**
 * The signing keys the server answers with (docs/signing.md, "Keys"): one
 * key ring per app (key-ring.ts), cached on every node and dropped by any key
 * change of the app (Change.keys), here at once and elsewhere through the bus,
 * never served longer than the cache TTL. The hot path (signing every answer)
 * reads only this cache.
 */
import { keptWith } from '../cache.js';
import type { Services } from '../service-types.js';
import { write } from '../unit-of-work.js';
import type { KeyRing, SigningKey } from './key-ring.js';

export { buildKeyRing, type KeyRing, type ListedKey, type SigningKey } from './key-ring.js';

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
  // The server's own rule, whoever's request found the ended key: audited as the system's doing.
  return write({ ...s, actor: 'system' }, async ({ tx, changed, audit }) => {
    const kids = await tx.signingKeys.forgetEnded(appId, now);
    if (kids.length > 0) {
      await audit('keys.forget_ended', appId, appId, { kids });
      changed({ keys: appId });
    }
    return kids;
  });
}

const FORGET_RETRY_MS = 60_000;
/** When each app's ended keys were last tried, per node (its services). */
const forgetTried = keptWith((_: Services) => new Map<string, number>());

function forgetInBackground(s: Services, appId: string, now: number): void {
  const tried = forgetTried(s);
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
