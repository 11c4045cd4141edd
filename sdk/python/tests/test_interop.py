"""The Python and TypeScript SDKs share one machine's lease and state: the
same files, record, MAC key and verdicts. A lease taken by Python is checked
by the TypeScript SDK (built here from sdk/typescript/src), a newer one taken
by TypeScript is checked by Python, and each accepts the other's state."""
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import PASSWORD, ROOT
from tollgate import FileLeaseStore, Folders, TollgateError

TSC = ROOT / "node_modules" / "typescript" / "bin" / "tsc"
SCRIPT = """
import { TollgateClient, FileLeaseStore } from './index.js';
const [url, key, secret, appId, root, data, state, mode] = process.argv.slice(2);
const c = new TollgateClient({ baseUrl: url, appKey: key, appSecret: secret, appId, rootPublicKey: root, hardwareId: 'hw-shared',
  leaseStore: await FileLeaseStore.forApp(appId, { data, state }) });
if (mode === 'lease') { await c.login({ credentials: { username: 'interop', password: %r } }); console.log('ts lease', (await c.createLease()).seq); }
if (mode === 'loop') {
  // 30 rounds online then offline check, beside a Python instance doing the same on the same folders (amendment E).
  c.auth = { username: 'interop', password: %r };
  const seen = new Set();
  for (let i = 0; i < 30; i++) {
    await c.getAppContext();
    try { await c.checkLease(); seen.add('ok'); } catch (e) { seen.add(e.verdict ?? String(e)); }
  }
  console.log('ts loop', [...seen].sort().join(','));
}
try { console.log('ts check ok', (await c.checkLease()).seq); } catch (e) { console.log('ts check', e.verdict ?? String(e)); }
""" % (PASSWORD, PASSWORD)


@pytest.fixture(scope="module")
def ts_sdk(tmp_path_factory):
    if not TSC.exists() or shutil.which("node") is None:
        pytest.skip("the TypeScript SDK cannot be built here (npm ci at the root installs typescript)")
    out = tmp_path_factory.mktemp("ts-sdk")
    subprocess.run(["node", str(TSC), "-p", str(ROOT / "sdk/typescript/tsconfig.json"), "--outDir", str(out), "--typeRoots", str(ROOT / "node_modules/@types")],
                   cwd=ROOT, check=True, capture_output=True, timeout=120)
    (out / "package.json").write_text('{"type":"module"}')
    (out / "interop.mjs").write_text(SCRIPT)
    return out


def test_one_machine_two_sdks(server, ts_sdk, tmp_path):
    app = server.app(offline_grace_seconds=3600)
    server.active_user(app, "interop")
    folders = Folders(str(tmp_path / "data"), str(tmp_path / "state"))

    def python(url=server.url):
        return server.client(app, base_url=url, hardware_id="hw-shared", lease_store=FileLeaseStore.for_app(app.id, folders))

    def typescript(mode, url="http://127.0.0.1:9"):
        out = subprocess.run(["node", str(ts_sdk / "interop.mjs"), url, app.api_key, app.api_secret, app.id, app.root_public_key, folders.data, folders.state, mode],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        return out.stdout.strip().splitlines()

    online = python()
    online.login("interop", PASSWORD)
    assert online.create_lease().seq == 1
    assert typescript("check") == ["ts check ok 1"]
    assert typescript("lease", server.url) == ["ts lease 2", "ts check ok 2"]
    assert python("http://127.0.0.1:9").check_lease().seq == 2
    assert typescript("check") == ["ts check ok 2"]  # the state Python wrote back is whole for TypeScript too


def test_one_machine_two_sdks_at_the_same_time(server, ts_sdk, tmp_path):
    """A TypeScript and a Python instance of one app run at once on the same folders: the same lock file and merge, so
    30 rounds each see no clock_rollback; then a ban seen online by Python drops the lease for TypeScript too."""
    app = server.app(offline_grace_seconds=3600)
    user_id = server.active_user(app, "interop")
    folders = Folders(str(tmp_path / "data"), str(tmp_path / "state"))
    py = server.client(app, hardware_id="hw-shared", lease_store=FileLeaseStore.for_app(app.id, folders))
    py.login("interop", PASSWORD)
    py.create_lease()
    ts = subprocess.Popen(["node", str(ts_sdk / "interop.mjs"), server.url, app.api_key, app.api_secret, app.id, app.root_public_key, folders.data, folders.state,
                           "loop"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = set()
    for _ in range(30):
        py.get_app_context()
        seen.add(py.check_lease().seq)
    out, err = ts.communicate(timeout=120)
    assert ts.returncode == 0, err
    assert out.strip().splitlines() == ["ts loop ok", "ts check ok 1"] and seen == {1}
    server.must(201, "POST", f"/apps/{app.id}/bans", {"type": "user", "value": user_id})
    with pytest.raises(TollgateError):
        py.get_app_context()
    out = subprocess.run(["node", str(ts_sdk / "interop.mjs"), "http://127.0.0.1:9", app.api_key, app.api_secret, app.id, app.root_public_key, folders.data,
                          folders.state, "check"], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip().splitlines() == ["ts check dropped"], out.stderr
