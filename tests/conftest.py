"""Shared fixtures. Qt tests run offscreen; screenshots go to test-artifacts/.

Every test runs as a user of its own (``private_user_dirs``, autouse): home,
settings, data (sessions), state (the end-process log), cache and runtime
(agent sockets) are fresh temporary directories, so the suite never reads or
writes the real user's -- it passes while that user trains with the agent.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import tempfile

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from hypothesis import settings as hypothesis_settings

# No per-example deadline: the suite runs on shared 2-core machines where a slow
# example is load, not a bug (the properties are what the tests check).
hypothesis_settings.register_profile("vramscope", deadline=None)
hypothesis_settings.load_profile("vramscope")

ROOT = pathlib.Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts"


# Where the real user's things live, each redirected per test.
USER_DIR_VARIABLES = (
    "HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "XDG_CACHE_HOME",
    "XDG_RUNTIME_DIR",
    "VRAMSCOPE_RUNTIME_DIR",
)


@pytest.fixture(autouse=True)
def private_user_dirs(monkeypatch):
    """Fresh HOME, XDG_* and agent runtime dirs for one test (see the module text)."""
    # short: AF_UNIX socket paths are limited to 107 bytes
    base = pathlib.Path(tempfile.mkdtemp(prefix="vs-u-"))
    dirs = {
        "HOME": base / "home",
        "XDG_CONFIG_HOME": base / "config",
        "XDG_DATA_HOME": base / "data",
        "XDG_STATE_HOME": base / "state",
        "XDG_CACHE_HOME": base / "cache",
        "XDG_RUNTIME_DIR": base / "run",
        "VRAMSCOPE_RUNTIME_DIR": base / "run" / "vramscope",
    }
    for name in USER_DIR_VARIABLES:
        dirs[name].mkdir(mode=0o700, parents=True, exist_ok=True)
        monkeypatch.setenv(name, str(dirs[name]))
    monkeypatch.delenv("SUDO_UID", raising=False)  # whoever runs the suite, it acts as itself
    if os.geteuid() == 0:
        # CI containers run the suite as root, so the processes the tests start and
        # end are root's: let root count as a regular user here (as in such a
        # container). The system-account rule itself is tested with an explicit
        # first_user_uid (tests/core/detectors/test_end_process_safety.py).
        monkeypatch.setenv("VRAMSCOPE_UID_MIN", "0")
    else:
        monkeypatch.delenv("VRAMSCOPE_UID_MIN", raising=False)
    yield dirs
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def artifacts_dir() -> pathlib.Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


# The fake libnvidia-ml.so.1 (tests/fakenvml.py): fake_nvml, fake_nvml_files, sleepers
from fakenvml import fake_nvml, fake_nvml_build, fake_nvml_files, sleepers  # noqa: E402,F401

# A stand-in inference server on 127.0.0.1 (tests/fakeservers.py): fake_server
from fakeservers import fake_server  # noqa: E402,F401
