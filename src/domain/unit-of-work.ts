import type { TransactionOptions } from '../store/db.js';
import type { ReadStore, Repositories, Store } from '../store/index.js';
import type { AuditAction } from './admin/actions.js';
import type { AdminServices } from './admin/audit.js';
import { events } from './events.js';
import { uuidv7 } from './ids.js';
import type { EventType } from './outbox/catalogue.js';
import { recordEvent, type Recorded } from './outbox/record.js';
import type { Change, Services } from './service-types.js';

/** What a write may do besides its statements: record itself, and name what it makes stale. */
export interface Work {
  /** The repositories of this transaction. Read through them too: what the answer needs is taken before COMMIT. */
  readonly tx: Repositories;
  /** Caches to drop here and on every other node, once the change has committed. */
  changed(change: Change): void;
  /**
   * Legacy credentials of this user to forget, once the change has committed: on this node only, and that is
   * enough. An entry counts only while the user's stored password hash is the one it verified against, read from
   * the users cache that the same write's `changed({ user })` drops on every node; bans and devices are checked
   * on every request anyway. Forgetting here frees the memory at once and is the second lock, not the only one.
   */
  forgetUser(userId: string): void;
  /**
   * Records an event of the catalogue (outbox/catalogue.ts) in this transaction, with its webhook deliveries:
   * it exists iff the change commits. `data` is the object after the change, never a secret. `only`: delivered to
   * that endpoint alone, whatever the subscriptions (the test event).
   */
  emit(type: EventType, appId: string | null, data: object, only?: string): Promise<Recorded>;
}

/** An admin write also records who did what, in the same transaction as the change. */
export interface AdminWork extends Work {
  audit(action: AuditAction, appId: string | null, targetId: string | null, details: Record<string, unknown>): Promise<void>;
}

/**
 * The unit of work: every write that changes state goes through here, and
 * nothing else opens a transaction or writes the audit log.
 *
 * 1. `fn` runs in ONE transaction with the audit record of an admin write:
 *    both commit or neither does, so no change goes unrecorded and no record
 *    names a change that did not happen.
 * 2. Only after COMMIT are caches dropped (here and, through the bus, on the
 *    other nodes) and legacy credentials forgotten: a rolled-back change
 *    never touches them.
 * 3. Nothing after COMMIT can fail the request: publication failures are
 *    swallowed (other nodes then serve what they hold for at most the cache
 *    TTL), so a committed write is never answered as an error. Each audit
 *    entry is then also an event line (events.ts), without its details. `fn` returns
 *    the answer, read inside the transaction.
 *
 * The event outbox lives here too: `emit` writes the event and its webhook
 * deliveries in step 1, and step 2 wakes the delivery workers (outbox/).
 *
 * Only here are repositories writable: the services hold the store as a
 * `ReadStore` (reads only), and the writable store is reached through the
 * registration below, which nothing else can read.
 */
const writable = new WeakMap<ReadStore, Store>();

/** The assembly (services.ts) hands the store over once; the services keep only its read-only face. */
export function readOnly(store: Store): ReadStore {
  writable.set(store, store);
  return store;
}

function writableStore(s: Services): Store {
  const store = writable.get(s.store);
  if (store === undefined) throw new Error('these services were not assembled by createServices: no unit of work for their store');
  return store;
}

/**
 * `options.oneStatement`: `fn` runs exactly one statement (and emits and audits nothing); on PostgreSQL it goes
 * without BEGIN and COMMIT, a statement being atomic by itself (store/db.ts). The delivery worker's claims and
 * records use it: two round trips fewer each, on the same event loop as the requests.
 */
export function write<T>(s: AdminServices, fn: (w: AdminWork) => Promise<T>, options?: TransactionOptions): Promise<T>;
export function write<T>(s: Services, fn: (w: Work) => Promise<T>, options?: TransactionOptions): Promise<T>;
export async function write<T>(s: Services & { actor?: string; reqId?: string }, fn: (w: AdminWork) => Promise<T>, options?: TransactionOptions): Promise<T> {
  const changes: Change[] = [];
  const forgotten: string[] = [];
  const audited: { actor: string; action: AuditAction; appId: string | null; targetId: string | null }[] = [];
  let deliveries = 0;
  const result = await writableStore(s).transaction((tx) =>
    fn({
      tx,
      changed: (change) => void changes.push(change),
      forgetUser: (userId) => void forgotten.push(userId),
      emit: async (type, appId, data, only) => {
        const recorded = await recordEvent(tx, s.clock(), type, appId, data, only);
        deliveries += recorded.deliveries;
        return recorded;
      },
      audit: async (action, appId, targetId, details) => {
        if (s.actor === undefined) throw new Error(`audit of ${action} outside an admin request`);
        // Time-ordered ids keep write order among entries of the same millisecond (the log lists newest first by (at, id)).
        await tx.admin.insertAudit({ id: uuidv7(), at: s.clock(), actor: s.actor, action, appId, targetId, details });
        audited.push({ actor: s.actor, action, appId, targetId });
      },
    }),
    options,
  );
  for (const userId of forgotten) s.credentials.forgetUser(userId);
  for (const change of changes) await s.caches.changed(change).catch(() => undefined);
  for (const entry of audited) events.adminWrite(s, entry, s.reqId);
  if (deliveries > 0) s.outbox.committed();
  return result;
}
