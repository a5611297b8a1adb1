"""Ghosts, and a monitor that cannot see the host's PIDs.

Ghost: the driver lists a PID that has no /proc entry while this monitor
sees every host PID (``GHOST`` visibility, sources/machine/processes.py). The
memory is real -- something still holds the device open (a child that
inherited the file descriptors, a process in another container whose PID
the driver reports wrongly) -- and ``fuser -v /dev/nvidia*`` or
``lsof /dev/nvidia*`` name it (NVIDIA's nvidia-smi documentation suggests
the same before ``--gpu-reset``). Processes this monitor found holding
/dev/nvidia* without being listed are given as evidence.

In a container: NVML reports host PIDs, so when this monitor runs in its
own PID namespace every listed process is "not visible". That is said once,
with the fix (``--pid=host``; Kubernetes ``hostPID: true``), instead of one
puzzle per process.
"""

from __future__ import annotations

from vramscope.core.detectors.alert import WARNING, Alert, AlertKind, machine_notice
from vramscope.core.detectors.settings import DiagnosticSettings
from vramscope.core.samples import GHOST, NOT_VISIBLE, Frame
from vramscope.core.units import fmt_bytes

GHOST_FIX = (
    "Find what really holds the device: `sudo fuser -v /dev/nvidia*` or "
    "`sudo lsof /dev/nvidia*` lists every process with the GPU open (inside "
    "containers too); end that process. If none is left, the last resort is "
    "resetting the GPU with nothing running on it (`sudo nvidia-smi --gpu-reset "
    "-i {gpu}`) or rebooting."
)

IN_CONTAINER_FIX = (
    "Give vramscope the host's PID namespace: `docker run --pid=host ...` "
    "(podman: `--pid=host`; Kubernetes: `hostPID: true` in the pod spec), "
    "or run it on the host."
)


class GhostRule:
    def update(self, frame: Frame, settings: DiagnosticSettings) -> list[Alert]:
        alerts = []
        holders = [
            f"pid {h.info.pid} ({h.info.command or 'command not readable'}) holds {', '.join(h.devices)}"
            for h in frame.device_holders
        ]
        for gpu, proc in frame.all_processes():
            info = proc.info
            if info is None or info.visibility != GHOST:
                continue
            mem = fmt_bytes(proc.used) if proc.used is not None else "an unknown amount of memory"
            evidence = [
                f"NVML lists pid {proc.pid} on {gpu.label} with {mem}",
                f"/proc/{proc.pid} does not exist, and this monitor sees the host's PIDs",
            ]
            if info.command:
                evidence.append(f"it was: {info.command} (user {info.user or 'n/a'})")
            if holders:
                evidence.append(
                    "processes holding /dev/nvidia* that NVML does not list: " + "; ".join(holders)
                )
            alerts.append(
                Alert(
                    kind=AlertKind.GHOST,
                    severity=WARNING,
                    gpu=gpu.index,
                    pid=proc.pid,
                    start_time=proc.identity[1],
                    since=None,
                    message=(
                        f"The driver still holds {mem} on {gpu.label} for a process "
                        f"that no longer exists (pid {proc.pid})"
                    ),
                    evidence=tuple(evidence),
                    fix=GHOST_FIX.format(gpu=gpu.index),
                    frees=proc.used,
                    data={"used": proc.used, "holders": [h.info.pid for h in frame.device_holders]},
                )
            )
        return alerts


class InContainerRule:
    def update(self, frame: Frame, settings: DiagnosticSettings) -> list[Alert]:
        if frame.host_pids is not False:
            return []
        hidden = [
            (gpu, p)
            for gpu, p in frame.all_processes()
            if p.info is not None and p.info.visibility == NOT_VISIBLE
        ]
        if not hidden:
            return []
        total = sum(p.used for _g, p in hidden if p.used is not None)
        pids = sorted({p.pid for _g, p in hidden})
        return [
            machine_notice(
                AlertKind.IN_CONTAINER,
                message=(
                    "vramscope runs inside a container without the host's PID namespace: "
                    f"{len(pids)} process(es) on the GPU ({fmt_bytes(total)}) cannot be named"
                ),
                evidence=(
                    f"NVML reports host PIDs ({', '.join(map(str, pids[:8]))}"
                    f"{', ...' if len(pids) > 8 else ''}) that do not exist in this PID namespace",
                ),
                fix=IN_CONTAINER_FIX,
                data={"pids": pids, "total": total},
            )
        ]
