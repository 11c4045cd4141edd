import type { Store } from '../store/index.js';
import type { Counters } from '../store/counters.js';
import type { AppRecord, SessionRecord, UserRecord } from '../store/records.js';
import type { BanSet } from './bans.js';
import { banCache } from './bans.js';
import { InvalidatingCache } from './cache.js';
import type { ApplicationView } from './context.js';
import { applicationCache } from './context.js';
import { CredentialCache } from './credential-cache.js';
import type { Clock, PasswordHasher, RandomSource } from './deps.js';
import { silentLog, type EventLog } from './events.js';
import { Limiter } from './limits.js';
import { keyRingCache, type KeyRing } from './signing/keys.js';
import { KeySeal } from './signing/seal.js';
import { ActivityStats } from './stats.js';
import { write } from './unit-of-work.js';
import { OutboxSignal } from './outbox/signal.js';

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
  /** The event lines (events.ts): the server's logger. */
  log: EventLog;
  /** Activity counters for the dashboard (stats.ts): counted in memory, flushed by a timer. */
  stats: ActivityStats;
  /** Seals signing private keys at rest (signing/seal.ts); off without SIGNING_KEY_SEAL. */
  seal: KeySeal;
  /** Wakes the webhook delivery workers after a commit that made deliveries due (outbox/signal.ts). */
  outbox: OutboxSignal;
}

/** What changed, so every node drops exactly what depends on it. */
export interface Change {
  /** The app's settings, secret or existence: everything cached about it (and its users, if it was deleted). */
  app?: { id: string; apiKey: string };
  /** The bans of this app. */
  bans?: string;
  /** The signing keys or root key of this app (a rotation, a certificate, a retirement). */
  keys?: string;
  /** The variables or files of this app. */
  content?: string;
  /** A user's membership, password, sessions or existence: the user and every session of theirs. */
  user?: string;
  /** One session (logout), by the digest of its token. */
  session?: string;
  /** Every cached user and session (an app and all its users were deleted). */
  allUsers?: boolean;
}

/**
 * The hot paths (/app_context, downloads) read only caches. Each is dropped
 * by the write that makes it stale, here at once and on other nodes through
 * the bus (PostgreSQL NOTIFY), and never served longer than the TTL.
 * "Not found" is never cached.
 */
export interface Caches {
  appsByKey: InvalidatingCache<AppRecord | null>;
  bans: InvalidatingCache<BanSet>;
  /** Signing keys per app id (src/domain/signing/keys.ts). */
  signingKeys: InvalidatingCache<KeyRing>;
  applications: InvalidatingCache<ApplicationView>;
  /** Sessions by token digest, tagged with their user. */
  sessions: InvalidatingCache<SessionRecord | null>;
  /** `appId \0 user id` → the user, tagged with the user id. */
  users: InvalidatingCache<UserRecord | null>;
  /** `appId \0 username key` → the user's reference, tagged with the user (a deleted user's name can be taken again). */
  userIdsByName: InvalidatingCache<UserRef | null>;
  /** `appId \0 license code` → the reference of the user created from it (immutable once used; tagged with the user). */
  userIdsByCode: InvalidatingCache<UserRef | null>;
  /** Drops what a write made stale, here at once and on every other node through the bus. */
  changed(change: Change): Promise<void>;
}

/**
 * A user found by name or code: its id, and its key in the users cache, made once when the lookup is cached
 * (a key built per request costs its concatenation and its hashing on every hot request).
 */
export interface UserRef {
  id: string;
  usersKey: string;
}

/** The users cache's key of a user (its loader splits it back at the NUL). */
export const usersKey = (appId: string, userId: string): string => `${appId}\0${userId}`;

const refOf = (appId: string, userId: string): UserRef => ({ id: userId, usersKey: usersKey(appId, userId) });

export interface ServiceOptions {
  store: Store;
  clock: Clock;
  random: RandomSource;
  hasher: PasswordHasher;
  /** Upper bound on how long any cached value may be served (the fallback if a cross-node message is lost). */
  cacheTtlMs?: number;
  /** Where rate-limit counters live; null turns every limit off. */
  counters: Counters | null;
  /** Where event lines go (default: nowhere). */
  log?: EventLog;
  /** The signing keys' sealing (default: none, keys stored plain). */
  seal?: KeySeal;
}

const CHANNEL = 'tollgate_changes';
const NOT_KEPT = 0;

