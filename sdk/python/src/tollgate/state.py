"""The client's memory between runs: the rollback state of docs/signing.md
(highest trusted time, highest seq, offline runtime used, dropped) and what
it learned about keys. Kept in two places with an HMAC whose key derives from
the app id and the hardware id: the same record, key and files as the
TypeScript SDK. This stops casual clock games (set the clock back, delete or
edit a file, copy the files to another machine), not a patched program: the
key derivation ships inside the app."""
from __future__ import annotations

import hashlib
import threading
from contextlib import contextmanager
from typing import Any, Callable, Dict, Iterator, Optional, Tuple

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
        # One copy gone (a cleaner, a lost folder) is not tampering: the other is whole and its MAC holds.
        if a is not None or b is not None:
            return (a if a is not None else b), False
        # Both gone while a lease is kept: someone wiped the state to reset the clock and the runtime.
        return fresh_state(), self.store.read_lease() is not None

    def save(self, state: Dict[str, Any]) -> None:
        text = compact_json(state)
        record = compact_json({"state": text, "mac": self.mac(text)})
        self.store.write_state(0, record)
        self.store.write_state(1, record)


def merge(disk: Dict[str, Any], mine: Dict[str, Any], own_offset: bool = True) -> Dict[str, Any]:
    """What two instances of the app on one machine know together (amendment E): the max of the times, the seq and
    the runtime used, the OR of dropped, the union of the kids. Runtime and dropped belong to a lease: the copy with
    the newer lease (higher seq) brings its own. The clock offset is this instance's once it has learned one."""
    out = dict(mine)
    if disk["highest_seq"] > mine["highest_seq"]:
        out["runtime_used_ms"], out["dropped"] = disk["runtime_used_ms"], disk["dropped"]
    elif disk["highest_seq"] == mine["highest_seq"]:
        out["runtime_used_ms"] = max(disk["runtime_used_ms"], mine["runtime_used_ms"])
        out["dropped"] = disk["dropped"] or mine["dropped"]
    for k in ("highest_seq", "highest_trusted_time", "max_server_time", "keys_fetched_at"):
        out[k] = max(disk[k], mine[k])
    if disk["newest_not_before"] > mine["newest_not_before"]:
        out["newest_not_before"], out["newest_seen_at"] = disk["newest_not_before"], disk["newest_seen_at"]
    elif disk["newest_not_before"] == mine["newest_not_before"]:
        out["newest_seen_at"] = min(disk["newest_seen_at"], mine["newest_seen_at"])
    for k in ("retired", "known"):
        out[k] = list(disk[k]) + [x for x in mine[k] if x not in disk[k]]
    if not own_offset:
        out["clock_offset_ms"] = disk["clock_offset_ms"]
    return out


#: How far the remembered server time may move before it is written again (a write per answer would be wasteful).
TIME_WRITE_STEP_MS = 60_000


class _NoLock:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


class Memory:
    """The state in memory. Every write first takes the store's lock, re-reads the stored state and merges it
    (another instance of the app may have written since), then writes both copies: two instances neither undo
    each other's drop nor make the copies disagree (amendment E)."""

    def __init__(self, open_keeper: Callable[[], StateKeeper]) -> None:
        self._open = open_keeper
        self._keeper: Optional[StateKeeper] = None
        self._state: Dict[str, Any] = fresh_state()
        self._tampered = False
        self._own_offset = False
        self._depth = 0
        self._file_lock: Any = None
        self._last_written_time: float = 0
        #: Monotonic reading of the last offline check in this process (runtime is counted between checks).
        self.last_tick: Optional[float] = None
        self.lock = threading.RLock()

    def _load(self) -> StateKeeper:
        with self.lock:
            if self._keeper is None:
                keeper = self._open()
                self._keeper = keeper
                with self.locked():
                    pass  # locked() re-read the stored state
                self._last_written_time = self._state["highest_trusted_time"]
            return self._keeper

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Holds the thread lock and the store's lock (re-entrant) with the stored state merged into memory."""
        with self.lock:
            keeper = self._keeper if self._keeper is not None else self._load()
            if self._depth == 0:
                lock = getattr(keeper.store, "lock", None)
                self._file_lock = lock() if lock is not None else _NoLock()
                self._file_lock.__enter__()
            self._depth += 1
            try:
                if self._depth == 1:
                    self._sync(keeper)
                yield
            finally:
                self._depth -= 1
                if self._depth == 0:
                    held, self._file_lock = self._file_lock, None
                    held.__exit__(None, None, None)

    def _sync(self, keeper: StateKeeper) -> None:
        disk, tampered = keeper.load()
        if tampered:
            self._tampered = True  # kept in memory as it is; never written back over the evidence
        else:
            self._state = merge(disk, self._state, self._own_offset)
            self._tampered = False

    def read(self) -> Tuple[Dict[str, Any], bool]:
        """The state as this instance knows it (merged at the last lock); not a fresh read of the files."""
        with self.lock:
            self._load()
            return self._state, self._tampered

    def update(self, change: Callable[[Dict[str, Any]], None], reset: bool = False, lazy: bool = False, offset: bool = False) -> None:
        """Changes the state and writes it to both copies, merged with what is stored. `reset` starts again from a fresh
        state (a new lease from the server). `lazy`: a time-only change, written once it moved a minute. `offset`: the
        change sets this instance's own clock offset."""
        with self.lock:
            self._load()
            if offset:
                self._own_offset = True
            if lazy:
                change(self._state)
                if abs(self._state["highest_trusted_time"] - self._last_written_time) < TIME_WRITE_STEP_MS:
                    return
            with self.locked():
                if reset:
                    kept = {k: self._state[k] for k in ("retired", "known", "keys_fetched_at", "max_server_time", "newest_not_before", "newest_seen_at")}
                    self._state = fresh_state()
                    self._state.update(kept)
                    self._tampered = False
                if not lazy:
                    change(self._state)
                # A tampered state is not written back (not even its time): only a new lease from the server clears it.
                if self._tampered:
                    return
                self._last_written_time = self._state["highest_trusted_time"]
                self._keeper.save(self._state)
