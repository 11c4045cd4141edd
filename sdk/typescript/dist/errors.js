/** The base of every error the SDK throws about Tollgate (never thrown itself). */
export class TollgateException extends Error {
    name = 'TollgateException';
}
/** No answer arrived: connection refused or reset, DNS, TLS, or the connect or total timeout. */
export class TollgateNetworkError extends TollgateException {
    reason;
    name = 'TollgateNetworkError';
    constructor(
    /** 'timeout': the connect or total timeout expired; 'connection': anything else that stopped the exchange. */
    reason, message, options) {
        super(`Tollgate unreachable (${reason}): ${message}`, options);
        this.reason = reason;
    }
}
/**
 * A 5xx: the server (or something in front of it) cannot answer now. `verified` false: the answer was unsigned
 * (the server's own 503 while its database is down, or a proxy's 502); true: a signed 5xx, with its `code`.
 */
export class TollgateUnavailableError extends TollgateException {
    status;
    verified;
    code;
    retryAfter;
    name = 'TollgateUnavailableError';
    constructor(status, verified, 
    /** The verified answer's code; null when unverified (an unsigned body is not trusted). */
    code, 
    /** Seconds from the Retry-After header, when one came (a hint only: unverified when `verified` is false). */
    retryAfter) {
        super(`Tollgate unavailable: ${status}${code === null ? '' : ` ${code}`}${verified ? '' : ' (unverified)'}`);
        this.status = status;
        this.verified = verified;
        this.code = code;
        this.retryAfter = retryAfter;
    }
}
/**
 * An answer that did not verify (docs/signing.md): it may come from an
 * emulator, a replay or a tampering proxy, so nothing of it is returned.
 * Thrown, never returned, so an app cannot use such an answer by accident.
 */
export class TollgateVerificationError extends TollgateException {
    verdict;
    unverifiedStatus;
    name = 'TollgateVerificationError';
    constructor(verdict, 
    /** The HTTP status received, for diagnostics only: it is not trusted. */
    unverifiedStatus) {
        super(`Tollgate answer refused: ${verdict}`);
        this.verdict = verdict;
        this.unverifiedStatus = unverifiedStatus;
    }
}
/** A verified refusal (4xx) of the server: its status and stable `code` (src/http/errors.ts). Also exported as TollgateRefusedError. */
export class TollgateError extends TollgateException {
    status;
    code;
    detail;
    fieldErrors;
    banReason;
    userId;
    extra;
    name = 'TollgateError';
    constructor(status, code, detail, fieldErrors, 
    /** The operator's reason of the ban (a verified `banned` answer whose ban has one); null otherwise. */
    banReason = null, 
    /** The user the refusal is about, when the request's credentials identified one (membership, device, user or license ban); null otherwise. */
    userId = null, 
    /**
     * The refusal's other fields, verified like the rest (issue 25: `retry_after` and `last_reset_at` of
     * reset_cooldown, `in_use`, `max` and `next_free_at` of seats_exhausted).
     */
    extra = {}) {
        super(`${status} ${code}: ${detail}`);
        this.status = status;
        this.code = code;
        this.detail = detail;
        this.fieldErrors = fieldErrors;
        this.banReason = banReason;
        this.userId = userId;
        this.extra = extra;
    }
    /** reset_cooldown (and any refusal that says so): seconds until the call may be retried; null otherwise. */
    get retryAfter() {
        return typeof this.extra.retry_after === 'number' ? this.extra.retry_after : null;
    }
    /** reset_cooldown: when the user's last device reset was (ISO-8601); null otherwise. */
    get lastResetAt() {
        return typeof this.extra.last_reset_at === 'string' ? this.extra.last_reset_at : null;
    }
}
/**
 * The floating seat this client held is gone (issue 25): reported to the seat-lost listeners when it happens, then
 * thrown by the client's next call, so an app cannot miss it. Check a seat out again to go on.
 */
export class TollgateSeatLostError extends TollgateException {
    reason;
    seatId;
    name = 'TollgateSeatLostError';
    cause;
    constructor(reason, 
    /** The seat's id. */
    seatId, 
    /** The failure that ended it: the verified refusal (404, 409), or the last failed heartbeat before the expiry (null when none failed). */
    cause = null) {
        super(`Tollgate seat lost: ${reason}`);
        this.reason = reason;
        this.seatId = seatId;
        this.cause = cause;
    }
}
/** The model's name for a verified refusal. */
export { TollgateError as TollgateRefusedError };
/** No usable offline lease: the verdict says why (docs/signing.md's list). */
export class TollgateLeaseError extends TollgateException {
    verdict;
    name = 'TollgateLeaseError';
    expiresAt;
    lastSeenTime;
    runtimeLeft;
    /** checkAccess(): the online failure that led to the lease; null when the lease was checked on its own. */
    cause;
    constructor(verdict, times = {}, cause = null) {
        super(`Offline lease refused: ${verdict}`);
        this.verdict = verdict;
        this.expiresAt = times.expiresAt ?? null;
        this.lastSeenTime = times.lastSeenTime ?? null;
        this.runtimeLeft = times.runtimeLeft ?? null;
        this.cause = cause;
    }
    /** The same verdict and times, with the online failure that led to the lease check. */
    withCause(cause) {
        return new TollgateLeaseError(this.verdict, this, cause);
    }
}
//# sourceMappingURL=errors.js.map