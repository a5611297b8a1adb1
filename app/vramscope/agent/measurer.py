"""The measurer: one sample -- the allocator's reading and the tensor buckets at one instant.

A sample is due on the agent thread every interval; while the gradient ledger
may lack gradients it asks the training thread to take it at its next hook
(agent/handoff.py). The training thread reads ``.grad`` itself; the agent
thread never does (agent/instant.py).
"""

from __future__ import annotations

import time

from vramscope.agent import instant, oom, sampling
from vramscope.agent.protocol import ItemKind, SampleItem
from vramscope.agent.stats import StatsReader

HANDOFF_STEPS = 3.0  # the agent thread waits this many step times for a training hook to take its sample
HANDOFF_WAIT = 5.0  # seconds it waits before the first step's duration is known
MIN_HANDOFF_WAIT = 0.05
STRETCH_DELAY = 0.25  # a sample waits at most this share of the interval for a quiet stretch's end


class Measurer:
    """Uses of the agent: ``registry`` (the owners, walked when due), ``ledger``, ``handoff``,
    ``steps``, ``phases``, ``ring``, ``serving`` (its queues drained, its thread), ``error``."""

    def __init__(self, agent):
        self.agent = agent
        self.reader: StatsReader | None = None
        self.tensors: dict[str, dict[str, int | None]] | None = None  # the tensor buckets, last measured
        self.measured = None  # the owners the last buckets were measured from
        self.last_taken_by: str | None = None  # which thread took the last sample
        self.handoff_wait: float | None = None  # seconds; None: HANDOFF_STEPS step times
        self.last_measure_seconds: float | None = None
        self.last_num_ooms: dict[str, int] = {}
        self.samples = 0

    def set_reader(self, reader: StatsReader) -> None:
        self.reader = reader
        self.agent.steps.reader = reader
        self.agent.steps.after.read = reader.raw_allocated  # a quiet step's reading (agent/after_step.py)
        self.agent.phases.read = reader.allocated_noted  # the hooks call the provider (and raise the peaks)

    def device_name(self, index: int) -> str:
        return self.reader.name(index) if self.reader is not None else str(index)

    def turn(self, now: float) -> None:
        """A sample is due: take it here, or ask the training thread while the gradient
        ledger may lack gradients (agent/handoff.py)."""
        agent, registry = self.agent, self.agent.registry
        try:
            agent.serving.drain()
            if registry.walk_wanted(now):
                registry.walk()
            owners = registry.owners
            if owners is not None and owners.params and agent.ledger.stale:
                wait = self.handoff_wait
                if wait is None:
                    step = agent.steps.last_duration
                    wait = max(MIN_HANDOFF_WAIT, HANDOFF_STEPS * step) if step else HANDOFF_WAIT
                # a quiet stretch runs: its last step's full hook takes the sample -- waking the
                # hook now would cost a full step more per sample (agent/stretch.py) -- unless
                # that is more than a quarter of the interval away
                stretch = agent.steps.stretch
                later = stretch.remaining(now)
                if later > agent.interval * STRETCH_DELAY:
                    stretch.wake()
                    later = 0.0
                agent.handoff.ask(now + wait + later)
                return
        except Exception as exc:
            agent.error(exc)
        self.sample_here(drain=False)

    def sample_here(self, drain: bool) -> SampleItem | None:
        return self.sample(read_grads=not self.agent.serving.on_agent_thread(), drain=drain)

    def sample_for_agent(self) -> None:
        """The training thread, at a hook: the sample the agent thread asked for."""
        self.sample(read_grads=True, drain=False)

    def sample(self, read_grads: bool, drain: bool) -> SampleItem | None:
        """Drain the hooks' queues (``drain``), read the allocator and the tensors at one
        instant, push the sample to the ring."""
        agent, registry = self.agent, self.agent.registry
        try:
            if drain:
                agent.serving.drain()
            now = time.time()
            if registry.walk_wanted(None if read_grads else time.monotonic()):
                registry.walk()
            if read_grads:  # the training thread: nothing changes the tensors while it reads
                devices = self.reader.read(ItemKind.SAMPLE) if self.reader is not None else {}
                instant.measure_now(
                    agent, read_grads
                )  # the tensors at the instant of the allocator's reading
            else:
                devices = instant.consistent_read(agent)
            oom.check_num_ooms(agent, devices)
            self.last_taken_by = "training thread" if read_grads else "agent thread"
            item = sampling.sample_item(agent, now, devices)
            agent.ring.push(ItemKind.SAMPLE, item)
            self.samples += 1
            return item
        except Exception as exc:
            agent.error(exc)
            return None
