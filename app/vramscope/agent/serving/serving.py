"""The agent thread: the socket it serves the monitor on, its loop, the events queue.

The loop samples every interval (agent/measurer.py), looks at the allocator's
segments and the allocation sites when due, drains the hooks' queues into the
ring and answers requests (agent/serving/requests.py) while it waits.
"""

from __future__ import annotations

import collections
import logging
import os
import sys
import threading
import time

from vramscope.agent import sampling

from vramscope.agent.serving import paths
from vramscope.agent.protocol import ItemKind
from vramscope.agent.serving.server import AgentServer

log = logging.getLogger(__name__)


def _say_once(text: str) -> None:
    """One line on the training process's stderr (logging may be configured away)."""
    try:
        print(text, file=sys.stderr, flush=True)
    except Exception:  # a closed stderr: nothing to say it on
        pass


class Serving:
    """Uses: the ``ring`` it feeds; at each turn the ``measurer`` (with the ``handoff`` and
    the gradient ``ledger``: who samples), ``steps`` (a quiet stretch checked, its records
    drained), the ``allocator`` watch and the ``sites`` recorder; the ``module_sampler``'s
    items; and callables: ``answer`` (a request's reply), ``device_name``, ``error``.
    ``identity`` names its socket; ``interval``: seconds between samples."""

    def __init__(
        self,
        ring,
        measurer,
        handoff,
        ledger,
        steps,
        allocator,
        sites,
        module_sampler,
        *,
        identity: dict,
        interval: float,
        runtime_dir: str | None,
        answer,
        device_name,
        error,
    ):
        self._ring = ring
        self._measurer = measurer
        self._handoff = handoff
        self._ledger = ledger
        self._steps = steps
        self._allocator = allocator
        self._sites = sites
        self._module_sampler = module_sampler
        self._identity = identity
        self.interval = interval
        self._runtime_dir = runtime_dir
        self._answer = answer  # (request dict) -> reply bytes
        self._device_name = device_name
        self._error = error
        self.events: collections.deque = collections.deque(maxlen=4096)  # (kind, wall time, data)
        self.server: AgentServer | None = None
        self.socket_path: str | None = None
        self.server_error: str | None = None
        self.thread: threading.Thread | None = None
        self.stopping = threading.Event()
        self.started = threading.Event()

    def start(self) -> None:
        self.thread = threading.Thread(target=self._run, name="vramscope-agent", daemon=True)
        self.thread.start()

    def join(self, timeout: float) -> None:
        """Stop the loop; wait for the thread (unless called on it)."""
        self.stopping.set()
        t = self.thread
        if t is not None and t is not threading.current_thread():
            t.join(timeout)

    def close(self) -> None:
        if self.server is not None:
            self.server.close()
            self.server = None

    def on_agent_thread(self) -> bool:
        return threading.current_thread() is self.thread

    def _open(self) -> None:
        try:
            directory, refused = (self._runtime_dir, []) if self._runtime_dir else paths.choose_agent_dir()
            if refused:
                log.warning(
                    "vramscope agent: %s; listening in %s instead (the monitor looks there too)",
                    "; ".join(refused),
                    directory,
                )
            paths.secure_dir(directory)
            paths.remove_stale(directory)
            ticks = self._identity.get("start_ticks") or 0
            self.socket_path = os.path.join(directory, paths.socket_name(os.getpid(), ticks))
            self.server = AgentServer(self.socket_path, self._answer)
        except Exception as exc:  # no socket: keep sampling (a final dump may still be read)
            self.server_error = str(exc)
            self._error(exc)
            _say_once(
                f"vramscope agent: no monitor connection for this run ({exc}); training goes on, unwatched"
            )

    def _run(self) -> None:
        self._open()
        self.started.set()
        next_due = time.monotonic()
        handoff, measurer, ledger, steps = self._handoff, self._measurer, self._ledger, self._steps
        while not self.stopping.is_set():
            now = time.monotonic()
            if handoff.wanted:
                # the ledger became current (noted between statements), or no hook came in time
                # (then the gradients are not known): the agent thread samples itself
                if (not ledger.stale or now >= handoff.deadline) and handoff.withdraw():
                    measurer.sample_here(drain=True)
            elif now >= next_due:
                steps.check_stretch(now, self.interval)
                measurer.turn(now)
                self._allocator.maybe(now)
                self._sites.on_turn(now)
                next_due += self.interval
                if next_due < now:
                    next_due = now + self.interval
            else:
                self.drain()
            until = min(handoff.deadline, now + 0.02) if handoff.wanted else next_due
            wait = max(0.0, min(until - time.monotonic(), 0.25))
            if self.server is not None:
                self.server.poll(wait)
            else:
                self.stopping.wait(wait)

    def drain(self) -> None:
        ring, steps = self._ring, self._steps
        if not self.on_agent_thread():  # (a sample taken on another thread: every step so far)
            steps.flush_stretch()
        records = steps.records
        while records:
            record = records.popleft()
            for r in (record,) if len(record) != 5 else steps.run_records(record):
                ring.push(ItemKind.STEP, sampling.step_item(r, self._device_name))
        events = self.events
        while events:
            kind, t, data = events.popleft()
            ring.push(ItemKind.EVENT, {"t": t, "event": kind, "data": data})
        modules = self._module_sampler.items
        while modules:
            ring.push(ItemKind.MODULES, modules.popleft())

    def emit(self, kind: str, data: dict) -> None:
        self.events.append((kind, time.time(), data))
