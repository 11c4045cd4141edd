"""TollgateClient: a typed call per client endpoint, each sent with a fresh
nonce and verified against the pinned root before its body is parsed
(docs/signing.md). A failed verification raises TollgateVerificationError; a
verified error answer raises TollgateError; no network raises
TollgateNetworkError."""
from __future__ import annotations

import atexit
import os
import threading
from typing import Any, Callable, Dict, List, Optional, Union
from urllib.parse import quote

from ._encoding import json_loads
from .download import ProgressCallback, download
from .hardware_id import hardware_id as machine_hardware_id
from .offline import Offline
from .state import Memory, StateKeeper
from .store import FileLeaseStore, LeaseStore
from .errors import TollgateError, TollgateLeaseError, TollgateNetworkError, TollgateSeatLostError, TollgateUnavailableError, TollgateVerificationError
from .seats import Heartbeat
from .transport import CONNECT_TIMEOUT_S, TOTAL_TIMEOUT_S, Clock, Outgoing, Transport, credential_digest, header_text
from .types import (
    Access,
    Activation,
    AppContext,
    DeviceReset,
    DownloadResult,
    KeyList,
    LeaseInfo,
    LicenseCodeAuth,
    PasswordAuth,
    Redemption,
    Seat,
    SeatRelease,
    Session,
    SessionAuth,
    Trial,
    User,
    UserAuth,
)
from .verify import Pinned

DAY_MS = 24 * 3600 * 1000

#: When this SDK version was released (unix ms): the default `not_before` (amendment F). Raise it with each release.
RELEASE_TIME_MS = 1795392000000  # 2026-11-23T00:00:00Z, the TypeScript SDK's SDK_RELEASED_AT
SDK_RELEASED_AT = RELEASE_TIME_MS


class _Default:
    def __repr__(self) -> str:
        return "<the client's auth>"


#: "Use the client's `auth`" (the default of the calls that take a user).
DEFAULT = _Default()
AuthArg = Union[UserAuth, None, _Default]


