"""Offline leases from the real server (POST /lease), checked offline with
injected wall and monotonic clocks and the default file store: good
offline; refused at exp, after a clock set back, after the runtime budget,
on another hardware id, when superseded, after a ban seen online, and when
its state files are tampered with."""
import json
import os
from pathlib import Path

import pytest

from conftest import PASSWORD, FakeClock
from tollgate import FileLeaseStore, Folders, TollgateError, TollgateLeaseError, TollgateNetworkError

GRACE_S = 3600
OFFLINE = "http://127.0.0.1:9"  # a closed port: no server at all


@pytest.fixture(scope="module")
def app(server):
    return server.app(offline_grace_seconds=GRACE_S, lease_renew_seconds=600)


class Device:
    """The app as a user runs it: clocks the test moves, files in the app-data folders (here under a temp dir)."""

    def __init__(self, server, app, tmp_path, hardware_id="machine-A"):
        self.server, self.app, self.hardware_id = server, app, hardware_id
        self.clock = FakeClock()
        self.folders = Folders(str(tmp_path / "data"), str(tmp_path / "state"))

    def client(self, base_url=None):
        return self.server.client(self.app, base_url=base_url or self.server.url, hardware_id=self.hardware_id,
                                  lease_store=FileLeaseStore.for_app(self.app.id, self.folders), clock=self.clock)


counter = [0]


def leased(server, app, device):
    counter[0] += 1
    username = f"user{counter[0]}"
    user_id = server.active_user(app, username, 7 * 24 * 60)
    online = device.client()
    online.login(username, PASSWORD, hardware_id=device.hardware_id)
    lease = online.create_lease()
    return online, device.client(OFFLINE), lease, user_id


def verdict_of(client):
    try:
        client.check_lease()
    except TollgateLeaseError as err:
        return err.verdict
    return "ok"


def test_a_lease_works_offline_with_no_network(server, app, tmp_path):
    device = Device(server, app, tmp_path)
    _, offline, lease, user_id = leased(server, app, device)
    assert (lease.user_id, lease.renew_due, lease.runtime_budget_ms) == (user_id, False, GRACE_S * 1000)
    with pytest.raises(TollgateNetworkError):
        offline.get_app_context(None)
    info = offline.check_lease()
    assert (info.user_id, info.seq, info.expires_at) == (user_id, lease.seq, lease.expires_at)
    assert info.expires_at - info.issued_at == GRACE_S * 1000


def test_stops_at_exp_and_asks_for_renewal_past_renew_after(server, app, tmp_path):
    device = Device(server, app, tmp_path)
    _, offline, lease, _ = leased(server, app, device)
    device.clock.shift = 601_000
    assert offline.check_lease().renew_due is True
    real_now = FakeClock().now()
    device.clock.shift = lease.expires_at - real_now - 1000
    assert verdict_of(offline) == "ok"
    device.clock.shift = lease.expires_at - real_now + 1000
    assert verdict_of(offline) == "expired"


def test_a_clock_set_back(server, app, tmp_path):
    device = Device(server, app, tmp_path)
    _, offline, _, _ = leased(server, app, device)
    device.clock.shift = 30 * 60_000
    assert verdict_of(offline) == "ok"  # the clock moved forward: that is now trusted time
    device.clock.shift = 27 * 60_000
    assert verdict_of(offline) == "ok"  # a few minutes of drift are tolerated
    device.clock.shift = 0
    assert verdict_of(offline) == "clock_rollback"
    assert verdict_of(device.client(OFFLINE)) == "clock_rollback"  # a restart does not forget it: the state is on disk


def test_the_runtime_budget_across_restarts(server, app, tmp_path):
    device = Device(server, app, tmp_path)
    _, offline, _, _ = leased(server, app, device)
    offline.check_lease()
    device.clock.mono += GRACE_S * 1000 - 60_000
    assert offline.check_lease().runtime_used_ms == GRACE_S * 1000 - 60_000
    restarted = device.client(OFFLINE)
    device.clock.mono = 10  # a new process: its monotonic clock starts again
    restarted.check_lease()
    device.clock.mono += 60_000
    assert verdict_of(restarted) == "runtime_exhausted"


