"""Slurm jobs and Kubernetes pods named for real processes in real cgroups (v1 and
v2 where the machine allows), with a stand-in `scontrol` and a fake CRI-O
socket; containerd's OCI bundle from a fixture tree."""

from __future__ import annotations

import json
import os
import pwd
import time
import uuid

import pytest

from .cgroup_staging import staged  # noqa: F401 (a fixture)
from .scheduler_fakes import crio_socket, cri_labels, scontrol_asked, write_scontrol  # noqa: F401
from vramscope.core.processes.containers import container_text
from vramscope.core.samples import Container
from vramscope.core.processes.slurm_jobs import SlurmJob
from vramscope.sources.machine.containers import ContainerNames
from vramscope.sources.machine.processes import ProcessCache
from vramscope.sources.machine.slurm import SlurmJobs

ME = pwd.getpwuid(os.getuid()).pw_name


def job_id() -> int:
    return 700_000 + os.getpid() % 100_000 * 3 + int(time.monotonic() * 1000) % 3


def cache(scontrol: str = "/nonexistent/scontrol", names: ContainerNames | None = None) -> ProcessCache:
    names = names or ContainerNames({}, crio_sockets=(), containerd_bundles="/nonexistent")
    return ProcessCache(names=names, jobs=SlurmJobs(scontrol))


# -- Slurm ------------------------------------------------------------------------------


def test_v1_job_is_named_by_scontrol(staged, tmp_path):  # noqa: F811
    jid = job_id()
    scontrol = write_scontrol(tmp_path, {jid: ("train llama 7b", "alice", 1001)})
    pid = staged(f"slurm/uid_1001/job_{jid}/step_0", 1)
    info = cache(scontrol).lookup(pid)
    assert info.slurm == SlurmJob(jid, "0", 1001, user="alice", name="train llama 7b")
    assert container_text(info) == f"slurm job {jid} · alice · train llama 7b (step 0)"
    assert scontrol_asked(tmp_path) == [f"show job --oneliner {jid}"]


def test_v2_job_is_named_from_its_environment_without_scontrol(staged):  # noqa: F811
    jid = job_id()
    env = {"SLURM_JOB_ID": str(jid), "SLURM_JOB_NAME": "eval-sweep", "SLURM_JOB_USER": ME}
    pid = staged(f"system.slice/slurmstepd.scope/job_{jid}/step_batch/user/task_0", 2, env)
    info = cache().lookup(pid)  # no scontrol on this node
    assert info.slurm == SlurmJob(jid, "batch", None, user=ME, name="eval-sweep")


def test_processes_of_one_job_ask_scontrol_once(staged, tmp_path):  # noqa: F811
    jid = job_id()
    scontrol = write_scontrol(tmp_path, {jid: ("ddp", "alice", 1001)})
    a = staged(f"system.slice/slurmstepd.scope/job_{jid}/step_0/user/task_0", 2)
    b = staged(f"system.slice/slurmstepd.scope/job_{jid}/step_0/user/task_1", 2)
    procs = cache(scontrol)
    assert procs.lookup(a).slurm.name == procs.lookup(b).slurm.name == "ddp"
    assert len(scontrol_asked(tmp_path)) == 1


def test_a_job_the_controller_forgot_keeps_its_id(staged, tmp_path):  # noqa: F811
    jid = job_id()
    scontrol = write_scontrol(tmp_path, {})  # exits 1: "Invalid job id specified"
    pid = staged(f"slurm/uid_{os.getuid()}/job_{jid}/step_0", 1)
    info = cache(scontrol).lookup(pid)
    assert info.slurm == SlurmJob(jid, "0", os.getuid(), user=ME)  # the user from the path's uid


def test_a_hung_scontrol_never_stalls_a_pass(staged, tmp_path):  # noqa: F811
    jid = job_id()
    scontrol = write_scontrol(tmp_path, {jid: ("x", "alice", 1001)}, delay=30)
    a = staged(f"slurm/uid_1001/job_{jid}/step_0", 1)
    b = staged(f"slurm/uid_1001/job_{jid + 1}/step_0", 1)
    procs = ProcessCache(
        names=ContainerNames({}, crio_sockets=(), containerd_bundles="/nonexistent"),
        jobs=SlurmJobs(scontrol, timeout=0.5),
    )
    start = time.monotonic()
    infos = procs.lookup_many([a, b])
    assert time.monotonic() - start < 5  # one timeout, then left alone: not 2 x 30 s
    assert {i.slurm.job_id for i in infos.values()} == {jid, jid + 1}
    assert all(i.slurm.name is None for i in infos.values())  # the id is still shown
    assert procs.jobs.asked == 1


