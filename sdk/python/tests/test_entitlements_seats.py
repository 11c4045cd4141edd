"""Issues 24 and 25 on the client: has()/entitlements()/is_trial() online and
from a verified lease offline, start_trial(), floating seats with their
heartbeat (scheduling, retries, a lost seat given to the callback and raised by
the next call, release, release at exit and by the context manager) and
reset_devices() with its refusals. Against the signed stub server of
sdk/test-vectors (stub-server.mjs), which a test can make answer 404
seat_not_found, 409, or nothing signed; and the heartbeat's schedule on a fake
clock."""
import json
import subprocess
import sys
import textwrap
import threading
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

from tollgate import (
    Clock, MemoryLeaseStore, SessionAuth, TollgateClient, TollgateError, TollgateLeaseError, TollgateSeatLostError, TollgateUnavailableError,
    TollgateVerificationError,
)
from tollgate.seats import Heartbeat
from tollgate.types import Seat

STUB = Path(__file__).resolve().parents[2] / "test-vectors" / "stub-server.mjs"
SRC = Path(__file__).resolve().parents[1] / "src"


class Stub:
    def __init__(self) -> None:
        self.proc = subprocess.Popen(["node", str(STUB)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        info = json.loads(self.proc.stdout.readline())
        self.url, self.app_id, self.root_public_key = info["url"], info["app_id"], info["root_public_key"]

    def _call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method, headers={"content-type": "application/json"})
        with urllib.request.urlopen(req) as res:
            return json.loads(res.read())

    def configure(self, **over):
        self._call("POST", "/_stub/config", over)

    def log(self, path=None, hardware_id=None):
        entries = self._call("GET", "/_stub/log")
        return [e for e in entries if (path is None or f"{e['method']} {e['path']}" == path) and (hardware_id is None or e["hardware_id"] == hardware_id)]

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


DEFAULTS = dict(entitlements=["pro"], lease_entitlements=None, is_trial=False, old_lease=False, heartbeat_seconds=300, max_seats=5,
                checkout="ok", heartbeat="ok", release="ok", reset="ok", trial="ok")


@pytest.fixture(scope="module")
def stub():
    s = Stub()
    yield s
    s.close()


@pytest.fixture
def make(stub):
    made = []

    def client(**options):
        opts = dict(base_url=stub.url, app_key="k", app_secret="s", app_id=stub.app_id, root_public_key=stub.root_public_key,
                    hardware_id=f"hw-{uuid.uuid4().hex[:12]}", lease_store=MemoryLeaseStore(), not_before=0, release_seat_at_exit=False)
        opts.update(options)
        c = TollgateClient(**opts)
        c.auth = SessionAuth("stub-session")
        made.append(c)
        return c

    yield client
    for c in made:
        c.close()
    stub.configure(**DEFAULTS)
    stub._call("POST", "/_stub/seat/expire")


def until(what, seconds=5.0):
    end = time.monotonic() + seconds
    while True:
        v = what()
        if v:
            return v
        if time.monotonic() > end:
            raise AssertionError("timed out waiting")
        time.sleep(0.02)


class ShiftedClock(Clock):
    def __init__(self) -> None:
        self.shift = 0

    def now(self) -> float:
        return super().now() + self.shift


# -- has() -------------------------------------------------------------------


def test_has_online_from_the_last_verified_answer_carrying_the_user(stub, make):
    stub.configure(entitlements=["pro", "export-pdf"])
    c = make()
    assert (c.has("pro"), c.entitlements(), c.is_trial()) == (False, [], False)
    c.get_app_context()
    assert (c.has("pro"), c.has("export-pdf"), c.has("studio"), c.entitlements(), c.is_trial()) == (True, True, False, ["export-pdf", "pro"], False)
    c.get_app_context(auth=None)  # an anonymous context carries no user: nothing is held any more
    assert c.entitlements() == []


def test_an_unverified_answer_never_grants(stub, make):
    c = make(root_public_key="A" * 43)
    with pytest.raises(TollgateVerificationError):
        c.get_app_context()
    assert (c.has("pro"), c.entitlements()) == (False, [])


def test_has_offline_from_the_verified_lease_until_each_code_ends(stub, make):
    clock = ShiftedClock()
    c = make(clock=clock)
    stub.configure(lease_entitlements=[{"code": "export-pdf", "until": int(time.time() * 1000) + 60_000}, {"code": "pro", "until": None}])
    c.create_lease()
    lease = c.check_lease()
    assert [e.code for e in lease.entitlements] == ["export-pdf", "pro"]
    assert (c.has("pro"), c.has("export-pdf"), c.is_trial()) == (True, True, False)
    clock.shift = 61_000
    assert (c.has("pro"), c.has("export-pdf"), c.entitlements()) == (True, False, ["pro"])
    clock.shift = 8 * 86_400_000  # past the lease's exp
    assert c.entitlements() == []
    with pytest.raises(TollgateLeaseError):
        c.check_lease()
    clock.shift = 0
    assert c.has("pro") is False  # a failed lease check holds nothing


def test_trial_lease_and_an_older_lease_without_the_fields(stub, make):
    stub.configure(is_trial=True)
    c = make()
    c.create_lease()
    c.check_lease()
    assert (c.has("pro"), c.is_trial()) == (True, True)
    stub.configure(is_trial=False, old_lease=True)
    old = make()
    old.create_lease()
    lease = old.check_lease()
    assert (lease.entitlements, lease.is_trial, old.has("pro"), old.is_trial()) == ((), False, False, False)


def test_check_access_falls_back_to_the_lease_and_has_answers_from_it(stub, make):
    store = MemoryLeaseStore()
    online = make(lease_store=store, hardware_id="hw-fallback")
    assert online.check_access().source == "online" and online.has("pro")
    offline = make(lease_store=store, hardware_id="hw-fallback", base_url="http://127.0.0.1:9")
    assert offline.has("pro") is False
    assert offline.check_access().source == "lease"
    assert offline.has("pro") is True


# -- start_trial() -------------------------------------------------------------


def test_start_trial_keeps_the_session_and_the_user_is_a_trial_user(stub, make):
    c = make(hardware_id="hw-trial")
    c.auth = None
    trial = c.start_trial(email="alice@example.com")
    assert trial.user.membership.is_trial is True
    assert c.auth == SessionAuth("stub-trial-session")
    assert (c.is_trial(), c.has("pro")) == (True, True)
    assert stub.log("POST /trial")
    for code in ("trial_used", "trials_disabled"):
        stub.configure(trial=code)
        with pytest.raises(TollgateError) as err:
            make().start_trial()
        assert (err.value.status, err.value.code) == (403, code)


# -- seats ------------------------------------------------------------------------


def test_checkout_heartbeats_at_a_third_of_the_interval(stub, make):
    stub.configure(heartbeat_seconds=1.5)
    c = make(hardware_id="hw-beats")
    seat = c.checkout_seat()
    assert (seat.heartbeat_seconds, seat.max, seat.in_use, c.seat_state) == (1.5, 5, 1, "held")
    beats = until(lambda: len(stub.log("POST /seats/heartbeat", "hw-beats")) >= 3 and stub.log("POST /seats/heartbeat", "hw-beats"))
    gaps = [b["at"] - a["at"] for a, b in zip(beats, beats[1:])]
    assert all(400 <= g < 1000 for g in gaps), gaps
    assert c.seat.expires_at > seat.expires_at


@pytest.mark.parametrize("mode,reason", [("seat_not_found", "seat_not_found"), ("conflict", "conflict")])
def test_a_lost_seat_is_given_to_the_callback_and_raised_by_the_next_call_once(stub, make, mode, reason):
    stub.configure(heartbeat_seconds=0.6)
    heard = []
    c = make(on_seat_lost=heard.append)
    seat = c.checkout_seat()
    stub.configure(heartbeat=mode)
    until(lambda: heard)
    assert (heard[0].reason, heard[0].seat_id, isinstance(heard[0].cause, TollgateError)) == (reason, seat.id, True)
    assert c.seat_state == "lost"
    with pytest.raises(TollgateSeatLostError) as err:
        c.has("pro")
    assert err.value is heard[0]
    assert c.seat_state == "none"
    c.get_app_context()  # raised once: the app has been told
    n = len(stub.log("POST /seats/heartbeat"))
    time.sleep(0.4)
    assert len(stub.log("POST /seats/heartbeat")) == n  # no more heartbeats for a lost seat


def test_failed_beats_are_retried_then_the_expiry_loses_the_seat(stub, make):
    stub.configure(heartbeat_seconds=1.2)
    heard = []
    c = make(hardware_id="hw-expire", on_seat_lost=heard.append)
    c.checkout_seat()
    until(lambda: stub.log("POST /seats/heartbeat", "hw-expire"))
    stub.configure(heartbeat="unavailable")
    started = time.time() * 1000
    until(lambda: heard)
    assert heard[0].reason == "expired" and isinstance(heard[0].cause, TollgateUnavailableError)
    assert len([b for b in stub.log("POST /seats/heartbeat", "hw-expire") if b["at"] >= started]) >= 2
    assert time.time() * 1000 - started < 2000


def test_a_forged_heartbeat_answer_is_no_beat(stub, make):
    stub.configure(heartbeat_seconds=0.9)
    heard = []
    c = make(on_seat_lost=heard.append)
    c.checkout_seat()
    stub.configure(heartbeat="forged")
    until(lambda: heard)
    assert (heard[0].reason, heard[0].cause.verdict) == ("expired", "bad_signature")


def test_seats_exhausted_is_a_refusal_with_its_fields(stub, make):
    stub.configure(checkout="exhausted")
    c = make()
    with pytest.raises(TollgateError) as err:
        c.checkout_seat()
    e = err.value
    assert (e.status, e.code, e.extra["in_use"], e.extra["max"], isinstance(e.extra["next_free_at"], str)) == (409, "seats_exhausted", 5, 5, True)
    assert c.seat_state == "none"


def test_release_drops_the_lease_and_stops_the_heartbeat(stub, make):
    stub.configure(heartbeat_seconds=0.6)
    c = make(hardware_id="hw-release")
    c.create_lease()
    c.checkout_seat()
    assert c.release_seat().released is True
    assert c.seat_state == "none"
    with pytest.raises(TollgateLeaseError) as err:
        c.check_lease()
    assert err.value.verdict == "dropped"
    n = len(stub.log("POST /seats/heartbeat", "hw-release"))
    time.sleep(0.5)
    assert len(stub.log("POST /seats/heartbeat", "hw-release")) == n
    assert c.release_seat().released is False


def test_release_with_no_seat_drops_the_lease(stub, make):
    c = make(hardware_id="hw-no-seat")
    c.create_lease()
    answer = c.release_seat()
    assert (answer.released, answer.held_until) == (False, None)
    with pytest.raises(TollgateLeaseError) as err:
        c.check_lease()
    assert err.value.verdict == "dropped"


def test_release_of_a_seat_a_lease_holds_is_released_false_with_held_until_and_keeps_the_lease(stub, make):
    stub.configure(release="held")
    c = make(hardware_id="hw-held")
    lease = c.create_lease()
    c.checkout_seat()
    released = c.release_seat()
    assert released.released is False
    assert released.held_until is not None and released.held_until > released.server_time
    assert c.seat_state == "none"
    assert c.check_lease().lease_id == lease.lease_id  # the device may go on offline until held_until
    stub.configure(release="ok")
    assert c.release_seat().held_until is None
    with pytest.raises(TollgateLeaseError) as err:
        c.check_lease()
    assert err.value.verdict == "dropped"


def test_the_context_manager_releases_the_seat(stub, make):
    with make(hardware_id="hw-with") as c:
        c.checkout_seat()
    assert len(stub.log("DELETE /seats", "hw-with")) == 1


def test_close_of_a_seat_a_lease_holds_keeps_the_lease(stub, make):
    stub.configure(release="held")
    c = make(hardware_id="hw-close-held")
    lease = c.create_lease()
    c.checkout_seat()
    c.close()
    assert len(stub.log("DELETE /seats", "hw-close-held")) == 1
    assert c.check_lease().lease_id == lease.lease_id


def test_interpreter_exit_releases_the_seat(stub):
    def script(hardware_id, at_exit):
        return textwrap.dedent(f"""
            import sys
            sys.path.insert(0, {str(SRC)!r})
            from tollgate import MemoryLeaseStore, SessionAuth, TollgateClient
            c = TollgateClient({stub.url!r}, "k", "s", {stub.app_id!r}, {stub.root_public_key!r}, hardware_id={hardware_id!r},
                               lease_store=MemoryLeaseStore(), not_before=0, release_seat_at_exit={at_exit!r})
            c.auth = SessionAuth("stub-session")
            c.checkout_seat()
        """)

    subprocess.run([sys.executable, "-c", script("hw-atexit", True)], check=True, timeout=30)
    assert len(stub.log("DELETE /seats", "hw-atexit")) == 1
    # The control: without the exit hook the interpreter still ends (the heartbeat is a daemon thread), the seat kept.
    subprocess.run([sys.executable, "-c", script("hw-atexit-off", False)], check=True, timeout=30)
    assert len(stub.log("POST /seats", "hw-atexit-off")) == 1 and stub.log("DELETE /seats", "hw-atexit-off") == []


# -- reset_devices() -----------------------------------------------------------------


def test_reset_devices_ends_the_session_used(stub, make):
    c = make()
    reset = c.reset_devices()
    assert reset.devices_removed == 1 and reset.next_reset_at is not None
    assert c.auth is None


def test_reset_cooldown_and_disabled(stub, make):
    stub.configure(reset="cooldown")
    with pytest.raises(TollgateError) as err:
        make().reset_devices()
    e = err.value
    assert (e.status, e.code, e.retry_after, isinstance(e.last_reset_at, str)) == (429, "reset_cooldown", 7 * 24 * 3600 - 3600, True)
    stub.configure(reset="disabled")
    with pytest.raises(TollgateError) as err:
        make().reset_devices()
    assert (err.value.status, err.value.code, err.value.retry_after, err.value.last_reset_at) == (403, "reset_disabled", None, None)


# -- the schedule on a fake clock -----------------------------------------------------


def _iso(ms):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms / 1000)) + ".%03dZ" % (ms % 1000)


