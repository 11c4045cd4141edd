"""Errors, raised and never returned, so an app cannot use an unverified
answer by accident. All derive from TollgateException."""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional


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
    """A verified error answer of the server: its status and stable `code` (src/http/errors.ts)."""

    def __init__(self, status: int, code: str, detail: str, field_errors: Optional[List[FieldError]] = None) -> None:
        super().__init__(f"{status} {code}: {detail}")
        self.status = status
        self.code = code
        self.detail = detail
        #: Only on 422: every field at fault.
        self.field_errors = field_errors


class TollgateLeaseError(TollgateException):
    """No usable offline lease: `verdict` says why (docs/signing.md's list, or `no_lease`)."""

    def __init__(self, verdict: str) -> None:
        super().__init__(f"Offline lease refused: {verdict}")
        self.verdict = verdict


class TollgateNetworkError(TollgateException, ConnectionError):
    """The server could not be reached (no network, DNS, refused, timeout, a connection cut).
    Nothing was received, so nothing was trusted: the usual cue to go offline and check the lease."""