def test_a_process_in_no_job_has_none(sleepers):
    (pid,) = sleepers(1)
    assert cache().lookup(pid).slurm is None


# -- Kubernetes ----------------------------------------------------------------------------


def _ids() -> tuple[str, str]:
    return uuid.uuid4().hex + uuid.uuid4().hex, str(uuid.uuid4())


def test_v1_cgroupfs_pod_is_named_by_crio(staged, crio_socket):  # noqa: F811
    cid, pod_uid = _ids()
    socket, asked = crio_socket({cid: cri_labels("ml-team", "trainer-7f9c", "trainer")})
    pid = staged(f"kubepods/burstable/pod{pod_uid}/{cid}", 1)
    names = ContainerNames({}, crio_sockets=(socket,), containerd_bundles="/nonexistent")
    info = cache(names=names).lookup(pid)
    assert info.container == Container(
        "cri", cid, name="trainer", pod_uid=pod_uid, pod="trainer-7f9c", namespace="ml-team"
    )
    assert container_text(info) == "pod ml-team/trainer-7f9c · container trainer"
    assert asked == [f"/containers/{cid}"]


def test_v2_systemd_pod_is_named_from_containerds_bundle(staged, tmp_path):  # noqa: F811
    cid, pod_uid = _ids()
    bundle = tmp_path / "k8s.io" / cid
    bundle.mkdir(parents=True)
    (bundle / "config.json").write_text(
        json.dumps(
            {
                "ociVersion": "1.1.0",
                "annotations": {
                    "io.kubernetes.cri.container-type": "container",
                    "io.kubernetes.cri.container-name": "worker",
                    "io.kubernetes.cri.sandbox-name": "infer-0",
                    "io.kubernetes.cri.sandbox-namespace": "serving",
                },
            }
        )
    )
    slice_ = f"kubepods-besteffort-pod{pod_uid.replace('-', '_')}.slice"
    pid = staged(f"kubepods.slice/kubepods-besteffort.slice/{slice_}/cri-containerd-{cid}.scope", 2)
    names = ContainerNames({}, crio_sockets=(), containerd_bundles=str(tmp_path / "k8s.io"))
    info = cache(names=names).lookup(pid)
    assert (info.container.runtime, info.container.pod_uid) == ("containerd", pod_uid)
    assert container_text(info) == "pod serving/infer-0 · container worker"


def test_a_symlinked_bundle_is_not_followed(tmp_path):
    from vramscope.sources.machine.cri_names import containerd_naming

    cid = "c" * 64
    (tmp_path / cid).mkdir()
    (tmp_path / "elsewhere.json").write_text('{"annotations": {"io.kubernetes.cri.sandbox-name": "x"}}')
    os.symlink(tmp_path / "elsewhere.json", tmp_path / cid / "config.json")
    assert containerd_naming(str(tmp_path), cid) is None
    assert containerd_naming(str(tmp_path), "../" + cid) is None  # not an id: not a path


def test_a_slow_crio_socket_is_bounded_and_left_alone(crio_socket):  # noqa: F811
    cid, pod_uid = _ids()
    socket, asked = crio_socket({cid: cri_labels("a", "b", "c")}, delay=5)
    names = ContainerNames({}, timeout=0.3, crio_sockets=(socket,), containerd_bundles="/nonexistent")
    start = time.monotonic()
    for other in (cid, "d" * 64, "e" * 64):
        named = names.name(Container("cri-o", other, pod_uid=pod_uid))
        assert named.pod is None and named.id == other  # shown by id, not waited for
    assert time.monotonic() - start < 2
    assert len(asked) == 1  # the socket that timed out is not asked again this minute


def test_crio_answers_that_name_no_pod_or_lie_about_types(crio_socket):  # noqa: F811
    cid, _ = _ids()
    odd = {"io.kubernetes.pod.name": ["not", "text"], "io.kubernetes.container.name": "c"}
    socket, _asked = crio_socket({cid: odd})
    names = ContainerNames({}, crio_sockets=(socket,), containerd_bundles="/nonexistent")
    assert names.name(Container("cri-o", cid)).pod is None


