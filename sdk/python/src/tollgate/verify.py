"""Key certificates and signed answers (docs/signing.md): decoded strictly,
checked against the pinned root by rebuilding the signed bytes from the
fields (never by re-serialising JSON), the ordered checks of an answer with
the first failure as the verdict. Pure functions: the transport calls them
on the raw bytes before anything parses a body."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import AbstractSet, Mapping, Optional, Union

from ._encoding import b64url_decode, decode_json_object, ed25519_verify, has_exact_keys, is_safe_integer, sha256_hex, utf8

MAX_CERT_VALIDITY_MS = 90 * 24 * 3600 * 1000

#: The verdicts of an answer, in the order they are checked.
ANSWER_VERDICTS = (
    "missing_signature",
    "malformed_signature",
    "bad_certificate",
    "wrong_app",
    "kid_mismatch",
    "key_retired",
    "key_expired",
    "bad_signature",
    "ok",
)


@dataclass(frozen=True)
class Pinned:
    """What the client pins: the app id and the app's public root key (base64url of 32 bytes)."""

    app_id: str
    root_public_key: str


@dataclass(frozen=True)
class Certificate:
    app_id: str
    kid: str
    public_key: str
    not_before: int
    not_after: int
    sig: str
    public_key_bytes: bytes
    sig_bytes: bytes


_CERT_FIELDS = ("v", "app_id", "kid", "public_key", "not_before", "not_after", "sig")


def decode_certificate(encoded: str) -> Optional[Certificate]:
    o = decode_json_object(encoded)
    if o is None or not has_exact_keys(o, _CERT_FIELDS) or not is_safe_integer(o["v"]) or o["v"] != 1:
        return None
    if not all(isinstance(o[k], str) for k in ("app_id", "kid", "public_key", "sig")):
        return None
    if not is_safe_integer(o["not_before"]) or not is_safe_integer(o["not_after"]):
        return None
    public_key_bytes = b64url_decode(o["public_key"])
    sig_bytes = b64url_decode(o["sig"])
    if public_key_bytes is None or len(public_key_bytes) != 32 or sig_bytes is None or len(sig_bytes) != 64:
        return None
    return Certificate(o["app_id"], o["kid"], o["public_key"], int(o["not_before"]), int(o["not_after"]), o["sig"], public_key_bytes, sig_bytes)


def certificate_input(c: Certificate) -> Optional[bytes]:
    try:
        return utf8("\n".join(["tollgate/keycert/v1", c.app_id, c.kid, c.public_key, str(c.not_before), str(c.not_after)]))
    except UnicodeEncodeError:  # a lone surrogate from JSON: not a Tollgate value
        return None


def certificate_covers(c: Certificate, t: int) -> bool:
    """`t` inside [not_before, not_after] and a validity in (0, 90 days]."""
    span = c.not_after - c.not_before
    return 0 < span <= MAX_CERT_VALIDITY_MS and c.not_before <= t <= c.not_after


def check_certificate_chain(encoded: str, pinned: Pinned):
    """Steps 3 and 4: the certificate decodes, the pinned root signed it, it is this app's. Returns (verdict, cert or None)."""
    cert = decode_certificate(encoded) if isinstance(encoded, str) else None
    root = b64url_decode(pinned.root_public_key)
    message = certificate_input(cert) if cert is not None else None
    if cert is None or root is None or message is None or not ed25519_verify(root, cert.sig_bytes, message):
        return "bad_certificate", None
    if cert.app_id != pinned.app_id:
        return "wrong_app", None
    return "ok", cert


def check_certificate(encoded: str, pinned: Pinned, at: int) -> str:
    """A certificate on its own at time `at` (the verdicts of sdk/test-vectors/certificates.json)."""
    verdict, cert = check_certificate_chain(encoded, pinned)
    if cert is None:
        return verdict
    return "ok" if certificate_covers(cert, at) else "key_expired"


#: The request headers that carry credentials, in the order their hash covers them (docs/signing.md).
CREDENTIAL_HEADERS = ("authorization", "x-api-license-code", "x-api-username", "x-api-password", "x-hardware-id")

EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def credentials_sha256(headers: Mapping[str, Union[str, bytes]]) -> str:
    """The 9th signed line: hex SHA-256 over `name:value\n` for each credential header the request carries, in the
    order of CREDENTIAL_HEADERS; the value's bytes as sent (a str is taken as UTF-8) without leading and trailing
    spaces and tabs. `headers` maps lower-case names to values; absent headers add nothing."""
    out = b""
    for name in CREDENTIAL_HEADERS:
        value = headers.get(name)
        if value is None:
            continue
        raw = value if isinstance(value, bytes) else value.encode("utf-8")
        out += name.encode("ascii") + b":" + raw.strip(b" \t") + b"\n"
    return sha256_hex(out)


@dataclass(frozen=True)
class SignedRequest:
    method: str
    #: Path and query exactly as sent on the request line.
    target: str
    body: bytes
    nonce: str
    #: credentials_sha256() of the credential headers sent (amendment A): an answer for other credentials fails.
    credentials: str = EMPTY_SHA256


@dataclass(frozen=True)
class AnswerCheck:
    verdict: str
    kid: Optional[str] = None
    #: The server's time, trusted once the verdict is ok.
    t: Optional[int] = None
    #: The signing key's certificate end, once the certificate verified.
    not_after: Optional[int] = None
    #: The signing key's certificate start, once the certificate verified (newer keys: amendment D).
    not_before: Optional[int] = None


_HEADER = re.compile(r"v1; kid=([A-Za-z0-9_-]{1,64}); t=([0-9]{1,16}); sig=([A-Za-z0-9_-]{86})")


@dataclass(frozen=True)
class SignatureHeader:
    kid: str
    t: int
    sig: bytes


def parse_signature_header(value: str) -> Optional[SignatureHeader]:
    m = _HEADER.fullmatch(value) if isinstance(value, str) else None
    if m is None:
        return None
    sig = b64url_decode(m.group(3))
    t = int(m.group(2))
    if sig is None or len(sig) != 64 or not is_safe_integer(t):
        return None
    return SignatureHeader(m.group(1), t, sig)


def download_line(file_sha256: str, content_range: Optional[str]) -> str:
    """The last signed line of a download: the whole file's hash and the Content-Range (empty for a 200)."""
    return f"file-sha256={file_sha256}; content-range={content_range or ''}"


def verify_answer(
    pinned: Pinned,
    retired: AbstractSet[str],
    request: SignedRequest,
    status: int,
    signature: Optional[str],
    certificate: Optional[str],
    response_line: str,
) -> AnswerCheck:
    """The ordered checks of docs/signing.md. `response_line` is the hex SHA-256 of the body, or a
    download's `file-sha256=…; content-range=…` line (see download_line). Absent headers are None;
    an empty header is present (and malformed)."""
    if signature is None or certificate is None:
        return AnswerCheck("missing_signature")
    header = parse_signature_header(signature)
    if header is None:
        return AnswerCheck("malformed_signature")
    kid, t = header.kid, header.t
    verdict, cert = check_certificate_chain(certificate, pinned)
    if cert is None:
        return AnswerCheck(verdict, kid, t)
    if cert.kid != kid:
        return AnswerCheck("kid_mismatch", kid, t, cert.not_after, cert.not_before)
    if kid in retired:
        return AnswerCheck("key_retired", kid, t, cert.not_after, cert.not_before)
    if not certificate_covers(cert, t):
        return AnswerCheck("key_expired", kid, t, cert.not_after, cert.not_before)
    lines = [
        "tollgate/response/v1",
        kid,
        str(t),
        request.nonce,
        pinned.app_id,
        str(status),
        f"{request.method} {request.target}",
        sha256_hex(request.body),
        request.credentials,
        response_line,
    ]
    try:
        message = utf8("\n".join(lines))
    except UnicodeEncodeError:
        return AnswerCheck("bad_signature", kid, t, cert.not_after, cert.not_before)
    ok = ed25519_verify(cert.public_key_bytes, header.sig, message)
    return AnswerCheck("ok" if ok else "bad_signature", kid, t, cert.not_after, cert.not_before)
