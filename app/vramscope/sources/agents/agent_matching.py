"""Each agent report attached to the GPU process it comes from (no Qt).

Identity is the handshake's pid + start time, checked against the process
NVML reports (psutil's start time, or /proc when there is none); a process
is marked as an agent process only on that match -- never "the first
socket found". An agent in another PID namespace matches no process (its
pid means something else here) unless the client found its PID here
(``AgentState.host_pid``: a GPU process in a container with that PID inside).

Once attached, a report gets its "outside PyTorch" bucket from NVML's view of
its process (sources/agents/agent_reports.py), a new OOM event the other
processes on its GPU (core/agent_figures/oom_context.py), and the bucket's series a point at
the frame's time.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from vramscope.agent.serving import paths
from vramscope.agent.protocol import EventKind
from vramscope.core.agent_figures import oom_context
from vramscope.core.samples import AgentReport, Frame, GpuProcess, GpuSample
from vramscope.sources.agents.agent_reports import outside_points, with_outside
from vramscope.sources.agents.agent_state import AgentState, record_points

START_TIME_TOLERANCE = 0.05  # seconds; both sides compute btime + ticks / CLK_TCK


def attached(
    frame: Frame, reports: list[AgentReport], states: Sequence[AgentState], pidns: str | None, store
) -> Frame:
    """``frame`` with ``reports`` as its agents and each matched process marked
    ``has_agent``; ``states``: the client's agents (their handshakes), ``pidns``:
    this monitor's PID namespace (None: not known)."""
    matches: dict[tuple[int, int], AgentReport] = {}  # (gpu index, pid) -> report
    for report in reports:
        state = _state_of(report, states)
        if _same_namespace(state, pidns):  # identity is exact: an ended run matches nothing
            for gpu in frame.gpus:
                for proc in gpu.processes:
                    if _is_process(report, state, proc):
                        matches[(gpu.index, proc.pid)] = report
    gpus = []
    final_reports = {id(r): r for r in reports}
    for gpu in frame.gpus:
        procs = []
        changed = False
        for proc in gpu.processes:
            found = matches.get((gpu.index, proc.pid))
            if found is not None:
                proc = dataclasses.replace(proc, has_agent=True)
                changed = True
                r = final_reports[id(found)]
                final_reports[id(found)] = with_outside(r, gpu, proc, frame.gpus)
                note_ooms(r, gpu, proc)  # NVML's view at the OOM (core/agent_figures/oom_context.py)
            procs.append(proc)
        gpus.append(dataclasses.replace(gpu, processes=tuple(procs)) if changed else gpu)
    reports = [final_reports[id(r)] for r in reports]
    for r in reports:  # outside PyTorch is the monitor's bucket: at the frame's time
        record_points(store, outside_points(r, frame.time))
    return dataclasses.replace(frame, gpus=tuple(gpus), agents=tuple(reports))


def _state_of(report: AgentReport, states: Sequence[AgentState]) -> AgentState | None:
    for state in states:
        if state.pid == report.pid and state.start_time == report.start_time:
            return state
    return None


def _same_namespace(state: AgentState | None, pidns: str | None) -> bool:
    if state is not None and state.host_pid is not None:
        return True  # mapped to its host PID already
    ns = state.hello.pid_namespace if state else None
    return ns is None or pidns is None or ns == pidns


def _is_process(report: AgentReport, state: AgentState | None, proc: GpuProcess) -> bool:
    if proc.pid != report.pid:
        return False
    start = proc.info.start_time if proc.info is not None else None
    if start is not None and report.start_time is not None:
        return abs(start - report.start_time) < START_TIME_TOLERANCE
    ticks = state.hello.start_ticks if state else None  # no psutil start time: ask /proc directly
    return ticks is not None and paths.start_ticks(proc.pid) == ticks


def note_ooms(report: AgentReport, gpu: GpuSample, proc: GpuProcess) -> None:
    """The other processes on the GPU of a new OOM event, and this one's outside PyTorch."""
    for ev in report.events:
        if ev.kind == EventKind.OOM:
            dev = next((d for d in report.devices if d.device == ev.data.get("device")), None)
            oom_context.note(ev.data, gpu.processes, proc, dev.reserved if dev is not None else None)
