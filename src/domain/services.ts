import type { Store } from '../store/index.js';
import type { AppRecord } from '../store/records.js';
import type { BanSet } from './bans.js';
import { banCache } from './bans.js';
import { InvalidatingCache } from './cache.js';
import type { ApplicationView } from './context.js';
import { applicationCache } from './context.js';
import type { Clock, PasswordHasher, RandomSource } from './deps.js';

/** Everything a use case needs: the store, the injected clock, randomness and hasher, and the caches. */
export interface Services {
  store: Store;
  clock: Clock;
  random: RandomSource;
  hasher: PasswordHasher;
  /** A hash of a random password: verified against when the user does not exist, so timing does not tell. */
  dummyHash: string;
  caches: Caches;
}

export interface Caches {
  appsByKey: InvalidatingCache<AppRecord | null>;
  bans: InvalidatingCache<BanSet>;
  applications: InvalidatingCache<ApplicationView>;
  /** Forget everything cached about an app (after any admin write to it). */
  invalidateApp(app: { id: string; apiKey: string }): void;
}

export interface ServiceOptions {
  store: Store;
  clock: Clock;
  random: RandomSource;
  hasher: PasswordHasher;
  /** Upper bound on how long any cached value may be served (cross-node fallback). */
  cacheTtlMs?: number;
}

export async function createServices(opts: ServiceOptions): Promise<Services> {
  const { store, clock, cacheTtlMs } = opts;
  const appsByKey = new InvalidatingCache<AppRecord | null>(
    async (key) => ({ value: (await store.apps.findByKey(key)) ?? null, validUntil: Infinity }),
    clock,
    cacheTtlMs,
  );
  const bans = banCache(store, clock, cacheTtlMs);
  const applications = applicationCache(store, clock, cacheTtlMs);
  const caches: Caches = {
    appsByKey,
    bans,
    applications,
    invalidateApp(app) {
      appsByKey.invalidate(app.apiKey);
      bans.invalidate(app.id);
      applications.invalidate(app.id);
    },
  };
  const dummyHash = await opts.hasher.hash(opts.random(32).toString('base64url'));
  return { ...opts, dummyHash, caches };
}
