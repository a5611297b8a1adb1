"""Squatters: memory held by something that is not using it.

A crashed Jupyter kernel or a finished run's leftover process may still hold
VRAM: NVML lists it (nvmlDeviceGetComputeRunningProcesses, NVML API
reference) with its memory and, through process utilization samples, 0 % SM.
Four signs:

(a) a process holding >= ``squatter_min_bytes`` with 0 % SM for ``idle_minutes``;
(b) a Jupyter/IPython kernel holding VRAM (idle ``kernel_idle_minutes``);
(c) a process whose parent is gone (re-parented to init / a subreaper) and
    idle, or a zombie;
(d) memory with no visible owner (see unattributed.py).

One alert per process per GPU, naming every sign that applies.
"""

from __future__ import annotations

import time as _time
from collections.abc import Callable
from dataclasses import dataclass, field

from vramscope.core.containers import stop_advice
from vramscope.core.detectors import jupyter
from vramscope.core.detectors.alert import INFO, WARNING, Alert
from vramscope.core.detectors.settings import DiagnosticSettings, forget_stale
from vramscope.core.samples import (
    ACCESS_DENIED, EXITED, GHOST, NOT_VISIBLE, Frame, GpuProcess, GpuSample,
)
from vramscope.core.units import fmt_bytes, fmt_duration

NotebookFinder = Callable[[int, str | None], jupyter.NotebookHint]


@dataclass
class _ProcState:
    first_seen: float
    last_seen: float
    idle_since: float | None = None
    last_active: float | None = None
    notebook: jupyter.NotebookHint | None = None
    extra: dict = field(default_factory=dict)


def _clock(t: float | None) -> str:
    if t is None:
        return "n/a"
    return _time.strftime("%H:%M:%S", _time.localtime(t))


def process_is_idle(proc: GpuProcess, gpu: GpuSample, settings: DiagnosticSettings,
                    active_pids: frozenset[int] = frozenset()) -> bool | None:
    """True/False, or None when nothing says (no per-process SM and a busy GPU)."""
    if proc.pid in active_pids:  # the agent reported optimizer steps this frame
        return False
    if proc.sm is not None:
        return proc.sm <= settings.idle_sm_percent
    if any(p.sm is not None for p in gpu.processes):
        # NVML returns utilization samples only for processes that ran in the
        # window; when others on this GPU have figures, no sample means no SM work.
        return True
    if gpu.util_gpu is not None and gpu.util_gpu <= settings.idle_sm_percent:
        return True  # the whole GPU did nothing, so neither did this process
    return None


