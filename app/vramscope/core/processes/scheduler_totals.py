"""Device memory per Slurm job and per Kubernetes pod: the scheduler's units
beside the per-user totals (core/processes/user_totals.py counts them the same way).

A job's processes are those whose cgroup names the job (``ProcessInfo.slurm``);
a pod's, those whose container names the pod (``Container.pod`` and
``namespace`` where the runtime said them, its UID where only the cgroup path
did). Processes outside any job or pod are not counted here.
"""

from __future__ import annotations

from dataclasses import dataclass

from vramscope.core.processes.containers import pod_label, stop_command
from vramscope.core.processes.owner_labels import POD, SLURM_JOB
from vramscope.core.processes.process_columns import info_values
from vramscope.core.samples import Container, Frame
from vramscope.core.processes.slurm_jobs import SlurmJob
from vramscope.core.processes.user_totals import sums_by


@dataclass(frozen=True, slots=True)
class OwnerTotal:
    """One job's or pod's memory: ``kind`` SLURM_JOB or POD (the exporter's label
    words, core/processes/owner_labels.py), ``key`` its id
    ('12345'; 'ml-team/trainer-7f9c', or the pod UID where no name is known)."""

    kind: str
    key: str
    label: str  # '12345 · alice · train-llama'; 'ml-team/trainer-7f9c'
    used: int | None  # bytes over every GPU; None: no process of it had a figure
    per_gpu: tuple[tuple[int, int], ...]
    processes: int
    unreported: int = 0
    stop: str | None = None  # the command that ends it all ('scancel 12345'), run by the user

    def as_dict(self) -> dict:
        return {
            "key": self.key,
            "label": self.label,
            "used": self.used,
            "gpus": [{"gpu": g, "used": b} for g, b in self.per_gpu],
            "processes": self.processes,
            "unreported": self.unreported,
            "stop": self.stop,
        }


def job_totals(frame: Frame | None) -> list[OwnerTotal]:
    """One entry per Slurm job on the frame's GPUs, the biggest first."""
    seen: dict[int, SlurmJob] = {}

    def keys(procs):
        for job in info_values(procs, "slurm"):
            if job is None:
                yield None
                continue
            known = seen.get(job.job_id)
            if known is None or (known.name is None and job.name is not None):
                seen[job.job_id] = job
            yield job.job_id

    sums = sums_by(frame, keys, skip_none=True)
    return _sorted(
        OwnerTotal(SLURM_JOB, str(k), seen[k].label, *v, stop=seen[k].cancel_command) for k, v in sums.items()
    )


def pod_totals(frame: Frame | None) -> list[OwnerTotal]:
    """One entry per Kubernetes pod on the frame's GPUs, the biggest first."""
    seen: dict[str, Container] = {}

    def keys(procs):
        for container in info_values(procs, "container"):
            key = _pod_key(container)
            if key is not None:
                seen.setdefault(key, container)
            yield key

    sums = sums_by(frame, keys, skip_none=True)
    return _sorted(
        OwnerTotal(POD, k, pod_label(seen[k]), *v, stop=stop_command(seen[k])) for k, v in sums.items()
    )


def _pod_key(container: Container | None) -> str | None:
    if container is None:
        return None
    if container.pod is not None:
        return pod_label(container)
    return container.pod_uid


def _sorted(totals) -> list[OwnerTotal]:
    return sorted(totals, key=lambda t: (-(t.used or 0), t.key))
