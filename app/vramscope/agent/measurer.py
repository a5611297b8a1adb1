"""The measurer: one sample -- the allocator's reading and the tensor buckets at one instant.

A sample is due on the agent thread every interval; while the gradient ledger
may lack gradients it asks the training thread to take it at its next hook
(agent/steps/handoff.py). The training thread reads ``.grad`` itself; the agent
thread never does (agent/tensors/instant.py).
"""

from __future__ import annotations

import time

from vramscope.agent import sampling
from vramscope.agent.protocol import ItemKind, SampleItem
from vramscope.agent.allocator.stats import StatsReader

HANDOFF_STEPS = 3.0  # the agent thread waits this many step times for a training hook to take its sample
HANDOFF_WAIT = 5.0  # seconds it waits before the first step's duration is known
MIN_HANDOFF_WAIT = 0.05
STRETCH_DELAY = 0.25  # a sample waits at most this share of the interval for a quiet stretch's end


class Measurer:
    """Uses: the ``registry`` (the owners, walked when due), the ``instant`` (the tensors
    measured, agent/tensors/instant.py), the gradient ``ledger``, the ``handoff`` and ``steps``
    (a sample the training thread takes), the ``ring``; and callables: ``figures`` (the
    sample's other figures), ``on_devices`` (each reading, for the OOM counters),
    ``drain`` and ``on_agent_thread`` (the agent thread's), ``error``."""

    def __init__(
        self,
        registry,
        instant,
        ledger,
        handoff,
        steps,
        ring,
        *,
        interval: float,
        figures,
        on_devices,
        drain,
        on_agent_thread,
        error,
    ):
        self._registry = registry
        self.instant = instant
        self._ledger = ledger
        self._handoff = handoff
        self._steps = steps
        self._ring = ring
        self.interval = interval
        self._figures = figures  # () -> the sample's settings, models, input, sharded, agent figures
        self._on_devices = on_devices  # (devices) -> None: a reading (the OOM counters)
        self._drain = drain  # () -> None: the hooks' queues into the ring
        self._on_agent_thread = on_agent_thread  # () -> bool
        self._error = error
        self.reader: StatsReader | None = None
        self.last_taken_by: str | None = None  # which thread took the last sample
        self.handoff_wait: float | None = None  # seconds; None: HANDOFF_STEPS step times
        self.samples = 0

    def device_name(self, index: int) -> str:
        return self.reader.name(index) if self.reader is not None else str(index)

    def provider(self):
        """The reader's provider (the allocator statistics), or None before there is one."""
        return self.reader.provider if self.reader is not None else None

    def turn(self, now: float) -> None:
        """A sample is due: take it here, or ask the training thread while the gradient
        ledger may lack gradients (agent/steps/handoff.py)."""
        registry = self._registry
        try:
            self._drain()
            if registry.walk_wanted(now):
                registry.walk()
            owners = registry.owners
            if owners is not None and owners.params and self._ledger.stale:
                wait = self.handoff_wait
                if wait is None:
                    step = self._steps.last_duration
                    wait = max(MIN_HANDOFF_WAIT, HANDOFF_STEPS * step) if step else HANDOFF_WAIT
                # a quiet stretch runs: its last step's full hook takes the sample -- waking the
                # hook now would cost a full step more per sample (agent/steps/stretch.py) -- unless
                # that is more than a quarter of the interval away
                stretch = self._steps.stretch
                later = stretch.remaining(now)
                if later > self.interval * STRETCH_DELAY:
                    stretch.wake()
                    later = 0.0
                self._handoff.ask(now + wait + later)
                return
        except Exception as exc:
            self._error(exc)
        self.sample_here(drain=False)

    def sample_here(self, drain: bool) -> SampleItem | None:
        return self.sample(read_grads=not self._on_agent_thread(), drain=drain)

    def sample_for_agent(self) -> None:
        """The training thread, at a hook: the sample the agent thread asked for."""
        self.sample(read_grads=True, drain=False)

    def sample(self, read_grads: bool, drain: bool) -> SampleItem | None:
        """Drain the hooks' queues (``drain``), read the allocator and the tensors at one
        instant, push the sample to the ring."""
        registry, instant, reader = self._registry, self.instant, self.reader
        try:
            if drain:
                self._drain()
            now = time.time()
            if registry.walk_wanted(None if read_grads else time.monotonic()):
                registry.walk()
            if read_grads:  # the training thread: nothing changes the tensors while it reads
                devices = reader.read(ItemKind.SAMPLE) if reader is not None else {}
                instant.measure_now(read_grads)  # the tensors at the instant of the allocator's reading
            else:
                devices = instant.consistent_read(
                    (lambda: reader.read(ItemKind.SAMPLE)) if reader is not None else dict
                )
            self._on_devices(devices)
            self.last_taken_by = "training thread" if read_grads else "agent thread"
            item = sampling.sample_item(now, devices, instant, self._steps.count, self._figures())
            self._ring.push(ItemKind.SAMPLE, item)
            self.samples += 1
            return item
        except Exception as exc:
            self._error(exc)
            return None
