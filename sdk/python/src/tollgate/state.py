"""The client's memory between runs: the rollback state of docs/signing.md
(highest trusted time, highest seq, offline runtime used, dropped) and what
it learned about keys. Kept in two places with an HMAC whose key derives from
the app id and the hardware id: the same record, key and files as the
TypeScript SDK. While a lease is stored both copies must be present, valid and
equal. This stops casual clock games (set the clock back, delete, edit or
restore one file, copy the files to another machine), not a patched program
nor a user who restores every file together: the key derivation ships inside
the app."""
from __future__ import annotations

import hashlib
import threading
from typing import Any, Callable, Dict, Optional, Tuple

from ._encoding import compact_json, equal_constant_time, hmac_sha256_hex, is_safe_integer, json_loads, utf8
from .lease import RollbackState
from .store import LeaseStore

#: The fields and their order (JSON.stringify of the TypeScript SDK's freshState()).
def fresh_state() -> Dict[str, Any]:
    return {
        "highest_trusted_time": 0,
        "highest_seq": 0,
        "runtime_used_ms": 0,
        "dropped": False,
        # Kids learned from GET /signing_keys as retired: the set only grows.
        "retired": [],
        # Kids seen in verified answers or key lists: an unknown one triggers a key-list refresh.
        "known": [],
        # When the key list was last fetched (local clock), for the daily refresh.
        "keys_fetched_at": 0,
        # Server time minus local clock at the last verified answer: offline checks run on server-aligned time.
        "clock_offset_ms": 0,
        # The latest server time of any verified answer (only grows): a key that ended before it is expired.
        "max_server_time": 0,
        # The newest key (by its certificate's not_before) a verified answer was signed by, and the server time of
        # that first answer: 10 minutes later, answers signed by older keys are refused (amendment D).
        "newest_not_before": 0,
        "newest_seen_at": 0,
    }


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and x == x and abs(x) != float("inf")


def _valid(s: Dict[str, Any]) -> bool:
    nums = ("highest_trusted_time", "runtime_used_ms", "keys_fetched_at", "clock_offset_ms", "max_server_time", "newest_not_before", "newest_seen_at")
    return (
        all(_number(s[k]) for k in nums)
        and is_safe_integer(s["highest_seq"])
        and isinstance(s["dropped"], bool)
        and all(isinstance(s[k], list) and all(isinstance(x, str) for x in s[k]) for k in ("retired", "known"))
    )


def rollback_view(s: Dict[str, Any], runtime_used_ms: Optional[float] = None) -> RollbackState:
    return RollbackState(
        s["highest_trusted_time"], s["highest_seq"], s["runtime_used_ms"] if runtime_used_ms is None else runtime_used_ms, s["dropped"],
        s["max_server_time"],
    )


class StateKeeper:
    """Reads and writes the MAC'd record `{"state": "<json>", "mac": "<hex HMAC-SHA256>"}` in both slots."""

    def __init__(self, store: LeaseStore, app_id: str, hardware_id: str) -> None:
        self.store = store
        self._key = hashlib.sha256(utf8(f"tollgate/state-mac/v1\n{app_id}\n{hardware_id}")).digest()

    def mac(self, text: str) -> str:
        return hmac_sha256_hex(self._key, utf8(text))

    def _open(self, record: Optional[str]):
        if record is None:
            return None
        try:
            o = json_loads(record)
            state, mac = o["state"], o["mac"]
            if not isinstance(state, str) or not isinstance(mac, str) or not equal_constant_time(mac, self.mac(state)):
                return "bad"
            parsed = json_loads(state)
            if not isinstance(parsed, dict):
                return "bad"
            merged = fresh_state()
            merged.update(parsed)
            return merged if _valid(merged) else "bad"
        except (ValueError, KeyError, TypeError, UnicodeEncodeError, RecursionError):
            return "bad"

    def load(self) -> Tuple[Dict[str, Any], bool]:
        """(state, tampered): the copies disagreed, a MAC failed, or a lease exists with no state at all."""
        a, b = self._open(self.store.read_state(0)), self._open(self.store.read_state(1))
        if a == "bad" or b == "bad":
            return fresh_state(), True
        if a is not None and b is not None:
            return (a, False) if compact_json(a) == compact_json(b) else (fresh_state(), True)
        # While a lease is kept both copies must be there (issue 21.1): one restored from a backup with the other deleted
        # would otherwise bring back an older clock, runtime or drop. Only a new lease (which writes both) clears it.
        # Without a lease there is nothing to protect: the surviving copy still carries what was learned about keys.
        if self.store.read_lease() is not None:
            return fresh_state(), True
        if a is not None or b is not None:
            return (a if a is not None else b), False
        return fresh_state(), False

    def save(self, state: Dict[str, Any]) -> None:
        text = compact_json(state)
        record = compact_json({"state": text, "mac": self.mac(text)})
        self.store.write_state(0, record)
        self.store.write_state(1, record)


