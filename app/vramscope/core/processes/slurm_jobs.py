"""Which Slurm job a process belongs to: the value, and reading it from text.

Pure parsing, no file access, stdlib only (core/samples.py carries a
``SlurmJob`` on ``ProcessInfo.slurm``; sources/machine/slurm.py reads the files and
asks ``scontrol``). The layouts slurmd's cgroup plugins write:

- cgroup v1 (``task/cgroup``, proctrack/cgroup): ``/slurm/uid_<uid>/job_<id>/
  step_<step>[/task_<n>]`` under each controller, ``/slurm_<node>/...`` when
  several slurmd run on one host (https://slurm.schedmd.com/cgroups.html);
- cgroup v2 (``CgroupPlugin=cgroup/v2``): ``/system.slice/slurmstepd.scope/
  job_<id>/step_<step>/user/task_<n>`` (the step's slurmstepd itself in
  ``.../step_<step>/slurm``), ``<node>_slurmstepd.scope`` with several slurmd
  (https://slurm.schedmd.com/cgroup_v2.html). The path names no user here.

A step is a number, or ``batch`` (the batch script), ``extern`` (processes
adopted by pam_slurm_adopt), ``interactive`` (salloc's shell).
``scontrol show job --oneliner <id>`` answers ``Key=Value`` pairs
(https://slurm.schedmd.com/scontrol.html); its ``JobName`` may hold spaces.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

MAX_NAME = 256  # characters of a job name or user kept (Slurm's own limit is far above a cell)
SEP = " · "


@dataclass(frozen=True, slots=True)
class SlurmJob:
    """A process's Slurm job, as the scheduler names it; what is not known is None."""

    job_id: int
    step: str | None = None  # "0", "batch", "extern", "interactive"; None: not said
    uid: int | None = None  # from a cgroup v1 path (uid_<n>)
    user: str | None = None  # from scontrol (UserId=alice(1000)), SLURM_JOB_USER or the uid
    name: str | None = None  # JobName, from scontrol or SLURM_JOB_NAME where readable

    @property
    def label(self) -> str:
        """'12345 · alice · train-llama' (what is not known is left out)."""
        return SEP.join(x for x in (str(self.job_id), self.user, self.name) if x)

    @property
    def text(self) -> str:
        """The table's words: 'slurm job 12345 · alice · train-llama (step 0)'."""
        step = f" (step {self.step})" if self.step is not None else ""
        return f"slurm job {self.label}{step}"

    @property
    def cancel_command(self) -> str:
        """The command that ends the whole job (offered, never run by vramscope)."""
        return f"scancel {self.job_id}"

    @property
    def cancel_advice(self) -> str:
        """The fix-text and confirmation sentence for a process in this job."""
        return (
            f"It belongs to Slurm job {self.label}: `{self.cancel_command}` ends the whole job "
            "and frees its allocation (run it yourself; ending only this process leaves the job running)."
        )


_JOB = re.compile(r"^job_(\d{1,10})$")
_STEP = re.compile(r"^step_([0-9]{1,10}|batch|extern|interactive)$")
_UID = re.compile(r"^uid_(\d{1,10})$")
_V1_ROOT = re.compile(r"^slurm(?:_[^/]+)?$")
_V2_ROOT = re.compile(r"^(?:[^/]+_)?slurmstepd\.scope$")


def parse_slurm_path(path: str) -> SlurmJob | None:
    """The job in one cgroup path (either layout), or None.

    Only where slurmd puts it: v1's ``slurm`` directory at the hierarchy's root,
    v2's ``slurmstepd.scope`` in ``system.slice`` (or at the root of a cgroup
    namespace) -- both root's. A user may make cgroups of the same names under
    the ``user@.service`` systemd delegates to them; those are no job."""
    parts = [p for p in path.strip().split("/") if p]
    if len(parts) >= 3 and _V1_ROOT.match(parts[0]) and _UID.match(parts[1]):
        at, uid = 2, int(parts[1][4:])
    else:
        at = 2 if parts[:1] == ["system.slice"] else 1
        if len(parts) <= at or not _V2_ROOT.match(parts[at - 1]):
            return None
        uid = None
    m = _JOB.match(parts[at]) if len(parts) > at else None
    if m is None:
        return None
    step = _STEP.match(parts[at + 1]) if at + 1 < len(parts) else None
    return SlurmJob(job_id=int(m.group(1)), step=step.group(1) if step else None, uid=uid)


def parse_slurm_cgroup(text: str) -> SlurmJob | None:
    """The job named by a /proc/<pid>/cgroup text, or None; the line that says
    the most (a step, a uid) wins, so v1 controllers Slurm does not manage do not hide it."""
    best: SlurmJob | None = None
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        found = parse_slurm_path(parts[2])
        if found is not None and (best is None or _says(found) > _says(best)):
            best = found
    return best


def _says(job: SlurmJob) -> int:
    return (job.step is not None) + (job.uid is not None)


# Key=Value pairs: a key is a word of letters (with : and / as in "MinCPUsNode",
# "TRES", "Socks/Node") at the start or after white space
_KEY = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z0-9_:/]*)=")
_USER_ID = re.compile(r"^(.*?)\((\d+)\)$")


def parse_scontrol(text: str) -> dict[str, str]:
    """``scontrol show job --oneliner`` output -> {key: value} (the first job's)."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    keys = list(_KEY.finditer(line))
    out: dict[str, str] = {}
    for m, after in zip(keys, keys[1:] + [None]):
        end = after.start() if after is not None else len(line)
        out.setdefault(m.group(1), line[m.end() : end].strip())
    return out


def cap(text: str | None) -> str | None:
    """A name as kept: at most MAX_NAME characters; '' and '(null)' are no name."""
    if not text or text == "(null)":
        return None
    return text[:MAX_NAME]


def job_facts(fields: dict[str, str], job_id: int) -> tuple[str | None, str | None]:
    """(user, name) from parsed scontrol fields, when they are this job's."""
    if fields.get("JobId") != str(job_id):
        return None, None
    user = fields.get("UserId", "")
    m = _USER_ID.match(user)
    return cap(m.group(1) if m else user), cap(fields.get("JobName"))


def named_from_environ(job: SlurmJob, env: dict[str, str]) -> SlurmJob:
    """The job with the user and name its task's environment gives (slurmstepd sets
    SLURM_JOB_ID, SLURM_JOB_USER, SLURM_JOB_NAME: sbatch(1)), where that is this job's."""
    if env.get("SLURM_JOB_ID") != str(job.job_id):
        return job
    return dataclasses.replace(
        job, user=cap(env.get("SLURM_JOB_USER")) or job.user, name=cap(env.get("SLURM_JOB_NAME")) or job.name
    )