def test_long_and_control_character_names_are_cut_and_escaped_on_a_terminal(crio_socket):  # noqa: F811
    from vramscope.core.status.terminal_text import visible

    cid, _ = _ids()
    socket, _asked = crio_socket({cid: cri_labels("ns", "p\x1b[31m" + "x" * 400, "c")})
    names = ContainerNames({}, crio_sockets=(socket,), containerd_bundles="/nonexistent")
    named = names.name(Container("cri-o", cid))
    assert len(named.pod) == 256
    assert "\x1b" not in visible(named.pod) and "\\x1b" in visible(named.pod)


@pytest.mark.parametrize("env", [{"CONTAINER_RUNTIME_ENDPOINT": "unix:///run/x/crio.sock"}, {}])
def test_crictls_endpoint_is_tried_first(monkeypatch, env):
    from vramscope.sources.machine.cri_names import CRIO_SOCKETS, crio_sockets

    monkeypatch.delenv("CONTAINER_RUNTIME_ENDPOINT", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    expected = ("/run/x/crio.sock",) if env else ()
    assert crio_sockets() == expected + CRIO_SOCKETS


# -- the command as installed ---------------------------------------------------------------


@pytest.mark.slow
def test_status_names_jobs_and_pods_of_real_processes(staged, tmp_path, crio_socket, fake_nvml_files):  # noqa: F811
    import subprocess
    import sys

    from fakenvml import GiB, FakeGpu, FakeProcess, FakeState

    jid = job_id()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    write_scontrol(bin_dir, {jid: ("train-llama", "alice", 1001)})
    cid, pod_uid = _ids()
    socket, _asked = crio_socket({cid: cri_labels("ml-team", "trainer-7f9c", "trainer")})
    in_job = staged(f"system.slice/slurmstepd.scope/job_{jid}/step_0/user/task_0", 2)
    in_job_too = staged(f"system.slice/slurmstepd.scope/job_{jid}/step_0/user/task_1", 2)
    in_pod = staged(f"kubepods/burstable/pod{pod_uid}/{cid}", 1)
    fake_nvml_files.write(
        FakeState(
            gpus=[
                FakeGpu(
                    total=48 * GiB,
                    used=30 * GiB,
                    processes=[FakeProcess(in_job, 12 * GiB), FakeProcess(in_pod, 9 * GiB)],
                ),
                FakeGpu(used=8 * GiB, processes=[FakeProcess(in_job_too, 7 * GiB)]),
            ]
        )
    )
    env = fake_nvml_files.env()
    env["PATH"] = f"{bin_dir}:{env.get('PATH', os.environ['PATH'])}"
    env["CONTAINER_RUNTIME_ENDPOINT"] = f"unix://{socket}"
    runs = {
        fmt: subprocess.run(
            [sys.executable, "-m", "vramscope", "status", *(["--json"] if fmt == "json" else [])],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        for fmt in ("json", "text")
    }
    for r in runs.values():
        assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    doc = json.loads(runs["json"].stdout)
    procs = {p["pid"]: p for g in doc["gpus"] for p in g["processes"]}
    assert procs[in_job]["slurm"] == {
        "job_id": jid,
        "step": "0",
        "uid": None,
        "user": "alice",
        "name": "train-llama",
    }
    assert (
        procs[in_pod]["container"]["pod"] == "trainer-7f9c"
        and procs[in_pod]["container"]["name"] == "trainer"
    )
    [job] = doc["slurm_jobs"]
    assert (job["label"], job["used"], job["processes"], job["stop"]) == (
        f"{jid} · alice · train-llama",
        19 * GiB,
        2,
        f"scancel {jid}",
    )
    [pod] = doc["pods"]
    assert (pod["key"], pod["used"]) == ("ml-team/trainer-7f9c", 9 * GiB)
    text = runs["text"].stdout
    assert f"slurm job {jid} · alice · train-llama (step 0)" in text
    assert "pod ml-team/trainer-7f9c · container trainer" in text
    assert "memory by Slurm job:" in text and f"(scancel {jid})" in text and "memory by pod:" in text
