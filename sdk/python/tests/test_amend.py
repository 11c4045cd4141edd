"""The amendments to the signing contract after the review (A, B, D, E, F, G),
against the real server: an answer for a paying user's credentials swapped in
by a proxy is refused; two instances sharing one machine's state folders
neither undo a drop nor see a spurious clock_rollback; the default hardware
id goes on login; a 413 verifies over the empty body hash; the release-time
floor of the server time refuses a back-dated ended key."""
import threading
import time

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from conftest import PASSWORD, FakeClock, Proxy, b64url, certify, raw_public, sign_answer
from tollgate import (
    FileLeaseStore, Folders, LicenseCodeAuth, PasswordAuth, SessionAuth, TollgateError, TollgateLeaseError, TollgateVerificationError,
    hardware_id,
)

GRACE_S = 3600
OFFLINE = "http://127.0.0.1:9"


@pytest.fixture(scope="module")
def app(server):
    return server.app(offline_grace_seconds=GRACE_S, lease_renew_seconds=600)


@pytest.fixture(scope="module")
def payer(server, app):
    """A paying user: their username/password, a session token and their license code."""
    code = server.license_code(app, 7 * 24 * 60)
    c = server.client(app)
    c.sign_up("payer", PASSWORD)
    c.activate_license(code, "payer", PASSWORD)
    by_code = server.license_code(app, 7 * 24 * 60)
    c.sign_up_with_license_code(by_code)  # a user whose license code alone is the credential
    return {"username": "payer", "password": PASSWORD, "token": c.login("payer", PASSWORD).session_token, "code": by_code}


def verdict_of(call):
    try:
        call()
    except TollgateVerificationError as err:
        return err.verdict
    except TollgateError as err:
        return f"refused by the server: {err.code}"
    return "accepted"


SWAPS = {
    "password": lambda p: {"x-api-username": p["username"], "x-api-password": p["password"]},
    "bearer": lambda p: {"authorization": f"Bearer {p['token']}"},
    "license code": lambda p: {"x-api-license-code": p["code"]},
}


@pytest.mark.parametrize("kind", SWAPS)
def test_a_proxy_swapping_in_a_paying_users_credentials_is_refused(server, app, payer, kind):
    # The free user's own credentials, of the same kind as the swap.
    free = server.client(app)
    free.sign_up(f"free-{kind.replace(' ', '-')}", PASSWORD)
    if kind == "password":
        auth = PasswordAuth(f"free-{kind}", PASSWORD)
    elif kind == "bearer":  # a session needs an active membership: a short one of the user's own
        free.activate_license(server.license_code(app, 5), f"free-{kind}", PASSWORD)
        auth = SessionAuth(free.login(f"free-{kind}", PASSWORD).session_token)
    else:
        auth = LicenseCodeAuth(server.license_code(app, 1))  # a code never redeemed
    seen = []

    def swap(req, forward):
        if req.path in ("/app_context", "/lease"):
            for name in ("authorization", "x-api-username", "x-api-password", "x-api-license-code"):
                req.headers.pop(name, None)
            req.headers.update(SWAPS[kind](payer))
            seen.append(req.path)
        answer = forward(req)
        if req.path in ("/app_context", "/lease"):
            seen.append(answer.status)  # the server's real answer, for the paying user
        return answer

    with Proxy(server.url, swap) as mitm:
        sut = server.client(app, base_url=mitm.url)
        sut.auth = auth
        assert verdict_of(sut.get_app_context) == "bad_signature"
        assert verdict_of(sut.create_lease) == "bad_signature"
    assert seen == ["/app_context", 200, "/lease", 200], seen
    # Without the proxy the payer's own credentials verify (the swap, not the credentials, is refused).
    own = server.client(app)
    own.auth = {"password": PasswordAuth(payer["username"], PASSWORD), "bearer": SessionAuth(payer["token"]), "license code": LicenseCodeAuth(payer["code"])}[kind]
    assert own.get_app_context().user.membership.is_active
    assert own.create_lease().user_id


def test_the_default_hardware_id_goes_on_login_on_a_device_auth_app(server):
    app = server.app(device_auth_enabled=True)
    sut = server.client(app, hardware_id=None)
    user = sut.sign_up("device-user", PASSWORD)
    sut.activate_license(server.license_code(app), "device-user", PASSWORD)
    sut.login("device-user", PASSWORD)
    sut.get_app_context()
    expected = hardware_id(app.id)
    detail = server.must(200, "GET", f"/apps/{app.id}/users/{user.id}")
    assert [d["hardware_id"] for d in detail["devices"]] == [expected]
    assert {s["hardware_id"] for s in detail["sessions"]} == {expected}


