"""Ending processes for real: own processes only, identity re-checked, SIGTERM
then SIGKILL on request, read-only refusal, and the audit log."""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import sys
import time

import psutil
import pytest

from vramscope.core.end_process.actions import EndProcess, ProcessActions
from vramscope.core.end_process.audit_log import read_audit_log

from .conftest import STUBBORN


@pytest.fixture
def audit(tmp_path):
    return tmp_path / "logs" / "actions.jsonl"


def test_terminate_really_ends_own_process_and_is_logged(start_child, audit):
    child, start = start_child()
    actions = ProcessActions(audit_path=audit)
    summary = actions.describe(child.pid, start, memory=3 << 30)
    assert summary.own and summary.refusal is None
    assert "time.sleep(120)" in summary.command and summary.age_seconds < 60
    result = actions.terminate(child.pid, start, memory=3 << 30)
    assert result.ok, result.message
    assert child.wait(timeout=10) == -15  # SIGTERM
    assert not actions.is_alive(child.pid, start)
    [entry] = read_audit_log(audit)
    assert entry["action"] == "SIGTERM" and entry["outcome"] == "sent"
    assert entry["pid"] == child.pid and entry["memory_bytes"] == 3 << 30
    assert stat.S_IMODE(os.stat(audit).st_mode) == 0o600


def test_refuses_a_pid_whose_start_time_no_longer_matches(start_child, audit):
    child, start = start_child()
    actions = ProcessActions(audit_path=audit)
    result = actions.terminate(child.pid, start - 100.0)  # the process we "saw" was another
    assert not result.ok and "PID was reused" in result.message
    time.sleep(0.2)
    assert child.poll() is None  # untouched
    assert read_audit_log(audit)[-1]["outcome"] == "refused"


def test_sigkill_only_after_sigterm_and_the_grace_period(start_child, audit):
    child, start = start_child(STUBBORN)
    actions = ProcessActions(audit_path=audit, grace_seconds=0.5)
    refused = actions.kill(child.pid, start)
    assert not refused.ok and "SIGTERM" in refused.message
    assert actions.terminate(child.pid, start).ok
    assert not actions.wait_gone(child.pid, start, 0.6)  # it ignores SIGTERM
    assert actions.kill_allowed_in(child.pid, start) == 0.0
    result = actions.kill(child.pid, start)
    assert result.ok, result.message
    assert child.wait(timeout=10) == -9
    assert [e["action"] for e in read_audit_log(audit)] == ["SIGKILL", "SIGTERM", "SIGKILL"]
    assert [e["outcome"] for e in read_audit_log(audit)] == ["refused", "sent", "sent"]


def test_end_process_sequence_term_grace_then_kill_without_qt(start_child, audit):
    """The steps the window's confirmation dialogs walk through, Qt-free."""
    child, start = start_child(STUBBORN)
    request = EndProcess(
        ProcessActions(audit_path=audit, grace_seconds=0.3), child.pid, start, memory=1 << 30
    )
    assert request.describe().own and request.check_after_ms == 400
    assert request.terminate().ok
    time.sleep(request.check_after_ms / 1000)
    assert request.running()  # it ignores SIGTERM: the window offers SIGKILL now
    assert request.kill().ok
    assert child.wait(timeout=10) == -9
    assert not request.running()
    assert request.ended_text.startswith(f"pid {child.pid} has exited")


def test_read_only_mode_refuses(start_child, audit):
    child, start = start_child()
    actions = ProcessActions(read_only=True, audit_path=audit)
    result = actions.terminate(child.pid, start)
    assert not result.ok and "read-only" in result.message
    assert actions.describe(child.pid, start).refusal.startswith("vramscope runs read-only")
    time.sleep(0.2)
    assert child.poll() is None
    [entry] = read_audit_log(audit)
    assert entry["outcome"] == "refused" and entry["read_only"] is True


def test_refuses_an_exited_process_and_init(audit):
    actions = ProcessActions(audit_path=audit)
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    start = psutil.Process(p.pid).create_time() if psutil.pid_exists(p.pid) else 0.0
    p.wait()
    assert not actions.terminate(p.pid, start).ok
    assert not actions.terminate(1, None).ok


TEST_USER = "vramscope-test"


@pytest.fixture
def other_user():
    if os.geteuid() != 0 or not shutil.which("useradd"):
        pytest.skip("needs root to create a second user and start a process as it")
    created = False
    try:
        pwd.getpwnam(TEST_USER)
    except KeyError:
        r = subprocess.run(
            ["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", TEST_USER],
            capture_output=True,
            text=True,
        )
        if r.returncode != 0:
            pytest.skip(f"useradd failed: {r.stderr.strip()}")
        created = True
    yield TEST_USER
    if created:
        subprocess.run(["userdel", TEST_USER], capture_output=True)


def test_refuses_another_users_process(audit, other_user):
    # a plain system binary: the other user may not be allowed into this venv's path
    child = subprocess.Popen([shutil.which("sleep"), "120"], user=other_user)
    try:
        _check_refused_for_other_user(child, audit, other_user)
    finally:
        child.kill()
        child.wait(timeout=10)


def _check_refused_for_other_user(child, audit, other_user):
    start = psutil.Process(child.pid).create_time()
    actions = ProcessActions(audit_path=audit)
    summary = actions.describe(child.pid, start)
    assert summary.user == other_user and not summary.own
    result = actions.terminate(child.pid, start)
    assert not result.ok
    assert f"belongs to user {other_user}" in result.message and "only ends your own" in result.message
    time.sleep(0.2)
    assert child.poll() is None
    assert read_audit_log(audit)[-1]["user"] == other_user
