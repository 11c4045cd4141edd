/**
 * Domain errors carry a stable code and a human sentence. Only src/http/
 * knows which HTTP status a code becomes (see src/http/errors.ts).
 */
export type ErrorCode =
  | 'invalid_app_credentials'
  | 'invalid_admin_token'
  | 'validation_error'
  | 'username_taken'
  | 'invalid_license'
  | 'license_used'
  | 'invalid_credentials'
  | 'session_expired'
  | 'device_required'
  | 'device_mismatch'
  | 'device_limit'
  | 'membership_inactive'
  | 'banned'
  | 'anonymous_not_allowed'
  | 'registration_closed'
  | 'file_not_found'
  | 'rate_limited'
  | 'payload_too_large'
  | 'not_found'
  | 'conflict'
  | 'range_not_satisfiable'
  | 'service_unavailable'
  | 'invalid_client_address'
  | 'nonce_required'
  | 'leases_disabled'
  | 'trials_disabled'
  | 'trial_used'
  | 'not_authenticated'
  | 'totp_required'
  | 'invalid_totp'
  | 'csrf_failed'
  | 'forbidden'
  | 'dashboard_not_built'
  | 'hardware_id_required'
  | 'seats_exhausted'
  | 'seats_not_enabled'
  | 'seat_not_found'
  | 'reset_cooldown'
  | 'reset_disabled';

export interface FieldError {
  field: string;
  message: string;
}

export class DomainError extends Error {
  readonly code: ErrorCode;
  readonly fieldErrors: FieldError[] | undefined;
  /**
   * The user the refusal is about, when the request's credentials identified one (membership, device, user and
   * license bans). http/ sends it only in signed answers, so an SDK drops only that user's lease (issue 21.2).
   */
  userId: string | undefined = undefined;

  constructor(code: ErrorCode, detail?: string, fieldErrors?: FieldError[]) {
    super(detail ?? code);
    this.name = 'DomainError';
    this.code = code;
    this.fieldErrors = fieldErrors;
  }

  /**
   * Fields of the refusal besides detail and code, sent signed and unsigned alike (issue 25: a full pool's
   * in_use/max/next_free_at, a cooldown's retry_after/last_reset_at). `retry_after` also becomes Retry-After.
   */
  extra: Readonly<Record<string, string | number>> | undefined = undefined;

  with(extra: Record<string, string | number>): this {
    this.extra = extra;
    return this;
  }

  /** Names the user the refusal is about (see userId). */
  forUser(userId: string | undefined): this {
    this.userId = userId;
    return this;
  }

  /** Whether the caller supplied its own sentence (else http uses the table's). */
  get hasDetail(): boolean {
    return this.message !== this.code;
  }
}

/**
 * A ban refusal. `banReason` is the operator's reason of the ban that matched (null when it has none);
 * http/ sends it only in signed answers, so unsigned answers keep the seed's bytes (decisions.md, issue 27).
 */
export class BannedError extends DomainError {
  readonly banReason: string | null;

  constructor(detail: string, banReason: string | null) {
    super('banned', detail);
    this.banReason = banReason;
  }
}

export function validationError(field: string, message: string): DomainError {
  return new DomainError('validation_error', `Invalid request: ${field} ${message}`, [{ field, message }]);
}
