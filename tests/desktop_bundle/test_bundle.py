"""The PyInstaller bundle: packaging/build_bundle.sh builds it, and what it
builds starts the window on the demo and quits cleanly, answers `status
--json`, and stays lean.

Slow (a full PyInstaller build, ~20-60 s), so it runs only when asked:

    VRAMSCOPE_BUNDLE_TEST=1 .venv/bin/python -m pytest -q tests/desktop_bundle/test_bundle.py
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = ROOT / "packaging" / "build_bundle.sh"
MAX_SIZE_MB = 260  # Qt + ICU + numpy/OpenBLAS are ~190 MB of it; torch would add gigabytes

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        os.environ.get("VRAMSCOPE_BUNDLE_TEST") != "1",
        reason="builds the PyInstaller bundle (slow); set VRAMSCOPE_BUNDLE_TEST=1",
    ),
    pytest.mark.timeout(900),
]


def _has_pyinstaller() -> bool:
    return (ROOT / ".venv" / "bin" / "pyinstaller").exists() or shutil.which("pyinstaller")


XDG_DIRS = ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME")  # (PyInstaller's cache stays the user's)


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    if not _has_pyinstaller():
        pytest.fail("VRAMSCOPE_BUNDLE_TEST=1 but PyInstaller is not installed (pip install -e '.[bundle]')")
    out = tmp_path_factory.mktemp("bundle")
    # the build script's smoke run, started as a user would start it: that user's home is
    # this stand-in one, which the smoke run must leave as it found it
    home = tmp_path_factory.mktemp("user")
    user = {"HOME": str(home), **{var: str(home / var.lower()) for var in XDG_DIRS}}
    env = {k: v for k, v in os.environ.items() if k not in ("VRAMSCOPE_RUNTIME_DIR", "XDG_RUNTIME_DIR")}
    done = subprocess.run(
        ["bash", str(BUILD), str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=840,
        env={**env, **user},
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-5000:]
    assert "smoke run passed" in done.stdout
    assert not list(home.rglob("*vramscope*")), sorted(str(p.relative_to(home)) for p in home.rglob("*"))
    exe = out / "vramscope" / "vramscope"
    assert exe.is_file() and os.access(exe, os.X_OK)
    return exe


def _run(exe, *args, timeout=60, **env):
    full_env = dict(os.environ, QT_QPA_PLATFORM="offscreen", **env)
    full_env.pop("PYTHONPATH", None)  # the bundle must not need the checkout
    return subprocess.run(
        [str(exe), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
        cwd=exe.parent.parent,
    )


def test_window_starts_on_the_demo_and_quits_cleanly(bundle):
    done = _run(bundle, "--demo", "--quit-after", "3")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]


def test_status_json_from_the_bundle(bundle):
    done = _run(bundle, "status", "--demo", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["simulated"] is True and len(report["gpus"]) == 2


def test_a_snapshot_is_read_by_the_bundles_native_reader(bundle, tmp_path):
    """The optional C extension (core/snapshot/_columns.c) travels with the bundle."""
    import pickle

    from vramscope.core.snapshot.example import training_snapshot

    path = tmp_path / "train_step.pickle"
    path.write_bytes(pickle.dumps(training_snapshot(), protocol=4))
    done = _run(bundle, "snapshot", str(path), "--json")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert json.loads(done.stdout)["reader"] == "native"


def test_version_and_help(bundle):
    done = _run(bundle, "--version")
    assert done.returncode == 0 and done.stdout.startswith("vramscope ")


def test_bundle_is_lean_and_complete(bundle):
    internal = bundle.parent / "_internal"
    size_mb = (
        sum(f.stat().st_size for f in bundle.parent.rglob("*") if f.is_file() and not f.is_symlink()) / 1e6
    )
    assert size_mb < MAX_SIZE_MB, f"{size_mb:.0f} MB"
    names = {p.name for p in internal.iterdir()}
    assert not {"torch", "IPython", "matplotlib", "scipy", "pytest"} & names
    qt_libs = {p.name for p in (internal / "PySide6" / "Qt" / "lib").iterdir()}
    assert not any(
        n.startswith(("libQt6Qml", "libQt6Quick", "libQt6WebEngine", "libQt6Pdf")) for n in qt_libs
    ), sorted(qt_libs)
    # what the app needs at run time: the icon (window + desktop entry), the agent
    # as source for `vramscope run`, and the platform plugins
    assert (internal / "vramscope" / "resources" / "icons" / "vramscope.svg").is_file()
    assert (internal / "vramscope" / "agent" / "_site" / "sitecustomize.py").is_file()
    assert (internal / "vramscope" / "agent" / "protocol" / "__init__.py").is_file()
    plugins = internal / "PySide6" / "Qt" / "plugins" / "platforms"
    assert {"libqxcb.so", "libqwayland.so", "libqoffscreen.so"} <= {p.name for p in plugins.iterdir()}


def test_desktop_entry_from_the_bundle_points_at_the_bundle(bundle, tmp_path):
    done = _run(bundle, "desktop", "show")
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"Exec={bundle} %f" in done.stdout
