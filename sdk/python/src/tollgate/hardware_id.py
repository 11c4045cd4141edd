"""A hardware id for device locking and leases: the OS machine id, hashed
with the app id so two apps on one machine never see the same value and the
raw machine id never leaves the machine. The same value as the TypeScript
SDK's hardwareId(). Apps may use their own id instead; this one changes
when the OS is reinstalled."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Callable, List, Optional

from ._encoding import sha256_hex


def _read_text(path: str) -> str:
    return Path(path).read_text("utf-8")


def _exec(command: str, args: List[str]) -> str:
    kwargs = {"creationflags": 0x08000000} if sys.platform == "win32" else {}  # CREATE_NO_WINDOW
    return subprocess.run([command, *args], capture_output=True, text=True, timeout=5, check=True, **kwargs).stdout


def os_machine_id(
    platform: Optional[str] = None,
    read_text: Callable[[str], str] = _read_text,
    exec: Callable[[str, List[str]], str] = _exec,
) -> str:
    """The raw OS machine id: /etc/machine-id (Linux), IOPlatformUUID (macOS), MachineGuid (Windows)."""
    platform = platform or sys.platform
    found: Optional[str] = None
    if platform == "darwin":
        m = re.search(r'"IOPlatformUUID"\s*=\s*"([^"]+)"', exec("ioreg", ["-rd1", "-c", "IOPlatformExpertDevice"]))
        found = m.group(1) if m else None
    elif platform == "win32":
        m = re.search(r"MachineGuid\s+REG_SZ\s+(\S+)", exec("reg", ["query", "HKLM\\SOFTWARE\\Microsoft\\Cryptography", "/v", "MachineGuid"]))
        found = m.group(1) if m else None
    else:
        for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
            try:
                found = read_text(path).strip() or None
            except (OSError, UnicodeDecodeError):
                found = None
            if found:
                break
    if not found:
        raise RuntimeError(f"tollgate: no machine id found on {platform}; pass your own hardware_id")
    return found


def hardware_id(app_id: str, machine_id: Optional[str] = None) -> str:
    """hex SHA-256 of `tollgate/hwid/v1\\n<app_id>\\n<machine id>`: 64 characters, stable per app and machine."""
    return sha256_hex(f"tollgate/hwid/v1\n{app_id}\n{machine_id if machine_id is not None else os_machine_id()}")
