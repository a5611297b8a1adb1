"""Ending a process, safely (no Qt).

Rules (DESIGN.md, "Safety"): only the user's own processes -- never a
kernel thread, never a system account's (uid below UID_MIN of
/etc/login.defs), even when vramscope runs as root; under sudo "own" means
the user who ran sudo (SUDO_UID), not root; the identity
(pid + start time) re-checked with psutil right before the signal -- on
Linux through a pidfd, so the signal cannot reach a process that took the
PID in between; SIGTERM first, SIGKILL only on request once a grace period
has passed; refused, with a clear message, for another user's process and
in read-only mode; every action and refusal appended to a local audit log
(JSON lines, 0600). For a Jupyter kernel the connection file comes back so
the UI can offer shutting it down from Jupyter instead. The checks made
before each signal are core/end_process/process_checks.py's.
"""

from __future__ import annotations

import getpass
import os
import pathlib
import signal
import time
from dataclasses import dataclass

import psutil

from vramscope.core.detectors.jupyter import connection_file, is_jupyter_kernel
from vramscope.core.end_process.audit_log import append_json_line, default_audit_path
from vramscope.core.end_process.process_checks import (  # the checks' names, read through here too
    PID_MAX,
    READ_ONLY_REFUSAL,
    is_own,
    not_own_message,
    request_problem,
    safe,
    same_start,
    verify,
)
from vramscope.core.end_process.process_owner import acting_uid, uid_min
from vramscope.core.processes.slurm_jobs import SlurmJob, named_from_environ, parse_slurm_cgroup

DEFAULT_GRACE_SECONDS = 5.0
SIGKILL = getattr(signal, "SIGKILL", signal.SIGTERM)


@dataclass(frozen=True, slots=True)
class ProcessSummary:
    """What the confirmation dialog shows; ``refusal`` says why it cannot be ended."""

    pid: int
    start_time: float | None
    user: str | None
    command: str | None
    age_seconds: float | None
    memory: int | None  # bytes on the GPU(s), as the caller saw them
    own: bool
    refusal: str | None
    connection_file: str | None  # set for a Jupyter kernel
    host: str | None = None  # the machine it runs on, when not this one (--host)
    # a process in a Slurm job: which job, and the command that ends it all (offered, not run)
    scheduler: str | None = None
    cancel_command: str | None = None

    @classmethod
    def refused(cls, pid: int, start_time: float | None, memory: int | None, refusal: str) -> ProcessSummary:
        """A process that cannot be described, let alone ended: only what the caller knew, and why."""
        return cls(
            pid=pid,
            start_time=start_time,
            user=None,
            command=None,
            age_seconds=None,
            memory=memory,
            own=False,
            refusal=refusal,
            connection_file=None,
        )


@dataclass(frozen=True, slots=True)
class ActionResult:
    action: str  # "SIGTERM", "SIGKILL"
    ok: bool  # the signal was sent
    pid: int
    start_time: float | None
    message: str
    connection_file: str | None = None


