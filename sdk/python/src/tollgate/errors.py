"""Errors, raised and never returned, so an app cannot use an unverified
answer by accident. All derive from TollgateException."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional


class TollgateException(Exception):
    """The base of every error this SDK raises on purpose."""


@dataclass(frozen=True)
class FieldError:
    #: Where the problem is: body.credentials.username, querystring.limit, header.x-hardware-id…
    field: str
    message: str


class TollgateVerificationError(TollgateException):
    """An answer that did not verify (docs/signing.md): it may come from an emulator, a replay or
    a tampering proxy, so nothing of it is returned. `verdict` is the first failing check."""

    def __init__(self, verdict: str, unverified_status: Optional[int] = None) -> None:
        super().__init__(f"Tollgate answer refused: {verdict}")
        self.verdict = verdict
        #: The HTTP status received, for diagnostics only: it is not trusted.
        self.unverified_status = unverified_status


class TollgateError(TollgateException):
    """A verified refusal (a signed 4xx) of the server: its status and stable `code` (src/http/errors.ts). Also
    exported as TollgateRefusedError, the error model's name (docs/signing.md)."""

    def __init__(
        self, status: int, code: str, detail: str, field_errors: Optional[List[FieldError]] = None, ban_reason: Optional[str] = None,
        user_id: Optional[str] = None, extra: Optional[Dict[str, Any]] = None,
    ) -> None:
        super().__init__(f"{status} {code}: {detail}" + (f" ({ban_reason})" if ban_reason else ""))
        self.status = status
        self.code = code
        self.detail = detail
        #: Only on 422: every field at fault.
        self.field_errors = field_errors
        #: On `banned`: the operator's reason, when the ban has one (a signed field: show it to the user as is).
        self.ban_reason = ban_reason
        #: The user the refusal is about, when the request's credentials identified one (membership_inactive,
        #: device_mismatch, device_limit, a user or license ban); None otherwise. A signed field.
        self.user_id = user_id
        #: The refusal's other fields, verified like the rest (issue 25: retry_after and last_reset_at of
        #: reset_cooldown; in_use, max and next_free_at of seats_exhausted).
        self.extra: Dict[str, Any] = dict(extra or {})
        #: reset_cooldown: seconds until the call may be retried; None otherwise.
        self.retry_after: Optional[int] = self.extra.get("retry_after") if isinstance(self.extra.get("retry_after"), int) else None
        #: reset_cooldown: when the user's last device reset was (ISO-8601); None otherwise.
        self.last_reset_at: Optional[str] = self.extra.get("last_reset_at") if isinstance(self.extra.get("last_reset_at"), str) else None


#: The error model's name for a verified refusal.
TollgateRefusedError = TollgateError


class TollgateUnavailableError(TollgateException):
    """The service answered with a 5xx: an unsigned one (`verified` False: the server's own 503 while its database
    is down, or a proxy's error page) or a signed one (`verified` True, with its `code`). Nothing of the body is
    trusted beyond that; like a network error, the cue to use the lease (check_access does)."""

    def __init__(self, status: int, verified: bool, code: Optional[str] = None, retry_after: Optional[int] = None) -> None:
        super().__init__(f"Tollgate unavailable: {status}" + (f" {code}" if code else "") + ("" if verified else " (unverified)"))
        self.status = status
        self.verified = verified
        #: The verified error code, None when unverified.
        self.code = code
        #: Seconds, from a Retry-After header (unverified hint), else None.
        self.retry_after = retry_after


class TollgateLeaseError(TollgateException):
    """No usable offline lease: `verdict` says why (docs/signing.md's list, or `no_lease`). The times, each None when
    unknown: `expires_at` (the lease's exp, unix ms), `last_seen_time` (the highest trusted time this client
    remembers, unix ms), `runtime_left` (ms of offline runtime left). `cause`: the online failure that made
    check_access() fall back to the lease (None otherwise)."""

    def __init__(
        self,
        verdict: str,
        expires_at: Optional[int] = None,
        last_seen_time: Optional[int] = None,
        runtime_left: Optional[int] = None,
        cause: Optional[BaseException] = None,
    ) -> None:
        super().__init__(f"Offline lease refused: {verdict}")
        self.verdict = verdict
        self.expires_at = expires_at
        self.last_seen_time = last_seen_time
        self.runtime_left = runtime_left
        self.cause = cause


class TollgateNetworkError(TollgateException, ConnectionError):
    """The server could not be reached (no network, DNS, refused, TLS, a connection cut, a timeout).
    Nothing was received, so nothing was trusted: the usual cue to go offline and check the lease.
    `reason`: "timeout" (the connect or total timeout expired) or "connection" (anything else)."""

    def __init__(self, message: str, reason: str = "connection") -> None:
        super().__init__(message)
        self.reason = reason


class TollgateSeatLostError(TollgateException):
    """The floating seat this client held is gone (issue 25): given to the `on_seat_lost` callback when it happens, then
    raised by the client's next call, so an app cannot miss it. `reason`: "seat_not_found" (a verified 404: the server
    no longer has it), "conflict" (a verified 409), or "expired" (no heartbeat got through before it expired). `cause`:
    the refusal, or the last failed heartbeat (None when none failed). Check a seat out again to go on."""

    def __init__(self, reason: str, seat_id: str, cause: Optional[BaseException] = None) -> None:
        super().__init__(f"Tollgate seat lost: {reason}")
        self.reason = reason
        self.seat_id = seat_id
        self.cause = cause
