"""Against the real server: every typed call, verified errors with their
stable codes, a fresh nonce per call; and what a cracked or redirected client
meets: an emulator with its own root, real answers with their body changed
or re-signed, replayed, or taken from another request. Each is refused with
the verdict of docs/signing.md and nothing of the answer reaches the app.
Also rotation without a client update, and a retired key refused."""
import json
import time

import pytest

from conftest import PASSWORD, Answer, Proxy, certify, kid_of, raw_public, sign_answer, b64url
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from tollgate import (
    AppContext, LicenseCodeAuth, PasswordAuth, SessionAuth, TollgateError, TollgateNetworkError, TollgateVerificationError,
)


@pytest.fixture(scope="module")
def app(server):
    a = server.app()
    server.must(200, "PUT", f"/apps/{a.id}/variables/latest_version", {"value": "2.4.1"})
    return a


@pytest.fixture(scope="module")
def session_token(server, app):
    server.active_user(app, "alice")
    return server.client(app).login("alice", PASSWORD).session_token


def verdict_of(call):
    try:
        call()
    except TollgateVerificationError as err:
        return err.verdict
    except Exception as err:  # noqa: BLE001
        return f"other error: {type(err).__name__}: {err}"
    return "accepted"


def active_context(app_id):
    return json.dumps({"application": {"id": app_id, "name": "x", "variables": [], "files": []},
                       "user": {"id": "u", "username": "alice", "membership": {"is_active": True, "is_lifetime": True, "active_until": None}},
                       "server_time": "2026-01-01T00:00:00.000Z"}).encode()


def through(server, app, handle, token=None):
    mitm = Proxy(server.url, handle)
    client = server.client(app, base_url=mitm.url)
    if token:
        client.auth = SessionAuth(token)
    return client, mitm


class TestTypedCalls:
    def test_sign_up_activate_login_context_variable_logout(self, server, app):
        sut = server.client(app)
        user = sut.sign_up("bob", PASSWORD)
        assert user.username == "bob" and user.membership.is_active is False
        activation = sut.activate_license(server.license_code(app), "bob", PASSWORD)
        assert activation.minutes == 60
        session = sut.login("bob", PASSWORD)
        assert sut.auth == SessionAuth(session.session_token)
        ctx = sut.get_app_context()
        assert isinstance(ctx, AppContext) and ctx.user.membership.is_active
        assert ctx.application.variable("latest_version") == "2.4.1"
        sut.logout()
        assert sut.auth is None
        with pytest.raises(TollgateError) as err:
            sut.get_app_context(SessionAuth(session.session_token))
        assert err.value.status == 401

    def test_redeem_before_membership_then_by_session(self, server, app):
        sut = server.client(app)
        sut.sign_up("redeemer", PASSWORD)
        sut.auth = PasswordAuth("redeemer", PASSWORD)  # no membership yet, so no login: redeeming needs none
        code = server.license_code(app, 45)
        answer = sut.redeem(code)
        assert answer.activation.minutes == 45 and answer.activation.type == "license"
        assert answer.user.username == "redeemer" and answer.user.membership.is_active
        assert sut.get_app_context().user == answer.user
        sut.login("redeemer", PASSWORD)
        with pytest.raises(TollgateError) as err:
            sut.redeem(code)
        assert (err.value.status, err.value.code) == (401, "license_used")

    def test_license_code_alone(self, server, app):
        sut = server.client(app)
        code = server.license_code(app)
        user = sut.sign_up_with_license_code(code)
        assert user.membership.is_active
        assert sut.get_app_context(LicenseCodeAuth(code)).user.id == user.id
        assert sut.login(code=code).session_token

    def test_verified_errors_carry_the_stable_code_and_field_errors(self, server, app):
        sut = server.client(app)
        with pytest.raises(TollgateError) as err:
            sut.login("nobody", "wrong password")
        assert (err.value.status, err.value.code) == (401, "invalid_credentials")
        with pytest.raises(TollgateError) as err:
            sut.sign_up("x", PASSWORD)
        assert (err.value.status, err.value.code) == (422, "validation_error")
        assert err.value.field_errors and err.value.field_errors[0].field.startswith("body.username")

    def test_an_unsigned_answer_is_missing_signature(self, server, app):
        sut = server.client(app, app_secret="not-the-secret")  # the app is not known: the answer cannot be signed
        with pytest.raises(TollgateVerificationError) as err:
            sut.get_app_context(LicenseCodeAuth("X"))
        assert (err.value.verdict, err.value.unverified_status) == ("missing_signature", 401)

    def test_no_server_is_a_network_error(self, server, app):
        with pytest.raises(TollgateNetworkError):
            server.client(app, base_url="http://127.0.0.1:9").get_signing_keys()

    def test_a_fresh_nonce_on_every_call(self, server, app):
        nonces = []

        def handle(req, forward):
            nonces.append(req.headers.get("tollgate-nonce"))
            return forward()

        client, mitm = through(server, app, handle)
        with mitm:
            assert app.kid in [k.kid for k in client.get_signing_keys().keys]
            for _ in range(2):
                with pytest.raises(TollgateError):
                    client.get_app_context(None)
        assert len(nonces) >= 3 and len(set(nonces)) == len(nonces)
        assert all(n and 16 <= len(n) <= 64 for n in nonces)


