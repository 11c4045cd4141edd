"""Floating seats (issue 25): the background heartbeat of a checked-out seat.
It beats at a third of the interval the server gave (heartbeat_seconds, or a
third of the time left when that is shorter), retries a failed beat before the
seat expires, and reports the seat lost on a verified 404 seat_not_found, a
verified 409, or when the expiry passes with no beat through. Time left is
measured on the monotonic clock from when the answer's request was sent, so a
wrong or changed wall clock neither loses nor keeps a seat."""
from __future__ import annotations

import threading
from datetime import datetime
from typing import Callable, Optional, Tuple

from .errors import TollgateError, TollgateSeatLostError
from .types import Seat

#: The share of heartbeat_seconds between beats: three per interval, so two may fail before the seat is at risk.
HEARTBEAT_FRACTION = 1 / 3


def _ms(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000


def lost_reason_of(err: BaseException) -> Optional[str]:
    """A verified refusal that says the seat is gone: 404 seat_not_found, or any 409."""
    if not isinstance(err, TollgateError):
        return None
    if err.status == 404 and err.code == "seat_not_found":
        return "seat_not_found"
    if err.status == 409:
        return "conflict"
    return None


class Heartbeat:
    """Runs on a daemon thread until stop(). `beat()` returns (Seat, monotonic ms when its request was sent) or raises;
    `on_lost(TollgateSeatLostError)` is called on that thread. `wait(ms)` sleeps (tests pass a fake clock's)."""

    def __init__(
        self,
        first: Seat,
        sent_at: float,
        beat: Callable[[], Tuple[Seat, float]],
        monotonic: Callable[[], float],
        on_lost: Callable[[TollgateSeatLostError], None],
        wait: Optional[Callable[[float], None]] = None,
    ) -> None:
        self._stopped = threading.Event()
        self._beat = beat
        self._monotonic = monotonic
        self._on_lost = on_lost
        self._wait = wait or (lambda ms: self._stopped.wait(ms / 1000))
        self._last_error: Optional[BaseException] = None
        self.seat = first
        self.deadline = 0.0
        self.interval_ms = 0.0
        self._renew(first, sent_at)
        self._thread = threading.Thread(target=self._run, name="tollgate-seat-heartbeat", daemon=True)
        self._thread.start()

    def _renew(self, seat: Seat, sent_at: float) -> None:
        ttl = max(0.0, _ms(seat.expires_at) - _ms(seat.server_time))
        self.deadline = sent_at + ttl
        self.interval_ms = max(1.0, min(seat.heartbeat_seconds * 1000, ttl) * HEARTBEAT_FRACTION)
        self.seat = seat
        self._last_error = None

    def _run(self) -> None:
        delay = self.interval_ms
        while True:
            self._wait(delay)
            if self._stopped.is_set():
                return
            if self._monotonic() >= self.deadline:
                return self._lose("expired", self._last_error)
            try:
                seat, sent_at = self._beat()
            except Exception as err:  # noqa: BLE001 - any failed beat is retried until the expiry
                if self._stopped.is_set():
                    return
                reason = lost_reason_of(err)
                if reason is not None:
                    return self._lose(reason, err)
                self._last_error = err
                left = self.deadline - self._monotonic()
                if left <= 0:
                    return self._lose("expired", err)
                # Again soon, and once more at the deadline at the latest (which then reports the seat expired).
                delay = min(left, max(self.interval_ms / 4, left / 3))
                continue
            if self._stopped.is_set():
                return
            if seat.id != self.seat.id:
                return self._lose("seat_not_found", None)
            self._renew(seat, sent_at)
            delay = self.interval_ms

    def _lose(self, reason: str, cause: Optional[BaseException]) -> None:
        self._stopped.set()
        self._on_lost(TollgateSeatLostError(reason, self.seat.id, cause))

    def stop(self, join: bool = True) -> None:
        self._stopped.set()
        if join and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    @property
    def running(self) -> bool:
        return not self._stopped.is_set()
