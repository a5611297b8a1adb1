"""No XDG runtime dir and /tmp/vramscope-UID taken by someone else: the agent
listens in a private fallback, says why, and the monitor still finds it."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time

import pytest

from vramscope.agent.serving import paths
from vramscope.agent.core import Agent
from vramscope.sources.demo.allocator_replay import ReplayProvider, scenario_ramp
from vramscope.commands import run as run_command
from vramscope.core.samples import Frame
from vramscope.sources.agents.agent_client import AgentClient


@pytest.fixture
def shared_tmp(tmp_path, monkeypatch):
    """A stand-in for /tmp (the real one is not the test's to spoil)."""
    monkeypatch.delenv("VRAMSCOPE_RUNTIME_DIR", raising=False)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setattr(paths, "SHARED_TMP", str(tmp_path))
    return tmp_path / f"vramscope-{os.getuid()}"


def _squat(name, how):
    if how == "symlink":
        (name.parent / "elsewhere").mkdir()
        name.symlink_to(name.parent / "elsewhere")
    else:
        name.write_text("not a directory")


@pytest.mark.parametrize("how", ["symlink", "file"])
def test_the_agent_falls_back_to_a_private_dir_and_the_monitor_finds_it(shared_tmp, how, caplog):
    _squat(shared_tmp, how)
    directory, refused = paths.choose_agent_dir()
    assert directory == paths.private_fallback_dir()
    assert directory.startswith(os.environ["XDG_CACHE_HOME"])  # the user's own
    assert len(refused) == 1 and str(shared_tmp) in refused[0]
    agent = Agent(
        interval=0.05, provider=ReplayProvider(scenario_ramp(), loop=True), discover=False, final_dump=False
    )
    caplog.set_level(logging.WARNING, logger="vramscope.agent")
    agent.start()
    client = AgentClient()
    try:
        assert agent.wait_started(5) and agent.server is not None, agent.server_error
        assert os.path.dirname(agent.socket_path) == directory
        assert os.stat(directory).st_mode & 0o777 == 0o700
        assert any(
            "listening in" in r.getMessage() and str(shared_tmp) in r.getMessage() for r in caplog.records
        )
        deadline = time.monotonic() + 10
        frame = client(Frame(time=time.time()))
        while not frame.agents and time.monotonic() < deadline:
            time.sleep(0.1)
            frame = client(Frame(time=time.time()))
        assert [r.pid for r in frame.agents] == [os.getpid()]
    finally:
        client.close()
        agent.stop()
    assert os.path.islink(shared_tmp) or os.path.isfile(shared_tmp)  # left as it was


def test_vramscope_run_says_why_the_shared_dir_was_refused(shared_tmp, capsys):
    _squat(shared_tmp, "symlink")
    code = run_command.run(argparse.Namespace(child=["--", sys.executable, "-c", "pass"]))
    assert code == 0
    err = capsys.readouterr().err
    assert err.startswith("vramscope run: warning: ")
    assert str(shared_tmp) in err and "symlink" in err
    assert paths.private_fallback_dir() in err


def test_vramscope_run_is_quiet_when_the_usual_dir_is_fine(shared_tmp, capsys):
    code = run_command.run(argparse.Namespace(child=["--", sys.executable, "-c", "pass"]))
    assert code == 0
    assert capsys.readouterr().err == ""


def _nobody_uid() -> int | None:
    import pwd

    try:
        return pwd.getpwnam("nobody").pw_uid
    except KeyError:
        return None


def _start_without_socket(capfd) -> str:
    """Start an agent that cannot get a socket; what it said on stderr."""
    agent = Agent(
        interval=0.05, provider=ReplayProvider(scenario_ramp(), loop=True), discover=False, final_dump=False
    )
    agent.start()
    try:
        assert agent.wait_started(5)
        assert agent.server is None  # no socket ...
        time.sleep(0.2)
        assert agent.samples > 0  # ... and the run is still sampled (training goes on)
    finally:
        agent.stop()
    return capfd.readouterr().err


def test_no_usable_dir_at_all_is_said_once_on_stderr(shared_tmp, monkeypatch, capfd):
    _squat(shared_tmp, "file")
    blocked = shared_tmp.parent / "cache-is-a-file"
    blocked.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))  # the fallback cannot be made either
    err = _start_without_socket(capfd)
    lines = [line for line in err.splitlines() if "no monitor connection" in line]
    assert len(lines) == 1
    assert str(shared_tmp) in lines[0] and "training goes on" in lines[0]


@pytest.mark.skipif(os.geteuid() != 0, reason="making a directory another user's needs root")
def test_a_runtime_dir_of_another_user_is_said_on_stderr(tmp_path, monkeypatch, capfd):
    nobody = _nobody_uid()
    if nobody is None:
        pytest.skip("no 'nobody' account to own the directory")
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, nobody, nobody)
    monkeypatch.setenv("VRAMSCOPE_RUNTIME_DIR", str(theirs))
    err = _start_without_socket(capfd)
    [line] = [line for line in err.splitlines() if "no monitor connection" in line]
    assert f"belongs to uid {nobody}" in line
    assert os.listdir(theirs) == []  # nothing put in it


def test_a_socket_path_too_long_for_unix_sockets_is_said_on_stderr(tmp_path, monkeypatch, capfd):
    deep = tmp_path / ("d" * 100)
    deep.mkdir(mode=0o700)
    monkeypatch.setenv("VRAMSCOPE_RUNTIME_DIR", str(deep))
    err = _start_without_socket(capfd)
    [line] = [line for line in err.splitlines() if "no monitor connection" in line]
    assert "longer than a Unix socket allows" in line and "VRAMSCOPE_RUNTIME_DIR" in line
