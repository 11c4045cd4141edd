"""The offline side of the client: storing a lease fetched online and
checking it without network, with the runtime counted on a monotonic clock
between checks and the time aligned on the server's (the offset learned from
the last verified answer), so a wrong but steady local clock is no rollback
while a clock set back is."""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional

from .errors import TollgateLeaseError
from .lease import LeasePayload, RollbackState, check_lease, parse_lease
from .state import Memory, rollback_view
from .store import LeaseStore
from .transport import Clock
from .types import LeaseInfo
from .verify import Pinned


def _info(p: LeasePayload, renew_due: bool, used: float) -> LeaseInfo:
    return LeaseInfo(
        lease_id=p.lease_id,
        user_id=p.user_id,
        seq=p.seq,
        is_lifetime=p.is_lifetime,
        active_until=p.active_until,
        issued_at=p.iat,
        expires_at=p.exp,
        renew_after=p.renew_after,
        renew_due=renew_due,
        runtime_used_ms=used,
        runtime_budget_ms=p.max_offline_runtime_s * 1000,
        entitlements=p.entitlements,
        is_trial=p.is_trial,
    )


class Offline:
    def __init__(
        self, pinned: Pinned, clock: Clock, memory: Memory, store: Callable[[], LeaseStore], hardware_id: Callable[[], str], floor: float = 0
    ) -> None:
        self.pinned = pinned
        self.clock = clock
        self.memory = memory
        self.store = store
        self.hardware_id = hardware_id
        #: The lowest max server time there is (amendment F: the SDK's release time, or the app's not_before).
        self.floor = floor

    def max_server_time(self, state: Dict[str, Any]) -> float:
        """The highest server time verified, never below the floor (the SDK's release time or `not_before`)."""
        return max(state["max_server_time"], self.floor)

    def keep(self, file: str, t: int) -> LeaseInfo:
        """A lease just received in a verified answer at server time `t`: checked like offline, then kept."""
        state, _ = self.memory.read()
        now = self.clock.now() + state["clock_offset_ms"]
        fresh = RollbackState(t, state["highest_seq"], 0, False, self.max_server_time(state))
        check = check_lease(file, self.pinned, set(state["retired"]), self.hardware_id(), fresh, now)
        if check.verdict != "ok":
            raise TollgateLeaseError(check.verdict)
        p = check.payload
        store = self.store()

        def change(s: Dict[str, Any], _tampered: bool) -> None:
            # The lease and its fresh state are written under the state's lock: another instance never sees one without the other.
            store.write_lease(file)
            s["highest_seq"] = p.seq
            s["highest_trusted_time"] = max(t, p.iat)

        self.memory.update(change, reset=True)
        self.memory.last_tick = None
        return _info(p, bool(check.renew_due), 0)

    def check(self) -> LeaseInfo:
        """The offline check of docs/signing.md; raises TollgateLeaseError with the verdict unless the lease is good.
        Read, checked and written under the state's lock: another instance's drop or new lease is seen, never undone."""
        store = self.store()
        hardware_id = self.hardware_id()
        outcome: Dict[str, Any] = {"verdict": "no_lease", "info": None, "times": {}}

        def change(s: Dict[str, Any], tampered: bool) -> Optional[bool]:
            file = store.read_lease()
            # What the client remembers, for the error's message (a tampered state remembers nothing it can trust).
            outcome["times"]["last_seen_time"] = int(s["highest_trusted_time"]) if s["highest_trusted_time"] > 0 and not tampered else None
            if file is None:
                return False
            # Runtime since the previous check in this process (none before the first): the app checks periodically while offline.
            tick = self.clock.monotonic()
            last = self.memory.last_tick
            used = s["runtime_used_ms"] + (0 if last is None else max(0, tick - last))
            self.memory.last_tick = tick
            now = self.clock.now() + s["clock_offset_ms"]
            view = rollback_view(s, used)
            view.max_server_time = self.max_server_time(s)
            check = check_lease(file, self.pinned, set(s["retired"]), hardware_id, view, now, tampered)
            ok = check.verdict == "ok"
            outcome["verdict"] = check.verdict
            if ok:
                outcome["info"] = _info(check.payload, bool(check.renew_due), used)
            elif check.payload is not None:
                budget = check.payload.max_offline_runtime_s * 1000
                outcome["times"].update(expires_at=check.payload.exp, runtime_left=int(max(0, budget - used)))
            if check.payload is None or check.payload.seq < s["highest_seq"]:
                return False
            s["runtime_used_ms"] = used
            # The local clock only counts as trusted time while it moves forward (and the lease is good).
            if ok:
                s["highest_trusted_time"] = max(s["highest_trusted_time"], now)
            return True

        self.memory.update(change)
        if outcome["info"] is None:
            raise TollgateLeaseError(outcome["verdict"], **outcome["times"])
        return outcome["info"]

    def stored(self):
        """The lease as stored, decoded but not checked (for display); None if none."""
        file = self.store().read_lease()
        parsed = parse_lease(file) if file is not None else None
        return parsed.payload if parsed is not None else None

    def drop(self) -> None:
        """Drops the stored lease (as a verified refusal does): offline checks answer `dropped` until a new lease is stored."""
        self.memory.update(lambda s, _t: s.__setitem__("dropped", True))

    def server_now(self) -> float:
        """The server-aligned time: the local clock plus the offset measured at the last verified answer."""
        state, _ = self.memory.read()
        return self.clock.now() + state["clock_offset_ms"]

    def needs_lease(self, user_id: str) -> bool:
        """Whether `user_id` wants a new lease now: none stored, another user's, dropped, or its renewal due."""
        stored = self.stored()
        if stored is None or stored.user_id != user_id or self.server_now() >= stored.renew_after:
            return True
        state, _ = self.memory.read()
        return bool(state["dropped"])
