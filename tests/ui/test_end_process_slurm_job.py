"""Ending a process of a Slurm job from the window: the confirmation says which
job it belongs to and offers `scancel` to copy, which vramscope never runs."""

from __future__ import annotations

import os

from containers.cgroup_staging import staged  # noqa: F401 (a fixture)
from PySide6.QtGui import QGuiApplication

from vramscope.core.end_process.actions import ProcessActions
from vramscope.ui.end_process.end_process_dialog import EndProcessDialog


def test_the_confirmation_names_the_job_and_offers_scancel(qtbot, staged, tmp_path, monkeypatch):  # noqa: F811
    stand_in = tmp_path / "bin"
    stand_in.mkdir()
    (stand_in / "scancel").write_text(f"#!/bin/sh\ntouch {tmp_path}/scancel-ran\n")
    (stand_in / "scancel").chmod(0o755)
    monkeypatch.setenv("PATH", f"{stand_in}:{os.environ['PATH']}")
    jid = 880_000 + os.getpid() % 100_000
    env = {"SLURM_JOB_ID": str(jid), "SLURM_JOB_NAME": "train-llama", "SLURM_JOB_USER": "alice"}
    pid = staged(f"system.slice/slurmstepd.scope/job_{jid}/step_0/user/task_0", 2, env)
    actions = ProcessActions(audit_path=tmp_path / "audit.jsonl")
    import psutil

    summary = actions.describe(pid, psutil.Process(pid).create_time(), memory=1 << 30)
    assert summary.cancel_command == f"scancel {jid}"
    assert f"Slurm job {jid} · alice · train-llama" in summary.scheduler
    dialog = EndProcessDialog(summary)
    qtbot.addWidget(dialog)
    dialog.show()
    assert f"`scancel {jid}` ends the whole job" in dialog.scheduler.text()
    dialog.copy_cancel_button.click()
    assert QGuiApplication.clipboard().text() == f"scancel {jid}"
    dialog.confirm_button.click()  # the dialog accepts; the caller sends SIGTERM to the process alone
    result = actions.terminate(pid, summary.start_time, summary.memory)
    assert result.ok and not (tmp_path / "scancel-ran").exists()


def test_a_process_outside_any_job_offers_nothing(qtbot, sleepers, tmp_path):
    import psutil

    (pid,) = sleepers(1)
    summary = ProcessActions(audit_path=tmp_path / "a.jsonl").describe(pid, psutil.Process(pid).create_time())
    assert summary.scheduler is None and summary.cancel_command is None
    dialog = EndProcessDialog(summary)
    qtbot.addWidget(dialog)
    assert dialog.scheduler is None and dialog.copy_cancel_button is None
