"""Offline leases (docs/signing.md, "Offline leases"): parsing the armoured
file and the ordered offline check. Pure: the rollback state and the clock
are inputs (state.py keeps them)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import AbstractSet, Any, Dict, List, Optional, Tuple

from ._encoding import b64url_decode, decode_json_object, ed25519_verify, has_exact_keys, is_safe_integer, json_loads, sha256_hex, utf8
from .verify import Pinned, certificate_covers, check_certificate_chain

#: The verdicts of a lease check, in the order they are checked.
LEASE_VERDICTS = (
    "malformed",
    "bad_certificate",
    "wrong_app",
    "bad_signature",
    "key_expired",
    "key_retired",
    "hardware_mismatch",
    "superseded",
    "dropped",
    "clock_rollback",
    "expired",
    "runtime_exhausted",
    "ok",
)

#: How far the clock may lag the highest trusted time before it is a rollback (drift, NTP steps).
ROLLBACK_TOLERANCE_MS = 5 * 60_000

BEGIN = "-----BEGIN TOLLGATE LEASE-----"
END = "-----END TOLLGATE LEASE-----"
_LEASE_FIELDS = ("v", "kid", "cert", "payload", "sig")
_PAYLOAD_FIELDS = ("lease_id", "seq", "app_id", "user_id", "hwid_hash", "is_lifetime", "active_until", "iat", "renew_after", "exp", "max_offline_runtime_s")
#: Issue 24's fields: both present (a server with entitlements) or both absent (an older lease: none, not a trial).
_PAYLOAD_FIELDS_24 = _PAYLOAD_FIELDS + ("entitlements", "is_trial")


@dataclass(frozen=True)
class LeaseEntitlement:
    code: str
    #: The latest end of the code's live grants at iat (unix ms); None when one never ends.
    until: Optional[int]


@dataclass(frozen=True)
class LeasePayload:
    lease_id: str
    seq: int
    app_id: str
    user_id: str
    hwid_hash: str
    is_lifetime: bool
    #: Membership end (unix ms), None for lifetime.
    active_until: Optional[int]
    iat: int
    renew_after: int
    exp: int
    max_offline_runtime_s: int
    #: Issue 24: one per code, sorted by code; () in an older lease.
    entitlements: Tuple[LeaseEntitlement, ...] = ()
    #: Issue 24: a trial user's lease (False in an older lease).
    is_trial: bool = False


def live_entitlements(p: LeasePayload, now: float) -> List[str]:
    """The codes of a verified lease live at trusted time `now`: present and (until None or now < until), sorted."""
    return sorted(e.code for e in p.entitlements if e.until is None or now < e.until)


@dataclass
class RollbackState:
    """The client's rollback state as the check sees it."""

    highest_trusted_time: float = 0
    highest_seq: int = 0
    runtime_used_ms: float = 0
    dropped: bool = False
    #: The highest server time the client has verified (amendment B: a lease's key that ended before it is expired).
    max_server_time: float = 0


@dataclass(frozen=True)
class ParsedLease:
    kid: str
    cert: str
    payload_bytes: bytes
    payload: LeasePayload
    sig: bytes


@dataclass(frozen=True)
class LeaseCheck:
    verdict: str
    #: Present once the lease parsed; trusted only when the verdict is ok (or a verdict after bad_signature).
    payload: Optional[LeasePayload] = None
    kid: Optional[str] = None
    #: ok only: now >= renew_after, the app should go online and renew.
    renew_due: Optional[bool] = None


def hwid_hash(app_id: str, hardware_id: str) -> str:
    return sha256_hex(f"{app_id}\n{hardware_id}")


_LINES = re.compile(r"\r?\n")


