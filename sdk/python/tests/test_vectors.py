"""Every shared vector of sdk/test-vectors passes the Python verifier: the
vectors were generated from docs/signing.md independently of this code, of
the server's and of the TypeScript SDK's, so each side checks the others."""
import base64
import json
from pathlib import Path

import pytest

from tollgate import Membership, Pinned, SeatRelease, RollbackState, SignedRequest, check_certificate, check_lease, credentials_sha256, download_line, live_entitlements, verify_answer
from tollgate._encoding import sha256_hex

VECTORS = Path(__file__).resolve().parents[2] / "test-vectors"


def load(name):
    return json.loads((VECTORS / name).read_text("utf-8"))


CERTS = load("certificates.json")
RESPONSES = load("responses.json")
LEASES = load("leases.json")


def b64(text):
    return base64.b64decode(text)


@pytest.mark.parametrize("case", CERTS["cases"], ids=lambda c: c["name"])
def test_certificate(case):
    pinned = Pinned(CERTS["app_id"], CERTS["root_public_key"])
    assert check_certificate(case["certificate"], pinned, case["at"]) == case["expect"], case["why"]


@pytest.mark.parametrize("case", RESPONSES["cases"], ids=lambda c: c["name"])
def test_answer(case):
    h = case["answer"]["headers"]
    body = b64(case["answer"]["body_b64"])
    if "download" in case:
        line = download_line(sha256_hex(b64(case["download"]["file_b64"])), h.get("content-range"))
    else:
        line = sha256_hex(body)
    req = case["request"]
    # The credential-header line from the headers the client sent (text, UTF-8 on the wire): the same hash the generator wrote.
    credentials = credentials_sha256(req["headers"])
    assert credentials == req["credentials_sha256"]
    request = SignedRequest(req["method"], req["target"], b64(req["body_b64"]), req["nonce"], credentials)
    pinned = Pinned(req["app_id"], RESPONSES["root_public_key"])
    check = verify_answer(pinned, set(case["retired"]), request, case["answer"]["status"], h.get("tollgate-signature"), h.get("tollgate-key-cert"), line)
    assert check.verdict == case["expect"], case["why"]
    # Issue 24: what has() sees once the answer is in: the user's entitlements when it verified, nothing otherwise.
    if "entitlements" in case:
        user = json.loads(body.decode("utf-8"))["user"] if check.verdict == "ok" else None
        membership = Membership.from_json(user["membership"]) if user else None
        assert sorted(membership.entitlements if membership else []) == case["entitlements"]
        assert (membership.is_trial if membership else False) == case["is_trial"]
    # Issue 25: what release_seat() returns once a DELETE /seats answer verified (held_until: a lease holds the seat).
    if "seat_release" in case:
        release = SeatRelease.from_json(json.loads(body.decode("utf-8"))) if check.verdict == "ok" else None
        assert (release and {"released": release.released, "held_until": release.held_until}) == case["seat_release"]


@pytest.mark.parametrize("case", LEASES["cases"], ids=lambda c: c["name"])
def test_lease(case):
    s = case["state"]
    state = RollbackState(s["highest_trusted_time"], s["highest_seq"], s["runtime_used_ms"], s["dropped"], s.get("max_server_time", 0))
    pinned = Pinned(LEASES["app_id"], LEASES["root_public_key"])
    check = check_lease(case["lease"], pinned, set(case["retired"]), case["hardware_id"], state, case["now"])
    assert check.verdict == case["expect"], case["why"]
    if "renew_due" in case:
        assert check.renew_due == case["renew_due"]
    # Issue 24: the entitlements has() sees offline at `now`, and is_trial (an older lease: none, False).
    if case["expect"] == "ok":
        assert live_entitlements(check.payload, case["now"]) == case["entitlements"]
        assert check.payload.is_trial == case["is_trial"]


def test_vectors_cover_every_verdict():
    assert {c["expect"] for c in RESPONSES["cases"]} == {
        "ok", "missing_signature", "malformed_signature", "bad_certificate", "wrong_app", "kid_mismatch", "key_retired", "key_expired", "bad_signature",
    }
    assert {c["expect"] for c in LEASES["cases"]} == {
        "ok", "malformed", "bad_certificate", "wrong_app", "bad_signature", "key_expired", "key_retired",
        "hardware_mismatch", "superseded", "dropped", "clock_rollback", "expired", "runtime_exhausted",
    }
    assert len(CERTS["cases"]) >= 30 and len(RESPONSES["cases"]) >= 41 and len(LEASES["cases"]) >= 41
