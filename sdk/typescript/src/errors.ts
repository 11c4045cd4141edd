/**
 * The SDK error model (docs/signing.md, "The SDK error model"), the same in the
 * TypeScript, Python and C++ SDKs: every error the SDK throws on purpose is a
 * TollgateException, so `instanceof TollgateException` never catches a bug of
 * the app (a TypeError from `files[1].id` stays a TypeError).
 */
import type { AnswerVerdict } from './verify.js';
import type { LeaseVerdict } from './lease.js';

/** The base of every error the SDK throws about Tollgate (never thrown itself). */
export class TollgateException extends Error {
  override readonly name: string = 'TollgateException';
}

/** No answer arrived: connection refused or reset, DNS, TLS, or the connect or total timeout. */
export class TollgateNetworkError extends TollgateException {
  override readonly name = 'TollgateNetworkError';
  constructor(
    /** 'timeout': the connect or total timeout expired; 'connection': anything else that stopped the exchange. */
    readonly reason: 'timeout' | 'connection',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`Tollgate unreachable (${reason}): ${message}`, options);
  }
}

/**
 * A 5xx: the server (or something in front of it) cannot answer now. `verified` false: the answer was unsigned
 * (the server's own 503 while its database is down, or a proxy's 502); true: a signed 5xx, with its `code`.
 */
export class TollgateUnavailableError extends TollgateException {
  override readonly name = 'TollgateUnavailableError';
  constructor(
    readonly status: number,
    readonly verified: boolean,
    /** The verified answer's code; null when unverified (an unsigned body is not trusted). */
    readonly code: string | null,
    /** Seconds from the Retry-After header, when one came (a hint only: unverified when `verified` is false). */
    readonly retryAfter: number | null,
  ) {
    super(`Tollgate unavailable: ${status}${code === null ? '' : ` ${code}`}${verified ? '' : ' (unverified)'}`);
  }
}

/**
 * An answer that did not verify (docs/signing.md): it may come from an
 * emulator, a replay or a tampering proxy, so nothing of it is returned.
 * Thrown, never returned, so an app cannot use such an answer by accident.
 */
export class TollgateVerificationError extends TollgateException {
  override readonly name = 'TollgateVerificationError';
  constructor(
    readonly verdict: Exclude<AnswerVerdict, 'ok'>,
    /** The HTTP status received, for diagnostics only: it is not trusted. */
    readonly unverifiedStatus?: number,
  ) {
    super(`Tollgate answer refused: ${verdict}`);
  }
}

/** A verified refusal (4xx) of the server: its status and stable `code` (src/http/errors.ts). Also exported as TollgateRefusedError. */
export class TollgateError extends TollgateException {
  override readonly name = 'TollgateError';
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
    readonly fieldErrors?: { field: string; message: string }[],
    /** The operator's reason of the ban (a verified `banned` answer whose ban has one); null otherwise. */
    readonly banReason: string | null = null,
    /** The user the refusal is about, when the request's credentials identified one (membership, device, user or license ban); null otherwise. */
    readonly userId: string | null = null,
    /**
     * The refusal's other fields, verified like the rest (issue 25: `retry_after` and `last_reset_at` of
     * reset_cooldown, `in_use`, `max` and `next_free_at` of seats_exhausted).
     */
    readonly extra: Readonly<Record<string, unknown>> = {},
  ) {
    super(`${status} ${code}: ${detail}`);
  }

  /** reset_cooldown (and any refusal that says so): seconds until the call may be retried; null otherwise. */
  get retryAfter(): number | null {
    return typeof this.extra.retry_after === 'number' ? this.extra.retry_after : null;
  }

  /** reset_cooldown: when the user's last device reset was (ISO-8601); null otherwise. */
  get lastResetAt(): string | null {
    return typeof this.extra.last_reset_at === 'string' ? this.extra.last_reset_at : null;
  }
}

/** Why a floating seat was lost: the server no longer has it (404), refused it (409), or no heartbeat got through before it expired. */
export type SeatLostReason = 'seat_not_found' | 'conflict' | 'expired';

/**
 * The floating seat this client held is gone (issue 25): reported to the seat-lost listeners when it happens, then
 * thrown by the client's next call, so an app cannot miss it. Check a seat out again to go on.
 */
export class TollgateSeatLostError extends TollgateException {
  override readonly name = 'TollgateSeatLostError';
  override readonly cause: TollgateException | null;
  constructor(
    readonly reason: SeatLostReason,
    /** The seat's id. */
    readonly seatId: string,
    /** The failure that ended it: the verified refusal (404, 409), or the last failed heartbeat before the expiry (null when none failed). */
    cause: TollgateException | null = null,
  ) {
    super(`Tollgate seat lost: ${reason}`);
    this.cause = cause;
  }
}

/** The model's name for a verified refusal. */
export { TollgateError as TollgateRefusedError };

/** What a LeaseError knows about the lease, each null when unknown (no lease, or one that did not parse). */
export interface LeaseTimes {
  /** The lease's exp (unix ms, server time). */
  expiresAt: number | null;
  /** The highest trusted time the client remembers (unix ms). */
  lastSeenTime: number | null;
  /** Offline runtime left (ms). */
  runtimeLeft: number | null;
}

/** No usable offline lease: the verdict says why (docs/signing.md's list). */
export class TollgateLeaseError extends TollgateException {
  override readonly name = 'TollgateLeaseError';
  readonly expiresAt: number | null;
  readonly lastSeenTime: number | null;
  readonly runtimeLeft: number | null;
  /** checkAccess(): the online failure that led to the lease; null when the lease was checked on its own. */
  override readonly cause: TollgateException | null;

  constructor(
    readonly verdict: Exclude<LeaseVerdict, 'ok'> | 'no_lease',
    times: Partial<LeaseTimes> = {},
    cause: TollgateException | null = null,
  ) {
    super(`Offline lease refused: ${verdict}`);
    this.expiresAt = times.expiresAt ?? null;
    this.lastSeenTime = times.lastSeenTime ?? null;
    this.runtimeLeft = times.runtimeLeft ?? null;
    this.cause = cause;
  }

  /** The same verdict and times, with the online failure that led to the lease check. */
  withCause(cause: TollgateException): TollgateLeaseError {
    return new TollgateLeaseError(this.verdict, this, cause);
  }
}
