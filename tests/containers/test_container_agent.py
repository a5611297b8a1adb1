"""An agent inside a container (its own PID and mount namespaces, a private /tmp)
is found from the host through /proc/<pid>/root and reported under its host PID."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from vramscope.core.samples import Frame, GpuProcess, GpuSample
from vramscope.core.units import GiB
from vramscope.sources.agents.agent_client import AgentClient
from vramscope.sources.agents.container_agents import agent_dirs, contained_processes, dir_is_private
from vramscope.sources.machine.processes import ProcessCache

from .test_proc_reading import _child_in_namespace, needs_unshare

SCRIPT = Path(__file__).resolve().parents[1] / "agent" / "cpu_train.py"

pytestmark = pytest.mark.timeout(120)


def _frame_with_a_step(client, host_pid, info, deadline):
    """The client's frame once an agent on the GPU process ``host_pid`` has a step."""
    gpu = GpuSample(
        index=0,
        uuid="GPU-ctr",
        total=24 * GiB,
        used=GiB,
        processes=(GpuProcess(pid=host_pid, used=GiB, info=info),),
    )
    frame = None
    while time.monotonic() < deadline:
        frame = client(Frame(time=time.time(), gpus=(gpu,)))
        if frame.agents and frame.agents[0].step:
            break
        time.sleep(0.2)
    return frame


@pytest.mark.slow
@needs_unshare
@pytest.mark.parametrize("route", ["through /proc/PID/root", "shared directory"])
def test_agent_in_a_container_is_found_and_matched_to_its_host_pid(route):
    env = {k: v for k, v in os.environ.items() if k not in ("VRAMSCOPE_RUNTIME_DIR", "XDG_RUNTIME_DIR")}
    shared = None
    if route == "shared directory":  # e.g. docker run -v DIR:DIR -e VRAMSCOPE_RUNTIME_DIR=DIR
        shared = tempfile.mkdtemp(prefix="vs-")  # AF_UNIX paths are short: not under tmp_path
        env["VRAMSCOPE_RUNTIME_DIR"] = shared
        inner = f"exec {sys.executable} {SCRIPT} {shared}/run.json 3000 0.02 --agent"
        socket_dir = shared
    else:
        # the container's own socket directory: a private tmpfs over /tmp/vramscope-UID only
        # (not over all of /tmp, where this checkout and its Python may live)
        own = f"/tmp/vramscope-{os.getuid()}"
        inner = (
            f"mkdir -p {own} && mount -t tmpfs -o mode=0700 tmpfs {own} && "
            f"exec {sys.executable} {SCRIPT} {own}/run.json 3000 0.02 --agent"
        )
    holder = subprocess.Popen(
        ["unshare", "--pid", "--fork", "--kill-child", "--mount", "--mount-proc", "sh", "-c", inner], env=env
    )
    try:
        host_pid = _child_in_namespace(holder)
        if shared is None:
            socket_dir = f"/proc/{host_pid}/root/tmp/vramscope-{os.getuid()}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (
            os.path.isdir(socket_dir) and any(n.endswith(".sock") for n in os.listdir(socket_dir))
        ):
            time.sleep(0.1)
        info = ProcessCache().lookup(host_pid)
        assert info.ns_pid == 1  # the container's first process
        if shared is None:
            assert (socket_dir, os.getuid()) in agent_dirs(host_pid)

        client = AgentClient(dirs=[shared] if shared else [])
        frame = _frame_with_a_step(client, host_pid, info, deadline)
        [report] = frame.agents
        assert report.pid == host_pid  # not 1, its PID inside the container
        assert report.step > 0
        assert frame.gpus[0].processes[0].has_agent
        client.close()
    finally:
        holder.kill()
        holder.wait()
        if shared:
            shutil.rmtree(shared, ignore_errors=True)


def test_no_container_processes_means_no_extra_directories():
    gpu = GpuSample(
        index=0, processes=(GpuProcess(pid=os.getpid(), used=GiB, info=ProcessCache().lookup(os.getpid())),)
    )
    assert contained_processes(Frame(time=0.0, gpus=(gpu,))) == {}


def test_a_directory_open_to_others_or_of_another_user_is_refused(tmp_path):
    d = tmp_path / "vramscope-x"
    d.mkdir(mode=0o700)
    assert dir_is_private(str(d), os.getuid())
    assert not dir_is_private(str(d), os.getuid() + 1)
    os.chmod(d, 0o755)
    assert not dir_is_private(str(d), os.getuid())
    link = tmp_path / "link"
    link.symlink_to(d)
    os.chmod(d, 0o700)
    assert not dir_is_private(str(link), os.getuid())


@pytest.mark.slow
@needs_unshare
def test_a_host_agent_seen_through_a_containers_root_is_not_the_containers():
    """A container that shares the host's filesystem (here: no private mount at all)
    shows the host's socket directories through /proc/PID/root. An agent of the host
    found there belongs to no process of that container and is not reported from it
    (it is found, when it is, from the host's own directories)."""
    base = tempfile.mkdtemp(prefix="vs-")  # AF_UNIX paths are short: not under tmp_path
    host_dir, shared = os.path.join(base, "run", "vramscope"), os.path.join(base, "shared")
    os.makedirs(host_dir, mode=0o700)
    os.makedirs(shared, mode=0o700)
    env = {k: v for k, v in os.environ.items() if k not in ("VRAMSCOPE_RUNTIME_DIR", "XDG_RUNTIME_DIR")}
    host_agent = subprocess.Popen(
        [sys.executable, str(SCRIPT), os.path.join(base, "h.json"), "3000", "0.02", "--agent"],
        env={**env, "VRAMSCOPE_RUNTIME_DIR": host_dir},
    )
    # the container's own agent listens in `shared`; its XDG_RUNTIME_DIR names the host's directory
    inner = f"exec {sys.executable} {SCRIPT} {base}/c.json 3000 0.02 --agent"
    holder = subprocess.Popen(
        ["unshare", "--pid", "--fork", "--kill-child", "--mount", "--mount-proc", "sh", "-c", inner],
        env={**env, "VRAMSCOPE_RUNTIME_DIR": shared, "XDG_RUNTIME_DIR": os.path.join(base, "run")},
    )
    try:
        host_pid = _child_in_namespace(holder)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not all(
            any(n.endswith(".sock") for n in os.listdir(d)) for d in (host_dir, shared)
        ):
            time.sleep(0.1)
        assert (f"/proc/{host_pid}/root{host_dir}", os.getuid()) in agent_dirs(host_pid)
        client = AgentClient(dirs=[shared])
        frame = _frame_with_a_step(client, host_pid, ProcessCache().lookup(host_pid), deadline)
        assert [a.pid for a in frame.agents] == [host_pid]  # the container's agent, not the host's
        client.close()
    finally:
        for p in (holder, host_agent):
            p.kill()
            p.wait()
        shutil.rmtree(base, ignore_errors=True)
