"""The shared failure script of issue 27 (sdk/test-vectors/scenarios.json), run against the real server and this
suite's man-in-the-middle proxy: each scenario's online error, check_access() outcome and the lease afterwards, the
same outcomes the TypeScript and C++ SDKs must reach. Every scenario starts from a fresh client that fetched a valid
lease through the proxy (forwarding unchanged); then the proxy turns into the scenario's server."""
import json
import socket
import threading
import time
from pathlib import Path

import pytest

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from conftest import PASSWORD, Answer, FakeClock, Proxy, b64url, certify, raw_public, sign_answer
from test_lease import verdict_of as lease_verdict
from tollgate import (
    Clock,
    MemoryLeaseStore,
    TollgateError,
    TollgateLeaseError,
    TollgateNetworkError,
    TollgateRefusedError,
    TollgateUnavailableError,
    TollgateVerificationError,
)

SCRIPT = json.loads((Path(__file__).resolve().parents[2] / "test-vectors" / "scenarios.json").read_text("utf-8"))
ERRORS = {
    "NetworkError": TollgateNetworkError,
    "ServiceUnavailable": TollgateUnavailableError,
    "VerificationError": TollgateVerificationError,
    "Refused": TollgateRefusedError,
    "LeaseError": TollgateLeaseError,
}
UNAVAILABLE_BODY = b'{"detail":"The service is temporarily unavailable; try again shortly","code":"service_unavailable"}'


def forward_unchanged(req, forward):
    return forward()


class Scene:
    """The proxy in front of the real server, whose behaviour a scenario replaces once the lease is stored."""

    def __init__(self, server):
        self.behave = forward_unchanged
        self.hold = threading.Event()  # released at the end: the tarpit's held requests end then
        self.proxy = Proxy(server.url, lambda req, forward: self.behave(req, forward))

    def tarpit(self, req, forward):
        self.hold.wait(60)  # the request was read; not a byte of an answer is sent
        return None

    def close(self):
        self.hold.set()
        self.proxy.close()