class TestEmulatorRefused:
    def test_an_emulator_with_its_own_root_signing_correctly(self, server, app, session_token):
        root, key = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
        now = int(time.time() * 1000)
        cert = certify(root, app.id, "emu1", b64url(raw_public(key)), now - 1000, now + 86_400_000)
        client, mitm = through(server, app, lambda req, fwd: sign_answer(req, Answer(200, {"content-type": "application/json"}, active_context(app.id)), key, "emu1", cert, app.id), session_token)
        with mitm:
            assert verdict_of(client.get_app_context) == "bad_certificate"

    def test_the_real_certificate_with_another_key(self, server, app, session_token):
        key = Ed25519PrivateKey.generate()

        def handle(req, forward):
            real = forward()
            return sign_answer(req, Answer(real.status, real.headers, active_context(app.id)), key, kid_of(real), real.headers["tollgate-key-cert"], app.id)

        client, mitm = through(server, app, handle, session_token)
        with mitm:
            assert verdict_of(client.get_app_context) == "bad_signature"

    def test_a_real_answer_with_its_body_changed_a_banned_user_made_active(self, server, app):
        banned = server.active_user(app, "mallory")
        server.must(201, "POST", f"/apps/{app.id}/bans", {"type": "user", "value": banned})

        def handle(req, forward):
            real = forward()
            return Answer(200, real.headers, active_context(app.id))

        client, mitm = through(server, app, handle)
        with mitm:
            assert verdict_of(lambda: client.get_app_context(PasswordAuth("mallory", PASSWORD))) == "bad_signature"
        with pytest.raises(TollgateError) as err:  # the real answer, untouched
            server.client(app).get_app_context(PasswordAuth("mallory", PASSWORD))
        assert err.value.code == "banned"

    def test_a_replay_the_right_key_an_old_nonce(self, server, app, session_token):
        recorded = []

        def handle(req, forward):
            if not req.path.startswith("/app_context"):
                return forward()
            if not recorded:
                recorded.append(forward())
            return recorded[0]

        client, mitm = through(server, app, handle, session_token)
        with mitm:
            assert client.get_app_context().user.username == "alice"  # recorded, and accepted: it answers this request
            assert verdict_of(client.get_app_context) == "bad_signature"

    def test_an_answer_for_another_request(self, server, app, session_token):
        def handle(req, forward):
            if req.path == "/app_context":
                req.path = "/signing_keys"
            return forward(req)

        client, mitm = through(server, app, handle, session_token)
        with mitm:
            assert verdict_of(client.get_app_context) == "bad_signature"

    def test_an_answer_for_another_request_body(self, server, app):
        def handle(req, forward):
            if req.path == "/auth/login":
                req.body = json.dumps({"credentials": {"username": "alice", "password": PASSWORD}}).encode()
            return forward(req)

        client, mitm = through(server, app, handle)
        with mitm:
            assert verdict_of(lambda: client.login("nobody", "wrong")) == "bad_signature"

    def test_an_answer_for_another_app(self, server, app):
        other = server.app()
        code = server.license_code(other)
        server.client(other).sign_up_with_license_code(code)

        def swap(req, forward):
            req.headers["x-api-key"], req.headers["x-api-secret"] = other.api_key, other.api_secret
            return forward(req)

        client, mitm = through(server, app, swap)
        with mitm:
            assert verdict_of(lambda: client.get_app_context(LicenseCodeAuth(code))) == "bad_certificate"

    def test_headers_stripped_or_garbled(self, server, app, session_token):
        def strip(req, forward):
            real = forward()
            real.headers.pop("tollgate-signature", None)
            return real

        def garble(req, forward):
            real = forward()
            real.headers["tollgate-signature"] = real.headers["tollgate-signature"].replace("v1;", "v2;")
            return real

        for handle, verdict in ((strip, "missing_signature"), (garble, "malformed_signature")):
            client, mitm = through(server, app, handle, session_token)
            with mitm:
                assert verdict_of(client.get_app_context) == verdict


