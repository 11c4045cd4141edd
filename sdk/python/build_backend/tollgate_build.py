"""The package's own PEP 517 build backend, standard library only.

Why not setuptools: pip builds in an isolated environment and downloads the backend named in `requires` first, so
`pip install ./sdk/python` fails on a machine without PyPI (an air-gapped build host, a CI runner without network).
With `requires = []` and this backend in the tree, pip, `python -m build` and plain Python
(`python3 build_backend/tollgate_build.py dist/`) make the same wheel and sdist with nothing to download.

It reads [project] from pyproject.toml (tomllib, else tomli, else the small reader below, which knows the forms that
file keeps to) and packs src/tollgate; the sdist holds what a rebuild needs.
"""
from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import re
import sys
import tarfile
import time
import zipfile
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "tollgate"
#: What the sdist carries besides the package: enough to build the wheel again and to read about it.
SDIST_EXTRA = ("pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md", "build_backend/tollgate_build.py", "examples/quickstart.py")
WHEEL_TAG = "py3-none-any"


def read_pyproject(text: str) -> Dict[str, Any]:
    try:
        import tomllib  # Python >= 3.11
    except ImportError:
        try:
            import tomli as tomllib  # type: ignore[no-redef]
        except ImportError:
            return _read_simple_toml(text)
    return tomllib.loads(text)


def _read_simple_toml(text: str) -> Dict[str, Any]:
    """Tables, and `key = value` with a string, a one-line array of strings, a one-line inline table of strings or a
    one-line array of such tables:
    the forms pyproject.toml keeps to (test_package.py checks this reader against tomllib on it)."""
    out: Dict[str, Any] = {}
    table = out
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        header = re.fullmatch(r"\[([A-Za-z0-9_.\-]+)\]", line)
        if header:
            table = out
            for part in header.group(1).split("."):
                table = table.setdefault(part, {})
            continue
        key, _, value = (s.strip() for s in line.partition("="))
        key = key.strip('"')
        if value.startswith("{"):
            table[key] = _inline_table(value)
        elif value.startswith("[{"):
            table[key] = [_inline_table(t) for t in re.findall(r"\{[^}]*\}", value)]
        else:
            table[key] = json.loads(value)
    return out


def _inline_table(value: str) -> Dict[str, str]:
    return {k: json.loads(v) for k, v in re.findall(r'([A-Za-z0-9_\-]+)\s*=\s*("(?:[^"\\]|\\.)*")', value)}


def project() -> Dict[str, Any]:
    return read_pyproject((ROOT / "pyproject.toml").read_text("utf-8"))["project"]


def _dist_name(p: Dict[str, Any]) -> str:
    return re.sub(r"[-_.]+", "_", p["name"]).lower()


def metadata(p: Dict[str, Any]) -> str:
    """Core metadata 2.1 (PKG-INFO / METADATA)."""
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {p['name']}",
        f"Version: {p['version']}",
        f"Summary: {p['description']}",
    ]
    license_ = p.get("license", {})
    if isinstance(license_, dict) and "text" in license_:
        lines.append(f"License: {license_['text']}")
    for author in p.get("authors", []):
        if "name" in author:
            lines.append(f"Author: {author['name']}")
    if p.get("keywords"):
        lines.append(f"Keywords: {','.join(p['keywords'])}")
    lines += [f"Classifier: {c}" for c in p.get("classifiers", [])]
    lines += [f"Project-URL: {label}, {url}" for label, url in p.get("urls", {}).items()]
    if "requires-python" in p:
        lines.append(f"Requires-Python: {p['requires-python']}")
    lines += [f"Requires-Dist: {d}" for d in p.get("dependencies", [])]
    for extra, deps in p.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {d}; extra == "{extra}"' for d in deps]
    readme = p.get("readme")
    if readme:
        lines.append("Description-Content-Type: text/markdown")
        return "\n".join(lines) + "\n\n" + (ROOT / readme).read_text("utf-8")
    return "\n".join(lines) + "\n"


def _package_files() -> List[Tuple[str, Path]]:
    base = ROOT / "src"
    return sorted(
        (path.relative_to(base).as_posix(), path)
        for path in (base / PACKAGE).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".pyc", ".pyo")
    )


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _epoch() -> Tuple[int, ...]:
    # Reproducible archives: SOURCE_DATE_EPOCH when set, else a fixed date (zip cannot go before 1980).
    return time.gmtime(int(os.environ.get("SOURCE_DATE_EPOCH", "315532800")))[:6]


def _wheel(wheel_directory: str, files: List[Tuple[str, bytes]]) -> str:
    p = project()
    dist = f"{_dist_name(p)}-{p['version']}"
    info = f"{dist}.dist-info"
    entries = list(files)
    entries.append((f"{info}/METADATA", metadata(p).encode("utf-8")))
    entries.append((f"{info}/WHEEL", f"Wheel-Version: 1.0\nGenerator: tollgate_build\nRoot-Is-Purelib: true\nTag: {WHEEL_TAG}\n".encode()))
    entries.append((f"{info}/top_level.txt", f"{PACKAGE}\n".encode()))
    if (ROOT / "LICENSE").exists():
        entries.append((f"{info}/LICENSE", (ROOT / "LICENSE").read_bytes()))
    record = "\n".join(_record_line(n, d) for n, d in entries) + f"\n{info}/RECORD,,\n"
    entries.append((f"{info}/RECORD", record.encode()))
    name = f"{dist}-{WHEEL_TAG}.whl"
    os.makedirs(wheel_directory, exist_ok=True)
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for n, d in entries:
            zi = zipfile.ZipInfo(n, _epoch())
            zi.external_attr = 0o644 << 16
            z.writestr(zi, d, zipfile.ZIP_DEFLATED)
    return name


# -- PEP 517 / PEP 660 hooks ----------------------------------------------------------------------------------------

def get_requires_for_build_wheel(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def get_requires_for_build_editable(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def build_wheel(wheel_directory: str, config_settings: Optional[Dict[str, Any]] = None, metadata_directory: Optional[str] = None) -> str:
    return _wheel(wheel_directory, [(n, path.read_bytes()) for n, path in _package_files()])


def build_editable(wheel_directory: str, config_settings: Optional[Dict[str, Any]] = None, metadata_directory: Optional[str] = None) -> str:
    # `pip install -e`: a .pth file that puts this checkout's src/ on the path.
    return _wheel(wheel_directory, [("_tollgate_client_editable.pth", (str(ROOT / "src") + "\n").encode())])


def build_sdist(sdist_directory: str, config_settings: Optional[Dict[str, Any]] = None) -> str:
    p = project()
    dist = f"{_dist_name(p)}-{p['version']}"
    files = [(f"src/{n}", path.read_bytes()) for n, path in _package_files()]
    files += [(n, (ROOT / n).read_bytes()) for n in SDIST_EXTRA if (ROOT / n).exists()]
    files.append(("PKG-INFO", metadata(p).encode("utf-8")))
    name = f"{dist}.tar.gz"
    os.makedirs(sdist_directory, exist_ok=True)
    mtime = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for n, d in sorted(files):
            ti = tarfile.TarInfo(f"{dist}/{n}")
            ti.size, ti.mtime, ti.mode = len(d), mtime, 0o644
            tar.addfile(ti, io.BytesIO(d))
    return name


if __name__ == "__main__":
    # The no-tools path: python3 build_backend/tollgate_build.py [out-dir] writes the sdist and the wheel.
    out = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "dist")
    print(os.path.join(out, build_sdist(out)))
    print(os.path.join(out, build_wheel(out)))