export async function createServices(opts: ServiceOptions): Promise<Services> {
  const { store, clock, cacheTtlMs, counters, log = silentLog, seal = new KeySeal(null), ...rest } = opts;
  const options = { ttlMs: cacheTtlMs };
  const appsByKey = new InvalidatingCache<AppRecord | null>(async (key) => {
    const app = (await store.apps.findByKey(key)) ?? null;
    return { value: app, validUntil: app ? Infinity : NOT_KEPT };
  }, clock, options);
  const bans = banCache(store, clock, cacheTtlMs);
  const signingKeys = keyRingCache(store, clock, cacheTtlMs, seal, (appId, kid, reason) =>
    log.error({ event: 'signing_key_sealed', appId, kid, cause: reason }, 'a signing key cannot be unsealed on this node: it does not sign'),
  );
  const applications = applicationCache(store, clock, cacheTtlMs);
  const sessions = new InvalidatingCache<SessionRecord | null>(async (digest) => {
    const session = (await store.sessions.findByHash(digest)) ?? null;
    return session ? { value: session, validUntil: session.expiresAt, tag: session.userId } : { value: null, validUntil: NOT_KEPT };
  }, clock, options);
  const users = new InvalidatingCache<UserRecord | null>(async (key) => {
    const [appId, id] = key.split('\0') as [string, string];
    const user = (await store.users.findById(appId, id)) ?? null;
    return { value: user, validUntil: user ? Infinity : NOT_KEPT, tag: id };
  }, clock, options);
  const userIdsByName = new InvalidatingCache<UserRef | null>(async (key) => {
    const [appId, nameKey] = key.split('\0') as [string, string];
    const user = await store.users.findByUsernameKey(appId, nameKey);
    return user ? { value: refOf(appId, user.id), validUntil: Infinity, tag: user.id } : { value: null, validUntil: NOT_KEPT };
  }, clock, options);
  const userIdsByCode = new InvalidatingCache<UserRef | null>(async (key) => {
    const [appId, code] = key.split('\0') as [string, string];
    const license = await store.licenses.findByCode(appId, code);
    const user = license && (await store.users.findBySignupLicense(appId, license.id));
    return user ? { value: refOf(appId, user.id), validUntil: Infinity, tag: user.id } : { value: null, validUntil: NOT_KEPT };
  }, clock, options);
  const userCaches = [sessions, users, userIdsByName, userIdsByCode];
  function clearAll() {
    for (const cache of [appsByKey, bans, signingKeys, applications, ...userCaches]) (cache as InvalidatingCache<unknown>).clear();
  }
  const drop = (change: Change) => {
    if (change.app) {
      appsByKey.invalidate(change.app.apiKey);
      bans.invalidate(change.app.id);
      signingKeys.invalidate(change.app.id);
      applications.invalidate(change.app.id);
    }
    if (change.bans) bans.invalidate(change.bans);
    if (change.keys) signingKeys.invalidate(change.keys);
    if (change.content) applications.invalidate(change.content);
    if (change.user) for (const cache of userCaches) (cache as InvalidatingCache<unknown>).invalidateTag(change.user);
    if (change.session) sessions.invalidate(change.session);
    if (change.allUsers) for (const cache of userCaches) (cache as InvalidatingCache<unknown>).clear();
  };
  const bus = store.db.bus;
  if (bus) {
    await bus.subscribe(CHANNEL, (payload) => {
      try {
        const change = JSON.parse(payload) as Change;
        drop(change);
        // What kind of change, never its values (an app's API key, a session digest).
        if (log.enabled('debug')) log.debug({ kinds: Object.keys(change) }, 'cache notice heard');
      } catch {
        clearAll();
        log.debug({}, 'cache notice unreadable: every cache cleared');
      }
    });
    bus.onGap(() => {
      clearAll();
      log.debug({}, 'cache bus gap: every cache cleared');
    });
  }

  const caches: Caches = {
    appsByKey, bans, signingKeys, applications, sessions, users, userIdsByName, userIdsByCode,
    async changed(change) {
      drop(change);
      // The write has committed: a failed broadcast must not turn it into an error. Other nodes then serve
      // what they hold for at most the cache TTL (1 s), as when a notification is lost.
      await bus?.publish(CHANNEL, JSON.stringify(change)).catch(() => undefined);
    },
  };
  const dummyHash = await opts.hasher.hash(opts.random(32).toString('base64url'));
  // The counters write through the unit of work like every other write (a flush runs long after `services` exists).
  const outbox = new OutboxSignal(bus);
  await outbox.listen();
  const stats = new ActivityStats((fn) => write(services, ({ tx }) => fn(tx)), log);
  const services: Services = { ...rest, store, clock, log, seal, dummyHash, caches, limits: new Limiter(counters, log), credentials: new CredentialCache(clock), stats, outbox };
  return services;
}

/**
 * LOG_LEVEL=debug: each cache load (a miss) with its time; trace: each hit as
 * well, the fast path's included. By the cache's name only: the keys are API
 * keys, session digests, license codes and usernames. Installed only at those
 * levels, once the logger exists (wiring.ts): at info a cache pays one
 * undefined check per lookup.
 */
export function observeCaches(caches: Caches, log: EventLog): void {
  if (!log.enabled('debug')) return;
  const hits = log.enabled('trace');
  for (const [name, cache] of Object.entries(caches)) {
    if (!(cache instanceof InvalidatingCache)) continue;
    cache.observe({
      miss: (ms, kept) => log.debug({ cache: name, ms: Math.round(ms * 10) / 10, kept }, 'cache miss'),
      ...(hits && { hit: () => log.trace({ cache: name }, 'cache hit') }),
    });
  }
}
