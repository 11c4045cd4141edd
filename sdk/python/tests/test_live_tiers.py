"""Issue 24 against the REAL server: entitlements granted by the operator and by a license template reach has()
online and, from the lease the server signed, offline; a trial started from the client is a trial user holding the
trial's entitlements, resumed on the same device, refused when the app has trials off."""
import pytest

from conftest import PASSWORD
from tollgate import MemoryLeaseStore, PasswordAuth, SessionAuth, TollgateError


def test_grants_and_a_template_reach_has_online_and_offline(server):
    app = server.app(offline_grace_seconds=86400)
    user_id = server.active_user(app, "tiers-alice")
    tpl = server.must(201, "POST", f"/apps/{app.id}/templates", {"name": "Export", "minutes": 60, "entitlements": ["export-pdf"]})
    code = server.must(201, "POST", f"/apps/{app.id}/licenses", {"count": 1, "template_id": tpl["id"]})["licenses"][0]["code"]
    store = MemoryLeaseStore()
    c = server.client(app, lease_store=store, hardware_id="py-live-tiers")
    c.activate_license(code, "tiers-alice", PASSWORD)
    status, _ = server.admin("POST", f"/apps/{app.id}/users/{user_id}/entitlements", {"code": "pro"})
    assert status < 300
    c.auth = PasswordAuth("tiers-alice", PASSWORD)
    assert c.has("pro") is False  # nothing verified yet
    assert c.check_access().source == "online"
    assert (c.entitlements(), c.is_trial()) == (["export-pdf", "pro"], False)

    offline = server.client(app, lease_store=store, hardware_id="py-live-tiers", base_url="http://127.0.0.1:9")
    offline.auth = c.auth
    access = offline.check_access()
    assert access.source == "lease"
    assert [e.code for e in access.lease.entitlements] == ["export-pdf", "pro"]
    assert offline.entitlements() == ["export-pdf", "pro"]


def test_a_trial_from_the_client(server):
    app = server.app(offline_grace_seconds=86400)
    server.must(200, "PATCH", f"/apps/{app.id}", {"trial_minutes": 60, "trial_entitlements": ["pro"]})
    c = server.client(app, hardware_id="py-live-trial-device")
    trial = c.start_trial(email="someone@example.com")
    assert trial.user.membership.is_trial is True
    assert c.auth == SessionAuth(trial.session_token)
    assert (c.is_trial(), c.has("pro")) == (True, True)
    c.check_access()
    lease = c.check_lease()
    assert lease.is_trial is True and [e.code for e in lease.entitlements] == ["pro"]
    assert server.client(app, hardware_id="py-live-trial-device").start_trial().user.id == trial.user.id
    server.must(200, "PATCH", f"/apps/{app.id}", {"trial_minutes": 0})
    with pytest.raises(TollgateError) as err:
        server.client(app, hardware_id="py-live-other-device").start_trial()
    assert (err.value.status, err.value.code) == (403, "trials_disabled")