def _seat(server_ms, ttl_ms, hb=300, sid="seat-1"):
    return Seat(sid, _iso(0), _iso(server_ms + ttl_ms), hb, 5, 1, _iso(server_ms))


class FakeTime:
    """A monotonic clock that jumps by each wait: the heartbeat's thread runs its schedule at once, up to `limit` waits,
    then blocks until the test has looked (release())."""

    def __init__(self, limit=10) -> None:
        self.mono = 0.0
        self.waits = []
        self.limit = limit
        self.held = threading.Event()
        self._release = threading.Event()

    def now(self):
        return self.mono

    def wait(self, ms):
        if len(self.waits) >= self.limit:
            self.held.set()
            self._release.wait(5)
            return
        self.waits.append(ms)
        self.mono += ms

    def release(self):
        self._release.set()


def _settle(first, beat, fake):
    lost = []
    hb = Heartbeat(first, 0, beat, fake.now, lost.append, wait=fake.wait)
    until(lambda: fake.held.is_set() or lost)
    hb.stop(join=False)
    fake.release()
    return lost


def test_schedule_beats_every_third_while_beats_succeed():
    fake, at = FakeTime(limit=4), []

    def beat():
        at.append(fake.mono)
        return _seat(fake.mono, 300_000), fake.mono

    lost = _settle(_seat(0, 300_000), beat, fake)
    assert at == [100_000, 200_000, 300_000, 400_000] and not lost


def test_schedule_retries_a_failed_beat_before_the_expiry():
    fake, at = FakeTime(limit=4), []

    def beat():
        at.append(fake.mono)
        if len(at) <= 2:
            raise TollgateUnavailableError(503, False)
        return _seat(fake.mono, 300_000), fake.mono

    lost = _settle(_seat(0, 300_000), beat, fake)
    assert at[0] == 100_000 and at[1] - at[0] < 100_000 and at[2] < 300_000 and at[3] - at[2] == 100_000 and not lost


def test_schedule_loses_the_seat_at_the_expiry_never_later():
    fake = FakeTime(limit=100)

    def beat():
        raise TollgateUnavailableError(503, False)

    lost = _settle(_seat(0, 300_000), beat, fake)
    assert lost[0].reason == "expired" and fake.mono == 300_000 and isinstance(lost[0].cause, TollgateUnavailableError)


def test_schedule_a_short_time_to_live_beats_at_a_third_of_it():
    fake = FakeTime(limit=2)
    lost = _settle(_seat(0, 30_000), lambda: (_seat(fake.mono, 300_000), fake.mono), fake)
    assert fake.waits == [10_000, 100_000] and not lost
