"""Stalled runs: a run under the agent whose steps stopped -- to look into, not to end.

Two ways a run stops stepping while its process lives on:

- idle: 0 % SM and no step (a data loader waiting on a slow disk, a
  breakpoint, input());
- busy: SM stays busy but no step comes and nothing is allocated or freed --
  a collective spinning while it waits for a rank that will never arrive (an
  NCCL hang: the NCCL kernel polls on the GPU, so SM reads ~100 %). PyTorch's
  distributed docs (pytorch.org/docs/stable/distributed.html) give the
  watchdog timeout of ``init_process_group(timeout=...)`` and NCCL_DEBUG=INFO to
  see which collective waits.

An evaluation phase or a checkpoint write also stops the steps with SM busy,
but it allocates and frees as it runs; and a run whose steps take minutes
is judged against its own step time, not a fixed clock.
"""

from __future__ import annotations

import time as _time
from collections import deque
from dataclasses import dataclass, field
from statistics import median

from vramscope.core.detectors.alert import WARNING, Alert, AlertKind
from vramscope.core.detectors.naming import proc_name
from vramscope.core.detectors.settings import DiagnosticSettings
from vramscope.core.samples import AgentReport, GpuProcess, GpuSample
from vramscope.core.units import fmt_bytes, fmt_duration

STEP_TIMES_KEPT = 32  # recent step intervals the typical step time is the median of
SLOW_STEP_FACTOR = 10.0  # a stall lasts at least this many typical steps

HANG_FIX_END = "Ending it loses what it did since its last checkpoint."


def waits_on(pid: int) -> str:
    return (
        f"find what it waits on before ending anything. `py-spy dump --pid {pid}` prints its "
        "stack: a data loader (workers, a slow disk or network share), a collective waiting "
        "for another rank (NCCL), a checkpoint write, or a breakpoint/input()."
    )


def clock_text(t: float | None) -> str:
    return "n/a" if t is None else _time.strftime("%H:%M:%S", _time.localtime(t))


@dataclass
class StepClock:
    """One agent process's steps and allocations as the passes saw them."""

    last_step: int | None = None
    last_step_time: float | None = None
    intervals: deque = field(default_factory=lambda: deque(maxlen=STEP_TIMES_KEPT))
    allocated: tuple | None = None  # the agent's (allocated, reserved) per device
    allocated_since: float | None = None  # when that last changed
    first_seen: float | None = None

    def see(self, step: int | None, report: AgentReport | None, now: float) -> None:
        if self.first_seen is None:
            self.first_seen = now
        if step is not None and step != self.last_step:
            if self.last_step is not None and self.last_step_time is not None and step > self.last_step:
                self.intervals.append((now - self.last_step_time) / (step - self.last_step))
            elif self.last_step is None and now > self.first_seen:  # the wait for the first step
                self.intervals.append(now - self.first_seen)
            self.last_step, self.last_step_time = step, now
        if report is not None:
            held = tuple((d.allocated, d.reserved) for d in report.devices)
            if held != self.allocated:
                self.allocated, self.allocated_since = held, now

    def typical_step(self) -> float | None:
        return median(self.intervals) if self.intervals else None

    def quiet_needed(self, settings: DiagnosticSettings) -> float:
        """Seconds without a step that make a stall: the idle threshold, or many
        of this run's own steps when they are slow."""
        step = self.typical_step() or 0.0
        return max(settings.idle_minutes * 60, SLOW_STEP_FACTOR * step)


