"""Downloads from the real server: whole, resumed with Range/If-Range (the
assembled file checked against the signed hash), and a resumed file whose
earlier bytes were wrong refused with nothing kept."""
import hashlib
import json
from pathlib import Path

import pytest

from conftest import PASSWORD, Proxy
from tollgate import TollgateVerificationError

FILE = "".join(f"line {i} of the game data\n" for i in range(5000)).encode()
SHA = hashlib.sha256(FILE).hexdigest()


@pytest.fixture(scope="module")
def setup(server):
    app = server.app()
    file_id = server.upload(app, "game.pak", FILE)
    server.active_user(app, "downloader")
    client = server.client(app)
    client.login("downloader", PASSWORD)
    return app, file_id, client


def test_a_whole_file_verified_against_the_signed_hash(setup, tmp_path):
    _, file_id, client = setup
    progress = []
    dest = tmp_path / "whole.pak"
    result = client.download_file(file_id, dest, on_progress=lambda got, total: progress.append((got, total)))
    assert dest.read_bytes() == FILE
    assert (result.size, result.sha256, result.resumed) == (len(FILE), SHA, False)
    assert progress[-1] == (len(FILE), len(FILE))
    assert not Path(f"{dest}.part").exists() and not Path(f"{dest}.part.json").exists()


def test_resumes_with_range_and_if_range(server, setup, tmp_path):
    app, file_id, client = setup
    dest = tmp_path / "resumed.pak"
    # What an interrupted first attempt leaves: the first bytes and the ETag they came with.
    Path(f"{dest}.part").write_bytes(FILE[:1234])
    Path(f"{dest}.part.json").write_text(json.dumps({"etag": f'"{SHA}"'}))
    ranges = []

    def handle(req, forward):
        if "/download" in req.path:
            ranges.append((req.headers.get("range"), req.headers.get("if-range")))
        return forward()

    with Proxy(server.url, handle) as mitm:
        result = server.client(app, base_url=mitm.url).download_file(file_id, dest, auth=client.auth)
    assert ranges == [("bytes=1234-", f'"{SHA}"')]
    assert (result.resumed, result.sha256) == (True, SHA)
    assert dest.read_bytes() == FILE


def test_a_resumed_file_with_wrong_earlier_bytes_is_refused_and_nothing_kept(setup, tmp_path):
    _, file_id, client = setup
    dest = tmp_path / "bad.pak"
    Path(f"{dest}.part").write_bytes(b"A" * 1000)
    Path(f"{dest}.part.json").write_text(json.dumps({"etag": f'"{SHA}"'}))
    with pytest.raises(TollgateVerificationError) as err:
        client.download_file(file_id, dest)
    assert err.value.verdict == "bad_signature"
    assert not dest.exists() and not Path(f"{dest}.part").exists()


def test_bytes_changed_in_transit_are_refused(server, setup, tmp_path):
    app, file_id, client = setup

    def handle(req, forward):
        real = forward()
        if "/download" in req.path:
            real.body = real.body[:-5] + b"EVIL\n"
        return real

    dest = tmp_path / "evil.pak"
    with Proxy(server.url, handle) as mitm:
        with pytest.raises(TollgateVerificationError) as err:
            server.client(app, base_url=mitm.url).download_file(file_id, dest, auth=client.auth)
    assert err.value.verdict == "bad_signature" and not dest.exists()
