"""Resumable, verified downloads. The bytes go to `<dest>.part` (with
`<dest>.part.json` holding the ETag, the same files as the TypeScript SDK)
and become `<dest>` only once the whole file's SHA-256 matches the hash the
server signed; an interrupted download resumes with Range/If-Range."""
from __future__ import annotations

import hashlib
import json
import os
import re
from typing import Callable, Optional

from .errors import TollgateVerificationError
from .transport import Outgoing, Transport
from .types import DownloadResult
from .verify import download_line

_ETAG = re.compile(r'"([0-9a-f]{64})"')
_TOTAL = re.compile(r"/([0-9]+)\Z")
_START = re.compile(r"bytes ([0-9]+)-")
CHUNK = 64 * 1024

ProgressCallback = Callable[[int, Optional[int]], None]


def _rm(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def download(transport: Transport, base: Outgoing, dest: str, on_progress: Optional[ProgressCallback] = None) -> DownloadResult:
    dest = os.fspath(dest)
    part, meta = f"{dest}.part", f"{dest}.part.json"

    def discard() -> None:
        _rm(part)
        _rm(meta)

    # What an earlier attempt left: bytes and the ETag they belong to (If-Range makes the server start over if the file changed).
    offset, etag = 0, None
    try:
        with open(meta, encoding="utf-8") as f:
            etag = json.load(f)["etag"]
        offset = os.path.getsize(part)
    except (OSError, ValueError, KeyError, TypeError):
        discard()
        offset, etag = 0, None
    headers = dict(base.headers)
    if offset > 0 and isinstance(etag, str) and etag:
        headers.update({"range": f"bytes={offset}-", "if-range": etag})
    request = Outgoing(base.method, base.path, base.json, headers, base.drops_lease)
    response, sent = transport.fetch(request)

    if response.status not in (200, 206):
        try:
            body = response.read()
        finally:
            response.close()
        # A 5xx or a verified refusal raises here; any other verified status is still not a download: refused as is.
        transport.refuse(base, transport.settle(base, sent, response, body))
        raise AssertionError("unreachable")  # refuse() always raises

    try:
        content_range = response.header("content-range")
        m = _ETAG.fullmatch(response.header("etag") or "")
        claimed = m.group(1) if m else None
        # With the ETag the signature is checked now, before a byte is written; without it, once the file is whole.
        if claimed is not None:
            transport.verify(sent, response, download_line(claimed, content_range))
        total: Optional[int] = None
        tm = _TOTAL.search(content_range or "")
        if tm:
            total = int(tm.group(1))
        elif (response.header("content-length") or "").isdigit():
            total = int(response.header("content-length"))

        start = 0
        if response.status == 206:
            sm = _START.match(content_range or "")
            start = int(sm.group(1)) if sm else -1
            if start != offset:
                discard()
                raise RuntimeError(f"tollgate: the server resumed at {content_range}, not at byte {offset}; retry the download")
        with open(meta, "w", encoding="utf-8") as f:
            json.dump({"etag": response.header("etag")}, f, separators=(",", ":"))
        received = start
        with open(part, "wb" if start == 0 else "ab") as out:
            while True:
                chunk = response.read(CHUNK)
                if not chunk:
                    break
                out.write(chunk)
                received += len(chunk)
                if on_progress is not None:
                    on_progress(received, total)
    finally:
        response.close()

    # The whole assembled file, old bytes and new, against the hash the server signed.
    h = hashlib.sha256()
    with open(part, "rb") as f:
        for chunk in iter(lambda: f.read(CHUNK), b""):
            h.update(chunk)
    actual = h.hexdigest()
    try:
        if claimed is None:
            transport.verify(sent, response, download_line(actual, content_range))
        elif actual != claimed:
            raise TollgateVerificationError("bad_signature", response.status)
    except BaseException:
        discard()
        raise
    os.replace(part, dest)
    _rm(meta)
    return DownloadResult(path=dest, size=received, sha256=actual, resumed=start > 0)
