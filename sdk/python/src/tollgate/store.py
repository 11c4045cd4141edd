"""Where the SDK keeps the lease and its rollback state. Pluggable; the
default writes files under the user's app-data folders, the same files and
folders as the TypeScript SDK's FileLeaseStore (so both SDKs share one
machine's lease and state)."""
from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import List, Mapping, Optional, Protocol


class LeaseStore(Protocol):
    """Two state slots (0 and 1): the SDK writes the same MAC'd record to both and treats a disagreement as tampering."""

    def read_lease(self) -> Optional[str]: ...
    def write_lease(self, file: str) -> None: ...
    def read_state(self, slot: int) -> Optional[str]: ...
    def write_state(self, slot: int, record: str) -> None: ...


class MemoryLeaseStore:
    """Keeps everything in memory: tests, or apps that must not touch the disk."""

    def __init__(self) -> None:
        self.lease: Optional[str] = None
        self.states: List[Optional[str]] = [None, None]

    def read_lease(self) -> Optional[str]:
        return self.lease

    def write_lease(self, file: str) -> None:
        self.lease = file

    def read_state(self, slot: int) -> Optional[str]:
        return self.states[slot]

    def write_state(self, slot: int, record: str) -> None:
        self.states[slot] = record


@dataclass(frozen=True)
class Folders:
    #: The lease and the first state copy.
    data: str
    #: The second state copy, in another folder so one deleted folder does not take both.
    state: str


_APP_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")


def app_data_folders(app_id: str, platform: Optional[str] = None, env: Optional[Mapping[str, str]] = None, home: Optional[str] = None) -> Folders:
    """%APPDATA% (and %LOCALAPPDATA%) on Windows, ~/Library/Application Support (and ~/Library/Preferences)
    on macOS, $XDG_DATA_HOME or ~/.local/share (and $XDG_STATE_HOME or ~/.local/state) elsewhere; each under
    tollgate/<app_id>/. `platform` is Node's name (win32, darwin, linux) or Python's sys.platform."""
    if not isinstance(app_id, str) or not _APP_ID.fullmatch(app_id):
        raise ValueError("app id: letters, digits, _ and - only")  # no path tricks
    platform = platform or sys.platform
    env = os.environ if env is None else env
    home = home if home is not None else os.path.expanduser("~")
    sep = "\\" if platform == "win32" else "/"

    def join(*parts: str) -> str:
        return sep.join(parts)

    def under(base: str) -> str:
        return join(base, "tollgate", app_id)

    if platform == "win32":
        roaming = env.get("APPDATA")
        local = env.get("LOCALAPPDATA")
        return Folders(
            under(roaming if roaming is not None else join(home, "AppData", "Roaming")),
            under(local if local is not None else join(home, "AppData", "Local")),
        )
    if platform == "darwin":
        return Folders(under(join(home, "Library", "Application Support")), under(join(home, "Library", "Preferences")))
    return Folders(
        under(env.get("XDG_DATA_HOME") or join(home, ".local", "share")),
        under(env.get("XDG_STATE_HOME") or join(home, ".local", "state")),
    )


class FileLeaseStore:
    """Files: <data>/lease.tollgate, <data>/state.json and <state>/state.json; written atomically (temp file, rename),
    mode 0600 in folders made 0700."""

    def __init__(self, folders: Folders) -> None:
        self.folders = folders

    @classmethod
    def for_app(cls, app_id: str, folders: Optional[Folders] = None) -> "FileLeaseStore":
        return cls(folders or app_data_folders(app_id))

    @staticmethod
    def _read(folder: str, name: str) -> Optional[str]:
        try:
            return Path(folder, name).read_text("utf-8")
        except FileNotFoundError:
            return None

    @staticmethod
    def _write(folder: str, name: str, text: str) -> None:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        target = os.path.join(folder, name)
        temp = f"{target}.{os.getpid()}.tmp"
        # A crash mid-write leaves the old file whole: a half-written state would look like tampering.
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.replace(temp, target)

    def read_lease(self) -> Optional[str]:
        return self._read(self.folders.data, "lease.tollgate")

    def write_lease(self, file: str) -> None:
        self._write(self.folders.data, "lease.tollgate", file)

    def read_state(self, slot: int) -> Optional[str]:
        return self._read(self.folders.data if slot == 0 else self.folders.state, "state.json")

    def write_state(self, slot: int, record: str) -> None:
        self._write(self.folders.data if slot == 0 else self.folders.state, "state.json", record)
