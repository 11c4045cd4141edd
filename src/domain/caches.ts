/**
 * The cache registry. The hot paths (/app_context, downloads, signing) read
 * only caches; each cached entity is ONE declaration below: what it loads, and
 * how it answers each kind of `Change`. Everything else is derived from the
 * list: the caches themselves, dropping what a write made stale (here at once,
 * on other nodes through the bus, PostgreSQL NOTIFY), clearing everything when
 * a notice is lost or unreadable, and the debug observation.
 *
 * Adding a cached entity is one declaration. Adding a kind of change is one
 * field of `Change`: every declaration must then say how it answers it (the
 * `on` map is exhaustive), or nothing compiles.
 *
 * Values are never served longer than the TTL (the bound when a notice is
 * lost) nor past their own `validUntil`; "not found" is never kept.
 */
import { randomBytes } from 'node:crypto';
import type { MessageBus } from '../store/db.js';
import type { Store } from '../store/index.js';
import type { AppRecord, SessionRecord, UserRecord } from '../store/records.js';
import { loadBans, type BanSet } from './bans.js';
import { InvalidatingCache, type CacheEntry } from './cache.js';
import { loadApplication, type ApplicationView } from './context.js';
import type { Clock } from './deps.js';
import type { EventLog } from './events.js';
import { loadKeyRing, type KeyRing } from './signing/key-ring.js';
import type { KeySeal } from './signing/seal.js';

/** What changed, so every node drops exactly what depends on it. Sent as JSON over the bus. */
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
  /** Every cached user and session of this app, by its id (the app and all its users were deleted). */
  appUsers?: string;
}

/**
 * How a cache answers one kind of change: not concerned; drop the entry whose key the change names;
 * drop every entry tagged with what the change names; drop every entry the test made from the change
 * accepts (a scan: for rare changes only); or drop everything.
 */
export type Reaction<P> =
  | 'unaffected'
  | 'clear'
  | { key: (p: P) => string }
  | { tag: (p: P) => string }
  | { where: (p: P) => (key: string, value: unknown) => boolean };

/** A reaction to every kind of change: a kind left out does not compile. */
export type Reactions = { readonly [K in keyof Change]-?: Reaction<NonNullable<Change[K]>> };

/** What a loader may use. */
export interface CacheDeps {
  store: Store;
  clock: Clock;
  seal: KeySeal;
  log: EventLog;
}

/** One cached entity. */
export interface CacheDeclaration<T> {
  /** The loader, built once from the dependencies: a key to its entry (`validUntil: 0` for what must not be kept). */
  load(deps: CacheDeps): (key: string) => Promise<CacheEntry<T>>;
  on: Reactions;
}

const declare = <T>(d: CacheDeclaration<T>): CacheDeclaration<T> => d;

/** Concerned by nothing but what `on` names. */
const NONE: Reactions = { app: 'unaffected', bans: 'unaffected', keys: 'unaffected', content: 'unaffected', user: 'unaffected', session: 'unaffected', appUsers: 'unaffected' };

const NOT_KEPT = 0;
const appId = (app: { id: string }) => app.id;
const same = (id: string) => id;

/**
 * A user found by name or code: its id, and its key in the users cache, made once when the lookup is cached
 * (a key built per request costs its concatenation and its hashing on every hot request).
 */
export interface UserRef {
  readonly id: string;
  readonly usersKey: string;
}

/** The users cache's key of a user (its loader splits it back at the NUL). */
export const usersKey = (appId: string, userId: string): string => `${appId}\0${userId}`;

const refOf = (appId: string, userId: string): UserRef => ({ id: userId, usersKey: usersKey(appId, userId) });

/** A key of the caches keyed `appId \0 …`: does it belong to this app? */
const ofApp = (appId: string) => {
  const prefix = `${appId}\0`;
  return (key: string) => key.startsWith(prefix);
};

/** Everything cached of users, keyed `appId \0 …`: dropped by the user's tag, and with every user of its app. */
const USER_SCOPED = { ...NONE, user: { tag: same }, appUsers: { where: ofApp } } as const satisfies Reactions;

