"""Each agent's events and samples from the frames a stream reader took in since
the monitor last took one (sources/remote/host_stream.py): a remote that sends
faster than the monitor samples -- or a pass that comes late -- loses none of
them, as the live agent client loses none (sources/agents/agent_state.py)."""

from __future__ import annotations

import dataclasses

from vramscope.core.samples import SAMPLES_PER_REPORT, Frame


class AgentBacklog:
    def __init__(self) -> None:
        self._events: dict = {}  # agent identity -> events not yet handed out
        self._samples: dict = {}  # agent identity -> samples not yet handed out (the newest)

    def add(self, frame: Frame) -> None:
        """A frame read from the stream."""
        for report in frame.agents:
            if report.events:
                self._events.setdefault(report.identity, []).extend(report.events)
            if report.samples:
                held = self._samples.setdefault(report.identity, [])
                held.extend(report.samples)
                del held[:-SAMPLES_PER_REPORT]

    def take(self, frame: Frame) -> Frame:
        """The newest frame with every agent's events and samples since the previous
        take; the backlog starts again."""
        if not (self._events or self._samples):
            return frame
        events, samples = self._events, self._samples
        self._events, self._samples = {}, {}
        agents = tuple(
            dataclasses.replace(
                r,
                events=tuple(events.get(r.identity, r.events)),
                samples=tuple(samples.get(r.identity, r.samples))[-SAMPLES_PER_REPORT:],
            )
            for r in frame.agents
        )
        return dataclasses.replace(frame, agents=agents)