def test_a_413_verifies_over_the_empty_body_hash(server, app):
    sut = server.client(app)
    with pytest.raises(TollgateError) as err:
        sut.sign_up("big", "x" * (65 * 1024))
    assert err.value.status == 413 and err.value.code == "payload_too_large"


class Instance:
    def __init__(self, server, app, folders, clock):
        self.online = server.client(app, hardware_id="shared-machine", lease_store=FileLeaseStore.for_app(app.id, folders), clock=clock)


def lease_verdict(client):
    try:
        client.check_lease()
    except TollgateLeaseError as err:
        return err.verdict
    return "ok"


def test_two_instances_share_the_state_folders(server, app, tmp_path):
    """Two instances of one app on one machine (each its own client, files in the same folders) running in threads:
    each goes online and checks its lease 30 times; neither sees a clock_rollback; then one sees a ban online and the
    drop holds while the other keeps running (its writes merge, they never undo the drop)."""
    user_id = server.active_user(app, "twin", 7 * 24 * 60)
    folders = Folders(str(tmp_path / "data"), str(tmp_path / "state"))
    clock = FakeClock()
    a = Instance(server, app, folders, clock).online
    b = Instance(server, app, folders, clock).online
    for c in (a, b):
        c.auth = PasswordAuth("twin", PASSWORD)
    a.create_lease()
    problems = []

    def run(c, name):
        for i in range(30):
            try:
                c.get_app_context()
                if i % 10 == 0:
                    c.create_lease()
                verdict = lease_verdict(c)
            except TollgateLeaseError as err:  # create_lease() while the twin stored a newer one: superseded
                verdict = err.verdict
            except Exception as err:  # noqa: BLE001
                verdict = f"{type(err).__name__}: {err}"
            if verdict not in ("ok", "superseded"):  # the twin may have taken a newer lease since this one read it
                problems.append((name, i, verdict))

    threads = [threading.Thread(target=run, args=(c, n)) for c, n in ((a, "a"), (b, "b"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "an instance is stuck (on the state lock?)"
    assert problems == []
    assert lease_verdict(a) == "ok" and lease_verdict(b) == "ok"

    # A ban seen online by one instance; the other keeps checking and going online (answers for other calls) meanwhile.
    server.must(201, "POST", f"/apps/{app.id}/bans", {"type": "user", "value": user_id})
    with pytest.raises(TollgateError):
        a.get_app_context()
    assert lease_verdict(a) == "dropped"
    for _ in range(5):
        b.get_signing_keys()
        assert lease_verdict(b) == "dropped"
    fresh = Instance(server, app, folders, clock).online
    assert lease_verdict(fresh) == "dropped"


def test_an_older_key_is_refused_ten_minutes_after_a_newer_one_signed(server, app, payer):
    """Amendment D: a leaked older key (here certified by the app's root with an older not_before) keeps working only
    until 10 minutes after the client verified an answer by a newer key; then key_retired, key list or not."""
    now = int(time.time() * 1000)
    old = Ed25519PrivateKey.generate()
    cert = certify(server.root_key(app), app.id, "leaked-old", b64url(raw_public(old)), now - 2 * 86_400_000, now + 30 * 86_400_000)
    leak = {"on": False}

    def handle(req, forward):
        answer = forward(req)
        if not (leak["on"] and req.path == "/app_context"):
            return answer
        # The emulator's t is its own clock, which runs with the test's clock (time passing without waiting for it).
        return sign_answer(req, answer, old, "leaked-old", cert, app.id, int(time.time() * 1000) + clock.shift)

    clock = FakeClock()
    with Proxy(server.url, handle) as mitm:
        sut = server.client(app, base_url=mitm.url, clock=clock)
        sut.auth = SessionAuth(payer["token"])
        sut.get_app_context()  # signed by the current key: the newest this client has seen
        leak["on"] = True
        assert verdict_of(sut.get_app_context) == "accepted"  # within the 10 minutes (nodes may lag a rotation)
        clock.shift = 9 * 60_000
        assert verdict_of(sut.get_app_context) == "accepted"
        clock.shift = 10 * 60_000 + 1000
        assert verdict_of(sut.get_app_context) == "key_retired"
        leak["on"] = False
        assert verdict_of(sut.get_app_context) == "accepted"  # the current key still is
    # A client that never saw the newer key (a fresh install behind the emulator) still takes the leaked key: the
    # contract's limit (retirement is what ends a leaked key everywhere).


def test_a_failed_key_list_refresh_is_retried_a_minute_later(server, app, payer):
    fail = {"on": True, "count": 0}

    def handle(req, forward):
        if req.path == "/signing_keys":
            fail["count"] += 1
            if fail["on"]:
                return None  # the connection cut: a network failure
        return forward(req)

    clock = FakeClock()
    with Proxy(server.url, handle) as mitm:
        sut = server.client(app, base_url=mitm.url, clock=clock)
        sut.auth = SessionAuth(payer["token"])
        sut.get_app_context()  # an unknown kid: the refresh is tried, fails, verification goes on
        sut.get_app_context()  # the daily refresh is due (nothing fetched yet) but the failure was less than a minute ago
        assert fail["count"] == 1
        clock.mono += 61_000
        fail["on"] = False
        sut.get_app_context()  # retried a minute later (not a day): it works now
        assert fail["count"] == 2
        clock.mono += 61_000
        sut.get_app_context()  # fetched: the next one is a day away
        assert fail["count"] == 2


CHILD = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from tollgate import FileLeaseStore, Folders, PasswordAuth, TollgateLeaseError, TollgateClient
a = json.loads(sys.argv[2])
c = TollgateClient(base_url=a["url"], app_key=a["key"], app_secret=a["secret"], app_id=a["app_id"], root_public_key=a["root"],
                   hardware_id="shared-machine", lease_store=FileLeaseStore.for_app(a["app_id"], Folders(a["data"], a["state"])))
c.auth = PasswordAuth(a["user"], a["password"])
out = []
for i in range(30):
    c.get_app_context()
    try:
        c.check_lease()
        out.append("ok")
    except TollgateLeaseError as err:
        out.append(err.verdict)
print(json.dumps(out))
"""


def test_two_processes_share_the_state_folders(server, app, tmp_path):
    """The same as the threads above with two processes (the lock file works between them): 30 rounds each, online then
    offline check, with no clock_rollback; the copies end equal."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    server.active_user(app, "proc-twin", 7 * 24 * 60)
    folders = Folders(str(tmp_path / "data"), str(tmp_path / "state"))
    mine = server.client(app, hardware_id="shared-machine", lease_store=FileLeaseStore.for_app(app.id, folders))
    mine.auth = PasswordAuth("proc-twin", PASSWORD)
    mine.create_lease()
    args = {"url": server.url, "key": app.api_key, "secret": app.api_secret, "app_id": app.id, "root": app.root_public_key,
            "data": folders.data, "state": folders.state, "user": "proc-twin", "password": PASSWORD}
    src = str(Path(__file__).resolve().parents[1] / "src")
    child = subprocess.Popen([sys.executable, "-c", CHILD, src, json.dumps(args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    verdicts = []
    for _ in range(30):
        mine.get_app_context()
        verdicts.append(lease_verdict(mine))
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    assert set(verdicts) == {"ok"} and set(json.loads(out)) == {"ok"}
    assert Path(folders.data, "state.json").read_text() == Path(folders.state, "state.json").read_text()
    assert not Path(folders.data, "state.lock").exists()


def test_a_back_dated_ended_key_is_refused_by_a_fresh_install(server, app, payer):
    """Amendment F: an ended key (its private half leaked) signing a back-dated t is refused before the client ever saw
    a genuine answer: the SDK's release time (or not_before) is the floor of the server time it knows."""
    now = int(time.time() * 1000)
    ended = Ed25519PrivateKey.generate()
    not_before, not_after = now - 40 * 86_400_000, now - 20 * 86_400_000
    cert = certify(server.root_key(app), app.id, "ended-key", b64url(raw_public(ended)), not_before, not_after)

    def handle(req, forward):
        return sign_answer(req, forward(req), ended, "ended-key", cert, app.id, not_after - 3_600_000)  # back-dated into its validity

    with Proxy(server.url, handle) as mitm:
        fresh = server.client(app, base_url=mitm.url)
        fresh.auth = SessionAuth(payer["token"])
        assert verdict_of(fresh.get_app_context) == "key_expired"
        old_build = server.client(app, base_url=mitm.url, not_before=not_before)  # a floor before the key ended: nothing to go by
        old_build.auth = SessionAuth(payer["token"])
        assert verdict_of(old_build.get_app_context) == "accepted"