def test_another_hardware_id(server, app, tmp_path):
    device = Device(server, app, tmp_path, "machine-A")
    leased(server, app, device)
    copy = Device(server, app, tmp_path, "machine-B")  # the same folders, copied to another machine
    assert verdict_of(copy.client(OFFLINE)) == "hardware_mismatch"


def test_an_older_lease_put_back_is_superseded(server, app, tmp_path):
    device = Device(server, app, tmp_path)
    online, _, _, _ = leased(server, app, device)
    lease_file = Path(device.folders.data, "lease.tollgate")
    old = lease_file.read_text()
    online.create_lease()
    lease_file.write_text(old)
    assert verdict_of(online) == "superseded"


def test_a_ban_seen_online_drops_the_lease(server, app, tmp_path):
    device = Device(server, app, tmp_path)
    online, offline, _, user_id = leased(server, app, device)
    server.must(201, "POST", f"/apps/{app.id}/bans", {"type": "user", "value": user_id})
    with pytest.raises(TollgateError) as err:
        online.get_app_context()
    assert err.value.code == "banned"
    assert verdict_of(offline) == "dropped"
    assert verdict_of(device.client(OFFLINE)) == "dropped"


def test_tampered_state_is_a_rollback_so_is_one_lost_copy(server, app, tmp_path):
    device = Device(server, app, tmp_path)
    leased(server, app, device)
    a, b = Path(device.folders.data, "state.json"), Path(device.folders.state, "state.json")
    original = a.read_text()
    b.unlink()
    # Issue 21.1: while a lease is stored both copies must be there (one restored from a backup must not pass).
    assert verdict_of(device.client(OFFLINE)) == "clock_rollback"
    record = json.loads(a.read_text())
    state = json.loads(record["state"])
    state.update(runtime_used_ms=0, highest_trusted_time=0)
    a.write_text(json.dumps({**record, "state": json.dumps(state)}))
    assert verdict_of(device.client(OFFLINE)) == "clock_rollback"
    a.write_text(original)
    b.write_text(original.replace('\\"dropped\\":false', '\\"dropped\\":true'))
    assert original != b.read_text()
    assert verdict_of(device.client(OFFLINE)) == "clock_rollback"
    a.unlink()
    b.unlink()
    assert verdict_of(device.client(OFFLINE)) == "clock_rollback"


def test_state_files_are_private_and_in_the_ts_sdk_format(server, app, tmp_path):
    device = Device(server, app, tmp_path)
    leased(server, app, device)
    for folder in (device.folders.data, device.folders.state):
        p = Path(folder, "state.json")
        assert oct(p.stat().st_mode & 0o777) == "0o600" and oct(Path(folder).stat().st_mode & 0o777) == "0o700"
        record = json.loads(p.read_text())
        assert sorted(record) == ["mac", "state"] and len(record["mac"]) == 64
        assert list(json.loads(record["state"])) == ["highest_trusted_time", "highest_seq", "runtime_used_ms", "dropped", "retired", "known",
                                                     "keys_fetched_at", "clock_offset_ms", "max_server_time", "newest_not_before", "newest_seen_at"]
    assert Path(device.folders.data, "lease.tollgate").read_text().startswith("-----BEGIN TOLLGATE LEASE-----")


def test_no_lease_yet_and_leases_disabled(server, tmp_path):
    plain = server.app()
    device = Device(server, plain, tmp_path)
    assert verdict_of(device.client()) == "no_lease"
    server.active_user(plain, "nolease")
    c = server.client(plain)
    c.login("nolease", PASSWORD)
    with pytest.raises(TollgateError) as err:
        c.create_lease()
    assert (err.value.status, err.value.code) == (403, "leases_disabled")
