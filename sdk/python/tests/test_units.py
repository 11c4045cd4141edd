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
    assert keeper.load() == (state, False)  # one lost copy with no lease kept: nothing to protect
    store.lease = "x"
    assert keeper.load()[1] is True  # one copy while a lease is kept: a partial restore (issue 21.1)
    store.lease = None
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
    imported = [name.strip() for name in re.findall(r"from tollgate import (.*)", block)[0].split(", ")]
    for name in imported:
        assert hasattr(tollgate, name)
    # Every name the block uses is imported or its own (issue 21.5: LicenseCodeAuth was used without an import).
    import ast
    import builtins

    tree = ast.parse(block)
    assigned = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    assigned |= {h.name for h in ast.walk(tree) if isinstance(h, ast.ExceptHandler) and h.name}
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    assert used - assigned - set(imported) - set(dir(builtins)) == set()
    # The comments too: a vendor copies what they suggest.
    exported = {name for name in re.findall(r"\b[A-Z][A-Za-z]+\b", block) if hasattr(tollgate, name)}
    assert exported <= set(imported), exported - set(imported)


# -- amendment E: the merge of two instances' states (the TypeScript SDK's merge(), case for case) --------

def _base(**kw):
    from tollgate.state import fresh_state
    s = fresh_state()
    s.update(highest_seq=3, runtime_used_ms=100, highest_trusted_time=5000, max_server_time=5000, retired=["k0"], known=["k1"])
    s.update(kw)
    return s


def test_merge_same_lease_max_or_union_and_trusted_time_never_lowered():
    from tollgate.state import merge
    disk = _base(dropped=True, runtime_used_ms=50, highest_trusted_time=4000, retired=["k0", "k9"])
    mine = _base(dropped=False, runtime_used_ms=200, highest_trusted_time=6000, known=["k1", "k2"])
    m = merge(disk, mine, True)
    assert (m["dropped"], m["runtime_used_ms"], m["highest_trusted_time"], m["retired"], m["known"]) == (True, 200, 6000, ["k0", "k9"], ["k1", "k2"])


def test_merge_another_lease_stored_since_wins_over_stale_memory():
    from tollgate.state import merge
    m = merge(_base(highest_seq=4, runtime_used_ms=0, dropped=False), _base(highest_seq=3, runtime_used_ms=900, dropped=True), True)
    assert (m["highest_seq"], m["runtime_used_ms"], m["dropped"]) == (4, 0, False)


def test_merge_newest_key_and_first_seen_and_offset():
    from tollgate.state import fresh_state, merge
    disk = _base(newest_not_before=10, newest_seen_at=500, clock_offset_ms=7)
    m = merge(disk, _base(newest_not_before=20, newest_seen_at=900, clock_offset_ms=9), True)
    assert (m["newest_not_before"], m["newest_seen_at"], m["clock_offset_ms"]) == (20, 900, 9)
    m = merge(disk, _base(newest_not_before=10, newest_seen_at=400, clock_offset_ms=9), False)
    assert (m["newest_not_before"], m["newest_seen_at"], m["clock_offset_ms"]) == (10, 400, 7)
    assert list(m) == list(fresh_state())  # the stored field order, shared with the other SDKs


def test_lock_file_is_exclusive_between_threads_and_stale_ones_are_taken_over(tmp_path):
    import os
    import threading
    import time
    from tollgate import FileLeaseStore, Folders
    store = FileLeaseStore(Folders(str(tmp_path / "d"), str(tmp_path / "s")))
    inside, overlaps = [0], []

    def work():
        for _ in range(20):
            with store.lock():
                inside[0] += 1
                overlaps.append(inside[0])
                time.sleep(0.001)
                inside[0] -= 1

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert max(overlaps) == 1 and not (tmp_path / "d" / "state.lock").exists()
    stale = tmp_path / "d" / "state.lock"
    stale.write_text("99999\n")
    os.utime(stale, (time.time() - 11, time.time() - 11))  # a crashed holder's, older than LOCK_STALE_MS
    with store.lock():
        pass
    assert not stale.exists()
