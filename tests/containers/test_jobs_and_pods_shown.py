"""Slurm jobs and pods as a user meets them: per-job and per-pod totals in
`status` text and JSON, a job's processes as one group, a squatter in a job
or a pod with the scheduler's command to end it."""

from __future__ import annotations

import dataclasses

import pytest

from vramscope.core.processes.containers import container_text
from vramscope.core.detectors import Diagnostics
from vramscope.core.detectors.jupyter import NotebookHint
from vramscope.core.processes.process_groups import group_key, group_name, kin_of, units
from vramscope.core.samples import Container, Frame, GpuSample, ProcessInfo
from vramscope.core.processes.scheduler_totals import job_totals, pod_totals
from vramscope.core.processes.slurm_jobs import SlurmJob
from vramscope.core.status.status_report import frame_to_dict
from vramscope.core.status.status_table import render_table
from vramscope.core.units import GiB

from tests.core.detectors.scenarios import frame, gpu, proc

from .test_users_and_records import p as shared_p

T0 = 1_700_000_000.0
LLAMA = SlurmJob(12345, "0", 1001, user="alice", name="train-llama")
SWEEP = SlurmJob(777, "batch", 1002, user="bob", name=None)
TRAINER = Container(
    "containerd", "c0" * 32, name="trainer", pod_uid="0d3c5a61-7b2e", pod="trainer-7f9c", namespace="ml-team"
)
UNNAMED = Container("cri", "d1" * 32, pod_uid="9e8d7c6b-aaaa-bbbb")


def p(pid, used, user="alice", slurm=None, container=None):
    return shared_p(pid, used, user, container, slurm=slurm)


def cluster_node() -> Frame:
    g0 = GpuSample(
        index=0,
        name="H100",
        total=80 * GiB,
        used=50 * GiB,
        processes=(
            p(11, 20 * GiB, slurm=LLAMA),
            p(12, None, slurm=LLAMA),  # n/a is not 0
            p(13, 6 * GiB, "bob", slurm=SWEEP),
            p(14, 9 * GiB, "root", container=TRAINER),
            p(15, 2 * GiB, "root", container=UNNAMED),
            p(16, 1 * GiB, "carol"),  # on the node, in no job or pod
        ),
    )
    g1 = GpuSample(
        index=1, name="H100", total=80 * GiB, used=20 * GiB, processes=(p(21, 20 * GiB, slurm=LLAMA),)
    )
    return Frame(time=T0, gpus=(g0, g1), source="test", host_pids=True)


def test_per_job_and_per_pod_totals():
    jobs = {t.key: t for t in job_totals(cluster_node())}
    assert list(jobs) == ["12345", "777"]  # biggest first
    llama = jobs["12345"]
    assert llama.label == "12345 · alice · train-llama" and llama.stop == "scancel 12345"
    assert llama.used == 40 * GiB and llama.per_gpu == ((0, 20 * GiB), (1, 20 * GiB))
    assert llama.processes == 3 and llama.unreported == 1
    pods = {t.key: t for t in pod_totals(cluster_node())}
    assert pods["ml-team/trainer-7f9c"].used == 9 * GiB
    assert pods["ml-team/trainer-7f9c"].stop == "kubectl delete pod trainer-7f9c -n ml-team"
    assert pods["9e8d7c6b-aaaa-bbbb"].label == "pod 9e8d7c6b"  # only the cgroup's pod UID known
    assert job_totals(None) == [] and pod_totals(Frame(time=T0)) == []


def test_status_json_and_text_carry_jobs_and_pods():
    f = cluster_node()
    doc = frame_to_dict(f)
    by_pid = {q["pid"]: q for q in doc["gpus"][0]["processes"]}
    assert by_pid[11]["slurm"] == {
        "job_id": 12345,
        "step": "0",
        "uid": 1001,
        "user": "alice",
        "name": "train-llama",
    }
    assert by_pid[14]["container"]["pod"] == "trainer-7f9c" and by_pid[14]["slurm"] is None
    assert doc["slurm_jobs"][0]["key"] == "12345" and doc["slurm_jobs"][0]["used"] == 40 * GiB
    assert doc["slurm_jobs"][0]["stop"] == "scancel 12345"
    assert [x["key"] for x in doc["pods"]] == ["ml-team/trainer-7f9c", "9e8d7c6b-aaaa-bbbb"]
    text = render_table(f)
    assert "slurm job 12345 · alice · train-llama (step 0)" in text
    assert "pod ml-team/trainer-7f9c · container trainer" in text
    jobs = text[text.index("memory by Slurm job:") :]
    assert "12345 · alice · train-llama" in jobs and "40.0 GiB" in jobs and "(scancel 12345)" in jobs
    assert "ml-team/trainer-7f9c" in text[text.index("memory by pod:") :]