def stalled(
    gpu: GpuSample,
    proc: GpuProcess,
    clock: StepClock,
    now: float,
    idle_for: float | None,
    big: bool,
    settings: DiagnosticSettings,
) -> Alert | None:
    """The stalled alert for a run under the agent, or None while it steps."""
    if clock.last_step_time is None or not big:
        return None
    quiet = now - clock.last_step_time
    need = clock.quiet_needed(settings)
    if quiet < need:
        return None
    who = proc_name(proc, gpu)
    if idle_for is not None and idle_for >= settings.idle_minutes * 60:
        how = "0 % SM"
        evidence = [f"0 % SM since {clock_text(now - idle_for)} (idle {fmt_duration(idle_for)})"]
        fix = "The run is alive but has stopped stepping: " + waits_on(proc.pid) + " " + HANG_FIX_END
    else:
        unchanged = (now - clock.allocated_since) if clock.allocated_since is not None else None
        if idle_for is not None or unchanged is None or unchanged < need:
            return None  # busy and allocating: an evaluation phase, a checkpoint write
        sm = (
            f"{proc.sm} %"
            if proc.sm is not None
            else (f"{gpu.util_gpu} % (the GPU's)" if gpu.util_gpu is not None else "busy")
        )
        how = f"SM still busy ({sm}) with nothing allocated or freed"
        evidence = [
            f"SM {sm} while no step came; allocated and reserved unchanged for "
            f"{fmt_duration(unchanged)}: a kernel spinning, as a collective does while it "
            "waits for a rank (an NCCL hang)"
        ]
        fix = (
            "A busy GPU with no steps and no allocations is a collective waiting for another "
            f"rank, most often: `py-spy dump --pid {proc.pid}` shows it in all_reduce / barrier "
            "/ broadcast. Check every rank is alive and at the same step (one crashed, hit an "
            "exception, or took another branch), rerun with NCCL_DEBUG=INFO to see which "
            "collective waits, and set init_process_group(timeout=...) so a hang fails "
            "instead of holding the GPUs. " + HANG_FIX_END
        )
    typical = clock.typical_step()
    evidence = [
        f"last step {clock.last_step} seen at {clock_text(clock.last_step_time)} "
        f"({fmt_duration(quiet)} ago)" + (f"; steps took {typical:.2f} s before" if typical else ""),
        *evidence,
        f"holds {fmt_bytes(proc.used)} on {gpu.label}",
    ]
    return Alert(
        kind=AlertKind.STALLED,
        severity=WARNING,
        gpu=gpu.index,
        pid=proc.pid,
        start_time=proc.identity[1],
        since=clock.last_step_time,
        message=f"{who} stalled since step {clock.last_step}: no step for {fmt_duration(quiet)}, {how}",
        evidence=tuple(evidence),
        fix=fix,
        frees=None,
        data={
            "step": clock.last_step,
            "since_step_seconds": quiet,
            "idle_seconds": idle_for,
            "sm_busy": idle_for is None,
        },
    )


def job_stalled(
    gpu: GpuSample,
    proc: GpuProcess,
    ranks: tuple[int, ...],
    idle_since: float | None,
    now: float,
    settings: DiagnosticSettings,
) -> Alert | None:
    """One process of a job that runs without the agent (process_groups.job_ranks),
    idle as long as a squatter would be: stalled, to look into -- not a leftover."""
    used = proc.used
    if idle_since is None or used is None or used < settings.squatter_min_bytes:
        return None
    idle_for = now - idle_since
    if idle_for < settings.idle_minutes * 60:
        return None
    info = proc.info
    others = ", ".join(str(p) for p in ranks if p != proc.pid)
    return Alert(
        kind=AlertKind.STALLED,
        severity=WARNING,
        gpu=gpu.index,
        pid=proc.pid,
        start_time=proc.identity[1],
        since=idle_since,
        message=f"{proc_name(proc, gpu)}, one of {len(ranks)} processes of one job, stalled: "
        f"0 % SM for {fmt_duration(idle_for)}",
        evidence=(
            f"0 % SM since {clock_text(idle_since)} (idle {fmt_duration(idle_for)})",
            f"its launcher (pid {info.ppid}) is alive and runs {len(ranks)} processes with this "
            f"command line (also pid {others}): a job's ranks or workers, not a leftover",
            f"holds {fmt_bytes(used)} on {gpu.label}",
        ),
        fix="The job is alive but its GPU work stopped: "
        + waits_on(proc.pid)
        + " Under the agent (`vramscope run -- torchrun ...`) its steps are shown. "
        + HANG_FIX_END,
        frees=None,
        data={"ranks": list(ranks), "idle_seconds": idle_for, "sm_busy": False},
    )
