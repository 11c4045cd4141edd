"""The REAL server for the SDK's tests: the built CLI (`node dist/cli/main.js
serve`) as a child process on a temporary SQLite database, one per test
session; apps made through the admin API and keys with the real CLI
(`tollgate keys init/rotate/retire`), as an operator does. Also a
man-in-the-middle proxy that forwards to it and lets a test replay, swap,
alter or re-sign answers (what an emulator or a tampering proxy does)."""
from __future__ import annotations

import base64
import hashlib
import http.client
import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable, Dict, Optional

import sys

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # the package from this checkout, installed or not

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from tollgate import Clock, MemoryLeaseStore, TollgateClient, credentials_sha256

ROOT = Path(__file__).resolve().parents[3]
MAIN = ROOT / "dist" / "cli" / "main.js"
ADMIN_TOKEN = "sdk-python-test-admin-token-0123456789"
PASSWORD = "correct horse battery"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class AppUnderTest:
    id: str
    api_key: str
    api_secret: str
    root_public_key: str
    root_key_file: str
    kid: str


class FakeClock(Clock):
    """The wall clock shifted by `shift` ms, and a monotonic clock the test moves."""

    def __init__(self) -> None:
        self.shift = 0
        self.mono = 0.0

    def now(self) -> float:
        return super().now() + self.shift

    def monotonic(self) -> float:
        return self.mono


class Server:
    def __init__(self) -> None:
        if not MAIN.exists():
            pytest.fail(f"{MAIN} is missing: run `npm run build` at the repository root (run-tests.sh does it)")
        self.dir = tempfile.mkdtemp(prefix="tollgate-sdk-py-")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": self.dir,
            "DATABASE_URL": f"sqlite:{self.dir}/t.db",
            "PORT": str(self.port),
            "HOST": "127.0.0.1",
            "TOLLGATE_ADMIN_TOKEN": ADMIN_TOKEN,
            "LOG_LEVEL": "warn",
            "RATE_LIMIT": "off",
        }
        self.log = open(os.path.join(self.dir, "server.log"), "wb")
        self.proc = subprocess.Popen(["node", str(MAIN), "serve"], cwd=self.dir, env=self.env, stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"tollgate serve exited {self.proc.returncode}: {self._log_text()}")
            try:
                with urllib.request.urlopen(f"{self.url}/readyz", timeout=2) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"tollgate serve not ready after 30 s: {self._log_text()}")
            time.sleep(0.1)
        self._apps = 0

    def _log_text(self) -> str:
        self.log.flush()
        return Path(self.dir, "server.log").read_text("utf-8", "replace")[-2000:]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def admin(self, method: str, path: str, body=None, raw: Optional[bytes] = None, content_type: str = "application/json"):
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        headers = {"authorization": f"Bearer {ADMIN_TOKEN}"}
        if data is not None:
            headers["content-type"] = content_type
        req = urllib.request.Request(f"{self.url}/admin/v1{path}", data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=20) as r:
                status, text = r.status, r.read()
        except urllib.error.HTTPError as e:
            status, text = e.code, e.read()
        return status, (json.loads(text) if text else None)

    def must(self, status: int, method: str, path: str, body=None, **kw):
        got, answer = self.admin(method, path, body, **kw)
        assert got == status, f"{method} {path}: {got} {answer}"
        return answer

    def cli(self, *args: str):
        out = subprocess.run(["node", str(MAIN), "--json", "--url", self.url, "--token", ADMIN_TOKEN, *args], cwd=self.dir, env=self.env, capture_output=True, text=True, timeout=30)
        assert out.returncode == 0, f"tollgate {' '.join(args)}: {out.stderr}"
        return json.loads(out.stdout) if out.stdout.strip() else None

    def app(self, **settings) -> AppUnderTest:
        self._apps += 1
        created = self.must(201, "POST", "/apps", {"name": f"Python SDK app {self._apps}", **settings})
        root_key_file = os.path.join(self.dir, f"root-{created['id']}.pem")
        init = self.cli("keys", "init", "--app", created["id"], "--out", root_key_file)
        return AppUnderTest(created["id"], created["api_key"], created["api_secret"], init["root_public_key"], root_key_file, init["signing_key"]["kid"])

    def root_key(self, app: AppUnderTest) -> Ed25519PrivateKey:
        return serialization.load_pem_private_key(Path(app.root_key_file).read_bytes(), password=None)

    def license_code(self, app: AppUnderTest, minutes: int = 60) -> str:
        return self.must(201, "POST", f"/apps/{app.id}/licenses", {"count": 1, "minutes": minutes})["licenses"][0]["code"]

    def active_user(self, app: AppUnderTest, username: str, minutes: int = 60) -> str:
        c = self.client(app)
        user = c.sign_up(username, PASSWORD)
        c.activate_license(self.license_code(app, minutes), username, PASSWORD)
        return user.id

    def upload(self, app: AppUnderTest, name: str, data: bytes) -> str:
        return self.must(201, "POST", f"/apps/{app.id}/files?name={name}&mime_type=application/octet-stream", raw=data, content_type="application/octet-stream")["id"]

    def client(self, app: AppUnderTest, **options) -> TollgateClient:
        kw = dict(base_url=self.url, app_key=app.api_key, app_secret=app.api_secret, app_id=app.id, root_public_key=app.root_public_key,
                  hardware_id="test-machine-1", lease_store=MemoryLeaseStore())
        kw.update(options)
        return TollgateClient(**kw)