def test_no_job_or_pod_sections_on_a_plain_workstation():
    f = Frame(time=T0, gpus=(GpuSample(index=0, total=GiB, used=GiB, processes=(p(1, GiB),)),), source="t")
    text = render_table(f)
    assert "Slurm" not in text and "memory by pod" not in text and "CONTAINER" not in text
    assert frame_to_dict(f)["slurm_jobs"] == [] and frame_to_dict(f)["pods"] == []


def test_a_jobs_processes_are_one_group_whatever_their_commands():
    f = cluster_node()
    members = [((q.pid,), kin_of(q.info)) for g in f.gpus for q in g.processes]
    grouped = units(members)
    [(key, pids)] = [(k, v) for k, v in grouped.items() if len(v) > 1]
    assert sorted(pids) == [(11,), (12,), (21,)]
    assert group_name(key, len(pids)) == "slurm job 12345 · alice · train-llama ×3"
    # two jobs of one user never merge; a lone job process stands alone
    assert kin_of(p(1, 1, slurm=SLURM_OTHER).info) != kin_of(p(2, 1, slurm=LLAMA).info)
    assert grouped[(13,)] == ((13,),)
    assert group_key(kin_of(p(1, 1, slurm=LLAMA).info, "node-a")) != group_key(
        kin_of(p(1, 1, slurm=LLAMA).info)
    )


SLURM_OTHER = SlurmJob(12346, "0", 1001, user="alice", name="train-llama")


def no_finder(pid, conn):
    return NotebookHint(None, "test: no server")


def idle_alerts(q):
    engine = Diagnostics(notebook_finder=no_finder)
    alerts = []
    for t in range(0, 420, 30):
        alerts = engine.feed(frame(t, [gpu([q], util=0)]))
    return [a for a in alerts if a.kind == "squatter"]


@pytest.mark.parametrize(
    "owner, fix, evidence",
    [
        (
            {"slurm": LLAMA},
            "`scancel 12345` ends the whole job",
            "runs in slurm job 12345 · alice · train-llama (step 0)",
        ),
        (
            {"container": TRAINER},
            "`kubectl delete pod trainer-7f9c -n ml-team`",
            "runs in pod ml-team/trainer-7f9c · container trainer",
        ),
    ],
)
def test_a_squatter_in_a_job_or_pod_names_it_with_the_command_that_ends_it(owner, fix, evidence):
    idle = proc(31, 4 * GiB, sm=0)
    [alert] = idle_alerts(dataclasses.replace(idle, info=dataclasses.replace(idle.info, **owner)))
    assert fix in alert.fix
    assert any(evidence in e for e in alert.evidence)


def test_a_squatter_outside_jobs_has_no_scancel():
    [alert] = idle_alerts(proc(33, 4 * GiB, sm=0))
    assert "scancel" not in alert.fix and not any("slurm" in e for e in alert.evidence)


def test_container_text_with_both_a_job_and_a_container():
    info = ProcessInfo(pid=1, slurm=SWEEP, container=Container("docker", "ab" * 32, name="c"), ns_pid=7)
    assert container_text(info) == "slurm job 777 · bob (step batch); docker c (pid 7 inside)"
    assert container_text(ProcessInfo(pid=1)) == "" and container_text(None) == ""


def test_the_windows_table_shows_job_and_pod_in_the_container_column_and_filters_by_them():
    from vramscope.core.processes.process_rows import COLUMNS, COL, TableBuilder, TableOrder
    from vramscope.core.store.store import Store

    f = cluster_node()
    store = Store()
    store.append(f)
    table = TableBuilder().build(f, store, TableOrder())
    assert "Container" in table.used_columns
    cell = COLUMNS[COL["Container"]].text
    shown = {r.pid: cell(r) for r in table.source}
    assert shown[11] == "slurm job 12345 · alice · train-llama (step 0)"
    assert shown[14] == "pod ml-team/trainer-7f9c · container trainer"
    assert shown[16] == ""
    # the job's three processes on two GPUs are one row, with the job's total
    [job] = TableBuilder().build(f, store, TableOrder(filter="train-llama")).rows
    assert (job.name, job.members, job.used, job.gpus) == (
        "slurm job 12345 · alice · train-llama",
        3,
        40 * GiB,
        "0, 1",
    )
    assert cell(job) == "slurm job 12345 · alice · train-llama (step 0)"