class TollgateClient:
    """One client per process and lease store.

    base_url: the server, e.g. https://licensing.example.com (a path prefix must reach the server unchanged: it is signed).
    app_id, root_public_key: pinned; `tollgate keys init` prints both.
    hardware_id: this device's id (sent as x-hardware-id / hardware_id, binds leases). Default:
        hardware_id(app_id) from the OS machine id, when first needed.
    lease_store: where the lease and the rollback state live. Default: files in the user's app-data folders.
    clock: wall `now()` and `monotonic()`, both in ms (tests).
    key_refresh_ms: how often the key list is refreshed when no unknown kid forces it (default one day).
    timeout: seconds a whole call may take (default 30; a download's body: each read). connect_timeout: seconds to
        connect, TLS included (default 10). Either expiring raises TollgateNetworkError with reason "timeout". proxies: a urllib ProxyHandler mapping (default: the environment's).
    not_before: a floor for the server time this install has seen (unix ms), e.g. your app's build time. Default: the
        SDK's release time (RELEASE_TIME_MS). A key that ended before it is refused from the first answer on, so a
        leaked private key of an ended key cannot sign a back-dated answer or lease for a fresh install.
    """

    def __init__(
        self,
        base_url: str,
        app_key: str,
        app_secret: str,
        app_id: str,
        root_public_key: str,
        hardware_id: Optional[str] = None,
        lease_store: Optional[LeaseStore] = None,
        clock: Optional[Clock] = None,
        key_refresh_ms: float = DAY_MS,
        timeout: float = TOTAL_TIMEOUT_S,
        proxies: Optional[Dict[str, str]] = None,
        not_before: Optional[float] = None,
        connect_timeout: float = CONNECT_TIMEOUT_S,
        on_seat_lost: Optional[Callable[[TollgateSeatLostError], None]] = None,
        release_seat_at_exit: bool = True,
    ) -> None:
        #: The user of the calls that need one; set by login() (or by you), cleared by logout().
        self.auth: Optional[UserAuth] = None
        self._hardware_id = hardware_id
        self._app_id = app_id
        self._lock = threading.Lock()
        self._hwid: Optional[str] = hardware_id
        self._store: Optional[LeaseStore] = lease_store
        pinned = Pinned(app_id, root_public_key)
        clock = clock or Clock()
        memory = Memory(lambda: StateKeeper(self._lease_store(), app_id, self._device_id()))
        # A fresh install already knows the server's time is past this (amendment F): a back-dated ended key is refused at once.
        floor = not_before if not_before is not None else RELEASE_TIME_MS
        self._transport = Transport(base_url, app_key, app_secret, pinned, clock, memory, key_refresh_ms, timeout, proxies, floor, connect_timeout)
        self._offline = Offline(pinned, clock, memory, self._lease_store, self._device_id, floor)
        #: Set by a verified leases_disabled: check_access() stops trying to renew a lease this app does not offer.
        self._leases_disabled = False
        # Whose credentials are whose (issue 21.2), in memory only: credential digest -> user id, from verified answers
        # that name the user, and the digest of the request that stored the lease in this process. Consulted only for
        # a refusal that names no user (see _about_lease_user).
        self._users: Dict[str, str] = {}
        self._lease_digest: Optional[str] = None
        self._transport.may_drop = self._about_lease_user
        self._clock = clock
        # Issue 24: what has() answers from: ("online", User) from the last verified answer carrying the user, or
        # ("lease", LeaseInfo) from the last lease check that was good; None when neither (or after a refusal,
        # a failed lease check, logout()).
        self._entitled_by: Optional[tuple] = None
        # Issue 25: the seat's heartbeat, and a lost seat not yet raised by a call.
        #: Called (on the heartbeat's thread) with a TollgateSeatLostError when a checked-out seat is lost.
        self.on_seat_lost = on_seat_lost
        self._heartbeat: Optional[Heartbeat] = None
        self._seat_lost: Optional[TollgateSeatLostError] = None
        self._release_at_exit = release_seat_at_exit
        self._exit_hooked = False

    def _device_id(self) -> str:
        with self._lock:
            if self._hwid is None:
                self._hwid = machine_hardware_id(self._app_id)
            return self._hwid

    def _lease_store(self) -> LeaseStore:
        with self._lock:
            if self._store is None:
                self._store = FileLeaseStore.for_app(self._app_id)
            return self._store

    # -- accounts ---------------------------------------------------------

    def sign_up(self, username: str, password: str, hardware_id: Optional[str] = None) -> User:
        """POST /sign_up: a user with a username and password (no membership until a license is activated)."""
        user = User.from_json(self._json(Outgoing("POST", "/sign_up", self._with_hardware({"username": username, "password": password}, hardware_id))))
        self._remember(credential_digest(self._user_headers(PasswordAuth(username, password))), user.id)
        self._entitled_by = ("online", user)
        return user

    def sign_up_with_license_code(self, code: str, hardware_id: Optional[str] = None) -> User:
        """POST /sign_up_with_license_code: a user from a license code alone (activated at once); the code is then the credential."""
        user = User.from_json(self._json(Outgoing("POST", "/sign_up_with_license_code", self._with_hardware({"code": code}, hardware_id))))
        self._remember(credential_digest(self._user_headers(LicenseCodeAuth(code))), user.id)
        self._entitled_by = ("online", user)
        return user

    def activate_license(self, code: str, username: str, password: str, hardware_id: Optional[str] = None) -> Activation:
        """POST /activate_license: a license code on an existing user's membership."""
        body = self._with_hardware({"code": code, "username": username, "password": password}, hardware_id)
        answer = self._json(Outgoing("POST", "/activate_license", body))
        if isinstance(answer, dict) and isinstance(answer.get("user"), dict):
            self._entitled_by = ("online", User.from_json(answer["user"]))
        return Activation.from_json(answer)

    def start_trial(self, hardware_id: Optional[str] = None, email: Optional[str] = None) -> Trial:
        """POST /trial (issue 24): starts, or resumes, this device's trial; the session is then the client's `auth`, as
        after login(). `hardware_id` defaults to the client's. Refusals: 403 trials_disabled, trial_used, banned."""
        body: Dict[str, Any] = {"hardware_id": hardware_id if hardware_id is not None else self._device_id()}
        if email is not None:
            body["email"] = email
        trial = Trial.from_json(self._json(Outgoing("POST", "/trial", body)))
        self.auth = SessionAuth(trial.session_token)
        self._entitled_by = ("online", trial.user)
        return trial

    def redeem(self, code: str, auth: AuthArg = DEFAULT) -> Redemption:
        """POST /redeem (issue 24): the user of `auth` (default the client's; a trial's session too, which has no password
        for activate_license()) redeems a license code, and a trial converts. The answer's user is remembered as
        get_app_context()'s is. Refusals (TollgateError): 401 invalid_license or license_used, 403 banned, 422. Its
        refusals never drop the lease: a bad code says nothing about the user."""
        res = self._transport.send(Outgoing("POST", "/redeem", {"code": code}, headers=self._user_headers(auth)))
        answer = Redemption.from_json(json_loads(res.body.decode("utf-8")))
        self._remember(res.credentials, answer.user.id)
        self._entitled_by = ("online", answer.user)  # a converted trial's entitlements, at once
        return answer

    def login(self, username: Optional[str] = None, password: Optional[str] = None, *, code: Optional[str] = None, hardware_id: Optional[str] = None) -> Session:
        """POST /auth/login with a username and password, or a license code (`code=`); the session is then the client's `auth`."""
        if (code is None) == (username is None):
            raise ValueError("tollgate: login() takes a username and password, or code=, not both")
        credentials = {"code": code} if code is not None else {"username": username, "password": password or ""}
        session = Session.from_json(self._json(Outgoing("POST", "/auth/login", self._with_hardware({"credentials": credentials}, hardware_id))))
        self.auth = SessionAuth(session.session_token)
        return session

    def logout(self) -> None:
        """POST /auth/logout: revokes the session of login()."""
        if not isinstance(self.auth, SessionAuth):
            raise ValueError("tollgate: logout() needs a session (log in first)")
        self._transport.send(Outgoing("POST", "/auth/logout", headers=self._user_headers(self.auth)))
        self.auth = None
        self._entitled_by = None

    # -- the app ----------------------------------------------------------

    def get_app_context(self, auth: AuthArg = DEFAULT) -> AppContext:
        """GET /app_context: the application (variables, files) and the user; `auth` defaults to the client's (None: anonymous)."""
        self._raise_if_seat_lost()
        try:
            res = self._transport.send(Outgoing("GET", "/app_context", headers=self._user_headers(auth), drops_lease=True))
        except TollgateError:
            # A verified refusal says this user gets nothing now: has() stops answering from an older answer.
            self._entitled_by = None
            raise
        context = AppContext.from_json(json_loads(res.body.decode("utf-8")))
        if context.user is not None:
            self._remember(res.credentials, context.user.id)
        self._entitled_by = None if context.user is None else ("online", context.user)
        return context

    def download_file(self, file_id: str, destination: Union[str, "os.PathLike[str]"], on_progress: Optional[ProgressCallback] = None, auth: AuthArg = DEFAULT) -> DownloadResult:
        """GET /files/{id}/download into `destination`, resuming an interrupted download (destination.part), renamed only once
        the whole file matches the SHA-256 the server signed. `on_progress(received, total)`."""
        self._raise_if_seat_lost()
        path = f"/files/{quote(file_id, safe='')}/download"
        return download(self._transport, Outgoing("GET", path, headers=self._user_headers(auth), drops_lease=True), os.fspath(destination), on_progress)

    # -- offline ----------------------------------------------------------

    def create_lease(self, auth: AuthArg = DEFAULT) -> LeaseInfo:
        """POST /lease: an offline lease for this user and device, kept in the lease store."""
        self._raise_if_seat_lost()
        headers = self._user_headers(auth)
        headers["x-hardware-id"] = header_text(self._device_id())  # a lease is bound to a device: none, no lease
        res = self._transport.send(Outgoing("POST", "/lease", headers=headers, drops_lease=True))
        info = self._offline.keep(res.body.decode("utf-8"), res.t)
        self._remember(res.credentials, info.user_id)
        self._lease_digest = res.credentials
        return info

    def check_lease(self) -> LeaseInfo:
        """The stored lease, checked without network; raises TollgateLeaseError with the verdict unless it is good.
        Call it at start and periodically (every minute or so) while offline: it counts the offline runtime."""
        try:
            lease = self._offline.check()
        except TollgateLeaseError:
            if self._entitled_by is not None and self._entitled_by[0] == "lease":
                self._entitled_by = None
            raise
        self._entitled_by = ("lease", lease)
        return lease

    def stored_lease(self):
        """The stored lease's payload, decoded but NOT checked (for display), or None."""
        return self._offline.stored()

    def check_access(self, auth: AuthArg = DEFAULT) -> Access:
        """Online when it can be, else the lease, exactly as docs/signing.md's error model says: GET /app_context; a
        verified 2xx is `Access("online", context)` (and the lease is renewed, best effort, when none is stored, it
        is another user's, it was dropped or it is due). When no answer from Tollgate arrived (TollgateNetworkError, TollgateUnavailableError, or an unsigned
        answer: verdict missing_signature) the stored lease is checked: `Access("lease", lease=…, cause=…)`, or
        TollgateLeaseError with `cause`. A verified refusal (TollgateError) and a forged answer (any other verdict)
        are raised: never a reason to run on the lease."""
        self._raise_if_seat_lost()
        try:
            context = self.get_app_context(auth)
        except (TollgateNetworkError, TollgateUnavailableError) as err:
            return self._lease_access(err)
        except TollgateVerificationError as err:
            if err.verdict != "missing_signature":
                raise
            return self._lease_access(err)
        if context.user is not None:
            self._renew_lease(auth, context.user.id)
        return Access("online", context=context)

    def _lease_access(self, cause: BaseException) -> Access:
        try:
            lease = self.check_lease()
        except TollgateLeaseError as err:
            err.cause = cause
            raise err from cause
        return Access("lease", lease=lease, cause=cause)

    def _renew_lease(self, auth: AuthArg, user_id: str) -> None:
        if self._leases_disabled:
            return
        try:
            if not self._offline.needs_lease(user_id):
                return
            self.create_lease(auth)
        except TollgateError as err:
            # Best effort: online access was already verified. An app without leases is not asked again.
            self._leases_disabled = err.code == "leases_disabled"
        except Exception:  # noqa: BLE001 - a failed renewal never turns granted access into an error
            pass

    # -- entitlements (issue 24) --------------------------------------------

    def has(self, code: str) -> bool:
        """Whether the user holds entitlement `code` now: online from the last verified answer carrying the user
        (get_app_context(), check_access(), sign-up, start_trial()), offline from the lease the last check_lease() (or
        check_access() falling back) found good: the code present and its `until` not reached on the trusted clock.
        False when neither is known: an unsigned or unverified answer never grants anything."""
        return code in self.entitlements()

    def entitlements(self) -> List[str]:
        """The entitlement codes the user holds now (sorted), by the rule of has()."""
        self._raise_if_seat_lost()
        by = self._entitled_by
        if by is None:
            return []
        if by[0] == "online":
            return sorted(by[1].membership.entitlements)
        now = self._offline.server_now()
        lease = by[1]
        if now >= lease.expires_at:
            return []
        return sorted(e.code for e in lease.entitlements if e.until is None or now < e.until)

    def is_trial(self) -> bool:
        """Whether the user is a trial user: membership.is_trial online, the lease's is_trial offline; False when unknown."""
        self._raise_if_seat_lost()
        by = self._entitled_by
        if by is None:
            return False
        if by[0] == "online":
            return by[1].membership.is_trial
        return by[1].is_trial and self._offline.server_now() < by[1].expires_at

    # -- floating seats (issue 25) -----------------------------------------

    def checkout_seat(self, auth: AuthArg = DEFAULT) -> Seat:
        """POST /seats: checks a floating seat out for this device (the same seat again if it holds one) and starts the
        heartbeat (POST /seats/heartbeat at a third of heartbeat_seconds, on a daemon thread; a failed beat is retried
        before the seat expires). A lost seat (404 seat_not_found, a 409, or the expiry passed with no beat through)
        is given to `on_seat_lost` and raised as TollgateSeatLostError by the next call. 409 seats_exhausted
        (err.extra: in_use, max, next_free_at) and seats_not_enabled are raised as TollgateError."""
        self._seat_lost = None
        headers = self._seat_headers(auth)
        seat, sent_at = self._seat_call("POST", "/seats", headers)
        if self._heartbeat is not None:
            self._heartbeat.stop(join=False)
        holder: Dict[str, Heartbeat] = {}
        hb = Heartbeat(
            seat, sent_at, lambda: self._seat_call("POST", "/seats/heartbeat", headers), self._clock.monotonic,
            lambda err: self._lose_seat(holder.get("hb"), err),
        )
        holder["hb"] = hb
        self._heartbeat = hb
        if self._release_at_exit and not self._exit_hooked:
            atexit.register(self.close)
            self._exit_hooked = True
        return seat

    @property
    def seat(self) -> Optional[Seat]:
        """The seat held now, as its last heartbeat confirmed it; None when none."""
        return self._heartbeat.seat if self._heartbeat is not None else None

    @property
    def seat_state(self) -> str:
        """"held" while the heartbeat runs, "lost" from a loss until a call has raised it, else "none"."""
        return "lost" if self._seat_lost is not None else "held" if self._heartbeat is not None else "none"

    def release_seat(self, auth: AuthArg = DEFAULT) -> SeatRelease:
        """DELETE /seats: stops the heartbeat and releases this device's seat. A seat an offline lease holds (issue 25)
        stays taken on the server until the lease ends, whatever the device says: the answer is then released False
        with held_until, and the stored lease is kept, so the device may go on offline until then. Any other answer
        (released, or no seat) drops the stored lease; a failed call keeps it (nothing was freed)."""
        hb, self._heartbeat = self._heartbeat, None
        if hb is not None:
            hb.stop(join=False)
        self._seat_lost = None
        self._unhook_exit()
        answer = SeatRelease.from_json(self._json(Outgoing("DELETE", "/seats", headers=self._seat_headers(auth))))
        if answer.held_until is None and self._offline.stored() is not None:
            self._offline.drop()
        return answer

    def close(self) -> None:
        """Clean shutdown: releases the seat when one is held (errors ignored: the server frees it when its heartbeats
        stop). Called at interpreter exit while a seat is held, and by `with TollgateClient(...) as tg:`."""
        self._unhook_exit()
        if self._heartbeat is None:
            return
        try:
            self.release_seat()
        except Exception:  # noqa: BLE001 - best effort at shutdown
            pass

    def __enter__(self) -> "TollgateClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _unhook_exit(self) -> None:
        if self._exit_hooked:
            atexit.unregister(self.close)
            self._exit_hooked = False

    def _seat_headers(self, auth: AuthArg) -> Dict[str, str]:
        headers = self._user_headers(auth)
        headers["x-hardware-id"] = header_text(self._device_id())  # a seat is this device's: none, no seat
        return headers

    def _seat_call(self, method: str, path: str, headers: Dict[str, str]):
        sent_at = self._clock.monotonic()
        return Seat.from_json(self._json(Outgoing(method, path, headers=dict(headers)))), sent_at

    def _lose_seat(self, hb: Optional[Heartbeat], err: TollgateSeatLostError) -> None:
        if hb is None or self._heartbeat is not hb:
            return
        self._heartbeat = None
        self._seat_lost = err
        self._unhook_exit()
        if self.on_seat_lost is not None:
            self.on_seat_lost(err)

    def _raise_if_seat_lost(self) -> None:
        lost, self._seat_lost = self._seat_lost, None
        if lost is not None:
            raise lost

    # -- device self-reset (issue 25) --------------------------------------

    def reset_devices(self, auth: AuthArg = DEFAULT) -> DeviceReset:
        """POST /devices/reset: frees the user's devices (as the operator's reset does). It ends every session of the
        user, this client's included: a session `auth` is cleared (log in again). Refusals: 429 reset_cooldown
        (err.retry_after seconds, err.last_reset_at), 403 reset_disabled, 403 banned."""
        used = self.auth if isinstance(auth, _Default) else auth
        answer = DeviceReset.from_json(self._json(Outgoing("POST", "/devices/reset", headers=self._user_headers(auth))))
        if isinstance(used, SessionAuth) and self.auth == used:
            self.auth = None
        return answer

    # -- keys -------------------------------------------------------------

    def get_signing_keys(self) -> KeyList:
        """GET /signing_keys; also refreshes the retired kids the client refuses."""
        return self._transport.fetch_key_list()

    # -- plumbing ---------------------------------------------------------

    def _remember(self, digest: str, user_id: str) -> None:
        self._users[digest] = user_id

    def _about_lease_user(self, code: str, user_id: Optional[str], digest: str) -> bool:
        """Whether a verified refusal with a drop code is about the stored lease's user (issue 21.2, docs/signing.md).
        The server names the user it refused (`user_id`) whenever the credentials identified one: that decides. A
        `banned` naming nobody is an IP or hardware-id ban, this machine's. Any other refusal naming nobody
        (invalid_credentials, invalid_license) drops the lease only for credentials this process knows are the lease
        user's: a stranger's wrong password must not end the lease."""
        stored = self._offline.stored()
        if stored is None:
            return True  # no lease to protect: the drop marks the state as before
        if user_id is not None:
            return user_id == stored.user_id
        if code == "banned":
            return True
        return digest == self._lease_digest or self._users.get(digest) == stored.user_id

    def _json(self, req: Outgoing) -> Any:
        res = self._transport.send(req)
        # Parsed only now: the bytes were verified first.
        return None if not res.body else json_loads(res.body.decode("utf-8"))

    def _with_hardware(self, body: Dict[str, Any], hardware_id: Optional[str]) -> Dict[str, Any]:
        # The default hardware id goes on every call that takes one (amendment F), not only on /lease.
        hwid = hardware_id if hardware_id is not None else self._device_id_or_none()
        if hwid is not None:
            body["hardware_id"] = hwid
        return body

    def _device_id_or_none(self) -> Optional[str]:
        """The app's hardware id, else the default hardware_id(app_id); None only when the OS has no machine id and the
        app gave none (the call then goes without, as the server allows; a lease still needs one)."""
        try:
            return self._device_id()
        except RuntimeError:
            return None

    def _user_headers(self, auth: AuthArg) -> Dict[str, str]:
        if isinstance(auth, _Default):
            auth = self.auth
        h: Dict[str, str] = {}
        if isinstance(auth, SessionAuth):
            h["authorization"] = f"Bearer {auth.session_token}"
        elif isinstance(auth, LicenseCodeAuth):
            h["x-api-license-code"] = header_text(auth.license_code)
        elif isinstance(auth, PasswordAuth):
            h["x-api-username"] = header_text(auth.username)
            h["x-api-password"] = header_text(auth.password)
        elif auth is not None:
            raise TypeError("tollgate: auth is SessionAuth, LicenseCodeAuth, PasswordAuth or None")
        hwid = self._device_id_or_none()
        if hwid is not None:
            h["x-hardware-id"] = header_text(hwid)
        return h
