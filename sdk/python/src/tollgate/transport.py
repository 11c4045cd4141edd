"""One signed exchange with the server: a fresh nonce, the exact bytes
sent, and the answer verified (docs/signing.md) before anything reads its
body. Also what the client learns from verified answers: the server's time,
new and retired kids, and the codes that drop an offline lease. HTTP is the
standard library's urllib (system proxies honoured, redirects never
followed)."""
from __future__ import annotations

import http.client
import socket
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Dict, Optional, Tuple
from urllib.parse import urlsplit

from ._encoding import compact_json, json_loads, new_nonce, sha256_hex, utf8
from .errors import FieldError, TollgateError, TollgateNetworkError, TollgateUnavailableError, TollgateVerificationError
from .state import Memory
from .types import KeyList
from .verify import CREDENTIAL_HEADERS, Pinned, SignedRequest, credentials_sha256, parse_signature_header, verify_answer

#: The verified refusals that tell the SDK to drop its lease: a ban, a revoked license, a deleted user, a device reset.
DROP_CODES = frozenset({"banned", "membership_inactive", "invalid_credentials", "invalid_license", "device_mismatch", "device_limit"})

#: How far apart the server's nodes' clocks may be.
SERVER_CLOCK_TOLERANCE_MS = 5 * 60_000
#: An unknown kid is looked up at most this often; and a failed key-list refresh is retried after this long.
UNKNOWN_KID_REFRESH_GAP_MS = 60_000
#: At most this many key-list fetches a minute for unknown kids, however many an emulator invents.
UNKNOWN_KID_LOOKUPS_PER_MINUTE = 4
#: How long answers signed by an older key are still accepted after a newer key first signed one (amendment D).
OLDER_KEY_GRACE_MS = 10 * 60_000

USER_AGENT = "tollgate-python/0.1.0"

#: Defaults of the client's `connect_timeout` and `timeout` (seconds): the same in every Tollgate SDK.
CONNECT_TIMEOUT_S = 10.0
TOTAL_TIMEOUT_S = 30.0


class Clock:
    """Wall clock and monotonic clock, both in milliseconds. Tests pass their own."""

    def now(self) -> float:
        return time.time_ns() // 1_000_000

    def monotonic(self) -> float:
        return time.monotonic_ns() / 1_000_000


@dataclass
class Outgoing:
    method: str
    #: Path and query, e.g. `/app_context`.
    path: str
    json: Any = None
    headers: Dict[str, str] = field(default_factory=dict)
    #: A user-authenticated request whose refusal may drop the offline lease (docs/signing.md).
    drops_lease: bool = False


@dataclass
class Verified:
    status: int
    headers: Any
    body: bytes
    t: int
    #: credentials_sha256 of the credential headers the request carried (whose answer this is).
    credentials: str = ""


def credential_digest(headers: Dict[str, str]) -> str:
    """The credential digest of request headers as the transport sends them (lower-case names, latin-1 view of UTF-8)."""
    return credentials_sha256({k.lower(): v.encode("latin-1") for k, v in headers.items() if k.lower() in CREDENTIAL_HEADERS})


