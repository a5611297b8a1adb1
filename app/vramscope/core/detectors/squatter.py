"""Squatters: memory held by something that is not using it.

A crashed Jupyter kernel or a finished run's leftover process may still hold
VRAM: NVML lists it (nvmlDeviceGetComputeRunningProcesses, NVML API
reference) with its memory and, through process utilization samples, 0 % SM.
Four signs:

(a) a process holding >= ``squatter_min_bytes`` with 0 % SM for ``idle_minutes``;
(b) a Jupyter/IPython kernel holding VRAM (idle ``kernel_idle_minutes``);
(c) a process whose parent exited while it was watched (re-parented to init /
    a subreaper) and idle, or a zombie;
(d) memory with no visible owner (see unattributed.py).

One alert per process per GPU, naming every sign that applies. What is never a
squatter: an inference server's preallocated pool (serverinfo.py says what it
is, at most INFO), a Jupyter kernel before the kernel-idle threshold (counted
from its last execution where its Jupyter server answers), and a run under the
agent whose steps stopped -- that is "stalled since step N", to look into, not
to end.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from vramscope.core.processes.containers import container_label, stop_advice
from vramscope.core.detectors import jupyter
from vramscope.core.detectors.alert import INFO, WARNING, Alert, AlertKind
from vramscope.core.detectors.naming import (
    AGENT,
    KERNEL,
    SERVER,
    proc_name,
    process_kind,
    squatter_fix,
)
from vramscope.core.detectors.settings import DiagnosticSettings, forget_stale
from vramscope.core.detectors.stalled import StepClock, clock_text, job_stalled, stalled
from vramscope.core.detectors.watching import Watch, watch_if_due
from vramscope.core.processes.process_groups import job_ranks
from vramscope.core.samples import (
    ACCESS_DENIED,
    EXITED,
    GHOST,
    NOT_VISIBLE,
    Frame,
    GpuProcess,
    GpuSample,
    JupyterKernel,
)
from vramscope.core.units import fmt_bytes, fmt_duration

NotebookFinder = Callable[[int, str | None], jupyter.NotebookHint]
KernelActivityLookup = Callable[[str | None], jupyter.KernelActivity | None]
KERNEL_POLL_SECONDS = 15.0  # ask a Jupyter server about one kernel at most this often
WORKING_CPU_PERCENT = 50.0  # host CPU over the last pass (100 = one core): working, not idle


def working_on_cpu(proc: GpuProcess) -> bool:
    return proc.cpu_percent is not None and proc.cpu_percent >= WORKING_CPU_PERCENT


def _idle(gpu: GpuSample, proc: GpuProcess, settings: DiagnosticSettings, active_pids) -> bool:
    """Known idle this pass (one rank at work, or not known to be idle, beside an idle one:
    the idle one is judged alone -- a previous run left behind in the same shell)."""
    return bool(process_is_idle(proc, gpu, settings, active_pids)) and not working_on_cpu(proc)


@dataclass
class _ProcState:
    first_seen: float
    last_seen: float
    idle_since: float | None = None
    last_active: float | None = None
    notebook: jupyter.NotebookHint | None = None
    activity: jupyter.KernelActivity | None = None
    activity_asked: float | None = None
    steps: StepClock = field(default_factory=StepClock)  # a run under the agent (stalled.py)
    parent_seen: bool = False  # its launching parent was alive at some pass
    extra: dict = field(default_factory=dict)


def process_is_idle(
    proc: GpuProcess, gpu: GpuSample, settings: DiagnosticSettings, active_pids: frozenset[int] = frozenset()
) -> bool | None:
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
    def __init__(
        self,
        notebook_finder: NotebookFinder | None = None,
        kernel_activity: KernelActivityLookup | None = None,
    ):
        # what Jupyter servers say of a kernel comes on the frame (sources/machine/jupyter_kernels.py
        # asks them off the sampling thread); a lookup given here replaces it (tests)
        self._finder = notebook_finder
        self._activity = kernel_activity
        self._state: dict[tuple, _ProcState] = {}
        self.watching: list[Watch] = []  # conditions on their way to an alert, as of the last update

    def update(
        self, frame: Frame, settings: DiagnosticSettings, active_pids: frozenset[int] = frozenset()
    ) -> list[Alert]:
        now = frame.time
        alerts = []
        self.watching = watching = []
        reports = {r.pid: r for r in frame.agents if r.connected}
        kernels = {(k.pid, k.start_time): k for k in frame.kernels}
        jobs = job_ranks(frame)
        for gpu, proc in frame.all_processes():
            if proc.info is not None and proc.info.visibility in (NOT_VISIBLE, ACCESS_DENIED, GHOST):
                continue  # nothing is known of it here: the unattributed / ghost rules report it
            key = (gpu.index, proc.identity)
            st = self._state.get(key)
            if st is None:
                st = self._state[key] = _ProcState(first_seen=now, last_seen=now)
            st.last_seen = now
            if proc.info is not None and proc.info.parent_alive:
                st.parent_seen = True
            kind = process_kind(frame, proc)
            report = reports.get(proc.pid)
            if report is not None:
                st.steps.see(report.step, report, now)
            idle = process_is_idle(proc, gpu, settings, active_pids)
            if idle and working_on_cpu(proc):
                idle = False
            if idle:
                if st.idle_since is None:
                    st.idle_since = now
            else:  # busy, or not known to be idle: the idle clock restarts
                st.idle_since = None
                if idle is False:
                    st.last_active = now
            if kind == KERNEL and gpu.host is None:  # never this machine's servers for another's
                self._kernel_clock(proc, st, now, settings, kernels.get(proc.identity))
            ranks = jobs.get((gpu.host, proc.pid), ()) if kind not in (AGENT, KERNEL, SERVER) else ()
            job = len(ranks) > 1 and all(_idle(g, r, settings, active_pids) for g, r in ranks)
            if job:  # a job without the agent whose ranks all stopped together: a stall
                alert = job_stalled(gpu, proc, tuple(r.pid for _, r in ranks), st.idle_since, now, settings)
            else:
                alert = self._judge(frame, gpu, proc, kind, st, now, settings)
            if alert is not None:
                alerts.append(alert)
            else:
                watch = _watch(gpu, proc, kind, st, now, settings, job=job)
                if watch is not None:
                    watching.append(watch)
        forget_stale(self._state, now, settings)
        return alerts

    def _kernel_clock(
        self,
        proc: GpuProcess,
        st: _ProcState,
        now: float,
        settings: DiagnosticSettings,
        kernel: JupyterKernel | None,
    ) -> None:
        """A kernel is idle from its last execution, as its Jupyter server says
        (reading a notebook is not using it less); SM is the fallback."""
        if not settings.lookup_notebooks:
            return
        if self._activity is None:  # the frame's word (frame.kernels)
            if kernel is not None:
                st.activity = (
                    jupyter.KernelActivity(kernel.last_activity, kernel.busy)
                    if kernel.busy or kernel.last_activity is not None
                    else None
                )
                if kernel.notebook or kernel.how:
                    st.notebook = jupyter.NotebookHint(kernel.notebook, kernel.how)
        elif st.activity_asked is None or now - st.activity_asked >= KERNEL_POLL_SECONDS:
            st.activity_asked = now
            try:
                st.activity = self._activity(
                    jupyter.connection_file(proc.info.cmdline if proc.info else None)
                )
            except Exception:  # a lookup must never break the rule
                st.activity = None
        act = st.activity
        if act is None:
            return
        if act.busy or working_on_cpu(proc):  # a long cell, on the GPU or the CPU
            st.idle_since = None
            st.last_active = now
        elif act.last_activity is not None:
            st.idle_since = min(act.last_activity, now)
            st.last_active = st.idle_since

    def _judge(
        self,
        frame: Frame,
        gpu: GpuSample,
        proc: GpuProcess,
        kind: str,
        st: _ProcState,
        now: float,
        settings: DiagnosticSettings,
    ) -> Alert | None:
        info = proc.info
        used = proc.used
        idle_for = (now - st.idle_since) if st.idle_since is not None else None
        holds_some = used is None or used > 0
        cmdline = info.cmdline if info is not None else None

        is_kernel = holds_some and kind == KERNEL
        zombie = info is not None and (info.status == "zombie" or info.visibility == EXITED)
        # servers and kernels are started by daemons/subreapers: a gone parent says nothing;
        # nor does init as the parent of a process never seen with another (a service)
        parentless = info is not None and info.parent_alive is False and not zombie
        orphan = parentless and st.parent_seen and kind not in (SERVER, KERNEL)
        if parentless and not st.parent_seen and not zombie and kind != KERNEL:
            return None  # a service (see the module text): waiting for work is what it does
        # (a kernel whose Jupyter server is gone is a leftover kernel all the same)
        big = used is not None and used >= settings.squatter_min_bytes
        idle_long = idle_for is not None and idle_for >= settings.idle_minutes * 60

        reasons = []
        if zombie and holds_some:
            reasons.append("zombie")
        if is_kernel and idle_for is not None and idle_for >= settings.kernel_idle_minutes * 60:
            reasons.append("jupyter_kernel")
        if kind == AGENT and st.steps.last_step is not None and not zombie:
            # a run under the agent is judged by its steps, not by its SM
            return stalled(gpu, proc, st.steps, now, idle_for, big, settings)
        if kind in (SERVER, KERNEL) and not zombie:
            idle_long = False  # a server's pool is by design; a kernel has its own threshold
        if orphan and big and idle_for is not None and idle_for >= settings.orphan_idle_minutes * 60:
            reasons.append("orphan")
        if big and idle_long:
            reasons.append("idle")
        if not reasons:
            return None

        who = proc_name(proc, gpu)
        mem = fmt_bytes(used) if used is not None else "an unknown amount (NVML gave n/a)"
        conn = jupyter.connection_file(cmdline) if is_kernel else None
        evidence = [f"holds {mem} on {gpu.label}" + (f" ({gpu.name})" if gpu.name else "")]
        if st.idle_since is not None:
            evidence.append(f"0 % SM since {clock_text(st.idle_since)} (idle {fmt_duration(idle_for)})")
        if st.last_active is not None:
            evidence.append(
                f"last SM activity at {clock_text(st.last_active)} ({fmt_duration(now - st.last_active)} ago)"
            )
        else:
            evidence.append(
                f"no SM activity seen since monitoring began {fmt_duration(now - st.first_seen)} ago"
            )
        if is_kernel:
            evidence.append(f"Jupyter/IPython kernel; connection file: {conn or 'not on its command line'}")
            if settings.lookup_notebooks and gpu.host is None:  # not for another machine's kernel
                if st.notebook is None and self._finder is None:
                    st.notebook = jupyter.NotebookHint(None, "its Jupyter server has not answered yet")
                elif st.notebook is None:
                    try:
                        st.notebook = self._finder(proc.pid, conn)
                    except Exception as exc:  # a lookup must never break the rule
                        st.notebook = jupyter.NotebookHint(None, f"lookup failed: {exc}")
                nb = st.notebook
                evidence.append(
                    f"notebook: {nb.notebook} ({nb.how})"
                    if nb.notebook
                    else f"notebook: not found -- {nb.how}"
                )
        if orphan:
            evidence.append(
                f"parent process gone while watched: re-parented to pid {info.ppid} "
                "(init or a subreaper), as after a crash or a closed terminal"
            )
        if zombie:
            evidence.append(
                f"zombie: it has exited but is still listed holding memory "
                f"(parent pid {info.ppid if info.ppid is not None else 'n/a'})"
            )
        if info is not None:
            age = (now - info.start_time) if info.start_time is not None else None
            evidence.append(
                f"user {info.user or 'n/a'}; started {fmt_duration(age)} ago; "
                f"command: {info.command or 'n/a'}"
            )

        if "zombie" in reasons:
            message = f"{who} has exited but still holds {mem}"
            fix = (
                "A zombie cannot use the GPU: its parent (pid "
                f"{info.ppid if info and info.ppid is not None else '?'}) has not reaped it. "
                "End the parent, or wait for the driver to release the memory; "
                "a previous run may still be holding VRAM."
            )
        elif "jupyter_kernel" in reasons:
            message = f"{who} holds {mem}, idle {fmt_duration(idle_for)}"
            fix = squatter_fix(kind, proc, frame if gpu.host is None else None)
        elif "orphan" in reasons:
            message = f"{who} holds {mem}; its parent is gone and it has been idle {fmt_duration(idle_for)}"
            fix = (
                "Its launcher is gone -- likely a crashed or abandoned previous run that still "
                "holds VRAM. " + squatter_fix(kind, proc, frame if gpu.host is None else None)
            )
        else:
            message = f"{who} holds {mem} with 0 % SM for {fmt_duration(idle_for)}"
            fix = squatter_fix(kind, proc, frame if gpu.host is None else None)

        if info is not None and info.container is not None:
            evidence.append(
                f"runs in {container_label(info.container)}"
                + (f" as pid {info.ns_pid} there" if info.ns_pid is not None else "")
            )
            fix = f"{fix} {stop_advice(info.container)}"
        if info is not None and info.slurm is not None:
            evidence.append(f"runs in {info.slurm.text}")
            fix = f"{fix} {info.slurm.cancel_advice}"

        severity = WARNING
        if reasons == ["jupyter_kernel"] and idle_for < settings.kernel_warn_minutes * 60:
            severity = INFO  # listed from kernel_idle_minutes, a warning from kernel_warn_minutes
        return Alert(
            kind=AlertKind.SQUATTER,
            severity=severity,
            gpu=gpu.index,
            pid=proc.pid,
            start_time=proc.identity[1],
            since=st.idle_since if st.idle_since is not None else st.first_seen,
            message=message,
            evidence=tuple(evidence),
            fix=fix,
            frees=used,
            connection_file=conn,
            data={
                "reasons": reasons,
                "used": used,
                "idle_seconds": idle_for,
                "process_kind": kind,
                "last_active": st.last_active,
                "notebook": st.notebook.notebook if st.notebook else None,
            },
        )


def _watch(
    gpu: GpuSample,
    proc: GpuProcess,
    kind: str,
    st: _ProcState,
    now: float,
    settings: DiagnosticSettings,
    job: bool = False,
) -> Watch | None:
    """'idle 3 of 5 min' for a holder on its way to a squatter alert (watching.py)."""
    if kind == SERVER:
        return None  # a server's pool is by design: nothing to wait for
    if kind != KERNEL and (proc.used is None or proc.used < settings.squatter_min_bytes):
        return None  # below the threshold, or what it holds the driver does not say (graphics)
    info = proc.info
    if kind != KERNEL and info is not None and info.parent_alive is False and not st.parent_seen:
        return None  # a service
    if job:
        return watch_if_due(
            AlertKind.STALLED, gpu, proc, st.idle_since, now, "job idle", settings.idle_minutes * 60
        )
    if kind == KERNEL:
        return watch_if_due(
            AlertKind.SQUATTER,
            gpu,
            proc,
            st.idle_since,
            now,
            "kernel idle",
            settings.kernel_idle_minutes * 60,
        )
    if kind == AGENT and st.steps.last_step is not None:
        return watch_if_due(
            AlertKind.STALLED,
            gpu,
            proc,
            st.steps.last_step_time,
            now,
            "no step for",
            st.steps.quiet_needed(settings),
        )
    return watch_if_due(AlertKind.SQUATTER, gpu, proc, st.idle_since, now, "idle", settings.idle_minutes * 60)
