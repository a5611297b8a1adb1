"""Who a process belongs to, as Prometheus labels: written by the exporter
(core/export/metrics.py) on each per-process series, read back by the fleet reader
(sources/remote/prometheus.py). One definition for both sides.

``pod``, ``namespace`` and ``container`` are the names dcgm-exporter uses for
the same facts (its Kubernetes pod mapping), so one PromQL ``sum by (pod)``
covers both exporters; ``slurm_job`` is the job id. A label that is not known
is the empty string (Prometheus treats it as absent), never a made-up value.
"""

from __future__ import annotations

from vramscope.core.samples import Container, ProcessInfo
from vramscope.core.processes.slurm_jobs import SlurmJob

USER = "user"
CONTAINER_RUNTIME = "container_runtime"
CONTAINER = "container"
POD = "pod"
NAMESPACE = "namespace"
SLURM_JOB = "slurm_job"
SLURM_JOB_NAME = "slurm_job_name"
OWNER_LABELS = (USER, CONTAINER_RUNTIME, CONTAINER, POD, NAMESPACE, SLURM_JOB, SLURM_JOB_NAME)


def owner_values(info: ProcessInfo | None) -> list[str]:
    """The OWNER_LABELS' values for a process ('' where not known)."""
    if info is None:
        return [""] * len(OWNER_LABELS)
    c, job = info.container, info.slurm
    return [
        info.user or "",
        c.runtime if c is not None else "",
        (c.name or c.short_id or "") if c is not None else "",
        (c.pod or "") if c is not None else "",
        (c.namespace or "") if c is not None else "",
        str(job.job_id) if job is not None else "",
        (job.name or "") if job is not None else "",
    ]


def owners_from(labels: dict[str, str]) -> dict:
    """ProcessInfo keyword arguments (user, container, slurm) from a series' labels;
    only what they say. A container named but of no known runtime is a pod's ("cri")."""
    out: dict = {}
    if labels.get(USER):
        out["user"] = labels[USER]
    pod, name = labels.get(POD) or None, labels.get(CONTAINER) or None
    if pod is not None or name is not None:
        runtime = labels.get(CONTAINER_RUNTIME) or "cri"
        out["container"] = Container(
            runtime, None, name=name, pod=pod, namespace=labels.get(NAMESPACE) or None
        )
    job = labels.get(SLURM_JOB, "")
    if job.isdigit() and job.isascii() and len(job) <= 10:
        out["slurm"] = SlurmJob(int(job), name=labels.get(SLURM_JOB_NAME) or None, user=out.get("user"))
    return out
