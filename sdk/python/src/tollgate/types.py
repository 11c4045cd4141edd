"""The client API's types, as in the server's /openapi.json (the same
schemas as sdk/typescript/src/api-types.ts; a test checks them against the
running server's document). Built from verified answers only; fields the
document adds later are ignored, so an older SDK keeps working."""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Dict, List, Literal, Optional, Tuple, Union

#: Every stable error `code` the server may send (ErrorBody.code in /openapi.json).
ERROR_CODES: Tuple[str, ...] = (
    "invalid_app_credentials", "invalid_admin_token", "validation_error", "username_taken", "invalid_license",
    "license_used", "invalid_credentials", "session_expired", "device_required", "device_mismatch", "device_limit",
    "membership_inactive", "banned", "anonymous_not_allowed", "registration_closed", "file_not_found", "rate_limited",
    "payload_too_large", "not_found", "conflict", "range_not_satisfiable", "service_unavailable", "nonce_required",
    "leases_disabled", "not_authenticated", "totp_required", "invalid_totp", "csrf_failed", "forbidden",
    "dashboard_not_built", "invalid_client_address", "bad_request", "request_timeout", "headers_too_large",
    "internal_error",
    # issues 24 and 25 (the wire contract of trials, seats and device self-reset)
    "trials_disabled", "trial_used", "hardware_id_required", "seats_exhausted", "seats_not_enabled", "seat_not_found",
    "reset_cooldown", "reset_disabled",
    # issue 23: a store's webhook whose signature does not verify (server-to-server, never a client's answer)
    "invalid_signature",
)

ErrorCode = Literal[
    "invalid_app_credentials", "invalid_admin_token", "validation_error", "username_taken", "invalid_license",
    "license_used", "invalid_credentials", "session_expired", "device_required", "device_mismatch", "device_limit",
    "membership_inactive", "banned", "anonymous_not_allowed", "registration_closed", "file_not_found", "rate_limited",
    "payload_too_large", "not_found", "conflict", "range_not_satisfiable", "service_unavailable", "nonce_required",
    "leases_disabled", "not_authenticated", "totp_required", "invalid_totp", "csrf_failed", "forbidden",
    "dashboard_not_built", "invalid_client_address", "bad_request", "request_timeout", "headers_too_large",
    "internal_error",
    "trials_disabled", "trial_used", "hardware_id_required", "seats_exhausted", "seats_not_enabled", "seat_not_found",
    "reset_cooldown", "reset_disabled",
    "invalid_signature",
]


def _pick(cls, d: Dict[str, Any]) -> Dict[str, Any]:
    if not isinstance(d, dict):
        raise ValueError(f"{cls.__name__}: expected a JSON object")
    return {f.name: d[f.name] for f in fields(cls) if f.name in d}


@dataclass(frozen=True)
class Membership:
    is_active: bool
    is_lifetime: bool
    #: ISO 8601, None for lifetime.
    active_until: Optional[str]
    #: Issue 24: the entitlement codes the user holds (sorted); () from an older server.
    entitlements: Tuple[str, ...] = ()
    #: Issue 24: True for a trial user (absent, so False, otherwise).
    is_trial: bool = False

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Membership":
        picked = _pick(cls, d)
        picked["entitlements"] = tuple(str(e) for e in (d.get("entitlements") or []))
        picked["is_trial"] = d.get("is_trial") is True
        return cls(**picked)


@dataclass(frozen=True)
class User:
    id: str
    username: str
    membership: Membership

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "User":
        return cls(id=d["id"], username=d["username"], membership=Membership.from_json(d["membership"]))


@dataclass(frozen=True)
class ApplicationVariable:
    name: str
    value: str

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "ApplicationVariable":
        return cls(**_pick(cls, d))


@dataclass(frozen=True)
class ApplicationFile:
    id: str
    name: str
    mime_type: str
    is_encrypted: bool

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "ApplicationFile":
        return cls(**_pick(cls, d))


@dataclass(frozen=True)
class Application:
    id: str
    name: str
    variables: List[ApplicationVariable]
    files: List[ApplicationFile]

    def variable(self, name: str) -> Optional[str]:
        """The value of a variable, or None."""
        return next((v.value for v in self.variables if v.name == name), None)

    def file(self, name: str) -> Optional[ApplicationFile]:
        """The file of that name, or None."""
        return next((f for f in self.files if f.name == name), None)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Application":
        return cls(
            id=d["id"],
            name=d["name"],
            variables=[ApplicationVariable.from_json(v) for v in d["variables"]],
            files=[ApplicationFile.from_json(f) for f in d["files"]],
        )


@dataclass(frozen=True)
class AppContext:
    application: Application
    #: None for an anonymous request (when the application allows it).
    user: Optional[User]
    server_time: str

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "AppContext":
        return cls(
            application=Application.from_json(d["application"]),
            user=None if d.get("user") is None else User.from_json(d["user"]),
            server_time=d["server_time"],
        )