class ProcessActions:
    def __init__(
        self,
        read_only: bool = False,
        audit_path: str | os.PathLike | None = None,
        grace_seconds: float = DEFAULT_GRACE_SECONDS,
        monotonic=time.monotonic,
        owner_uid: int | None = None,
        first_user_uid: int | None = None,
    ):
        self.read_only = read_only
        # whose processes may be ended, and where system accounts end (see the module text)
        self.owner_uid = acting_uid() if owner_uid is None else owner_uid
        self.first_user_uid = uid_min() if first_user_uid is None else first_user_uid
        self.audit_path = pathlib.Path(audit_path) if audit_path else default_audit_path()
        self.grace_seconds = grace_seconds
        self._mono = monotonic
        self._terminated: dict[tuple[int, float | None], float] = {}
        self.observers: list = []  # called with each audit entry (e.g. the session recorder)

    # -- looking ----------------------------------------------------------------------
    def describe(self, pid: int, start_time: float | None, memory: int | None = None) -> ProcessSummary:
        proc, refusal = self._verify(pid, start_time)
        problem = request_problem(pid, start_time)
        if problem:
            return ProcessSummary.refused(pid, start_time, memory, problem)  # = _verify's refusal
        user = command = conn = None
        age = None
        own = False
        if proc is not None:
            try:
                with proc.oneshot():
                    user = safe(proc.username)
                    cmdline = safe(proc.cmdline)
                    name = safe(proc.name)
                    age = time.time() - proc.create_time()
            except psutil.Error:
                cmdline = name = None
            command = " ".join(cmdline) if cmdline else name
            if cmdline and is_jupyter_kernel(cmdline, name):
                conn = connection_file(cmdline)
            own = is_own(proc, self.owner_uid, self.first_user_uid)
        job = slurm_job_of(proc) if proc is not None else None
        return ProcessSummary(
            pid=pid,
            start_time=start_time,
            user=user,
            command=command,
            age_seconds=age,
            memory=memory,
            own=own,
            refusal=refusal,
            connection_file=conn,
            scheduler=job.cancel_advice if job is not None else None,
            cancel_command=job.cancel_command if job is not None else None,
        )

    def is_alive(self, pid: int, start_time: float | None) -> bool:
        """The same process (pid + start time) still exists and is not a zombie."""
        if request_problem(pid, start_time):
            return False
        try:
            proc = psutil.Process(pid)
            if not same_start(proc.create_time(), start_time):
                return False
            return proc.status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False
        except psutil.AccessDenied:
            return True

    def wait_gone(self, pid: int, start_time: float | None, timeout: float) -> bool:
        deadline = self._mono() + timeout
        while True:
            if not self.is_alive(pid, start_time):
                return True
            if self._mono() >= deadline:
                return False
            time.sleep(0.05)

    def kill_allowed_in(self, pid: int, start_time: float | None) -> float | None:
        """Seconds until SIGKILL may be sent (0 = now); None before any SIGTERM."""
        sent = self._terminated.get((pid, start_time))
        if sent is None:
            return None
        return max(0.0, self.grace_seconds - (self._mono() - sent))

    # -- acting -----------------------------------------------------------------------
    def terminate(self, pid: int, start_time: float | None, memory: int | None = None) -> ActionResult:
        result = self._signal("SIGTERM", signal.SIGTERM, pid, start_time, memory)
        if result.ok:
            self._terminated[(pid, start_time)] = self._mono()
        return result

    def kill(self, pid: int, start_time: float | None, memory: int | None = None) -> ActionResult:
        wait = self.kill_allowed_in(pid, start_time)
        if wait is None or wait > 0:
            msg = (
                f"SIGKILL is offered only after SIGTERM: send SIGTERM to pid {pid} first "
                f"and give it {self.grace_seconds:g} s to exit" + (f" ({wait:.1f} s left)" if wait else "")
            )
            return self._refuse("SIGKILL", pid, start_time, msg, memory)
        return self._signal("SIGKILL", SIGKILL, pid, start_time, memory)

    def _signal(self, action, signum, pid, start_time, memory) -> ActionResult:
        if self.read_only:
            return self._refuse(action, pid, start_time, READ_ONLY_REFUSAL, memory)
        problem = request_problem(pid, start_time)
        if problem:
            return self._refuse(action, pid, start_time, problem, memory)
        pidfd = None
        if hasattr(os, "pidfd_open") and hasattr(signal, "pidfd_send_signal"):
            try:
                pidfd = os.pidfd_open(pid)  # pins this very process before the checks
            except ProcessLookupError:
                return self._refuse(action, pid, start_time, f"pid {pid} has already exited", memory)
            except OSError:
                pidfd = None
        try:
            proc, refusal = self._verify(pid, start_time)
            if refusal is None and not is_own(proc, self.owner_uid, self.first_user_uid):
                refusal = not_own_message(proc, self.owner_uid)
            if refusal is not None:
                return self._refuse(action, pid, start_time, refusal, memory, proc)
            info = _proc_info(proc)
            try:
                if pidfd is not None:
                    signal.pidfd_send_signal(pidfd, signum)
                else:
                    proc.send_signal(signum)  # psutil re-checks the start time itself
            except (ProcessLookupError, psutil.NoSuchProcess):
                return self._refuse(action, pid, start_time, f"pid {pid} has already exited", memory, proc)
            except (PermissionError, psutil.AccessDenied) as exc:
                return self._refuse(
                    action, pid, start_time, f"the system refused to signal pid {pid}: {exc}", memory, proc
                )
        finally:
            if pidfd is not None:
                os.close(pidfd)
        message = f"sent {action} to pid {pid} ({info.get('command') or '?'})"
        if action == "SIGTERM":
            message += f"; if it is still running after {self.grace_seconds:g} s, SIGKILL can be sent"
        note = self._audit(action, "sent", pid, start_time, memory, info, message)
        return ActionResult(
            action=action,
            ok=True,
            pid=pid,
            start_time=start_time,
            message=message + note,
            connection_file=info.get("connection_file"),
        )

    def _refuse(self, action, pid, start_time, message, memory, proc=None) -> ActionResult:
        info = _proc_info(proc) if proc is not None else {}
        note = self._audit(action, "refused", pid, start_time, memory, info, message)
        return ActionResult(
            action=action,
            ok=False,
            pid=pid,
            start_time=start_time,
            message=message + note,
            connection_file=info.get("connection_file"),
        )

    # -- checks (core/end_process/process_checks.py) ---------------------------------
    def _verify(self, pid: int, start_time: float | None):
        """(process, None) when pid + start time name the process the user saw and it
        may be ended, else (process or None, why not)."""
        return verify(
            pid,
            start_time,
            read_only=self.read_only,
            owner_uid=self.owner_uid,
            first_user_uid=self.first_user_uid,
        )

    # -- audit log --------------------------------------------------------------------
    def _audit(self, action, outcome, pid, start_time, memory, info, message) -> str:
        entry = {
            "time": time.time(),
            "action": action,
            "outcome": outcome,
            "pid": pid,
            "start_time": start_time,
            "user": info.get("user"),
            "command": info.get("command"),
            "memory_bytes": memory,
            "read_only": self.read_only,
            "by": getpass.getuser(),
            "message": message,
        }
        for observer in self.observers:
            try:
                observer(entry)
            except Exception:  # noqa: BLE001 - an observer must not block the action
                pass
        try:
            append_json_line(self.audit_path, entry)
        except OSError as exc:
            return f" (audit log not written: {exc})"
        return ""


