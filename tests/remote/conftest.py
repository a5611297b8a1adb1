"""Fixtures for the --host tests: a stand-in ssh on PATH and "remote" hosts
that are this machine with their own fake NVML state."""

from __future__ import annotations

import os
import pathlib
import stat
import sys

import pytest

from fakenvml import FakeState, subprocess_env, write_state
from remote import fakessh


class Hosts:
    def __init__(self, tmp_path: pathlib.Path, lib_dir: pathlib.Path):
        self.dir = tmp_path
        self.bin = tmp_path / "bin"
        self.lib_dir = lib_dir
        self.hosts: dict[str, dict] = {}
        self.config = fakessh.install(self.bin, {})

    def add(
        self, name: str, state: FakeState | None = None, path: str | None = None, **env_extra: str
    ) -> pathlib.Path:
        """A host whose `vramscope stream` sees ``state``; returns its state file."""
        state_path = self.dir / f"{name}-nvml.txt"
        write_state(state_path, state or FakeState())
        env = {k: v for k, v in subprocess_env(self.lib_dir, state_path, {}).items()}
        env["PATH"] = path or fakessh.venv_path()
        env["PYTHONPATH"] = ""  # the host's own Python finds what is installed there, not this shell's path
        env.update(private_dirs(self.dir / name))  # the "remote" user's own directories
        env.update(env_extra)
        self.hosts[name] = env
        fakessh.set_hosts(self.config, self.hosts)
        return state_path

    def add_module_only(self, name: str, state: FakeState | None = None) -> pathlib.Path:
        """A host where `vramscope` is not on PATH but `python3 -m vramscope` works."""
        only = self.dir / f"{name}-bin"
        only.mkdir()
        py = only / "python3"
        py.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
        py.chmod(py.stat().st_mode | stat.S_IEXEC)
        return self.add(name, state, path=os.pathsep.join([str(only), "/usr/bin", "/bin"]))

    def remove(self, name: str) -> None:
        self.hosts.pop(name, None)
        fakessh.set_hosts(self.config, self.hosts)

    def env(self) -> dict:
        env = dict(os.environ)
        env["PATH"] = os.pathsep.join([str(self.bin), env.get("PATH", "")])
        return env

    def calls(self) -> list[list[str]]:
        return fakessh.calls(self.bin)


def private_dirs(base: pathlib.Path) -> dict:
    """Runtime, data, state and config directories under ``base`` (never the user's)."""
    out = {}
    for var in (
        "VRAMSCOPE_RUNTIME_DIR",
        "XDG_RUNTIME_DIR",
        "XDG_DATA_HOME",
        "XDG_STATE_HOME",
        "XDG_CONFIG_HOME",
        "XDG_CACHE_HOME",
    ):
        d = base / var.lower()
        d.mkdir(parents=True, exist_ok=True, mode=0o700)
        out[var] = str(d)
    return out


@pytest.fixture
def hosts(tmp_path, fake_nvml_build, monkeypatch) -> Hosts:
    h = Hosts(tmp_path, fake_nvml_build().parent)
    monkeypatch.setenv("PATH", h.env()["PATH"])
    for var, value in private_dirs(tmp_path / "local").items():
        monkeypatch.setenv(var, value)
    return h


from ui.helpers import settled_tables  # noqa: E402,F401  (autouse: tables read once shown)
