import { ForeignKeyViolation, StoreMissing, StoreUnavailable, UniqueViolation, UnstorableValue } from '../store/db.js';

/**
 * What a failure of the store means to whoever answers the request, so src/http maps it without
 * knowing the store's error classes (docs/layers.md: http never imports store).
 * - `unavailable`: the database cannot serve now (down, timed out, full, its file removed): retry.
 * - `unstorable`: a value the database cannot hold (PostgreSQL text with NUL): the request's fault.
 * - `conflict`: a uniqueness or reference race the domain did not anticipate: refused, nothing half-done.
 */
export type StoreFailure = { kind: 'unavailable'; cause: string } | { kind: 'unstorable' } | { kind: 'conflict' };

/** The store failure `err` is, or null when it is not one. */
export function storeFailure(err: unknown): StoreFailure | null {
  if (err instanceof StoreUnavailable || err instanceof StoreMissing) return { kind: 'unavailable', cause: err.message };
  if (err instanceof UnstorableValue) return { kind: 'unstorable' };
  if (err instanceof UniqueViolation || err instanceof ForeignKeyViolation) return { kind: 'conflict' };
  return null;
}

/** The cross-node bus whose drops the outage log reports (src/http/outage.ts). */
export type { MessageBus } from '../store/db.js';
