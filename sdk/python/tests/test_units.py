"""Units: the app-data folders per OS, the hardware id, the MAC'd state
(same key, record and verdicts as the TypeScript SDK)."""
import hashlib
import hmac
import json

from tollgate import MemoryLeaseStore, app_data_folders, hardware_id, os_machine_id
from tollgate.state import StateKeeper, fresh_state

APP = "0b6a5c8e-4f1d-4c3b-9a77-2e5d8f1c6a01"


def test_folders_per_os():
    f = app_data_folders(APP, "linux", {}, "/home/u")
    assert (f.data, f.state) == (f"/home/u/.local/share/tollgate/{APP}", f"/home/u/.local/state/tollgate/{APP}")
    f = app_data_folders(APP, "linux", {"XDG_DATA_HOME": "/x", "XDG_STATE_HOME": "/y"}, "/home/u")
    assert (f.data, f.state) == (f"/x/tollgate/{APP}", f"/y/tollgate/{APP}")
    f = app_data_folders(APP, "darwin", {}, "/Users/u")
    assert (f.data, f.state) == (f"/Users/u/Library/Application Support/tollgate/{APP}", f"/Users/u/Library/Preferences/tollgate/{APP}")
    f = app_data_folders(APP, "win32", {"APPDATA": "C:\\R", "LOCALAPPDATA": "C:\\L"}, "C:\\Users\\u")
    assert (f.data, f.state) == (f"C:\\R\\tollgate\\{APP}", f"C:\\L\\tollgate\\{APP}")
    for bad in ("../etc", "a/b", "", "x" * 129):
        try:
            app_data_folders(bad, "linux", {}, "/h")
        except ValueError:
            continue
        raise AssertionError(bad)


def test_machine_ids_per_os_and_the_hashed_hardware_id():
    assert os_machine_id("linux", read_text=lambda p: "abc123\n") == "abc123"
    assert os_machine_id("darwin", exec=lambda c, a: '  "IOPlatformUUID" = "UUID-1"\n') == "UUID-1"
    assert os_machine_id("win32", exec=lambda c, a: "    MachineGuid    REG_SZ    guid-2\n") == "guid-2"
    expected = hashlib.sha256(f"tollgate/hwid/v1\n{APP}\nabc123".encode()).hexdigest()
    assert hardware_id(APP, "abc123") == expected and len(hardware_id(APP)) == 64


def test_state_record_mac_key_and_verdicts():
    store = MemoryLeaseStore()
    keeper = StateKeeper(store, APP, "hw")
    state = fresh_state()
    state["highest_seq"] = 3
    keeper.save(state)
    record = json.loads(store.states[0])
    key = hashlib.sha256(f"tollgate/state-mac/v1\n{APP}\nhw".encode()).digest()
    assert record["mac"] == hmac.new(key, record["state"].encode(), hashlib.sha256).hexdigest()
    assert record["state"].startswith('{"highest_trusted_time":0,"highest_seq":3,')
    assert keeper.load() == (state, False)
    assert StateKeeper(store, APP, "another machine").load()[1] is True  # the MAC binds the hardware id
    store.states[1] = None
    assert keeper.load() == (state, False)  # one lost copy is not tampering
    store.states[0] = None
    assert keeper.load()[1] is False  # nothing at all, no lease: a first run
    store.lease = "x"
    assert keeper.load()[1] is True  # nothing at all while a lease is kept: wiped


def test_the_readme_quick_start_compiles_and_names_real_calls():
    import re
    from pathlib import Path

    import tollgate

    text = (Path(__file__).resolve().parents[1] / "README.md").read_text("utf-8")
    block = re.search(r"## Quick start\n\n```python\n(.*?)```", text, re.S).group(1)
    assert len(block.strip().splitlines()) <= 10
    compile(block, "README quick start", "exec")
    for name in re.findall(r"tg\.(\w+)\(", block):
        assert callable(getattr(tollgate.TollgateClient, name)), name
    for name in re.findall(r"from tollgate import (.*)", block)[0].split(", "):
        assert hasattr(tollgate, name.strip())
