/**
 * The cache registry (src/domain/caches.ts): every cache, what drops it, the
 * cross-node subscription and clear-all are derived from one declaration per
 * entity. Two nodes on an in-memory bus: a change on one drops exactly what the
 * declarations say, here and on the other; an unreadable notice or a gap clears
 * everything. The expected table is the hand-kept drop of the code before the
 * registry, so the derivation changes nothing.
 */
import { describe, expect, it } from 'vitest';
import type { InvalidatingCache } from '../src/domain/cache.js';
import { CACHES, createCaches, usersKey, type CacheName, type Caches, type Change, type Reactions } from '../src/domain/caches.js';
import { silentLog } from '../src/domain/events.js';
import { KeySeal } from '../src/domain/signing/seal.js';
import type { MessageBus } from '../src/store/db.js';
import type { Store } from '../src/store/index.js';

const FAR = 4_000_000_000_000;
const app = { id: 'app1', apiKey: 'key1', name: 'A', apiSecretHash: 'x', rootPublicKey: null };
const user = { id: 'u1', appId: 'app1', username: 'alice' };

/** Just what the loaders read: one app with one user, one session and one used license. */
const store = {
  apps: { findByKey: async (key: string) => (key === app.apiKey ? app : undefined), findById: async () => app },
  bans: { active: async () => [] },
  signingKeys: { all: async () => [] },
  variables: { list: async () => [] },
  files: { list: async () => [] },
  sessions: { findByHash: async () => ({ id: 's1', appId: 'app1', userId: 'u1', expiresAt: FAR }) },
  users: { findById: async () => user, findByUsernameKey: async () => user, findBySignupLicense: async () => user },
  licenses: { findByCode: async () => ({ id: 'l1' }) },
  db: {},
} as unknown as Store;

/** A key of each cache that the store above answers. */
const KEYS: Record<CacheName, string> = {
  appsByKey: 'key1', bans: 'app1', signingKeys: 'app1', applications: 'app1',
  sessions: 'digest1', users: usersKey('app1', 'u1'), userIdsByName: 'app1\0alice', userIdsByCode: 'app1\0CODE',
};

/** One change of each kind, and what it dropped before the registry (services.ts kept it by hand). */
const KINDS: { change: Change; drops: CacheName[] }[] = [
  { change: { app: { id: 'app1', apiKey: 'key1' } }, drops: ['appsByKey', 'bans', 'signingKeys', 'applications'] },
  { change: { bans: 'app1' }, drops: ['bans'] },
  { change: { keys: 'app1' }, drops: ['signingKeys'] },
  { change: { content: 'app1' }, drops: ['applications'] },
  { change: { user: 'u1' }, drops: ['sessions', 'users', 'userIdsByName', 'userIdsByCode'] },
  { change: { session: 'digest1' }, drops: ['sessions'] },
  // An app deleted with its users: that app's users and sessions only (before, every app's: `allUsers`).
  { change: { appUsers: 'app1' }, drops: ['sessions', 'users', 'userIdsByName', 'userIdsByCode'] },
  { change: { appUsers: 'app2' }, drops: [] },
];

/** A bus between the nodes made on it: a publication reaches every subscriber at once, its sender's included (as NOTIFY does). */
function memoryBus() {
  const handlers: ((payload: string) => void)[] = [];
  const gaps: (() => void)[] = [];
  const bus: MessageBus = {
    subscribe: async (_channel, handler) => void handlers.push(handler),
    publish: async (_channel, payload) => handlers.forEach((h) => h(payload)),
    onGap: (handler) => void gaps.push(handler),
    onConnection: () => undefined,
  };
  return { bus, deliver: (payload: string) => handlers.forEach((h) => h(payload)), gap: () => gaps.forEach((g) => g()) };
}

/** A bus that holds its notices until `flush` (as NOTIFY reaches the listeners after the commit, later). */
function lateBus() {
  const handlers: ((payload: string) => void)[] = [];
  const queued: string[] = [];
  const bus: MessageBus = {
    subscribe: async (_channel, handler) => void handlers.push(handler),
    publish: async (_channel, payload) => void queued.push(payload),
    onGap: () => undefined,
    onConnection: () => undefined,
  };
  return { bus, flush: () => queued.splice(0).forEach((p) => handlers.forEach((h) => h(p))) };
}

const node = (bus: MessageBus) => createCaches({ store, clock: () => 1_000, seal: new KeySeal(null), log: silentLog }, bus, 60_000);
const names = Object.keys(CACHES) as CacheName[];
const cache = (caches: Caches, name: CacheName) => caches[name] as InvalidatingCache<unknown>;

async function warm(caches: Caches): Promise<void> {
  for (const name of names) await cache(caches, name).get(KEYS[name]);
  for (const name of names) expect(cache(caches, name).peek(KEYS[name]), name).toBeDefined();
}

const held = (caches: Caches) => names.filter((name) => cache(caches, name).peek(KEYS[name]) !== undefined);

describe('the cache registry', () => {
  it('every kind of change is declared by every cache, and the table below covers every kind', () => {
    const kinds = new Set(KINDS.flatMap(({ change }) => Object.keys(change)));
    for (const name of names) expect(Object.keys(CACHES[name].on).sort(), name).toEqual([...kinds].sort());
  });

  for (const { change, drops } of KINDS) {
    it(`${JSON.stringify(change)} drops ${drops.join(', ') || 'nothing'}, on this node and on the other`, async () => {
      const { bus } = memoryBus();
      const [here, there] = [await node(bus), await node(bus)];
      await warm(here);
      await warm(there);
      await here.changed(change);
      const kept = names.filter((n) => !drops.includes(n));
      expect(held(here)).toEqual(kept);
      expect(held(there)).toEqual(kept);
    });
  }

  it("a node's own notice, heard back, drops nothing it loaded since its own drop; the other node drops it", async () => {
    const { bus, flush } = lateBus();
    const [here, there] = [await node(bus), await node(bus)];
    await warm(here);
    await warm(there);
    await here.changed({ user: 'u1' });
    expect(held(here)).toEqual(['appsByKey', 'bans', 'signingKeys', 'applications']); // dropped at once, here
    await warm(here); // loaded again after the commit: fresh
    flush();
    expect(held(here)).toEqual(names);
    expect(held(there)).toEqual(['appsByKey', 'bans', 'signingKeys', 'applications']);
  });

  it("a notice of a node that does not name itself (a node of before) is applied, by the sender's own caches too", async () => {
    const { bus, deliver } = memoryBus();
    const caches = await node(bus);
    await warm(caches);
    deliver(JSON.stringify({ bans: 'app1' }));
    expect(held(caches)).not.toContain('bans');
  });

  it('an unreadable notice, or a gap in the bus, clears every cache of the node that heard it', async () => {
    const { bus, deliver, gap } = memoryBus();
    const caches = await node(bus);
    await warm(caches);
    deliver('{not json');
    expect(held(caches)).toEqual([]);
    await warm(caches);
    gap();
    expect(held(caches)).toEqual([]);
  });

  it('a reaction left out for a kind of change does not compile', () => {
    // @ts-expect-error appUsers is missing: a cache must say how it answers every kind of change
    const forgetful: Reactions = { app: 'unaffected', bans: 'unaffected', keys: 'unaffected', content: 'unaffected', user: 'unaffected', session: 'unaffected' };
    expect(Object.keys(forgetful)).not.toContain('appUsers');
  });
});
