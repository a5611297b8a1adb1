"""End process refuses kernel threads and system accounts, even as root, and
under sudo acts for the user who ran sudo -- not for root's daemons."""

from __future__ import annotations

import os
import subprocess
import sys

import psutil
import pytest

from vramscope.core.end_process.actions import ProcessActions
from vramscope.core.end_process.process_owner import acting_uid, is_kernel_thread, uid_min

from .conftest import SLEEPER

REGULAR_UID = 4242  # a regular user id (>= UID_MIN) with no account: enough for a process


def _kernel_thread():
    for pid in psutil.pids():
        if pid > 2 and is_kernel_thread(pid):
            return psutil.Process(pid)
    return None


def test_kernel_threads_are_refused_even_when_they_look_like_ours(tmp_path):
    kthread = _kernel_thread()
    if kthread is None:
        pytest.skip("no kernel thread visible from this PID namespace")
    uid = kthread.uids().real
    # as if vramscope ran as the kernel thread's owner (root) with no system accounts
    actions = ProcessActions(audit_path=tmp_path / "audit.jsonl", owner_uid=uid, first_user_uid=0)
    for pid, proc in ((2, psutil.Process(2)), (kthread.pid, kthread)):
        result = actions.terminate(pid, proc.create_time())
        assert not result.ok and "kernel thread" in result.message
        assert actions.describe(pid, proc.create_time()).refusal.startswith(f"pid {pid} is a kernel")


def test_system_accounts_are_refused_even_for_their_owner(start_child, tmp_path):
    """vramscope running as root (or any uid below UID_MIN) ends none of that
    account's processes: they are the system's."""
    child, start = start_child()
    me = psutil.Process(child.pid).uids().real
    actions = ProcessActions(audit_path=tmp_path / "audit.jsonl", owner_uid=me, first_user_uid=me + 1)
    result = actions.terminate(child.pid, start)
    assert not result.ok and "system account" in result.message and "even when" in result.message
    assert child.poll() is None  # untouched


def test_uid_min_comes_from_login_defs(tmp_path, monkeypatch):
    monkeypatch.delenv("VRAMSCOPE_UID_MIN", raising=False)
    defs = tmp_path / "login.defs"
    defs.write_text("# comment\nSYS_UID_MIN 100\nUID_MIN\t\t 500\nUID_MAX 60000\n")
    assert uid_min(str(defs)) == 500
    assert uid_min(str(tmp_path / "missing")) == 1000
    monkeypatch.setenv("VRAMSCOPE_UID_MIN", "0")  # a container where everything is root's
    assert uid_min(str(defs)) == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root (sudo) to start a process of another uid")
def test_under_sudo_own_means_the_user_who_ran_sudo(tmp_path, monkeypatch):
    monkeypatch.setenv("SUDO_UID", str(REGULAR_UID))
    assert acting_uid() == REGULAR_UID
    actions = ProcessActions(audit_path=tmp_path / "audit.jsonl", first_user_uid=1000)
    roots = subprocess.Popen([sys.executable, "-c", SLEEPER], stdout=subprocess.PIPE, text=True)
    users = subprocess.Popen(
        ["/bin/sh", "-c", "echo ready; exec sleep 120"],
        stdout=subprocess.PIPE,
        text=True,
        user=REGULAR_UID,
        cwd="/",
    )
    try:
        for p in (roots, users):
            assert p.stdout.readline().strip() == "ready"
        refused = actions.terminate(roots.pid, psutil.Process(roots.pid).create_time())
        assert not refused.ok and "system account" in refused.message
        ended = actions.terminate(users.pid, psutil.Process(users.pid).create_time())
        assert ended.ok, ended.message
        assert users.wait(timeout=10) == -15
        assert roots.poll() is None
    finally:
        for p in (roots, users):
            if p.poll() is None:
                p.kill()
            p.wait(timeout=10)


@pytest.mark.parametrize(
    "pid, start",
    [
        (2**31, 1.0),
        (2**63, 1.0),
        (-5, 1.0),
        (True, 1.0),
        (4242, float("nan")),
        (4242, float("inf")),
        (4242, -1.0),
    ],
)
def test_a_pid_past_pid_t_or_a_start_time_that_is_no_time_is_refused_in_one_line(tmp_path, pid, start):
    actions = ProcessActions(audit_path=tmp_path / "audit.jsonl")
    result = actions.terminate(pid, start)
    assert not result.ok and result.message.endswith("refusing")
    assert not actions.kill(pid, start).ok
    summary = actions.describe(pid, start)
    assert summary.refusal and not summary.own
    assert actions.is_alive(pid, start) is False
