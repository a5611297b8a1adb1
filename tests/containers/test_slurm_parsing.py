"""Slurm jobs from cgroup paths and from `scontrol show job --oneliner` text."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vramscope.core.processes.slurm_jobs import (
    MAX_NAME,
    SlurmJob,
    job_facts,
    parse_scontrol,
    parse_slurm_cgroup,
)

# what slurmd's cgroup plugins write (slurm.schedmd.com/cgroups.html, cgroup_v2.html)
FLAGGED = {
    "v1 task": ("4:memory:/slurm/uid_1000/job_12345/step_0/task_0\n0::/\n", SlurmJob(12345, "0", 1000)),
    "v1 batch": ("7:devices:/slurm/uid_1001/job_7/step_batch\n", SlurmJob(7, "batch", 1001)),
    "v1 several slurmd": (
        "3:cpuset:/slurm_node03/uid_5/job_9/step_extern/task_0\n",
        SlurmJob(9, "extern", 5),
    ),
    "v1 job level": ("4:memory:/slurm/uid_1000/job_12/\n", SlurmJob(12, None, 1000)),
    "v2 task": ("0::/system.slice/slurmstepd.scope/job_12345/step_0/user/task_0\n", SlurmJob(12345, "0")),
    "v2 stepd": (
        "0::/system.slice/slurmstepd.scope/job_3/step_interactive/slurm\n",
        SlurmJob(3, "interactive"),
    ),
    "v2 several slurmd": (
        "0::/system.slice/n1_slurmstepd.scope/job_44/step_1/user/task_2\n",
        SlurmJob(44, "1"),
    ),
}
NOT_FLAGGED = {
    "a login shell": "0::/user.slice/user-1000.slice/session-3.scope\n",
    "slurmd itself": "0::/system.slice/slurmd.service\n",
    "a docker container": "0::/system.slice/docker-" + "a" * 64 + ".scope\n",
    "a user's own job_ dir": "0::/user.slice/user-1000.slice/job_5/step_0\n",
    "no parent": "0::/job_5/step_0\n",
    "v1 uid without slurm root": "4:memory:/other/uid_1000/job_5\n",
    "garbage": "not a cgroup file",
    # a user's own cgroups (systemd delegates user@.service's subtree) named like slurmd's
    "user-made v2 look-alike": "0::/user.slice/user-1000.slice/user@1000.service/app.slice/"
    "slurmstepd.scope/job_5/step_0/user/task_0\n",
    "user-made v1 look-alike": "4:memory:/user.slice/slurm/uid_1000/job_5/step_0\n",
    "job below a step": "0::/system.slice/slurmstepd.scope/x/job_5\n",
}


@pytest.mark.parametrize("layout", sorted(FLAGGED))
def test_job_step_and_uid_from_each_layout(layout):
    text, job = FLAGGED[layout]
    assert parse_slurm_cgroup(text) == job


@pytest.mark.parametrize("layout", sorted(NOT_FLAGGED))
def test_paths_that_are_no_slurm_job(layout):
    assert parse_slurm_cgroup(NOT_FLAGGED[layout]) is None


def test_the_controller_that_says_most_wins():
    # v1: only some controllers are Slurm's; the one with the step (and uid) is kept
    text = "9:name=systemd:/system.slice/slurmd.service\n4:memory:/slurm/uid_1000/job_8\n6:devices:/slurm/uid_1000/job_8/step_2\n"
    assert parse_slurm_cgroup(text) == SlurmJob(8, "2", 1000)


def test_label_text_and_cancel_command():
    job = SlurmJob(12345, "0", 1000, user="alice", name="train-llama")
    assert job.label == "12345 · alice · train-llama"
    assert job.text == "slurm job 12345 · alice · train-llama (step 0)"
    assert job.cancel_command == "scancel 12345"
    assert SlurmJob(5).label == "5" and SlurmJob(5).text == "slurm job 5"


SCONTROL = (
    "JobId=12345 JobName=train llama 7b UserId=alice(1000) GroupId=alice(1000) MCS_label=N/A "
    "Priority=4294901759 Nice=0 Account=(null) QOS=normal JobState=RUNNING Reason=None "
    "Partition=gpu AllocNode:Sid=login1:4242 TRES=cpu=8,mem=64G,node=1,gres/gpu=2 Socks/Node=*\n"
)


def test_scontrol_oneliner_with_spaces_in_the_name():
    fields = parse_scontrol(SCONTROL)
    assert fields["JobId"] == "12345" and fields["JobState"] == "RUNNING"
    assert fields["TRES"] == "cpu=8,mem=64G,node=1,gres/gpu=2"
    assert job_facts(fields, 12345) == ("alice", "train llama 7b")
    assert job_facts(fields, 999) == (None, None)  # another job's answer is not this one's


def test_scontrol_errors_and_empty_answers_name_nothing():
    assert parse_scontrol("") == {}
    assert job_facts(parse_scontrol("slurm_load_jobs error: Invalid job id specified\n"), 5) == (None, None)
    fields = parse_scontrol("JobId=5 JobName=(null) UserId=bob(1002)")
    assert job_facts(fields, 5) == ("bob", None)
    long = parse_scontrol(f"JobId=5 JobName={'x' * 5000} UserId=bob(1002)")
    assert len(job_facts(long, 5)[1]) == MAX_NAME


@given(st.text(max_size=400))
def test_scontrol_parser_never_raises(text):
    fields = parse_scontrol(text)
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in fields.items())
    user, name = job_facts(fields, 1)
    assert user is None or len(user) <= MAX_NAME


@given(
    st.dictionaries(
        st.from_regex(r"[A-Z][a-zA-Z]{0,8}", fullmatch=True),
        st.from_regex(r"[a-z0-9,()]{1,12}", fullmatch=True),
        max_size=8,
    )
)
def test_scontrol_pairs_read_back(pairs):
    text = " ".join(f"{k}={v}" for k, v in pairs.items())
    assert parse_scontrol(text) == pairs


@given(st.lists(st.text(alphabet="abcjobstepuid_/0123456789slurmd.:", max_size=60), max_size=5))
def test_cgroup_parser_never_raises(lines):
    job = parse_slurm_cgroup("\n".join(lines))
    assert job is None or job.job_id >= 0
