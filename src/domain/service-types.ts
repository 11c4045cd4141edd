/**
 * What every use case is handed. Types only, so that the modules the services
 * are made of can name them without importing the assembly (services.ts),
 * which imports them all.
 */
import type { ReadStore } from '../store/index.js';
import type { Caches } from './caches.js';
import type { CredentialCache } from './credential-cache.js';
import type { Clock, PasswordHasher, RandomSource } from './deps.js';
import type { EventLog } from './events.js';
import type { Limiter } from './limits.js';
import type { KeySeal } from './signing/seal.js';
import type { OutboxSignal } from './outbox/signal.js';
import type { EgressPolicy } from './webhooks/egress.js';
import type { ActivityStats } from './stats.js';

export type { Change, Caches, UserRef } from './caches.js';

/** Everything a use case needs: the store, the injected clock, randomness and hasher, and the caches. */
export interface Services {
  /** Reads only: writes go through the unit of work (unit-of-work.ts), which holds the writable store. */
  store: ReadStore;
  clock: Clock;
  random: RandomSource;
  hasher: PasswordHasher;
  /** A hash of a random password: verified against when the user does not exist, so timing does not tell. */
  dummyHash: string;
  /** The cache registry (caches.ts). */
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
  /** Where webhooks may go (webhooks/egress.ts): public https addresses, and what WEBHOOK_ALLOW_HOSTS exempts. */
  egress: EgressPolicy;
}
