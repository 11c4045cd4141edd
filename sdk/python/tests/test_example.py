"""examples/quickstart.py run as a vendor would, against the real server,
as a subprocess: online (redeem a code, membership, variable, a resumed
download, a lease), then offline on the lease, then behind the server's
unsigned 503, then a ban seen online, then offline again (the lease is
dropped)."""
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "quickstart.py"
SRC = Path(__file__).resolve().parents[1] / "src"
FILE = b"".join(b"chunk %05d of the installer\n" % i for i in range(4000))


def run(env):
    out = subprocess.run([sys.executable, str(EXAMPLE)], env=env, capture_output=True, text=True, timeout=60)
    assert not out.stderr.strip(), out.stderr
    return out.returncode, out.stdout


def test_the_quickstart_against_the_real_server(server, tmp_path):
    app = server.app(offline_grace_seconds=3600)
    server.must(200, "PUT", f"/apps/{app.id}/variables/latest_version", {"value": "3.1.4"})
    server.upload(app, "installer.bin", FILE)
    # A Pro license (issue 24): a template whose licenses grant the `pro` entitlement.
    tpl = server.must(201, "POST", f"/apps/{app.id}/templates", {"name": "Pro", "minutes": 60, "entitlements": ["pro"]})
    code = server.must(201, "POST", f"/apps/{app.id}/licenses", {"count": 1, "template_id": tpl["id"]})["licenses"][0]["code"]
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    # An interrupted earlier run left the first bytes of the file.
    sha = hashlib.sha256(FILE).hexdigest()
    (downloads / "installer.bin.part").write_bytes(FILE[:5000])
    (downloads / "installer.bin.part.json").write_text(json.dumps({"etag": f'"{sha}"'}))
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": str(SRC),
        "HOME": str(tmp_path),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "TOLLGATE_URL": server.url,
        "TOLLGATE_APP_ID": app.id,
        "TOLLGATE_APP_KEY": app.api_key,
        "TOLLGATE_APP_SECRET": app.api_secret,
        "TOLLGATE_ROOT_KEY": app.root_public_key,
        "LICENSE_CODE": code,
        "TOLLGATE_DOWNLOAD_DIR": str(downloads),
    }
    if not (Path("/etc/machine-id").exists() or Path("/var/lib/dbus/machine-id").exists()):
        env["TOLLGATE_HARDWARE_ID"] = "example-machine"

    rc, out = run(env)
    print(out)
    assert rc == 0, out
    assert "redeemed license code" in out
    assert "membership active (until " in out
    assert "variable latest_version = 3.1.4" in out
    assert "pro: PDF export enabled" in out
    assert f"downloaded installer.bin (resumed): {len(FILE)} bytes, sha256 {sha}" in out
    assert "offline lease #1 valid until" in out
    assert (downloads / "installer.bin").read_bytes() == FILE
    assert (tmp_path / "data" / "tollgate" / app.id / "lease.tollgate").exists()
    assert (tmp_path / "state" / "tollgate" / app.id / "state.json").exists()

    rc, out = run({**env, "TOLLGATE_URL": "http://127.0.0.1:9"})
    print(out)
    assert rc == 0, out
    assert "server unreachable" in out and "offline: lease #1 ok until" in out

    rc, out = run(env)  # a second run online: the code is already redeemed, the download whole, the lease not due yet
    assert rc == 0 and "license code already redeemed" in out and "(whole)" in out and "offline lease #1" in out, out

    # The server's own unsigned 503 (database down) falls back to the lease instead of crashing (issue 27.4).
    from conftest import Answer, Proxy

    unavailable = Answer(503, {"content-type": "application/json", "retry-after": "2"}, b'{"detail":"down","code":"service_unavailable"}')
    with Proxy(server.url, lambda req, forward: unavailable) as down:
        rc, out = run({**env, "TOLLGATE_URL": down.url})
    print(out)
    assert rc == 0 and "offline: lease #1 ok until" in out and "503" in out, out

    # Floating seats (issue 25): the example holds a seat while it works (the heartbeat moves its expiry on), then
    # gives it back (no lease holds it in this run: released True).
    server.must(200, "PATCH", f"/apps/{app.id}", {"max_seats": 2, "heartbeat_seconds": 10})
    rc, out = run({**env, "TOLLGATE_SEATS": "1", "TOLLGATE_WORK_SECONDS": "4"})
    print(out)
    assert rc == 0, out
    assert re.search(r"^seat \S+ checked out \(1/2 in use\), heartbeat every 3\.33+ s$", out, re.M), out
    assert "seat still held, expires at " in out and "seat released: True" in out, out
    assert server.must(200, "GET", f"/apps/{app.id}/seats")["items"] == []

    user = server.client(app).get_app_context(__import__("tollgate").LicenseCodeAuth(code)).user
    server.must(201, "POST", f"/apps/{app.id}/bans", {"type": "user", "value": user.id})
    rc, out = run(env)
    print(out)
    assert rc == 1 and "server refused: banned (403)" in out, out
    # A fresh process that never saw the user online: the signed refusal names the lease's user, so the lease is dropped.
    rc, out = run({**env, "TOLLGATE_URL": "http://127.0.0.1:9"})
    print(out)
    assert rc == 4 and "offline lease refused: dropped" in out, out