def parse_lease(file: str) -> Optional[ParsedLease]:
    if not isinstance(file, str):
        return None
    lines = _LINES.split(file.strip())
    if len(lines) < 3 or lines[0] != BEGIN or lines[-1] != END:
        return None
    o = decode_json_object("".join(lines[1:-1]))
    if o is None or not has_exact_keys(o, _LEASE_FIELDS) or not is_safe_integer(o["v"]) or o["v"] != 1:
        return None
    if not all(isinstance(o[k], str) for k in ("kid", "cert", "payload", "sig")):
        return None
    payload_bytes = b64url_decode(o["payload"])
    sig = b64url_decode(o["sig"])
    if payload_bytes is None or sig is None:
        return None
    try:
        p = json_loads(payload_bytes.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    payload = _payload(p)
    return None if payload is None else ParsedLease(o["kid"], o["cert"], payload_bytes, payload, sig)


def _entitlements(x: Any) -> Optional[Tuple[LeaseEntitlement, ...]]:
    if not isinstance(x, list):
        return None
    out = []
    for e in x:
        if not isinstance(e, dict) or not has_exact_keys(e, ("code", "until")) or not isinstance(e["code"], str):
            return None
        if e["until"] is not None and not is_safe_integer(e["until"]):
            return None
        out.append(LeaseEntitlement(e["code"], None if e["until"] is None else int(e["until"])))
    return tuple(out)


def _payload(p: Any) -> Optional[LeasePayload]:
    if not isinstance(p, dict):
        return None
    entitlements: Optional[Tuple[LeaseEntitlement, ...]] = ()
    is_trial = False
    if has_exact_keys(p, _PAYLOAD_FIELDS_24):
        entitlements = _entitlements(p["entitlements"])
        is_trial = p["is_trial"]
        if entitlements is None or not isinstance(is_trial, bool):
            return None
    elif not has_exact_keys(p, _PAYLOAD_FIELDS):
        return None
    if not all(isinstance(p[k], str) for k in ("lease_id", "app_id", "user_id", "hwid_hash")):
        return None
    if not is_safe_integer(p["seq"]) or p["seq"] < 1 or not isinstance(p["is_lifetime"], bool):
        return None
    if p["active_until"] is not None and not is_safe_integer(p["active_until"]):
        return None
    if not all(is_safe_integer(p[k]) for k in ("iat", "renew_after", "exp", "max_offline_runtime_s")):
        return None
    ints: Dict[str, Any] = {k: int(p[k]) for k in ("seq", "iat", "renew_after", "exp", "max_offline_runtime_s")}
    # Amendment B: a lease ends after it starts and within its own runtime budget.
    if ints["exp"] < ints["iat"] or ints["exp"] - ints["iat"] > ints["max_offline_runtime_s"] * 1000:
        return None
    return LeasePayload(
        lease_id=p["lease_id"],
        app_id=p["app_id"],
        user_id=p["user_id"],
        hwid_hash=p["hwid_hash"],
        is_lifetime=p["is_lifetime"],
        active_until=None if p["active_until"] is None else int(p["active_until"]),
        entitlements=entitlements,
        is_trial=is_trial,
        **ints,
    )


def check_lease(
    file: str,
    pinned: Pinned,
    retired: AbstractSet[str],
    hardware_id: str,
    state: RollbackState,
    now: float,
    tampered: bool = False,
) -> LeaseCheck:
    """The offline check, in the order of docs/signing.md (the first failure is the verdict).
    `tampered`: the stored state failed its MAC or its copies disagree (a rollback by other means)."""
    lease = parse_lease(file)
    if lease is None:
        return LeaseCheck("malformed")
    payload, kid = lease.payload, lease.kid
    verdict, cert = check_certificate_chain(lease.cert, pinned)
    if cert is None:
        return LeaseCheck(verdict, kid=kid)
    if payload.app_id != pinned.app_id:
        return LeaseCheck("wrong_app", kid=kid)
    if cert.kid != kid:
        return LeaseCheck("bad_signature", kid=kid)
    if kid in retired:
        return LeaseCheck("key_retired", kid=kid)
    # Amendment B: a lease never outlives its key, so a leaked private key of an ended key cannot mint a long one.
    if not certificate_covers(cert, payload.iat) or payload.exp > cert.not_after:
        return LeaseCheck("key_expired", kid=kid)
    if not ed25519_verify(cert.public_key_bytes, lease.sig, utf8("tollgate/lease/v1\n") + lease.payload_bytes):
        return LeaseCheck("bad_signature", kid=kid)
    # As for answers: a key that ended before the server time the client has verified is expired, whatever iat it signs.
    if cert.not_after < state.max_server_time - ROLLBACK_TOLERANCE_MS:
        return LeaseCheck("key_expired", kid=kid)
    verdict = _verdict_of_payload(payload, pinned, hardware_id, state, now, tampered)
    if verdict == "ok":
        return LeaseCheck("ok", payload, kid, now >= payload.renew_after)
    return LeaseCheck(verdict, payload, kid)


def _verdict_of_payload(p: LeasePayload, pinned: Pinned, hardware_id: str, state: RollbackState, now: float, tampered: bool) -> str:
    try:
        expected = hwid_hash(pinned.app_id, hardware_id)
    except UnicodeEncodeError:
        return "hardware_mismatch"
    if p.hwid_hash != expected:
        return "hardware_mismatch"
    if p.seq < state.highest_seq:
        return "superseded"
    if state.dropped:
        return "dropped"
    if tampered or now < max(state.highest_trusted_time, p.iat) - ROLLBACK_TOLERANCE_MS:
        return "clock_rollback"
    if now >= p.exp:
        return "expired"
    if state.runtime_used_ms >= p.max_offline_runtime_s * 1000:
        return "runtime_exhausted"
    return "ok"