def retry_after_seconds(value: Optional[str]) -> Optional[int]:
    """Retry-After as seconds (delta-seconds or an HTTP date), None when absent or unreadable."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return int(value)
    try:
        from email.utils import parsedate_to_datetime

        return max(0, int(parsedate_to_datetime(value).timestamp() - time.time()))
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


class _Deadline:
    """One call's time limits: `connect` for TCP and TLS set-up, and the whole call ending at `at` (monotonic s).
    The socket is kept so each read waits no longer than what is left."""

    def __init__(self, connect: float, total: float) -> None:
        self.connect = connect
        self.at = time.monotonic() + total
        self.sock: Optional[socket.socket] = None

    def left(self) -> float:
        return self.at - time.monotonic()

    def expired(self) -> bool:
        return self.left() <= 0

    def arm(self) -> None:
        """Before a read: no longer than what is left of the call (an already spent call fails at once)."""
        if self.sock is not None:
            left = self.left()
            if left <= 0:
                raise socket.timeout("the call's total timeout expired")
            self.sock.settimeout(left)


def _timed(base: Any, deadline: _Deadline) -> Any:
    class Timed(base):  # type: ignore[misc, valid-type]
        def connect(self) -> None:
            # TCP and the TLS handshake within the connect timeout (and within the call's); then reads within what is left.
            self.timeout = max(0.001, min(deadline.connect, deadline.left()))
            super().connect()
            deadline.sock = self.sock
            deadline.arm()

    return Timed


class _TimedHTTP(urllib.request.HTTPHandler):
    def __init__(self, deadline: _Deadline) -> None:
        super().__init__()
        self.deadline = deadline

    def http_open(self, req):  # noqa: D401
        return self.do_open(_timed(http.client.HTTPConnection, self.deadline), req)


class _TimedHTTPS(urllib.request.HTTPSHandler):
    def __init__(self, deadline: _Deadline) -> None:
        super().__init__()
        self.deadline = deadline

    def https_open(self, req):  # noqa: D401
        return self.do_open(_timed(http.client.HTTPSConnection, self.deadline), req, context=self._context)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    # Another target would not be what we sign over, and a 3xx is unsigned anyway: it becomes missing_signature.
    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: D401
        return None


def header_text(text: str) -> str:
    """Header values travel as bytes: send UTF-8, as the server reads them (http.client writes each char as one byte)."""
    return text.encode("utf-8").decode("latin-1")


def _network_error(message: str, err: BaseException, deadline: Optional[_Deadline]) -> TollgateNetworkError:
    cause = getattr(err, "reason", err)
    timed_out = isinstance(cause, (socket.timeout, TimeoutError)) or (deadline is not None and deadline.expired())
    return TollgateNetworkError(f"{message}: {'timed out' if timed_out else cause}", "timeout" if timed_out else "connection")


class Response:
    """An answer received, unread: status, headers and the raw stream. `deadline`: the call's total timeout, which
    bounds every read (None: each read waits up to the total timeout, as for a download's body)."""

    def __init__(self, status: int, headers: Any, stream: Any, deadline: Optional[_Deadline] = None) -> None:
        self.status = status
        self.headers = headers
        self._stream = stream
        self.deadline = deadline

    def header(self, name: str) -> Optional[str]:
        return self.headers.get(name) if self.headers is not None else None

    def read(self, size: int = -1) -> bytes:
        try:
            if self.deadline is not None:
                self.deadline.arm()
            return self._stream.read(size) if size >= 0 else self._stream.read()
        except (OSError, http.client.HTTPException, socket.timeout) as err:
            raise _network_error("tollgate: the connection broke while reading the answer", err, self.deadline) from err

    def close(self) -> None:
        try:
            self._stream.close()
        except Exception:
            pass


class Transport:
    def __init__(
        self,
        base_url: str,
        app_key: str,
        app_secret: str,
        pinned: Pinned,
        clock: Clock,
        memory: Memory,
        key_refresh_ms: float,
        timeout: float,
        proxies: Optional[Dict[str, str]] = None,
        floor: float = 0,
        connect_timeout: float = CONNECT_TIMEOUT_S,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.app_key = app_key
        self.app_secret = app_secret
        self.pinned = pinned
        self.clock = clock
        self.memory = memory
        self.key_refresh_ms = key_refresh_ms
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        #: The lowest max server time there is (amendment F): an ended key is refused before the first genuine answer.
        self.floor = floor
        self._proxies = proxies
        # Unknown kids already looked up, and when (monotonic): one lookup per kid a minute, so an emulator cannot make us loop.
        self._looked_up: Dict[str, float] = {}
        self._refreshing = False
        #: No key-list fetch on the way before this (monotonic): set a minute ahead by a failed one.
        self._retry_at = float("-inf")
        #: Whether a verified refusal (code, the user_id it names or None, the request's credential digest) may drop
        #: the stored lease (issue 21.2).
        self.may_drop: Callable[[str, Optional[str], str], bool] = lambda _code, _user_id, _digest: True

    def _opener(self, deadline: _Deadline) -> urllib.request.OpenerDirector:
        handlers: list = [_NoRedirect(), _TimedHTTP(deadline), _TimedHTTPS(deadline)]
        if self._proxies is not None:
            handlers.append(urllib.request.ProxyHandler(self._proxies))
        return urllib.request.build_opener(*handlers)

    def send(self, req: Outgoing) -> Verified:
        """Sends the request; returns the answer once verified; raises TollgateVerificationError, TollgateUnavailableError
        for a 5xx, or, for a verified refusal, TollgateError."""
        response, sent = self.fetch(req, whole=True)
        try:
            body = response.read()
        finally:
            response.close()
        return self.settle(req, sent, response, body)

    def settle(self, req: Outgoing, sent: SignedRequest, response: Response, body: bytes) -> Verified:
        """A whole answer verified and sorted: a 2xx returned; a 5xx (signed or not) and a signed 4xx raised."""
        if response.status == 413:
            # The server refused the body without reading it: its answer is signed over the empty body's hash (docs/signing.md).
            sent = replace(sent, body=b"")
        try:
            t = self.verify(sent, response, sha256_hex(body))
        except TollgateVerificationError as err:
            # An unsigned 5xx (the server's own 503 while its database is down, a proxy's error page) is an answer that
            # says "not now", not a forgery: ServiceUnavailable. A 5xx that carries a signature that fails stays forged.
            if err.verdict == "missing_signature" and response.status >= 500:
                raise TollgateUnavailableError(response.status, False, None, retry_after_seconds(response.header("retry-after"))) from None
            raise
        verified = Verified(response.status, response.headers, body, t, sent.credentials)
        if response.status >= 500:
            code = _error_body(body).get("code")
            raise TollgateUnavailableError(response.status, True, code if isinstance(code, str) else None, retry_after_seconds(response.header("retry-after")))
        if response.status >= 400:
            self.refuse(req, verified)
        return verified

    def fetch(self, req: Outgoing, whole: bool = False) -> Tuple[Response, SignedRequest]:
        """Sends the request and returns the response unread (downloads), with what was sent for a later verify().
        `whole`: the body will be read at once, so the total timeout covers it too; a download's body is read with
        each read bounded by the total timeout instead (a large file takes longer than one call)."""
        url = self.base_url + req.path
        parts = urlsplit(url)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        body = b"" if req.json is None else utf8(compact_json(req.json))
        nonce = new_nonce()
        headers = {
            "x-api-key": header_text(self.app_key),
            "x-api-secret": header_text(self.app_secret),
            "tollgate-nonce": nonce,
            "user-agent": USER_AGENT,
            "accept-encoding": "identity",
        }
        if req.json is not None:
            headers["content-type"] = "application/json"
        headers.update({k.lower(): v for k, v in req.headers.items()})
        # The credential headers exactly as they go on the wire (latin-1 view of the UTF-8 bytes): the answer is bound to them.
        credentials = credential_digest(headers)
        sent = SignedRequest(req.method, target, body, nonce, credentials)
        request = urllib.request.Request(url, data=body if req.json is not None else None, headers=headers, method=req.method)
        deadline = _Deadline(self.connect_timeout, self.timeout)
        try:
            raw = self._opener(deadline).open(request, timeout=self.timeout)
            return Response(raw.status, raw.headers, raw, deadline if whole else None), sent
        except urllib.error.HTTPError as err:  # any status >= 300: an answer like the others, verified the same way
            return Response(err.code, err.headers, err, deadline if whole else None), sent
        except (urllib.error.URLError, OSError, http.client.HTTPException, socket.timeout, ValueError) as err:
            raise _network_error(f"tollgate: {self.base_url} unreachable", err, deadline) from err

    def verify(self, sent: SignedRequest, response: Response, response_line: str) -> int:
        """Verifies an answer (steps 1-8) and records what a verified answer teaches; raises on any failure. Returns the server time."""
        signature = response.header("tollgate-signature")
        certificate = response.header("tollgate-key-cert")
        parsed = parse_signature_header(signature) if signature is not None else None
        kid = parsed.kid if parsed is not None else None
        if kid is not None and kid not in self.memory.read()[0]["known"]:
            self._refresh_keys(kid)
        state, _ = self.memory.read()
        check = verify_answer(self.pinned, set(state["retired"]), sent, response.status, signature, certificate, response_line)
        if check.verdict != "ok":
            raise TollgateVerificationError(check.verdict, response.status)
        # Beyond the contract's steps: an ended key that signs a back-dated `t` (a leaked old private key) is still
        # expired once we have seen the server's time past its end. Tolerance: several nodes' clocks differ a little.
        if check.not_after < max(state["max_server_time"], self.floor) - SERVER_CLOCK_TOLERANCE_MS:
            raise TollgateVerificationError("key_expired", response.status)
        # Key freshness fails closed (amendment D): once a newer key signed for us, an older one is as good as retired
        # 10 minutes later (rotation reaches every node within a second), even when a proxy blocks GET /signing_keys.
        now = max(max(state["max_server_time"], self.floor), state["highest_trusted_time"], self.clock.now() + state["clock_offset_ms"])
        if state["newest_not_before"] > 0 and check.not_before < state["newest_not_before"] and now >= state["newest_seen_at"] + OLDER_KEY_GRACE_MS:
            raise TollgateVerificationError("key_retired", response.status)
        self._learn(check.t, check.not_before)
        return check.t

    def _learn(self, t: int, not_before: int) -> None:
        now = self.clock.now()
        self.memory.last_tick = None  # time spent online is not offline runtime
        state, _ = self.memory.read()
        newer_key = not_before > state["newest_not_before"]

        def change(s: Dict[str, Any], _tampered: bool) -> None:
            # The server's time, from an answer to our own fresh nonce: the best clock there is. A max (amendment E): a node
            # whose clock lags, or another instance's older write, never lowers it.
            s["highest_trusted_time"] = max(s["highest_trusted_time"], t)
            s["max_server_time"] = max(s["max_server_time"], t)
            s["clock_offset_ms"] = t - now
            if not_before > s["newest_not_before"]:
                s["newest_not_before"], s["newest_seen_at"] = not_before, t

        self.memory.update(change, lazy=not newer_key, offset=True)
        if now - state["keys_fetched_at"] >= self.key_refresh_ms:
            self._refresh_keys()

    def fetch_key_list(self) -> KeyList:
        """GET /signing_keys: learns the retired kids (the set only grows) and the current ones. Raises like any call."""
        was_refreshing = self._refreshing
        self._refreshing = True  # the key list's own answer must not trigger another refresh
        try:
            res = self.send(Outgoing("GET", "/signing_keys"))
            keys = KeyList.from_json(json_loads(res.body.decode("utf-8")))

            fetched_at = self.clock.now()

            def change(s: Dict[str, Any], _tampered: bool) -> None:
                # Only a key list received counts (amendment D): a failed refresh is retried a minute later, not a day.
                s["keys_fetched_at"] = max(s["keys_fetched_at"], fetched_at)
                for k in keys.retired:
                    if k not in s["retired"]:
                        s["retired"].append(k)
                for key in keys.keys:
                    if key.kid not in s["known"]:
                        s["known"].append(key.kid)

            self.memory.update(change)
            return keys
        finally:
            self._refreshing = was_refreshing

    def _refresh_keys(self, unknown_kid: Optional[str] = None) -> None:
        """The refresh done on the way: on an unknown kid or when the daily one is due. A kid becomes known only from a
        verified key list, so an unknown kid whose lookup failed or was skipped is looked up again later."""
        if self._refreshing:
            return
        mono = self.clock.monotonic()
        if mono < self._retry_at:
            return
        if unknown_kid is not None:
            # One lookup per kid a minute and a few a minute in all: an emulator inventing kids cannot make us fetch per answer.
            for k, at in list(self._looked_up.items()):
                if mono - at >= UNKNOWN_KID_REFRESH_GAP_MS or mono < at:
                    del self._looked_up[k]
            if unknown_kid in self._looked_up or len(self._looked_up) >= UNKNOWN_KID_LOOKUPS_PER_MINUTE:
                return
            self._looked_up[unknown_kid] = mono
        try:
            self.fetch_key_list()
        except Exception:
            # Unreachable, refused, unavailable or not verifiable (docs/signing.md): go on with what we know, retried in a
            # minute. The answer that triggered the fetch is still verified on its own against the pinned root, so a
            # forged key list gains nothing: it teaches no kid and retires none.
            self._retry_at = mono + UNKNOWN_KID_REFRESH_GAP_MS

    def refuse(self, req: Outgoing, answer: Verified) -> None:
        """A verified error answer: maybe drop the lease, then raise it as a TollgateError."""
        parsed = _error_body(answer.body)
        code = parsed.get("code") if isinstance(parsed.get("code"), str) else "unknown_error"
        user_id = parsed.get("user_id") if isinstance(parsed.get("user_id"), str) else None
        if req.drops_lease and code in DROP_CODES and self.may_drop(code, user_id, answer.credentials):
            self.memory.update(lambda s, _t: s.__setitem__("dropped", True))
        detail = parsed.get("detail") if isinstance(parsed.get("detail"), str) else ""
        errors = parsed.get("errors")
        field_errors = None
        if isinstance(errors, list):
            field_errors = [FieldError(str(e.get("field", "")), str(e.get("message", ""))) for e in errors if isinstance(e, dict)]
        ban_reason = parsed.get("ban_reason") if isinstance(parsed.get("ban_reason"), str) else None
        extra = {k: v for k, v in parsed.items() if k not in ("code", "detail", "errors", "ban_reason", "user_id")}
        raise TollgateError(answer.status, code, detail, field_errors, ban_reason, user_id, extra)


def _error_body(body: bytes) -> Dict[str, Any]:
    """A verified error body's fields ({} when it is not a JSON object)."""
    try:
        value = json_loads(body.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}
