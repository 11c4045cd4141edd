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
    name = 'TollgateError';
    constructor(status, code, detail, fieldErrors, 
    /** The operator's reason of the ban (a verified `banned` answer whose ban has one); null otherwise. */
    banReason = null, 
    /** The user the refusal is about, when the request's credentials identified one (membership, device, user or license ban); null otherwise. */
    userId = null) {
        super(`${status} ${code}: ${detail}`);
        this.status = status;
        this.code = code;
        this.detail = detail;
        this.fieldErrors = fieldErrors;
        this.banReason = banReason;
        this.userId = userId;
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