"""The package as a vendor installs it (issue 27.6): an sdist and a wheel built with no network (the package's own
standard-library backend, and `python -m build --no-isolation` where installed), the wheel installed into a fresh
virtualenv and the README's `pip install ./sdk/python`, both with pip cut off from every index; then the example
program from the installed package against the live server. --system-site-packages lets the venv find cryptography
(Debian's python3-cryptography) without a download."""
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from conftest import PASSWORD  # noqa: F401  (the server fixture's module)

SDK = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(SDK / "build_backend"))
import tollgate_build  # noqa: E402

PROJECT = tollgate_build.read_pyproject((SDK / "pyproject.toml").read_text("utf-8"))["project"]
OFFLINE_PIP = {"PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}


def run(args, **kw):
    out = subprocess.run(args, capture_output=True, text=True, timeout=300, **kw)
    assert out.returncode == 0, f"{' '.join(map(str, args))}\n{out.stdout}\n{out.stderr}"
    return out.stdout


def clean_env(**extra):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/tmp"), **OFFLINE_PIP}
    env.update(extra)
    return env


def venv(path: Path) -> Path:
    run([sys.executable, "-m", "venv", "--system-site-packages", str(path)])
    return path / "bin" / "python"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    run([sys.executable, str(SDK / "build_backend" / "tollgate_build.py"), str(out)], env=clean_env())
    return out


def test_metadata_is_complete_and_tied_to_the_release():
    root = json.loads((SDK.parents[1] / "package.json").read_text("utf-8"))
    ts = json.loads((SDK.parent / "typescript" / "package.json").read_text("utf-8"))
    import tollgate

    assert PROJECT["version"] == root["version"] == ts["version"] == tollgate.__version__
    assert PROJECT["name"] == ts["name"]  # one name for the client everywhere
    assert PROJECT["license"]["text"] == root["license"] == ts["license"] and (SDK / "LICENSE").exists()
    assert {"Repository", "Changelog"} <= set(PROJECT["urls"]) and (SDK / "CHANGELOG.md").exists()
    assert f"## {PROJECT['version']}" in (SDK / "CHANGELOG.md").read_text("utf-8")
    assert tollgate.transport.USER_AGENT == f"tollgate-python/{PROJECT['version']}"


def test_the_fallback_toml_reader_reads_pyproject_as_tomllib_does():
    tomllib = pytest.importorskip("tomllib")
    text = (SDK / "pyproject.toml").read_text("utf-8")
    assert tollgate_build._read_simple_toml(text) == tomllib.loads(text)


def test_the_sdist_and_the_wheel(built, tmp_path):
    wheel = built / f"tollgate_client-{PROJECT['version']}-py3-none-any.whl"
    sdist = built / f"tollgate_client-{PROJECT['version']}.tar.gz"
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        meta = z.read(f"tollgate_client-{PROJECT['version']}.dist-info/METADATA").decode()
    assert "tollgate/__init__.py" in names and "tollgate/py.typed" in names and not any("__pycache__" in n for n in names)
    for line in ("Name: tollgate-client", f"Version: {PROJECT['version']}", "License: MIT", "Requires-Python: >=3.9",
                 "Requires-Dist: cryptography>=3.4", "Project-URL: Repository, "):
        assert line in meta, line
    # The sdist rebuilds the same wheel on its own.
    with tarfile.open(sdist) as t:
        t.extractall(tmp_path)
    again = tmp_path / "again"
    run([sys.executable, str(tmp_path / f"tollgate_client-{PROJECT['version']}" / "build_backend" / "tollgate_build.py"), str(again)], env=clean_env())
    with zipfile.ZipFile(again / wheel.name) as z:
        assert z.namelist() == names


def test_python_m_build_where_installed(tmp_path):
    probe = subprocess.run([sys.executable, "-c", "import build"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("python3-build is not installed (apt-get install python3-build): the stdlib path is tested above")
    run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(tmp_path), str(SDK)], env=clean_env())
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"tollgate_client-{PROJECT['version']}-py3-none-any.whl", f"tollgate_client-{PROJECT['version']}.tar.gz"]


def test_pip_install_from_the_folder_with_no_index(tmp_path):
    """The README's line, with pip cut off from every index: nothing to download, the build backend included."""
    checkout = tmp_path / "python"
    shutil.copytree(SDK, checkout, ignore=shutil.ignore_patterns("__pycache__", "dist", "build", "*.egg-info"))
    py = venv(tmp_path / "venv")
    run([str(py), "-m", "pip", "install", str(checkout)], env=clean_env(), cwd=tmp_path)
    where = run([str(py), "-c", "import tollgate; print(tollgate.__file__, tollgate.__version__)"], env=clean_env(), cwd=tmp_path)
    assert str(tmp_path / "venv") in where and PROJECT["version"] in where


def test_the_wheel_in_a_fresh_venv_runs_the_example_against_the_server(server, built, tmp_path):
    py = venv(tmp_path / "venv")
    run([str(py), "-m", "pip", "install", str(built / f"tollgate_client-{PROJECT['version']}-py3-none-any.whl")], env=clean_env(), cwd=tmp_path)
    app = server.app(offline_grace_seconds=3600)
    server.must(200, "PUT", f"/apps/{app.id}/variables/latest_version", {"value": "3.1.4"})
    env = clean_env(
        XDG_DATA_HOME=str(tmp_path / "data"), XDG_STATE_HOME=str(tmp_path / "state"), TOLLGATE_URL=server.url, TOLLGATE_APP_ID=app.id,
        TOLLGATE_APP_KEY=app.api_key, TOLLGATE_APP_SECRET=app.api_secret, TOLLGATE_ROOT_KEY=app.root_public_key,
        LICENSE_CODE=server.license_code(app), TOLLGATE_HARDWARE_ID="packaged-machine", TOLLGATE_DOWNLOAD_DIR=str(tmp_path),
    )
    # Run from elsewhere with no PYTHONPATH: only the installed package can be imported.
    example = shutil.copy(SDK / "examples" / "quickstart.py", tmp_path / "quickstart.py")
    out = run([str(py), "-I", example], env=env, cwd=tmp_path)
    assert "redeemed license code" in out and "variable latest_version = 3.1.4" in out and "offline lease #1" in out, out
    out = run([str(py), "-I", example], env={**env, "TOLLGATE_URL": "http://127.0.0.1:9"}, cwd=tmp_path)
    assert "offline: lease #1 ok until" in out, out
