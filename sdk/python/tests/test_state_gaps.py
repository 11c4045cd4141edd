"""Issue 21 items 1-3 (designs in docs/signing.md): a partial restore of the state copies is tampering while a lease
is stored; a verified refusal drops the lease only when it was about the lease's user; a key list that cannot be
fetched or verified does not fail the call whose own answer verified."""
import shutil
from pathlib import Path

import pytest

from conftest import PASSWORD, Answer, Proxy
from test_lease import OFFLINE, Device, counter, leased, verdict_of
from tollgate import MemoryLeaseStore, PasswordAuth, TollgateError

HOURS = 3600 * 1000


@pytest.fixture(scope="module")
def app(server):
    return server.app(offline_grace_seconds=7 * 24 * 3600, lease_renew_seconds=600)


def copies(device):
    return Path(device.folders.data, "state.json"), Path(device.folders.state, "state.json")


class TestPartialRestore:
    def test_one_copy_restored_and_the_other_deleted_is_a_rollback(self, server, app, tmp_path):
        device = Device(server, app, tmp_path)
        leased(server, app, device)
        one, two = copies(device)
        backup = tmp_path / "backup.json"
        shutil.copy(one, backup)
        device.clock.shift = 20 * HOURS
        assert verdict_of(device.client(OFFLINE)) == "ok"
        device.clock.shift = 0
        assert verdict_of(device.client(OFFLINE)) == "clock_rollback"
        shutil.copy(backup, one)
        two.unlink()
        assert verdict_of(device.client(OFFLINE)) == "clock_rollback"

    def test_the_same_restore_after_a_verified_refusal_does_not_bring_the_lease_back(self, server, app, tmp_path):
        device = Device(server, app, tmp_path)
        online, _, _, user_id = leased(server, app, device)
        one, two = copies(device)
        backup = tmp_path / "backup.json"
        shutil.copy(one, backup)
        server.must(201, "POST", f"/apps/{app.id}/bans", {"type": "user", "value": user_id})
        with pytest.raises(TollgateError):
            online.get_app_context()
        assert verdict_of(device.client(OFFLINE)) == "dropped"
        shutil.copy(backup, one)
        two.unlink()
        assert verdict_of(device.client(OFFLINE)) != "ok"
        shutil.copy(backup, two)
        one.unlink()
        assert verdict_of(device.client(OFFLINE)) != "ok"

    def test_without_a_lease_one_copy_is_enough_and_a_new_lease_heals_the_state(self, server, app, tmp_path):
        device = Device(server, app, tmp_path)
        online, _, _, _ = leased(server, app, device)
        one, two = copies(device)
        two.unlink()
        assert verdict_of(device.client(OFFLINE)) == "clock_rollback"
        online.create_lease()  # a new lease writes both copies again
        assert two.exists() and verdict_of(device.client(OFFLINE)) == "ok"


class TestRefusalAboutAnotherUser:
    def test_only_the_lease_users_refusal_drops_it(self, server, app):
        store = MemoryLeaseStore()
        a = server.active_user(app, "lease-user-a", 60)
        server.active_user(app, "lease-user-b", 60)
        b_id = server.client(app).get_app_context(PasswordAuth("lease-user-b", PASSWORD)).user.id
        client = server.client(app, lease_store=store)
        client.login("lease-user-a", PASSWORD)
        assert client.create_lease().user_id == a
        # B is known to this client (a verified answer named B), then loses the membership.
        assert client.get_app_context(PasswordAuth("lease-user-b", PASSWORD)).user.id == b_id
        server.must(201, "POST", f"/apps/{app.id}/bans", {"type": "user", "value": b_id})
        with pytest.raises(TollgateError) as refused:
            client.get_app_context(PasswordAuth("lease-user-b", PASSWORD))
        assert refused.value.code == "banned"
        assert client.check_lease().user_id == a  # B's refusal leaves A's lease alone
        # Credentials this client never saw verified: kept too.
        with pytest.raises(TollgateError):
            client.get_app_context(PasswordAuth("lease-user-b", "a wrong password"))
        assert client.check_lease().user_id == a
        server.must(201, "POST", f"/apps/{app.id}/bans", {"type": "user", "value": a})
        with pytest.raises(TollgateError):
            client.get_app_context()
        with pytest.raises(Exception) as dropped:
            client.check_lease()
        assert dropped.value.verdict == "dropped"

    def test_a_new_process_drops_once_a_verified_answer_named_the_user(self, server, app, tmp_path):
        device = Device(server, app, tmp_path)
        _, _, _, user_id = leased(server, app, device)
        restarted = device.client()
        restarted.login(f"user{counter[0]}", PASSWORD)
        restarted.get_app_context()  # names the user: these credentials are the lease's user's
        server.must(201, "POST", f"/apps/{app.id}/bans", {"type": "user", "value": user_id})
        with pytest.raises(TollgateError):
            restarted.get_app_context()
        assert verdict_of(device.client(OFFLINE)) == "dropped"


def test_a_key_list_that_cannot_be_verified_does_not_fail_a_verified_answer(server):
    app = server.app()
    server.active_user(app, "rotated-user", 60)

    def handle(req, forward):
        if req.path == "/signing_keys":
            return Answer(503, {"content-type": "application/json"}, b'{"detail":"down","code":"service_unavailable"}')
        return forward()

    with Proxy(server.url, handle) as mitm:
        client = server.client(app, base_url=mitm.url)
        client.auth = PasswordAuth("rotated-user", PASSWORD)
        assert client.get_app_context().user.username == "rotated-user"
        rotated = server.cli("keys", "rotate", "--app", app.id, "--root-key", app.root_key_file)
        assert rotated["kid"] != app.kid
        # Signed by the new key, certified by the pinned root: accepted although the key list could not be had.
        assert client.get_app_context().user.username == "rotated-user"
        assert client.get_app_context().user.username == "rotated-user"
