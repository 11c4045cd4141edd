"""Issue 25 against the REAL server: floating seats checked out, kept alive by the heartbeat thread, exhausted, lost
when the operator releases one (the next heartbeat is 404 seat_not_found), kept taken by the lease that holds it (the
device keeping its lease), released by the context manager; device self-reset and its cooldown."""
import time

import pytest

from conftest import PASSWORD
from tollgate import MemoryLeaseStore, PasswordAuth, TollgateError, TollgateSeatLostError


def seat_app(server, **settings):
    app = server.app(offline_grace_seconds=86400, max_devices_per_user=100)
    server.must(200, "PATCH", f"/apps/{app.id}", settings)
    return app


def device(server, app, hardware_id, **options):
    c = server.client(app, hardware_id=hardware_id, lease_store=MemoryLeaseStore(), release_seat_at_exit=False, **options)
    c.auth = PasswordAuth("alice", PASSWORD)
    return c


def test_seats_heartbeat_exhausted_lost_and_released(server):
    app = seat_app(server, max_seats=2, heartbeat_seconds=10)
    server.active_user(app, "alice")
    lost = []
    a = device(server, app, "py-live-seat-a", on_seat_lost=lost.append)
    seat = a.checkout_seat()
    assert (seat.heartbeat_seconds, seat.max, seat.in_use) == (10, 2, 1)
    time.sleep(3.9)  # a beat every 10/3 s moves the expiry on
    assert a.seat.expires_at > seat.expires_at and a.seat_state == "held"

    b = device(server, app, "py-live-seat-b")
    b.create_lease()  # the lease holds b's seat
    b.checkout_seat()  # the same seat
    c = device(server, app, "py-live-seat-c")
    with pytest.raises(TollgateError) as full:
        c.checkout_seat()
    e = full.value
    assert (e.status, e.code, e.extra["in_use"], e.extra["max"]) == (409, "seats_exhausted", 2, 2)

    items = server.must(200, "GET", f"/apps/{app.id}/seats")["items"]
    a_seat = next(s for s in items if s["hardware_id"] == "py-live-seat-a")
    server.must(204, "DELETE", f"/apps/{app.id}/seats/{a_seat['id']}")
    deadline = time.monotonic() + 10
    while not lost and time.monotonic() < deadline:
        time.sleep(0.1)
    assert (lost[0].reason, lost[0].seat_id) == ("seat_not_found", seat.id)
    assert a.seat_state == "lost"
    with pytest.raises(TollgateSeatLostError):
        a.check_access()

    # The lease holds b's seat until its exp whatever the device says (a copy may run on offline): released False with
    # held_until, and b keeps its lease, so it may go on offline until then; the operator frees the seat.
    b_lease = b.check_lease().lease_id
    held = b.release_seat()
    assert held.released is False and held.held_until is not None and held.held_until > held.server_time
    assert b.check_lease().lease_id == b_lease
    d = device(server, app, "py-live-seat-d")
    with c, d:
        c.checkout_seat()  # a's place
        with pytest.raises(TollgateError) as still_full:
            d.checkout_seat()
        assert still_full.value.code == "seats_exhausted"
        b_seat = next(s for s in server.must(200, "GET", f"/apps/{app.id}/seats")["items"] if s["hardware_id"] == "py-live-seat-b")
        server.must(204, "DELETE", f"/apps/{app.id}/seats/{b_seat['id']}")
        d.checkout_seat()
    assert server.must(200, "GET", f"/apps/{app.id}/seats")["items"] == []


def test_seats_not_enabled(server):
    app = server.app()
    server.active_user(app, "alice")
    with pytest.raises(TollgateError) as err:
        device(server, app, "py-live-seat-x").checkout_seat()
    assert (err.value.status, err.value.code) == (409, "seats_not_enabled")


def test_device_reset_and_its_cooldown(server):
    app = seat_app(server, device_reset_cooldown_seconds=3600)
    server.active_user(app, "alice")
    c = device(server, app, "py-live-reset-1")
    c.login("alice", PASSWORD)
    reset = c.reset_devices()
    assert reset.reset_at and c.auth is None
    with pytest.raises(TollgateError) as again:
        c.reset_devices(auth=PasswordAuth("alice", PASSWORD))
    e = again.value
    assert (e.status, e.code, e.retry_after > 3500, e.last_reset_at) == (429, "reset_cooldown", True, reset.reset_at)
    off = seat_app(server, device_reset_cooldown_seconds=0)
    server.active_user(off, "alice")
    with pytest.raises(TollgateError) as disabled:
        device(server, off, "py-live-reset-2").reset_devices()
    assert (disabled.value.status, disabled.value.code) == (403, "reset_disabled")
