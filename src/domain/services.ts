/**
 * Assembles the services from their parts; decides nothing. The types are
 * service-types.ts (re-exported here for the layers above the domain), the
 * caches and what drops them caches.ts, the unit of work unit-of-work.ts.
 */
import type { Counters } from '../store/counters.js';
import type { Store } from '../store/index.js';
import { createCaches } from './caches.js';
import { CredentialCache } from './credential-cache.js';
import type { Clock, PasswordHasher, RandomSource } from './deps.js';
import { silentLog, type EventLog } from './events.js';
import { Limiter } from './limits.js';
import type { Services } from './service-types.js';
import { KeySeal } from './signing/seal.js';
import { ActivityStats } from './stats.js';
import { readOnly, write } from './unit-of-work.js';
import { OutboxSignal } from './outbox/signal.js';
import { EgressPolicy } from './webhooks/egress.js';

/** For the layers above the domain, which name the services by the module that makes them. */
export type { Services } from './service-types.js';

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
  /** WEBHOOK_ALLOW_HOSTS (default: none: only public https addresses). */
  webhookAllow?: readonly string[];
}

export async function createServices(opts: ServiceOptions): Promise<Services> {
  const { store, clock, cacheTtlMs, counters, log = silentLog, seal = new KeySeal(null), webhookAllow = [], ...rest } = opts;
  const caches = await createCaches({ store, clock, seal, log }, store.db.bus, cacheTtlMs);
  const dummyHash = await opts.hasher.hash(opts.random(32).toString('base64url'));
  const outbox = new OutboxSignal(store.db.bus);
  await outbox.listen();
  // The counters write through the unit of work like every other write (a flush runs long after `services` exists).
  const stats = new ActivityStats((fn) => write(services, ({ tx }) => fn(tx)), log);
  const services: Services = { ...rest, store: readOnly(store), clock, log, seal, dummyHash, caches, limits: new Limiter(counters, log), credentials: new CredentialCache(clock), stats, outbox, egress: new EgressPolicy(webhookAllow) };
  return services;
}