/** Every cached entity. */
export const CACHES = {
  appsByKey: declare<AppRecord | null>({
    load: ({ store }) => async (key) => {
      const app = (await store.apps.findByKey(key)) ?? null;
      return { value: app, validUntil: app ? Infinity : NOT_KEPT };
    },
    on: { ...NONE, app: { key: (app) => app.apiKey } },
  }),
  bans: declare<BanSet>({ load: ({ store, clock }) => (id) => loadBans(store, clock, id), on: { ...NONE, app: { key: appId }, bans: { key: same } } }),
  /** Signing keys per app id (src/domain/signing/keys.ts). */
  signingKeys: declare<KeyRing>({
    load: ({ store, clock, seal, log }) =>
      loadKeyRing(store, clock, seal, (appId, kid, reason) =>
        log.error({ event: 'signing_key_sealed', appId, kid, cause: reason }, 'a signing key cannot be unsealed on this node: it does not sign'),
      ),
    on: { ...NONE, app: { key: appId }, keys: { key: same } },
  }),
  applications: declare<ApplicationView>({ load: ({ store }) => (id) => loadApplication(store, id), on: { ...NONE, app: { key: appId }, content: { key: same } } }),
  /** Sessions by token digest, tagged with their user. */
  sessions: declare<SessionRecord | null>({
    load: ({ store }) => async (digest) => {
      const session = (await store.sessions.findByHash(digest)) ?? null;
      return session ? { value: session, validUntil: session.expiresAt, tag: session.userId } : { value: null, validUntil: NOT_KEPT };
    },
    // Keyed by token digest: a session's app is in its record.
    on: { ...USER_SCOPED, session: { key: same }, appUsers: { where: (appId) => (_key, value) => (value as SessionRecord | null)?.appId === appId } },
  }),
  /** `appId \0 user id` → the user, tagged with the user id. */
  users: declare<UserRecord | null>({
    load: ({ store }) => async (key) => {
      const [appId, id] = key.split('\0') as [string, string];
      const user = (await store.users.findById(appId, id)) ?? null;
      return { value: user, validUntil: user ? Infinity : NOT_KEPT, tag: id };
    },
    on: USER_SCOPED,
  }),
  /** `appId \0 username key` → the user's reference, tagged with the user (a deleted user's name can be taken again). */
  userIdsByName: declare<UserRef | null>({
    load: ({ store }) => async (key) => {
      const [appId, nameKey] = key.split('\0') as [string, string];
      const user = await store.users.findByUsernameKey(appId, nameKey);
      return user ? { value: refOf(appId, user.id), validUntil: Infinity, tag: user.id } : { value: null, validUntil: NOT_KEPT };
    },
    on: USER_SCOPED,
  }),
  /** `appId \0 license code` → the reference of the user created from it (immutable once used; tagged with the user). */
  userIdsByCode: declare<UserRef | null>({
    load: ({ store }) => async (key) => {
      const [appId, code] = key.split('\0') as [string, string];
      const license = await store.licenses.findByCode(appId, code);
      const user = license && (await store.users.findBySignupLicense(appId, license.id));
      return user ? { value: refOf(appId, user.id), validUntil: Infinity, tag: user.id } : { value: null, validUntil: NOT_KEPT };
    },
    on: USER_SCOPED,
  }),
};

type Registry = typeof CACHES;
export type CacheName = keyof Registry;
type ValueOf<D> = D extends CacheDeclaration<infer T> ? T : never;

/** The caches, one per declaration, and what drops them. */
export type Caches = { readonly [N in CacheName]: InvalidatingCache<ValueOf<Registry[N]>> } & {
  /** Drops what a write made stale, here at once and on every other node through the bus. */
  changed(change: Change): Promise<void>;
};

const CHANNEL = 'tollgate_changes';
const KINDS = Object.keys(NONE) as (keyof Change)[];

/** Applies one reaction: the payload is the change's field, present. */
function react(cache: InvalidatingCache<unknown>, reaction: Reaction<never>, payload: unknown): void {
  if (reaction === 'unaffected') return;
  if (reaction === 'clear') cache.clear();
  else if ('key' in reaction) cache.invalidate((reaction.key as (p: unknown) => string)(payload));
  else if ('tag' in reaction) cache.invalidateTag((reaction.tag as (p: unknown) => string)(payload));
  else cache.invalidateWhere((reaction.where as (p: unknown) => (key: string, value: unknown) => boolean)(payload));
}

/**
 * A change as sent over the bus: with the sending node's id, as a node hears its own notices back (NOTIFY
 * reaches every listener). It dropped what they name when it sent them, after the commit, so dropping it
 * again would only lose what was loaded since, already fresh. Nodes that do not know `node` ignore it.
 */
type Notice = Change & { node?: string };

/**
 * Builds every declared cache, and subscribes them to the other nodes' changes when the store has a bus:
 * a notice drops what it names (unless this node sent it); an unreadable notice or a gap in the bus (missed
 * notices) clears everything.
 */
export async function createCaches(deps: CacheDeps, bus: MessageBus | undefined, ttlMs?: number): Promise<Caches> {
  const built = {} as Record<CacheName, InvalidatingCache<unknown>>;
  for (const name of Object.keys(CACHES) as CacheName[]) {
    built[name] = new InvalidatingCache<unknown>((CACHES[name] as CacheDeclaration<unknown>).load(deps), deps.clock, { ttlMs });
  }
  const entries = Object.entries(built) as [CacheName, InvalidatingCache<unknown>][];
  // Per kind of change, the caches concerned and how: computed once, not per change.
  const reactions = new Map<keyof Change, [InvalidatingCache<unknown>, Reaction<never>][]>();
  for (const kind of KINDS) {
    reactions.set(kind, entries.filter(([name]) => CACHES[name].on[kind] !== 'unaffected').map(([name, cache]) => [cache, CACHES[name].on[kind] as Reaction<never>]));
  }
  const drop = (change: Change) => {
    for (const kind of KINDS) {
      const payload = change[kind];
      if (payload === undefined) continue;
      for (const [cache, reaction] of reactions.get(kind)!) react(cache, reaction, payload);
    }
  };
  const clearAll = () => {
    for (const [, cache] of entries) cache.clear();
  };
  const { log } = deps;
  const self = randomBytes(9).toString('base64url');
  if (bus) {
    await bus.subscribe(CHANNEL, (payload) => {
      try {
        const { node, ...change } = JSON.parse(payload) as Notice;
        if (node !== self) drop(change);
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
  return {
    ...(built as { [N in CacheName]: InvalidatingCache<ValueOf<Registry[N]>> }),
    async changed(change) {
      drop(change);
      // The write has committed: a failed broadcast must not turn it into an error. Other nodes then serve
      // what they hold for at most the cache TTL (1 s), as when a notification is lost.
      if (bus) await bus.publish(CHANNEL, JSON.stringify({ ...change, node: self } satisfies Notice)).catch(() => undefined);
    },
  };
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
  for (const name of Object.keys(CACHES) as CacheName[]) {
    caches[name].observe({
      miss: (ms, kept) => log.debug({ cache: name, ms: Math.round(ms * 10) / 10, kept }, 'cache miss'),
      ...(hits && { hit: () => log.trace({ cache: name }, 'cache hit') }),
    });
  }
}
