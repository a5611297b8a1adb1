"""A process's Slurm job, read on the node: its cgroup names the job (no root
needed: /proc/<pid>/cgroup is readable by everyone), and its name and user
come from what is readable here:

- the process's environment (``SLURM_JOB_ID``, ``SLURM_JOB_NAME``,
  ``SLURM_JOB_USER``: set by slurmstepd in every task, sbatch(1)), readable
  for one's own processes or as root;
- ``scontrol show job --oneliner <id>`` (any user may ask the controller
  about any job unless ``PrivateData=jobs`` is set), asked once per job, at
  most ``timeout`` seconds and 64 KiB each, within a time budget per window
  (core/flow/time_budget.py) so a slow controller never stalls a pass; a missing
  or failing ``scontrol`` is left alone for ``retry_after`` seconds;
- the uid of a cgroup v1 path (``uid_<n>``), through the password database.
"""

from __future__ import annotations

import dataclasses
import logging
import pwd
import time

from vramscope.core.processes.slurm_jobs import (
    SlurmJob,
    job_facts,
    named_from_environ,
    parse_scontrol,
    parse_slurm_cgroup,
)
from vramscope.core.flow.time_budget import TimeBudget
from vramscope.sources.machine.bounded_command import CommandFailed, CommandRefused, run_bounded
from vramscope.sources.machine.proc_environ import read_environ

log = logging.getLogger(__name__)

SCONTROL = "scontrol"
MAX_ANSWER = 1 << 16  # bytes of one scontrol answer (one job's line is ~1-2 KiB)


class SlurmJobs:
    """Jobs by id, their names asked once; ``scontrol``: the command (a path or a
    name on PATH)."""

    def __init__(
        self,
        scontrol: str = SCONTROL,
        timeout: float = 1.0,
        retry_after: float = 60.0,
        budget: float = 1.0,
        budget_window: float = 10.0,
        clock=time.monotonic,
    ):
        self.scontrol, self.timeout = scontrol, timeout
        self._clock = clock
        self._budget = TimeBudget(budget, budget_window, retry_after, clock)
        self._facts: dict[int, tuple[str | None, str | None]] = {}  # job id -> (user, name)
        self.asked = 0  # scontrol runs, for tests

    def job(self, pid: int, cgroup_text: str | None, proc_root: str) -> SlurmJob | None:
        """The job of a process whose /proc/<pid>/cgroup reads ``cgroup_text``."""
        job = parse_slurm_cgroup(cgroup_text) if cgroup_text else None
        if job is None:
            return None
        user, name = self._facts.get(job.job_id, (None, None))
        if name is None:
            named = named_from_environ(job, read_environ(pid, proc_root))
            user, name = named.user or user, named.name
        if name is None and job.job_id not in self._facts:
            asked = self._ask(job.job_id)
            if asked is not None:
                user, name = asked[0] or user, asked[1]
        if name is not None or job.job_id in self._facts:
            self._facts[job.job_id] = (user, name)
        return dataclasses.replace(job, user=user or _user_of(job.uid), name=name)

    def _ask(self, job_id: int) -> tuple[str | None, str | None] | None:
        """(user, name) from scontrol; None where it was not asked or failed (asked
        again later), (None, None) where it answered without them."""
        if self._budget.is_down(self.scontrol) or not self._budget.allows():
            return None
        now = self._clock()
        self.asked += 1
        try:
            text = run_bounded(
                [self.scontrol, "show", "job", "--oneliner", str(job_id)], self.timeout, MAX_ANSWER
            )
        except CommandRefused:  # a job the controller no longer knows: no name, and no retry
            text = ""
        except CommandFailed as exc:
            log.debug("scontrol: %s", exc)
            self._budget.down(self.scontrol)
            return None
        finally:
            self._budget.spend(now)
        facts = job_facts(parse_scontrol(text), job_id)
        self._facts[job_id] = facts
        return facts


def _user_of(uid: int | None) -> str | None:
    if uid is None:
        return None
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return None