def merge(disk: Dict[str, Any], mine: Dict[str, Any], own_offset: bool) -> Dict[str, Any]:
    """What two instances of the app on one machine know together (amendment E; the TypeScript SDK's merge()): `disk`
    as just re-read under the lock, `mine` what this instance holds (its lazily written times included). The times
    and the key-list time are the max; the kids the union; the newest key the one with the later not_before. The seq,
    runtime used and `dropped` belong to one lease: for the same lease (seq) the max and the OR, otherwise the stored
    state's, which is the newer (every change of them is written at once, under the lock): a new lease fetched by the
    other instance clears a drop, and a drop by the other instance holds. The clock offset is this instance's once
    it measured one."""
    same_lease = disk["highest_seq"] == mine["highest_seq"]
    newer = mine if mine["newest_not_before"] > disk["newest_not_before"] else disk
    return {
        "highest_trusted_time": max(disk["highest_trusted_time"], mine["highest_trusted_time"]),
        "highest_seq": disk["highest_seq"],
        "runtime_used_ms": max(disk["runtime_used_ms"], mine["runtime_used_ms"]) if same_lease else disk["runtime_used_ms"],
        "dropped": (disk["dropped"] or mine["dropped"]) if same_lease else disk["dropped"],
        "retired": list(disk["retired"]) + [k for k in mine["retired"] if k not in disk["retired"]],
        "known": list(disk["known"]) + [k for k in mine["known"] if k not in disk["known"]],
        "keys_fetched_at": max(disk["keys_fetched_at"], mine["keys_fetched_at"]),
        "clock_offset_ms": mine["clock_offset_ms"] if own_offset else disk["clock_offset_ms"],
        "max_server_time": max(disk["max_server_time"], mine["max_server_time"]),
        "newest_not_before": newer["newest_not_before"],
        "newest_seen_at": min(disk["newest_seen_at"], mine["newest_seen_at"])
        if disk["newest_not_before"] == mine["newest_not_before"]
        else newer["newest_seen_at"],
    }


#: How far the remembered server time may move before it is written again (a write per answer would be wasteful).
TIME_WRITE_STEP_MS = 60_000

#: The fields that outlive a lease: what the client learned online (kept by a reset).
LEARNED = ("retired", "known", "keys_fetched_at", "clock_offset_ms", "max_server_time", "newest_not_before", "newest_seen_at")

#: A change to the state: (state, tampered) -> None, or False to skip the write (nothing worth keeping changed).
Change = Callable[[Dict[str, Any], bool], Optional[bool]]


class Memory:
    """The client's state, shared with every other instance of the app on this machine that uses the same store
    (amendment E): each read and each update re-reads the stored state under the store's lock and merges in what this
    instance holds, and an update writes both copies before the lock is let go. So two instances neither undo each
    other's drop nor lock the user out (one copy read while the other was being written looked like tampering).
    The same rules as the TypeScript SDK's Memory."""

    def __init__(self, open_keeper: Callable[[], StateKeeper]) -> None:
        self._open = open_keeper
        self._keeper: Optional[StateKeeper] = None
        #: What this instance knows: the state as last read or written, with the times learned since and not yet written.
        self._mine: Dict[str, Any] = fresh_state()
        self._own_offset = False
        self._last_written_time: float = 0
        self._held = False
        #: Monotonic reading of the last offline check in this process (runtime is counted between checks).
        self.last_tick: Optional[float] = None
        #: This instance's threads take turns (re-entrant); the store's lock orders instances.
        self.lock = threading.RLock()

    def _locked(self, fn: Callable[[StateKeeper, Dict[str, Any], bool], Any]) -> Any:
        """Runs fn(keeper, state, tampered) under the store's lock with the stored state re-read and merged with ours."""
        with self.lock:
            if self._keeper is None:
                self._keeper = self._open()
            keeper = self._keeper
            if self._held:  # already inside: the state in hand is current
                raise RuntimeError("tollgate: state lock taken twice")
            store_lock = getattr(keeper.store, "lock", None)
            self._held = True
            try:
                with (store_lock() if store_lock is not None else _NoLock()):
                    loaded, tampered = keeper.load()
                    # A tampered state reads as a fresh one (its lease-bound values untrusted), keeping what we learned online.
                    return fn(keeper, merge(loaded, self._mine, self._own_offset), tampered)
            finally:
                self._held = False

    def read(self) -> Tuple[Dict[str, Any], bool]:
        """The state now: re-read from the store (another instance may have written since), merged with ours."""

        def take(_keeper: StateKeeper, state: Dict[str, Any], tampered: bool):
            self._mine = state
            return state, tampered

        return self._locked(take)

    def update(self, change: Change, reset: bool = False, lazy: bool = False, offset: bool = False) -> None:
        """Re-reads, merges, applies `change` and writes both copies, under the lock. `reset` starts again from a fresh
        state (a new lease from the server) keeping what was learned online; `lazy` is a time-only change, written once
        the time moved a minute; `offset` says the change measured this instance's clock offset."""
        with self.lock:
            if offset:
                self._own_offset = True
            if lazy:
                change(self._mine, False)
                if abs(self._mine["highest_trusted_time"] - self._last_written_time) < TIME_WRITE_STEP_MS:
                    return

            def write(keeper: StateKeeper, state: Dict[str, Any], tampered: bool) -> None:
                s = state
                if reset:
                    s = fresh_state()
                    for k in LEARNED:
                        s[k] = state[k]
                    tampered = False
                wanted = True if lazy else change(s, tampered)
                self._mine = s
                # A tampered state is not written back (not even its time): only a new lease from the server clears it.
                if tampered or wanted is False:
                    return
                self._last_written_time = s["highest_trusted_time"]
                keeper.save(s)

            self._locked(write)


class _NoLock:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None