class SquatterRule:
    def __init__(self, notebook_finder: NotebookFinder | None = None):
        self._finder = notebook_finder or jupyter.default_notebook_finder
        self._state: dict[tuple, _ProcState] = {}

    def update(self, frame: Frame, settings: DiagnosticSettings,
               active_pids: frozenset[int] = frozenset()) -> list[Alert]:
        now = frame.time
        alerts = []
        for gpu, proc in frame.all_processes():
            if proc.info is not None and proc.info.visibility in (NOT_VISIBLE, ACCESS_DENIED, GHOST):
                continue  # nothing is known of it here: the unattributed / ghost rules report it
            key = (gpu.index, proc.identity)
            st = self._state.get(key)
            if st is None:
                st = self._state[key] = _ProcState(first_seen=now, last_seen=now)
            st.last_seen = now
            idle = process_is_idle(proc, gpu, settings, active_pids)
            if idle:
                if st.idle_since is None:
                    st.idle_since = now
            else:  # busy, or not known to be idle: the idle clock restarts
                st.idle_since = None
                if idle is False:
                    st.last_active = now
            alert = self._judge(gpu, proc, st, now, settings)
            if alert is not None:
                alerts.append(alert)
        forget_stale(self._state, now, settings)
        return alerts

    def _judge(self, gpu: GpuSample, proc: GpuProcess, st: _ProcState, now: float,
               settings: DiagnosticSettings) -> Alert | None:
        info = proc.info
        used = proc.used
        idle_for = (now - st.idle_since) if st.idle_since is not None else None
        holds_some = used is None or used > 0
        cmdline = info.cmdline if info is not None else None
        name = info.name if info is not None else None

        is_kernel = holds_some and jupyter.is_jupyter_kernel(cmdline, name)
        zombie = info is not None and (info.status == "zombie" or info.visibility == EXITED)
        orphan = info is not None and info.parent_alive is False and not zombie
        big = used is not None and used >= settings.squatter_min_bytes

        reasons = []
        if zombie and holds_some:
            reasons.append("zombie")
        if is_kernel and idle_for is not None and idle_for >= settings.kernel_idle_minutes * 60:
            reasons.append("jupyter_kernel")
        if orphan and big and idle_for is not None and idle_for >= settings.orphan_idle_minutes * 60:
            reasons.append("orphan")
        if big and idle_for is not None and idle_for >= settings.idle_minutes * 60:
            reasons.append("idle")
        if not reasons:
            return None

        who = _describe(proc, is_kernel)
        mem = fmt_bytes(used) if used is not None else "an unknown amount (NVML gave n/a)"
        conn = jupyter.connection_file(cmdline) if is_kernel else None
        evidence = [f"holds {mem} on {gpu.label}" + (f" ({gpu.name})" if gpu.name else "")]
        if st.idle_since is not None:
            evidence.append(f"0 % SM since {_clock(st.idle_since)} (idle {fmt_duration(idle_for)})")
        if st.last_active is not None:
            evidence.append(f"last SM activity at {_clock(st.last_active)} "
                            f"({fmt_duration(now - st.last_active)} ago)")
        else:
            evidence.append(f"no SM activity seen since monitoring began "
                            f"{fmt_duration(now - st.first_seen)} ago")
        if is_kernel:
            evidence.append(f"Jupyter/IPython kernel; connection file: {conn or 'not on its command line'}")
            if settings.lookup_notebooks and gpu.host is None:  # not for another machine's kernel
                if st.notebook is None:
                    try:
                        st.notebook = self._finder(proc.pid, conn)
                    except Exception as exc:  # a lookup must never break the rule
                        st.notebook = jupyter.NotebookHint(None, f"lookup failed: {exc}")
                nb = st.notebook
                evidence.append(f"notebook: {nb.notebook} ({nb.how})" if nb.notebook
                                else f"notebook: not found -- {nb.how}")
        if orphan:
            evidence.append(f"parent process gone: re-parented to pid {info.ppid} "
                            "(init or a subreaper), as after a crash or a closed terminal")
        if zombie:
            evidence.append(f"zombie: it has exited but is still listed holding memory "
                            f"(parent pid {info.ppid if info.ppid is not None else 'n/a'})")
        if info is not None:
            age = (now - info.start_time) if info.start_time is not None else None
            evidence.append(f"user {info.user or 'n/a'}; started {fmt_duration(age)} ago; "
                            f"command: {info.command or 'n/a'}")

        if "zombie" in reasons:
            message = f"{who} has exited but still holds {mem} on {gpu.label}"
            fix = ("A zombie cannot use the GPU: its parent (pid "
                   f"{info.ppid if info and info.ppid is not None else '?'}) has not reaped it. "
                   "End the parent, or wait for the driver to release the memory; "
                   "a previous run may still be holding VRAM.")
        elif "jupyter_kernel" in reasons:
            message = f"{who} holds {mem} on {gpu.label}, idle {fmt_duration(idle_for)}"
            fix = ("A leftover Jupyter kernel keeps every CUDA tensor it created until it exits. "
                   "Shut it down from Jupyter (Kernel > Shut Down in its notebook) so the "
                   "notebook knows, or End process here. If you still need it, `del` the big "
                   "tensors and call torch.cuda.empty_cache() in the notebook to hand the "
                   "cached blocks back.")
        elif "orphan" in reasons:
            message = (f"{who} holds {mem} on {gpu.label}; its parent is gone "
                       f"and it has been idle {fmt_duration(idle_for)}")
            fix = ("Its launcher is gone -- likely a crashed or abandoned previous run that still "
                   "holds VRAM. If its work is done, End process.")
        else:
            message = f"{who} holds {mem} on {gpu.label} with 0 % SM for {fmt_duration(idle_for)}"
            fix = ("A finished or crashed previous run may still be holding VRAM. If it has "
                   "nothing left to do, End process; if it waits on purpose, free its tensors "
                   "(del, then torch.cuda.empty_cache() inside it) or mute this alert.")

        if info is not None and info.container is not None:
            evidence.append(f"runs in {info.container.label}"
                            + (f" as pid {info.ns_pid} there" if info.ns_pid is not None else ""))
            fix = f"{fix} {stop_advice(info.container)}"

        severity = WARNING
        if reasons == ["jupyter_kernel"] and idle_for < settings.idle_minutes * 60:
            severity = INFO  # a kernel between cells; becomes a warning at idle_minutes
        return Alert(
            kind="squatter", severity=severity, gpu=gpu.index, pid=proc.pid,
            start_time=proc.identity.start_time,
            since=st.idle_since if st.idle_since is not None else st.first_seen,
            message=message, evidence=tuple(evidence), fix=fix, frees=used,
            connection_file=conn,
            data={"reasons": reasons, "used": used, "idle_seconds": idle_for,
                  "last_active": st.last_active,
                  "notebook": st.notebook.notebook if st.notebook else None},
        )


def _describe(proc: GpuProcess, is_kernel: bool) -> str:
    info = proc.info
    if is_kernel:
        return f"Jupyter kernel (pid {proc.pid})"
    if info is not None and info.command:
        cmd = info.command
        if len(cmd) > 60:
            cmd = cmd[:57] + "..."
        return f"{cmd} (pid {proc.pid})"
    return f"pid {proc.pid}"
