"""The container a cgroup path names, for each runtime's layout (cgroup v1 and v2)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from vramscope.core.processes.containers import (
    CONTAINERD,
    CRI,
    CRIO,
    DOCKER,
    LXC,
    PODMAN,
    container_from_dict,
    inner_pid,
    parse_cgroup,
    parse_nspid,
    stop_advice,
    stop_command,
    with_name,
)
from vramscope.core.samples import Container

ids = st.text("0123456789abcdef", min_size=64, max_size=64)
uids = st.uuids().map(str)
qos = st.sampled_from(["burstable", "besteffort"])


def v1(path: str) -> str:
    """A cgroup v1 file: every controller names the same path, the unified line is empty."""
    return (
        "\n".join(
            [
                f"12:memory:{path}",
                f"11:cpu,cpuacct:{path}",
                f"10:pids:{path}",
                f"1:name=systemd:{path}",
                "0::/",
            ]
        )
        + "\n"
    )


def v2(path: str) -> str:
    return f"0::{path}\n"


LAYOUTS = {  # name -> (path builder(id, uid, qos), runtime, has pod)
    "docker cgroupfs": (lambda i, u, q: f"/docker/{i}", DOCKER, False),
    "docker systemd": (lambda i, u, q: f"/system.slice/docker-{i}.scope", DOCKER, False),
    "podman rootless": (
        lambda i, u, q: (
            f"/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-{i}.scope/container"
        ),
        PODMAN,
        False,
    ),
    "podman cgroupfs": (lambda i, u, q: f"/libpod_parent/libpod-{i}", PODMAN, False),
    "containerd": (lambda i, u, q: f"/system.slice/cri-containerd-{i}.scope", CONTAINERD, False),
    "k8s cgroupfs": (lambda i, u, q: f"/kubepods/{q}/pod{u}/{i}", CRI, True),
    "k8s guaranteed cgroupfs": (lambda i, u, q: f"/kubepods/pod{u}/{i}", CRI, True),
    "k8s systemd containerd": (
        lambda i, u, q: (
            f"/kubepods.slice/kubepods-{q}.slice/kubepods-{q}-pod"
            f"{u.replace('-', '_')}.slice/cri-containerd-{i}.scope"
        ),
        CONTAINERD,
        True,
    ),
    "k8s systemd guaranteed cri-o": (
        lambda i, u, q: f"/kubepods.slice/kubepods-pod{u.replace('-', '_')}.slice/crio-{i}.scope",
        CRIO,
        True,
    ),
    "kind node pod": (lambda i, u, q: f"/docker/{'f' * 64}/kubepods/{q}/pod{u}/{i}", CRI, True),
    "containerd colon form": (
        lambda i, u, q: (
            f"/system.slice/containerd.service/kubepods-{q}-pod{u.replace('-', '_')}.slice:cri-containerd:{i}"
        ),
        CONTAINERD,
        True,
    ),
}


@given(cid=ids, uid=uids, q=qos, layout=st.sampled_from(sorted(LAYOUTS)), version=st.sampled_from([v1, v2]))
def test_every_layout_gives_runtime_id_and_pod(cid, uid, q, layout, version):
    build, runtime, has_pod = LAYOUTS[layout]
    found = parse_cgroup(version(build(cid, uid, q)))
    assert found is not None
    assert found.runtime == runtime and found.id == cid
    assert found.pod_uid == (uid if has_pod else None)
    assert found.short_id == cid[:12]


@given(cid=ids)
def test_the_monitor_process_of_podman_is_not_the_container(cid):
    assert parse_cgroup(v2(f"/machine.slice/libpod-conmon-{cid}.scope")) is None


@given(st.text())
def test_any_text_is_read_without_error(text):
    result = parse_cgroup(text)
    assert result is None or result.runtime in (DOCKER, PODMAN, CONTAINERD, CRIO, CRI, LXC)


def test_host_processes_have_no_container():
    assert parse_cgroup(v2("/user.slice/user-1000.slice/session-2.scope")) is None
    assert parse_cgroup(v1("/")) is None
    assert parse_cgroup(v2("/system.slice/docker.service")) is None  # the daemon itself
    assert parse_cgroup("") is None


def test_lxc_containers_are_named_by_their_path():
    assert parse_cgroup(v2("/lxc.payload.web/init.scope")) == Container(LXC, None, name="web")
    assert parse_cgroup(v1("/lxc/db")) == Container(LXC, None, name="db")


@given(st.lists(st.integers(1, 4_194_304), min_size=1, max_size=4))
def test_nspid_is_read_outermost_first(pids):
    status = "Name:\tpython\nTgid:\t9\nNSpid:\t" + "\t".join(map(str, pids)) + "\nPPid:\t1\n"
    assert parse_nspid(status) == tuple(pids)
    assert inner_pid(tuple(pids)) == (pids[-1] if len(pids) > 1 else None)


def test_nspid_absent_or_damaged_is_none():
    assert parse_nspid("Name:\tx\n") is None  # kernels before 4.1
    assert parse_nspid("NSpid:\tabc\n") is None


def test_stop_commands_name_the_container():
    cid = "a" * 64
    assert stop_command(Container(DOCKER, cid, name="trainer")) == "docker stop trainer"
    assert stop_command(Container(DOCKER, cid)) == "docker stop aaaaaaaaaaaa"
    assert stop_command(Container(PODMAN, cid, name="nb")) == "podman stop nb"
    pod = with_name(Container(DOCKER, cid, pod_uid="u"), "/k8s_worker_train-7f_ml_u_0")
    assert (pod.name, pod.pod, pod.namespace) == ("worker", "train-7f", "ml")
    assert stop_command(pod) == "kubectl delete pod train-7f -n ml"
    assert "`docker stop trainer`" in stop_advice(Container(DOCKER, cid, name="trainer"))


@given(
    st.builds(
        Container,
        st.sampled_from([DOCKER, PODMAN, CRI]),
        st.none() | ids,
        st.none() | st.text(),
        st.none() | uids,
        st.none() | st.text(),
        st.none() | st.text(),
    )
)
def test_container_round_trips_through_its_dict(container):
    assert container_from_dict(container.as_dict()) == container


def test_damaged_container_dicts_read_as_none():
    assert container_from_dict({"raw": "x"}) is None
    assert container_from_dict(None) is None
    assert container_from_dict({"runtime": "docker", "id": 5}) == Container(DOCKER, None)