@pytest.fixture(scope="session")
def server():
    s = Server()
    try:
        yield s
    finally:
        s.stop()


# -- a man in the middle ---------------------------------------------------

@dataclass
class Exchange:
    method: str
    path: str
    headers: Dict[str, str]
    body: bytes


@dataclass
class Answer:
    status: int
    headers: Dict[str, str]
    body: bytes


Handler = Callable[[Exchange, Callable[..., Answer]], Answer]


class Proxy:
    """A proxy in front of `target`: `handle(req, forward)` gets each request and returns the answer sent."""

    def __init__(self, target: str, handle: Handler) -> None:
        host, port = target.replace("http://", "").split(":")
        self.handle = handle

        def forward(req: Exchange) -> Answer:
            conn = http.client.HTTPConnection(host, int(port), timeout=20)
            try:
                headers = {k: v for k, v in req.headers.items() if k not in ("host", "connection", "content-length")}
                conn.request(req.method, req.path, body=req.body if req.body else None, headers=headers)
                r = conn.getresponse()
                body = r.read()
                out = {k.lower(): v for k, v in r.getheaders() if k.lower() not in ("content-length", "transfer-encoding", "connection", "keep-alive")}
                return Answer(r.status, out, body)
            finally:
                conn.close()

        proxy = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _any(self):
                n = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(n) if n else b""
                # Header values as bytes (latin-1 of UTF-8), the way they arrived.
                ex = Exchange(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                try:
                    a = proxy.handle(ex, lambda r=None: forward(r or ex))
                except Exception as err:  # noqa: BLE001
                    a = Answer(599, {}, str(err).encode())
                if a is None:  # the connection cut without an answer (a network failure)
                    self.close_connection = True
                    return
                self.send_response(a.status)
                for k, v in a.headers.items():
                    self.send_header(k, v)
                self.send_header("content-length", str(len(a.body)))
                self.send_header("connection", "close")
                self.end_headers()
                self.wfile.write(a.body)
                self.close_connection = True

            do_GET = do_POST = _any

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# -- signing as the server does, with any key (an emulator) ----------------

def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def raw_public(key: Ed25519PrivateKey) -> bytes:
    return key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def certify(root: Ed25519PrivateKey, app_id: str, kid: str, public_key: str, not_before: int, not_after: int) -> str:
    signed = "\n".join(["tollgate/keycert/v1", app_id, kid, public_key, str(not_before), str(not_after)]).encode()
    obj = {"v": 1, "app_id": app_id, "kid": kid, "public_key": public_key, "not_before": not_before, "not_after": not_after, "sig": b64url(root.sign(signed))}
    return b64url(json.dumps(obj, separators=(",", ":")).encode())


def sign_answer(req: Exchange, answer: Answer, key: Ed25519PrivateKey, kid: str, certificate: str, app_id: str, t: Optional[int] = None) -> Answer:
    t = int(time.time() * 1000) if t is None else t
    lines = ["tollgate/response/v1", kid, str(t), req.headers.get("tollgate-nonce", ""), app_id, str(answer.status), f"{req.method} {req.path}",
             hashlib.sha256(req.body).hexdigest(), credentials_sha256({k: v.encode("latin-1") for k, v in req.headers.items()}),
             hashlib.sha256(answer.body).hexdigest()]
    sig = key.sign("\n".join(lines).encode())
    headers = dict(answer.headers)
    headers["tollgate-signature"] = f"v1; kid={kid}; t={t}; sig={b64url(sig)}"
    headers["tollgate-key-cert"] = certificate
    return Answer(answer.status, headers, answer.body)


def kid_of(answer: Answer) -> Optional[str]:
    sig = answer.headers.get("tollgate-signature", "")
    return sig.split("kid=")[1].split(";")[0] if "kid=" in sig else None
