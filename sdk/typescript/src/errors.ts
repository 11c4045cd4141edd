import type { AnswerVerdict } from './verify.js';
import type { LeaseVerdict } from './lease.js';

/**
 * An answer that did not verify (docs/signing.md): it may come from an
 * emulator, a replay or a tampering proxy, so nothing of it is returned.
 * Thrown, never returned, so an app cannot use such an answer by accident.
 */
export class TollgateVerificationError extends Error {
  override readonly name = 'TollgateVerificationError';
  constructor(
    readonly verdict: Exclude<AnswerVerdict, 'ok'>,
    /** The HTTP status received, for diagnostics only: it is not trusted. */
    readonly unverifiedStatus?: number,
  ) {
    super(`Tollgate answer refused: ${verdict}`);
  }
}

/** A verified error answer of the server: its status and stable `code` (src/http/errors.ts). */
export class TollgateError extends Error {
  override readonly name = 'TollgateError';
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
    readonly fieldErrors?: { field: string; message: string }[],
  ) {
    super(`${status} ${code}: ${detail}`);
  }
}

/** No usable offline lease: the verdict says why (docs/signing.md's list). */
export class TollgateLeaseError extends Error {
  override readonly name = 'TollgateLeaseError';
  constructor(readonly verdict: Exclude<LeaseVerdict, 'ok'> | 'no_lease') {
    super(`Offline lease refused: ${verdict}`);
  }
}
