"""Bytes, text and the three primitives (SHA-256, Ed25519 verification,
HMAC-SHA256). base64url is strict (RFC 4648 §5, no padding) and UTF-8 is
strict, exactly as in the TypeScript SDK: anything else is not a Tollgate
value. Ed25519 comes from `cryptography`; the rest is the standard library."""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
from typing import Any, Dict, Iterable, Optional

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

_B64URL = re.compile(r"[A-Za-z0-9_-]*")
MAX_SAFE_INTEGER = 2**53 - 1


def b64url_decode(text: str) -> Optional[bytes]:
    if not isinstance(text, str) or not _B64URL.fullmatch(text) or len(text) % 4 == 1:
        return None
    try:
        return base64.urlsafe_b64decode(text + "=" * ((4 - len(text) % 4) % 4))
    except (ValueError, TypeError):
        return None


def b64url_encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def utf8(text: str) -> bytes:
    return text.encode("utf-8")


def sha256_hex(data: bytes | str) -> str:
    return hashlib.sha256(utf8(data) if isinstance(data, str) else data).hexdigest()


def hmac_sha256_hex(key: bytes, message: bytes) -> str:
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def equal_constant_time(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode("utf-8", "surrogatepass"), b.encode("utf-8", "surrogatepass"))


_KEYS: Dict[bytes, Ed25519PublicKey] = {}


def ed25519_verify(public_key: bytes, signature: bytes, message: bytes) -> bool:
    """False (never an exception) for a bad key, a signature of the wrong length or a failed check."""
    if not isinstance(public_key, bytes) or len(public_key) != 32 or not isinstance(signature, bytes) or len(signature) != 64:
        return False
    try:
        key = _KEYS.get(public_key)
        if key is None:
            key = Ed25519PublicKey.from_public_bytes(public_key)
            if len(_KEYS) < 256:
                _KEYS[public_key] = key
        key.verify(signature, message)
        return True
    except (InvalidSignature, ValueError, TypeError):
        return False
    except Exception:  # an OpenSSL error on a point that does not decode
        return False


def new_nonce() -> str:
    """A fresh nonce: 32 base64url characters (24 random bytes), inside the 16-64 the server accepts."""
    return b64url_encode(secrets.token_bytes(24))


def _no_constant(name: str) -> Any:
    raise ValueError(f"not JSON: {name}")


def json_loads(text: str) -> Any:
    """JSON as JavaScript's JSON.parse reads it: NaN and Infinity are not JSON."""
    return json.loads(text, parse_constant=_no_constant)


def decode_json_object(text: str) -> Optional[Dict[str, Any]]:
    """base64url of a UTF-8 JSON object; None if it is not one."""
    data = b64url_decode(text)
    if data is None:
        return None
    try:
        value = json_loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def has_exact_keys(o: Dict[str, Any], keys: Iterable[str]) -> bool:
    return sorted(o.keys()) == sorted(keys)


def is_safe_integer(x: Any) -> bool:
    """JavaScript's Number.isSafeInteger over a parsed JSON value (1.0 is an integer there too; booleans are not)."""
    if isinstance(x, bool):
        return False
    if isinstance(x, int):
        return abs(x) <= MAX_SAFE_INTEGER
    if isinstance(x, float):
        return x.is_integer() and abs(x) <= MAX_SAFE_INTEGER
    return False


def compact_json(value: Any) -> str:
    """JSON.stringify's form: no spaces, non-ASCII kept."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