class TestKeys:
    def watched(self, server, app):
        seen = []
        state = {"override": None}

        def handle(req, forward):
            answer = state["override"](req, forward) if state["override"] else forward()
            seen.append((req.path, kid_of(answer)))
            return answer

        mitm = Proxy(server.url, handle)
        return server.client(app, base_url=mitm.url), seen, state, mitm

    def test_rotation_needs_no_client_update(self, server):
        app = server.app()
        client, seen, _, mitm = self.watched(server, app)
        with mitm:
            with pytest.raises(TollgateError):
                client.get_app_context(None)
            assert [k for p, k in seen if p == "/app_context"] == [app.kid]
            rotated = server.cli("keys", "rotate", "--app", app.id, "--root-key", app.root_key_file)
            assert rotated["kid"] != app.kid
            seen.clear()
            # The same client object, the same pinned root: the answer comes from the new key, verified (a verified 401).
            with pytest.raises(TollgateError) as err:
                client.get_app_context(None)
            assert err.value.code == "anonymous_not_allowed"
            # The unknown kid made the client fetch the key list before accepting the answer.
            assert seen == [("/app_context", rotated["kid"]), ("/signing_keys", rotated["kid"])]
            assert sorted(k.kid for k in client.get_signing_keys().keys) == sorted([app.kid, rotated["kid"]])

    def test_a_retired_key_is_refused_once_learned(self, server):
        app = server.app()
        client, seen, state, mitm = self.watched(server, app)
        with mitm:
            captured = []

            def capture(req, forward):
                a = forward()
                if req.path == "/app_context":
                    captured.append(a)
                return a

            state["override"] = capture
            with pytest.raises(TollgateError):
                client.get_app_context(None)
            state["override"] = None
            assert kid_of(captured[0]) == app.kid

            def replay(req, forward):
                return captured[0] if req.path == "/app_context" else forward()

            server.cli("keys", "rotate", "--app", app.id, "--root-key", app.root_key_file)
            server.cli("keys", "retire", "--app", app.id, app.kid)
            # The first client learns the retirement from the new key's first answer (unknown kid: key list), then refuses the replay.
            with pytest.raises(TollgateError):
                client.get_app_context(None)
            state["override"] = replay
            assert verdict_of(lambda: client.get_app_context(None)) == "key_retired"
