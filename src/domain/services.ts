import type { Store } from '../store/index.js';
import type { AppRecord } from '../store/records.js';
import type { BanSet } from './bans.js';
import { banCache } from './bans.js';
import { InvalidatingCache } from './cache.js';
import type { ApplicationView } from './context.js';
import { applicationCache } from './context.js';
import type { Clock, PasswordHasher, RandomSource } from './deps.js';
import type { Counters } from '../store/counters.js';
import { Limiter } from './limits.js';
import { CredentialCache } from './credential-cache.js';

/** Everything a use case needs: the store, the injected clock, randomness and hasher, and the caches. */
export interface Services {
  store: Store;
  clock: Clock;
  random: RandomSource;
  hasher: PasswordHasher;
  /** A hash of a random password: verified against when the user does not exist, so timing does not tell. */
  dummyHash: string;
  caches: Caches;
  limits: Limiter;
  /** Legacy username/password pairs recently verified (see credential-cache.ts). */
  credentials: CredentialCache;
}

/** What changed, so every node drops exactly what depends on it. */
export interface Change {
  /** The app's settings, secret or existence: everything cached about it. */
  app?: { id: string; apiKey: string };
  /** The bans of this app. */
  bans?: string;
  /** The variables or files of this app. */
  content?: string;
}

export interface Caches {
  appsByKey: InvalidatingCache<AppRecord | null>;
  bans: InvalidatingCache<BanSet>;
  applications: InvalidatingCache<ApplicationView>;
  /** Drops what a write made stale, here at once and on every other node through the bus. */
  changed(change: Change): Promise<void>;
}

export interface ServiceOptions {
  store: Store;
  clock: Clock;
  random: RandomSource;
  hasher: PasswordHasher;
  /** Upper bound on how long any cached value may be served (the fallback if a cross-node message is lost). */
  cacheTtlMs?: number;
  /** Where rate-limit counters live; null turns every limit off. */
  counters: Counters | null;
}

const CHANNEL = 'tollgate_changes';

export async function createServices(opts: ServiceOptions): Promise<Services> {
  const { store, clock, cacheTtlMs } = opts;
  const appsByKey = new InvalidatingCache<AppRecord | null>(
    async (key) => ({ value: (await store.apps.findByKey(key)) ?? null, validUntil: Infinity }),
    clock,
    cacheTtlMs,
  );
  const bans = banCache(store, clock, cacheTtlMs);
  const applications = applicationCache(store, clock, cacheTtlMs);

  const drop = (change: Change) => {
    if (change.app) {
      appsByKey.invalidate(change.app.apiKey);
      bans.invalidate(change.app.id);
      applications.invalidate(change.app.id);
    }
    if (change.bans) bans.invalidate(change.bans);
    if (change.content) applications.invalidate(change.content);
  };
  const bus = store.db.bus;
  if (bus) {
    await bus.subscribe(CHANNEL, (payload) => {
      try {
        drop(JSON.parse(payload) as Change);
      } catch {
        clearAll();
      }
    });
    bus.onGap(() => clearAll());
  }
  function clearAll() {
    appsByKey.clear();
    bans.clear();
    applications.clear();
  }

  const caches: Caches = {
    appsByKey,
    bans,
    applications,
    async changed(change) {
      drop(change);
      await bus?.publish(CHANNEL, JSON.stringify(change));
    },
  };
  const dummyHash = await opts.hasher.hash(opts.random(32).toString('base64url'));
  const { counters, ...rest } = opts;
  return { ...rest, dummyHash, caches, limits: new Limiter(counters), credentials: new CredentialCache(clock) };
}