def become(scene, name, server, app, user_id):
    """Turns the proxy into the scenario's server (scenarios.json `server`)."""
    if name == "server_down":
        scene.close()  # its port now has nothing listening
    elif name == "tarpit":
        scene.behave = scene.tarpit
    elif name == "unsigned_503":
        scene.behave = lambda req, forward: Answer(503, {"content-type": "application/json", "retry-after": "2"}, UNAVAILABLE_BODY)
    elif name == "unsigned_page":
        scene.behave = lambda req, forward: Answer(200, {"content-type": "text/html"}, b"<html>Sign in to the hotel Wi-Fi</html>")
    elif name == "verified_ban":
        server.must(201, "POST", f"/apps/{app.id}/bans", {"type": "user", "value": user_id, "reason": "chargeback"})
    elif name == "forged_answer":
        def flip(req, forward):
            a = forward()
            body = bytearray(a.body)
            body[len(body) // 2] ^= 0x01
            return Answer(a.status, a.headers, bytes(body))

        scene.behave = flip
    else:
        raise AssertionError(f"scenarios.json has a scenario this test does not know: {name}")


@pytest.fixture(scope="module")
def app(server):
    return server.app(offline_grace_seconds=86400)


def test_the_script_names_only_known_errors():
    for s in SCRIPT["scenarios"]:
        assert s["online_error"] in ERRORS
        assert s["check_access"].get("error", "LeaseError") in ERRORS


@pytest.mark.parametrize("scenario", SCRIPT["scenarios"], ids=[s["name"] for s in SCRIPT["scenarios"]])
def test_scenario(server, app, scenario):
    name = scenario["name"]
    username = f"alice-{name}"  # alice, once per scenario: the ban of one does not reach the others
    user_id = server.active_user(app, username, 60)
    scene = Scene(server)
    try:
        client = server.client(app, base_url=scene.proxy.url, lease_store=MemoryLeaseStore(), connect_timeout=1.0, timeout=1.5)
        client.login(username, PASSWORD)
        client.create_lease()
        become(scene, name, server, app, user_id)

        started = time.monotonic()
        with pytest.raises(ERRORS[scenario["online_error"]]) as online:
            client.get_app_context()
        elapsed_ms = (time.monotonic() - started) * 1000
        err = online.value
        if "network_reason" in scenario:
            assert err.reason == scenario["network_reason"]
        if "max_elapsed_ms" in scenario:
            assert elapsed_ms <= scenario["max_elapsed_ms"], elapsed_ms
        if "unavailable_verified" in scenario:
            assert err.verified is scenario["unavailable_verified"]
            assert (err.status, err.code, err.retry_after) == (503, None, 2)
        if "verdict" in scenario:
            assert err.verdict == scenario["verdict"]
        if "refused" in scenario:
            r = scenario["refused"]
            assert isinstance(err, TollgateError)
            assert (err.status, err.code, err.ban_reason) == (r["status"], r["code"], r["ban_reason"])

        expected = scenario["check_access"]
        if "source" in expected:
            access = client.check_access()
            assert access.source == expected["source"]
            assert access.context is None and isinstance(access.cause, ERRORS[scenario["online_error"]])
            assert lease_verdict(client) == expected["lease_verdict"]
            assert access.lease.user_id == user_id
        else:
            with pytest.raises(ERRORS[expected["error"]]) as raised:
                client.check_access()
            for field in ("code", "verdict"):
                if field in expected:
                    assert getattr(raised.value, field) == expected[field]
        if "lease_after" in scenario:
            assert lease_verdict(client) == scenario["lease_after"]
    finally:
        scene.close()


def test_check_access_online_renews_a_missing_lease(server, app):
    server.active_user(app, "alice-online", 60)
    client = server.client(app)
    client.login("alice-online", PASSWORD)
    access = client.check_access()
    assert access.source == "online" and access.context.user.username == "alice-online" and access.cause is None
    assert client.check_lease().user_id == access.context.user.id  # renewed, best effort, as none was stored


def test_a_failed_lease_check_carries_the_online_failure_and_the_times(server, app):
    server.active_user(app, "alice-times", 60)
    client = server.client(app, base_url="http://127.0.0.1:9", connect_timeout=1.0, timeout=1.5)
    with pytest.raises(TollgateLeaseError) as none:
        client.check_access(None)
    assert none.value.verdict == "no_lease" and isinstance(none.value.cause, TollgateNetworkError)
    assert none.value.cause.reason == "connection" and none.value.expires_at is None

    store = MemoryLeaseStore()
    online = server.client(app, lease_store=store)
    online.login("alice-times", PASSWORD)
    lease = online.create_lease()
    clock = FakeClock()
    clock.shift = lease.expires_at + 1000 - Clock().now()  # past exp: `expired`, with the lease's times
    offline = server.client(app, base_url="http://127.0.0.1:9", lease_store=store, clock=clock, connect_timeout=1.0, timeout=1.5)
    with pytest.raises(TollgateLeaseError) as expired:
        offline.check_access()
    e = expired.value
    assert e.verdict == "expired" and isinstance(e.cause, TollgateNetworkError)
    assert e.expires_at == lease.expires_at and e.runtime_left == lease.runtime_budget_ms
    assert e.last_seen_time is not None and e.last_seen_time >= lease.issued_at


def test_timeout_defaults_and_options(server, app):
    c = server.client(app)
    assert (c._transport.connect_timeout, c._transport.timeout) == (10.0, 30.0)
    c = server.client(app, connect_timeout=2, timeout=5)
    assert (c._transport.connect_timeout, c._transport.timeout) == (2, 5)


def test_a_signed_5xx_is_unavailable_and_verified(server, app):
    """A 5xx signed by a key the pinned root certified: ServiceUnavailable with verified True and its code."""
    root = server.root_key(app)
    key = Ed25519PrivateKey.generate()
    now = int(time.time() * 1000)
    cert = certify(root, app.id, "node-b", b64url(raw_public(key)), now - 1000, now + 86_400_000)
    body = b'{"detail":"The service is temporarily unavailable; try again shortly","code":"service_unavailable"}'
    with Proxy(server.url, lambda req, fwd: sign_answer(req, Answer(503, {"content-type": "application/json"}, body), key, "node-b", cert, app.id)) as mitm:
        client = server.client(app, base_url=mitm.url, key_refresh_ms=float("inf"))
        with pytest.raises(TollgateUnavailableError) as err:
            client.get_app_context(None)
    assert (err.value.status, err.value.verified, err.value.code, err.value.retry_after) == (503, True, "service_unavailable", None)


def test_the_connect_timeout_is_its_own(server, app):
    """A listener whose backlog is full: the TCP handshake never completes, so the connect timeout (1 s) ends the call
    long before the total one (60 s)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    filling = []
    try:
        for _ in range(4):
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex(("127.0.0.1", port))
            filling.append(s)
        client = server.client(app, base_url=f"http://127.0.0.1:{port}", connect_timeout=1.0, timeout=60.0)
        started = time.monotonic()
        with pytest.raises(TollgateNetworkError) as err:
            client.get_app_context(None)
        assert err.value.reason == "timeout"
        assert time.monotonic() - started < 30
    finally:
        for s in filling:
            s.close()
        listener.close()


def test_a_tls_failure_is_a_network_error(server, app):
    """HTTPS to a plain-HTTP port: the TLS handshake fails, nothing was answered."""
    client = server.client(app, base_url=server.url.replace("http://", "https://"), connect_timeout=5.0, timeout=10.0)
    with pytest.raises(TollgateNetworkError) as err:
        client.get_app_context(None)
    assert err.value.reason == "connection"