@dataclass(frozen=True)
class Activation:
    id: str
    occurred_at: str
    minutes: Optional[int]
    grants_lifetime_access: bool
    revokes_lifetime_access: bool
    license_id: str
    type: str

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Activation":
        return cls(**_pick(cls, d))


@dataclass(frozen=True)
class Redemption:
    """POST /redeem's answer (issue 24): the activation as activate_license() answers it, and the user after it."""
    activation: Activation
    user: User

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Redemption":
        return cls(activation=Activation.from_json(d["activation"]), user=User.from_json(d["user"]))


@dataclass(frozen=True)
class Session:
    #: Send as Authorization: Bearer <session_token> (the client does it for you after login()).
    session_token: str

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Session":
        return cls(**_pick(cls, d))


@dataclass(frozen=True)
class SigningKey:
    kid: str
    #: tollgate/keycert/v1, verified by the pinned root.
    certificate: str
    status: str

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "SigningKey":
        return cls(**_pick(cls, d))


@dataclass(frozen=True)
class KeyList:
    keys: List[SigningKey]
    #: Kids to refuse from now on (the set only grows).
    retired: List[str]

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "KeyList":
        return cls(keys=[SigningKey.from_json(k) for k in d["keys"]], retired=[str(k) for k in d["retired"]])


# How a call authenticates its user: a session (after login), a license code, or a username and password.
@dataclass(frozen=True)
class SessionAuth:
    session_token: str


@dataclass(frozen=True)
class LicenseCodeAuth:
    license_code: str


@dataclass(frozen=True)
class PasswordAuth:
    username: str
    password: str = ""

    def __repr__(self) -> str:  # never print a password
        return f"PasswordAuth(username={self.username!r}, password=***)"


UserAuth = Union[SessionAuth, LicenseCodeAuth, PasswordAuth]


@dataclass(frozen=True)
class LeaseInfo:
    lease_id: str
    user_id: str
    seq: int
    is_lifetime: bool
    #: Membership end (unix ms), None for lifetime.
    active_until: Optional[int]
    issued_at: int
    #: The lease stops working offline at this time (unix ms, server time).
    expires_at: int
    renew_after: int
    #: Past renew_after: go online and call create_lease() when you can.
    renew_due: bool
    #: Offline runtime used and allowed, in ms.
    runtime_used_ms: float
    runtime_budget_ms: int
    #: Issue 24: the lease's entitlements (LeaseEntitlement: code, until in unix ms or None); () in an older lease.
    entitlements: Tuple[Any, ...] = ()
    #: Issue 24: a trial user's lease.
    is_trial: bool = False


@dataclass(frozen=True)
class DownloadResult:
    path: str
    size: int
    sha256: str
    #: True when earlier bytes were kept and only the rest was fetched.
    resumed: bool


@dataclass(frozen=True)
class Access:
    """What check_access() found: `source` "online" with the verified `context`, or "lease" with the checked `lease`
    and `cause`, the online failure that made it fall back (no answer from Tollgate arrived)."""

    source: str
    context: Optional[AppContext] = None
    lease: Optional[LeaseInfo] = None
    cause: Optional[BaseException] = None


@dataclass(frozen=True)
class Trial:
    """POST /trial's answer: the session (kept in the client's `auth`, as login() does) and the trial user."""

    session_token: str
    user: User

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Trial":
        return cls(session_token=d["session_token"], user=User.from_json(d["user"]))


@dataclass(frozen=True)
class Seat:
    """A floating seat as POST /seats or its heartbeat last answered it (times ISO-8601, server time)."""

    id: str
    checked_out_at: str
    expires_at: str
    heartbeat_seconds: float
    #: The user's pool when last answered.
    max: int
    in_use: int
    server_time: str

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Seat":
        seat, seats = d["seat"], d["seats"]
        return cls(seat["id"], seat["checked_out_at"], seat["expires_at"], seat["heartbeat_seconds"], seats["max"], seats["in_use"], d["server_time"])


@dataclass(frozen=True)
class SeatRelease:
    #: False when this device held no seat, or when an offline lease holds it (then held_until is set).
    released: bool
    server_time: str
    #: When an offline lease holds the seat: the time it frees up (the lease's exp, ISO-8601); None otherwise. Such a
    #: seat stays taken on the server until then, whatever the device says.
    held_until: Optional[str] = None

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "SeatRelease":
        return cls(**_pick(cls, d))


@dataclass(frozen=True)
class DeviceReset:
    reset_at: str
    #: When the user may reset again; None when nothing limits it.
    next_reset_at: Optional[str]
    devices_removed: int
    server_time: str

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "DeviceReset":
        return cls(**_pick(cls, d))
