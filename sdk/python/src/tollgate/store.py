"""Where the SDK keeps the lease and its rollback state. Pluggable; the
default writes files under the user's app-data folders, the same files and
folders as the TypeScript SDK's FileLeaseStore (so both SDKs share one
machine's lease and state)."""
from __future__ import annotations

import os
import re
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import ContextManager, List, Mapping, Optional, Protocol


class LeaseStore(Protocol):
    """Two state slots (0 and 1): the SDK writes the same MAC'd record to both and treats a disagreement as tampering.
    A store may also have `lock()`, a context manager held while the SDK re-reads, merges and writes the state (so
    several instances of one app share it); a store without one is used by one instance at a time."""

    def read_lease(self) -> Optional[str]: ...
    def write_lease(self, file: str) -> None: ...
    def read_state(self, slot: int) -> Optional[str]: ...
    def write_state(self, slot: int, record: str) -> None: ...


#: A lock file older than this is left over from a crashed process and is taken over.
LOCK_STALE_MS = 10_000
#: How long to wait for the lock before taking it over anyway (a stuck holder must not freeze the app).
LOCK_WAIT_MS = 15_000


class FileLock:
    """An exclusive lock file (created with O_EXCL, removed on release), the same file and rule as the TypeScript SDK's:
    works between processes and between threads; a file older than LOCK_STALE_MS is stale and removed."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __enter__(self) -> "FileLock":
        os.makedirs(os.path.dirname(self.path), mode=0o700, exist_ok=True)
        deadline = time.monotonic() + LOCK_WAIT_MS / 1000
        pause = 0.002
        while True:
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    f.write(f"{os.getpid()}\n")
                return self
            except FileExistsError:
                pass
            try:
                age_ms = (time.time() - os.stat(self.path).st_mtime) * 1000
                if age_ms > LOCK_STALE_MS or time.monotonic() > deadline:
                    os.remove(self.path)
                    continue
            except FileNotFoundError:
                continue
            time.sleep(pause)
            pause = min(pause * 2, 0.05)

    def __exit__(self, *exc: object) -> None:
        try:
            os.remove(self.path)
        except FileNotFoundError:
            pass


class MemoryLeaseStore:
    """Keeps everything in memory: tests, or apps that must not touch the disk."""

    def __init__(self) -> None:
        self.lease: Optional[str] = None
        self.states: List[Optional[str]] = [None, None]
        self._lock = threading.Lock()

    def lock(self) -> ContextManager[object]:
        """Several clients on one MemoryLeaseStore (threads) take turns, as instances do on the files."""
        return self._lock

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
        temp = f"{target}.{os.getpid()}.{threading.get_ident()}.tmp"  # threads of one process too
        # A crash mid-write leaves the old file whole: a half-written state would look like tampering.
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.replace(temp, target)

    def lock(self) -> FileLock:
        """<data>/state.lock: held while the state is re-read, merged and written (instances of one app share the files)."""
        return FileLock(os.path.join(self.folders.data, "state.lock"))

    def read_lease(self) -> Optional[str]:
        return self._read(self.folders.data, "lease.tollgate")

    def write_lease(self, file: str) -> None:
        self._write(self.folders.data, "lease.tollgate", file)

    def read_state(self, slot: int) -> Optional[str]:
        return self._read(self.folders.data if slot == 0 else self.folders.state, "state.json")

    def write_state(self, slot: int, record: str) -> None:
        self._write(self.folders.data if slot == 0 else self.folders.state, "state.json", record)