class EndProcess:
    """One request to end a process, step by step: SIGTERM; after the grace
    period, if the same process (pid + start time) still runs, SIGKILL on
    request. A view only schedules the steps (a timer) and asks the user."""

    def __init__(
        self,
        actions: ProcessActions,
        pid: int,
        start_time: float | None,
        memory: int | None = None,
        grace_seconds: float | None = None,
    ):
        self.actions, self.pid, self.start_time, self.memory = actions, pid, start_time, memory
        self.grace_seconds = actions.grace_seconds if grace_seconds is None else grace_seconds

    @property
    def check_after_ms(self) -> int:
        """When to look again after SIGTERM: a little past the grace period (coarse
        GUI timers may fire a few % early)."""
        return int(1000 * self.grace_seconds) + 100

    def describe(self) -> ProcessSummary:
        return self.actions.describe(self.pid, self.start_time, memory=self.memory)

    def terminate(self) -> ActionResult:
        return self.actions.terminate(self.pid, self.start_time, memory=self.memory)

    def running(self) -> bool:
        return self.actions.is_alive(self.pid, self.start_time)

    def kill(self) -> ActionResult:
        return self.actions.kill(self.pid, self.start_time, memory=self.memory)

    @property
    def ended_text(self) -> str:
        return f"pid {self.pid} has exited; its memory goes back to the GPU."


def slurm_job_of(proc) -> SlurmJob | None:
    """The Slurm job a process runs in (its cgroup), named from its environment where
    readable (SLURM_JOB_NAME: sbatch(1)); None outside a job."""
    try:
        with open(f"/proc/{proc.pid}/cgroup", encoding="utf-8", errors="replace") as f:
            job = parse_slurm_cgroup(f.read(1 << 16))
    except OSError:
        return None
    if job is None:
        return None
    return named_from_environ(job, safe(proc.environ) or {})


def _proc_info(proc) -> dict:
    if proc is None:
        return {}
    cmdline = safe(proc.cmdline)
    name = safe(proc.name)
    info = {"user": safe(proc.username), "command": " ".join(cmdline) if cmdline else name}
    if cmdline and is_jupyter_kernel(cmdline, name):
        info["connection_file"] = connection_file(cmdline)
    return info


__all__ = [
    "PID_MAX",
    "READ_ONLY_REFUSAL",
    "ProcessActions",
    "ProcessSummary",
    "ActionResult",
    "EndProcess",
    "request_problem",
]
