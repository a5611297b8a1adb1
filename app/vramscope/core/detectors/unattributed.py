"""Squatter sign (d): memory on a GPU without a visible owner.

Either NVML's "used" exceeds the sum of the processes it lists (processes
in another container are often not listed at all), or listed PIDs cannot be
seen from here (another PID namespace, or another user's process whose
details are not readable). Either way the memory cannot be freed from here.
"""

from __future__ import annotations

from vramscope.core.detectors.alert import INFO, Alert, AlertKind
from vramscope.core.detectors.settings import DiagnosticSettings
from vramscope.core.samples import ACCESS_DENIED, NOT_VISIBLE, Frame
from vramscope.core.units import fmt_bytes, fmt_duration


class UnattributedRule:
    def __init__(self):
        self._since: dict[int, float] = {}

    def update(self, frame: Frame, settings: DiagnosticSettings) -> list[Alert]:
        now = frame.time
        alerts = []
        seen = set()
        for gpu in frame.gpus:
            if gpu.used is None or gpu.error or gpu.processes_pending:  # (not read yet: none listed)
                continue
            listed = [p.used for p in gpu.processes]
            unlisted = None
            if all(u is not None for u in listed):
                unlisted = gpu.used - sum(listed)
            # from inside a container every PID is hidden: the in-container notice says so once
            hidden = [
                p
                for p in gpu.processes
                if p.info is not None
                and p.info.visibility == NOT_VISIBLE
                and p.used
                and frame.host_pids is not False
            ]
            other_user = [
                p
                for p in gpu.processes
                if p.info is not None and p.info.visibility == ACCESS_DENIED and p.used
            ]
            hidden_bytes = sum(p.used for p in hidden)
            other_bytes = sum(p.used for p in other_user)
            total = max(0, unlisted or 0) + hidden_bytes + other_bytes
            if total < settings.unattributed_min_bytes:
                continue
            seen.add(gpu.index)
            since = self._since.setdefault(gpu.index, now)
            if now - since < settings.unattributed_minutes * 60:
                continue
            evidence = [
                f"NVML: {fmt_bytes(gpu.used)} used on {gpu.label}"
                + (f" of {fmt_bytes(gpu.total)}" if gpu.total else "")
            ]
            if unlisted is not None:
                evidence.append(
                    f"the {len(listed)} listed process(es) account for "
                    f"{fmt_bytes(sum(listed))}; {fmt_bytes(max(0, unlisted))} "
                    "is not attributed to any listed process"
                )
            if hidden:
                evidence.append(
                    "PIDs not visible from here (another container or PID namespace): "
                    + ", ".join(f"{p.pid} ({fmt_bytes(p.used)})" for p in hidden)
                )
            if other_user:
                evidence.append(
                    "processes whose details are not readable (another user): "
                    + ", ".join(f"{p.pid} ({fmt_bytes(p.used)})" for p in other_user)
                )
            evidence.append(f"for {fmt_duration(now - since)}")
            alerts.append(
                Alert(
                    kind=AlertKind.UNATTRIBUTED_MEMORY,
                    severity=INFO,
                    gpu=gpu.index,
                    pid=None,
                    start_time=None,
                    since=since,
                    message=(
                        f"{fmt_bytes(total)} on {gpu.label} is held by processes in another "
                        "container or of another user"
                    ),
                    evidence=tuple(evidence),
                    fix=(
                        "This memory cannot be freed from here. Look on the host (or as the other "
                        "user) for a crashed Jupyter kernel or a previous run still holding VRAM, "
                        "and ask its owner to end it."
                    ),
                    frees=None,
                    data={
                        "unlisted": unlisted,
                        "hidden_pids": [p.pid for p in hidden],
                        "other_user_pids": [p.pid for p in other_user],
                        "total": total,
                    },
                )
            )
        for index in [i for i in self._since if i not in seen]:
            del self._since[index]
        return alerts
