"""Containers, NSpid and the PID-namespace view read from /proc: fixture trees for
each runtime, a fake Docker API socket for names, and real PID namespaces
(``unshare --pid --fork --mount-proc``) where the machine allows it."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import time

import pytest

from vramscope.core.samples import Container
from vramscope.sources.machine.containers import (
    ContainerNames,
    host_pid_view,
    proc_hides_pids,
    read_container,
)
from vramscope.sources.machine.processes import ProcessCache

from .unix_http import UnixHttp

DOCKER_ID = "4f1c" + "0" * 56 + "beef"
PODMAN_ID = "9a" * 32
K8S_ID = "c0ffee" + "1" * 58
POD_UID = "0d3c5a61-7b2e-4c59-9f0a-3f1e2d4c5b6a"


def write_proc(root: pathlib.Path, pid: int, cgroup: str, nspid: tuple[int, ...]) -> None:
    d = root / str(pid)
    d.mkdir(parents=True)
    (d / "cgroup").write_text(cgroup)
    (d / "status").write_text(
        f"Name:\tpython\nTgid:\t{pid}\nNSpid:\t" + "\t".join(map(str, nspid)) + "\nPPid:\t1\n"
    )


# what each runtime's container process shows, cgroup v1 then v2, as on real hosts
RUNTIME_TREES = {
    "docker v1": ("12:memory:/docker/{d}\n11:pids:/docker/{d}\n0::/\n", "docker", DOCKER_ID, None),
    "docker v2": ("0::/system.slice/docker-{d}.scope\n", "docker", DOCKER_ID, None),
    "podman v2": (
        "0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-{p}.scope/container\n",
        "podman",
        PODMAN_ID,
        None,
    ),
    "podman v1": (
        "10:memory:/libpod_parent/libpod-{p}\n1:name=systemd:/libpod_parent/libpod-{p}\n",
        "podman",
        PODMAN_ID,
        None,
    ),
    "containerd v2": ("0::/system.slice/cri-containerd-{k}.scope\n", "containerd", K8S_ID, None),
    "kubernetes v1": ("11:memory:/kubepods/burstable/pod{u}/{k}\n0::/\n", "cri", K8S_ID, POD_UID),
    "kubernetes v2": (
        "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{us}.slice/"
        "cri-containerd-{k}.scope\n",
        "containerd",
        K8S_ID,
        POD_UID,
    ),
}


@pytest.mark.parametrize("layout", sorted(RUNTIME_TREES))
def test_fixture_proc_tree_for_each_runtime(tmp_path, layout):
    text, runtime, cid, pod = RUNTIME_TREES[layout]
    cgroup = text.format(d=DOCKER_ID, p=PODMAN_ID, k=K8S_ID, u=POD_UID, us=POD_UID.replace("-", "_"))
    write_proc(tmp_path, 4242, cgroup, (4242, 7))
    container, ns_pid = read_container(4242, str(tmp_path))
    assert container == Container(runtime, cid, pod_uid=pod)
    assert ns_pid == 7


def test_host_process_has_neither(tmp_path):
    write_proc(tmp_path, 10, "0::/user.slice/user-1000.slice/session-3.scope\n", (10,))
    assert read_container(10, str(tmp_path)) == (None, None)
    assert read_container(11, str(tmp_path)) == (None, None)  # gone: nothing, no error


def ns_link(root: pathlib.Path, inode: int) -> None:
    (root / "self" / "ns").mkdir(parents=True)
    os.symlink(f"pid:[{inode}]", root / "self" / "ns" / "pid")


def test_host_pid_namespace_is_told_by_its_fixed_inode(tmp_path):
    host, ctr = tmp_path / "host", tmp_path / "ctr"
    ns_link(host, 0xEFFFFFFC)
    ns_link(ctr, 4026532300)
    assert host_pid_view(str(host)) is True
    assert host_pid_view(str(ctr)) is False
    assert host_pid_view(str(tmp_path / "none")) is None


@pytest.mark.skipif(os.geteuid() == 0, reason="hidepid does not hide anything from root")
def test_hidepid_means_a_missing_pid_proves_nothing(tmp_path):
    (tmp_path / "self").mkdir()
    (tmp_path / "self" / "mountinfo").write_text(
        "22 1 0:21 / /proc rw,nosuid shared:13 - proc proc rw,hidepid=invisible\n"
    )
    assert proc_hides_pids(str(tmp_path)) is True
    (tmp_path / "self" / "mountinfo").write_text("22 1 0:21 / /proc rw - proc proc rw\n")
    assert proc_hides_pids(str(tmp_path)) is False


# -- names from a runtime's API ----------------------------------------------------------


@pytest.fixture
def docker_api(tmp_path):
    """A Docker-compatible API on a Unix socket: GET /containers/<id>/json."""
    names = {DOCKER_ID: "/trainer"}

    def answer(path: str) -> tuple[int, bytes]:
        cid = path.split("/")[2] if path.startswith("/containers/") else ""
        if cid in names:
            return 200, ('{"Id": "%s", "Name": "%s"}' % (cid, names[cid])).encode()
        return 404, b'{"message": "No such container"}'

    server = UnixHttp(str(tmp_path / "docker.sock"), answer)
    yield server.path, server.asked
    server.close()


def test_name_comes_from_the_runtime_api_once(docker_api):
    path, asked = docker_api
    names = ContainerNames({"docker": [path]})
    named = names.name(Container("docker", DOCKER_ID))
    assert named.name == "trainer" and named.label == "docker trainer"
    assert names.name(Container("docker", DOCKER_ID)).name == "trainer"
    assert asked == [f"/containers/{DOCKER_ID}/json"]  # cached per id
    assert names.name(Container("docker", "e" * 64)).name is None  # unknown there: short id


def test_no_runtime_socket_or_no_permission_means_no_name(tmp_path, docker_api):
    path, asked = docker_api
    names = ContainerNames({"docker": [str(tmp_path / "absent.sock")]})
    assert names.name(Container("docker", DOCKER_ID)).label == f"docker {DOCKER_ID[:12]}"
    if os.geteuid() != 0:  # root may open anything; a user may not open 0600 sockets of others
        os.chmod(path, 0)
        assert ContainerNames({"docker": [path]}).name(Container("docker", DOCKER_ID)).name is None
        assert asked == []


def test_a_dead_daemon_is_not_asked_again_every_pass(tmp_path):
    dead = tmp_path / "dead.sock"
    import socket as _socket

    s = _socket.socket(_socket.AF_UNIX)
    s.bind(str(dead))
    s.close()  # a socket file nobody listens on: connect() is refused
    clock = [0.0]
    names = ContainerNames({"docker": [str(dead)]}, retry_after=60, clock=lambda: clock[0])
    for _ in range(5):
        assert names.name(Container("docker", DOCKER_ID)).name is None
    assert names.asked == 1
    clock[0] = 61.0
    names.name(Container("docker", DOCKER_ID))
    assert names.asked == 2


# -- real PID namespaces --------------------------------------------------------------


def _can_unshare() -> str | None:
    if os.geteuid() != 0:
        return "creating a PID namespace with unshare needs root"
    if shutil.which("unshare") is None:
        return "unshare (util-linux) is not installed"
    r = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", "true"], capture_output=True, timeout=20
    )
    if r.returncode != 0:
        return f"unshare --pid is refused here: {r.stderr.decode().strip()}"
    return None


UNSHARE_SKIP = _can_unshare()
needs_unshare = pytest.mark.skipif(UNSHARE_SKIP is not None, reason=UNSHARE_SKIP or "")


def _child_in_namespace(holder: subprocess.Popen) -> int:
    """The host PID of the process unshare forked into the new namespace, once
    that child has exec'd its command (before that it is still "unshare")."""
    for _ in range(200):
        kids = pathlib.Path(f"/proc/{holder.pid}/task/{holder.pid}/children")
        text = kids.read_text().split() if kids.exists() else []
        if text:
            try:
                comm = pathlib.Path(f"/proc/{text[0]}/comm").read_text().strip()
            except OSError:
                comm = "unshare"
            if comm != "unshare":
                return int(text[0])
        time.sleep(0.05)
    raise AssertionError("unshare did not fork and exec its child")


@needs_unshare
def test_a_process_in_its_own_pid_namespace_shows_its_pid_inside():
    holder = subprocess.Popen(["unshare", "--pid", "--fork", "--kill-child", "--mount-proc", "sleep", "300"])
    try:
        pid = _child_in_namespace(holder)
        info = ProcessCache().lookup(pid)
        assert info.ns_pid == 1  # the first process of its namespace
        assert info.command == "sleep 300"
        assert ProcessCache().lookup(os.getpid()).ns_pid is None  # ours: same namespace
    finally:
        holder.kill()
        holder.wait()
