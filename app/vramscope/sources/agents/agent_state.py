"""What the monitor holds of one agent (sources/agents/agent_client.py discovers and pulls
from them): its handshake, cursor and connection, its newest sample, step,
events and peaks -- and how the items it sends update that state and the
store's series (the layout is core/agent_figures/agent_series.py's). An item that cannot
be read is counted in ``bad_items`` and skipped; the agent is kept."""

from __future__ import annotations

import collections
import dataclasses
import logging

from vramscope.agent.protocol import EventKind, ItemKind
from vramscope.core.agent_figures import agent_series
from vramscope.core.agent_figures.allocator_summary import AllocatorSummary
from vramscope.core.samples import SAMPLES_PER_REPORT, AgentEvent
from vramscope.sources.agents import agent_input, agent_modules, allocator_input
from vramscope.sources.agents.agent_connection import AgentConnection
from vramscope.sources.agents.agent_reports import merged_peak

log = logging.getLogger(__name__)

RECENT_EVENTS = 50


@dataclasses.dataclass
class AgentState:
    path: str | None
    hello: agent_input.Hello
    cursor: int = 0
    conn: AgentConnection | None = None
    latest: agent_input.Sample | None = None  # the newest sample item
    step: int | None = None
    new_events: list = dataclasses.field(default_factory=list)
    recent: collections.deque = dataclasses.field(
        default_factory=lambda: collections.deque(maxlen=RECENT_EVENTS)
    )
    dropped: bool = False
    ended_at: float | None = None
    error: str | None = None
    bad_items: int = 0
    host_pid: int | None = None  # its PID here, when it lives in another PID namespace
    modules: dict = dataclasses.field(default_factory=dict)  # model name -> ModuleFigures of its latest item
    allocator: AllocatorSummary | None = (
        None  # the newest allocator summary (sources/agents/allocator_input.py)
    )
    # device -> (peak, upper bound or None) over the samples since the last report: a frame
    # carries the peak of its whole interval, not only of the newest sample's
    peaks: dict = dataclasses.field(default_factory=dict)
    # the samples since the last report, oldest first (the report carries them: its
    # subscribers draw and record every sample, not one a frame)
    since_report: collections.deque = dataclasses.field(
        default_factory=lambda: collections.deque(maxlen=SAMPLES_PER_REPORT)
    )

    @property
    def pid(self) -> int:
        if self.host_pid is not None:
            return self.host_pid
        return self.hello.pid

    @property
    def start_time(self) -> float | None:
        return self.hello.start_time


def ingest(state: AgentState, items: list, store=None) -> None:
    """``items`` (pulled, or from a final dump) into ``state`` and the ``store``'s series."""
    for item in items:
        try:
            kind = item.get("kind")
            if kind == ItemKind.SAMPLE:
                _ingest_sample(state, item, store)
            elif kind == ItemKind.STEP:
                _ingest_step(state, item, store)
            elif kind == ItemKind.MODULES:
                state.modules[agent_input.text(item.get("model")) or ""] = agent_modules.decode(item)
            elif kind == ItemKind.ALLOCATOR:
                state.allocator = allocator_input.allocator(item)
            elif kind == ItemKind.EVENT:
                event = agent_input.event(item)
                ev = AgentEvent(kind=event.kind, time=event.t, data=event.data)
                state.new_events.append(ev)
                state.recent.append(ev)
                record_points(
                    store, agent_series.event_points(state.pid, state.start_time, ev.kind, ev.time, ev.data)
                )
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
            state.bad_items += 1
            log.debug("agent %s: item skipped: %s", state.pid, exc)


def _ingest_sample(state: AgentState, item: dict, store) -> None:
    sample = agent_input.sample(item)
    if state.latest is None or sample.t >= state.latest.t:
        state.latest = sample
        state.since_report.append(sample)
    for dev in sample.devices:
        state.peaks[dev.device] = merged_peak(state.peaks.get(dev.device), dev)
    if sample.step is not None:
        state.step = max(state.step or 0, sample.step)
    record_points(store, agent_series.device_points(state.pid, state.start_time, sample.t, sample.devices))


def _ingest_step(state: AgentState, item: dict, store) -> None:
    step = agent_input.step(item)
    state.step = max(state.step or 0, step.step)
    ev = AgentEvent(kind=EventKind.STEP, time=step.t, data=step.event_data())
    state.new_events.append(ev)
    record_points(store, agent_series.step_points(state.pid, state.start_time, step.t, ev.data))


def record_points(store, points) -> None:
    """Series points into ``store`` (None: no store, nothing kept)."""
    if store is not None:
        agent_series.record(store, points)
