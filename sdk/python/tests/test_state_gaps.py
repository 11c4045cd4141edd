"""Issue 21 items 1-3 (designs in docs/signing.md): a partial restore of the state copies is tampering while a lease
is stored; a verified refusal drops the lease only when it was about the lease's user (the user_id it names, else
an IP or hardware-id ban, else credentials known to be the lease user's); a key list that cannot be
fetched or verified does not fail the call whose own answer verified."""
import shutil
from pathlib import Path

import pytest

from conftest import PASSWORD, Answer, Proxy
from test_lease import OFFLINE, Device, counter, leased, verdict_of
from tollgate import MemoryLeaseStore, PasswordAuth, TollgateError, TollgateLeaseError

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
    """Issue 21.2, second version: a signed refusal names the user it is about (`user_id`); that decides whether the
    lease goes, also in a fresh process that never saw the user online."""

    def refused(self, client, auth=None):
        with pytest.raises(TollgateError) as refused:
            client.check_access(auth) if auth is not None else client.check_access()
        return refused.value

    def test_a_fresh_process_drops_the_lease_when_its_user_is_banned(self, server, app, tmp_path):
        device = Device(server, app, tmp_path)
        _, _, _, a = leased(server, app, device)
        server.must(201, "POST", f"/apps/{app.id}/bans", {"type": "user", "value": a})
        fresh = device.client()  # nothing in memory: no answer in this process named A
        err = self.refused(fresh, PasswordAuth(f"user{counter[0]}", PASSWORD))
        assert (err.code, err.user_id) == ("banned", a)
        assert verdict_of(device.client(OFFLINE)) == "dropped"

    def test_check_access_renews_a_dropped_lease_once_the_user_is_let_back_in(self, server, app, tmp_path):
        # Before its renew_after: a dropped lease is renewed at once (the rule of all three SDKs), not left dropped.
        device = Device(server, app, tmp_path)
        _, _, _, a = leased(server, app, device)
        auth = PasswordAuth(f"user{counter[0]}", PASSWORD)
        ban = server.must(201, "POST", f"/apps/{app.id}/bans", {"type": "user", "value": a})
        self.refused(device.client(), auth)
        assert verdict_of(device.client(OFFLINE)) == "dropped"
        server.must(204, "DELETE", f"/apps/{app.id}/bans/{ban['id']}")
        assert device.client().check_access(auth).source == "online"
        assert verdict_of(device.client(OFFLINE)) == "ok"

    def test_another_users_membership_inactive_keeps_the_lease(self, server, app, tmp_path):
        device = Device(server, app, tmp_path)
        _, _, _, a = leased(server, app, device)
        b = server.client(app).sign_up(f"inactive-b{counter[0]}", PASSWORD).id  # no license: no membership
        fresh = device.client()
        err = self.refused(fresh, PasswordAuth(f"inactive-b{counter[0]}", PASSWORD))
        assert (err.code, err.user_id) == ("membership_inactive", b)
        assert verdict_of(device.client(OFFLINE)) == "ok"
        assert device.client(OFFLINE).check_lease().user_id == a

    def test_an_ip_ban_drops_the_lease(self, server, tmp_path):
        app = server.app(offline_grace_seconds=7 * 24 * 3600)  # its own app: the ban shuts out every test's requests
        device = Device(server, app, tmp_path)
        leased(server, app, device)
        server.must(201, "POST", f"/apps/{app.id}/bans", {"type": "ip", "value": "127.0.0.1"})
        err = self.refused(device.client(), PasswordAuth(f"user{counter[0]}", PASSWORD))
        assert (err.code, err.user_id) == ("banned", None)  # this machine, nobody in particular
        assert verdict_of(device.client(OFFLINE)) == "dropped"

    def test_another_users_wrong_password_keeps_the_lease(self, server, app, tmp_path):
        device = Device(server, app, tmp_path)
        _, online, _, _ = leased(server, app, device)
        server.active_user(app, f"other-b{counter[0]}", 60)
        err = self.refused(device.client(), PasswordAuth(f"other-b{counter[0]}", "a wrong password"))
        assert (err.code, err.user_id) == ("invalid_credentials", None)
        assert verdict_of(online) == "ok"

    def test_a_refusal_naming_nobody_drops_the_lease_for_credentials_known_to_be_its_users(self, server, app, tmp_path):
        device = Device(server, app, tmp_path)
        online, _, _, a = leased(server, app, device)
        password = PasswordAuth(f"user{counter[0]}", PASSWORD)
        assert online.get_app_context(password).user.id == a  # a verified answer names A for these credentials
        server.must(204, "DELETE", f"/apps/{app.id}/users/{a}")
        err = self.refused(online, password)
        assert (err.code, err.user_id) == ("invalid_credentials", None)
        assert verdict_of(device.client(OFFLINE)) == "dropped"

    def test_a_known_user_banned_on_the_same_client_leaves_the_other_users_lease(self, server, app):
        store = MemoryLeaseStore()
        a = server.active_user(app, "lease-user-a", 60)
        b_id = server.active_user(app, "lease-user-b", 60)
        client = server.client(app, lease_store=store)
        client.login("lease-user-a", PASSWORD)
        assert client.create_lease().user_id == a
        assert client.get_app_context(PasswordAuth("lease-user-b", PASSWORD)).user.id == b_id
        server.must(201, "POST", f"/apps/{app.id}/bans", {"type": "user", "value": b_id})
        assert self.refused(client, PasswordAuth("lease-user-b", PASSWORD)).user_id == b_id
        assert client.check_lease().user_id == a
        server.must(201, "POST", f"/apps/{app.id}/bans", {"type": "user", "value": a})
        assert self.refused(client).user_id == a
        with pytest.raises(TollgateLeaseError) as dropped:
            client.check_lease()
        assert dropped.value.verdict == "dropped"


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
