"""The agent thread: the socket it serves the monitor on, its loop, the events queue.

The loop samples every interval (agent/measurer.py), looks at the allocator's
segments and the allocation sites when due, drains the hooks' queues into the
ring and answers requests (agent/requests.py) while it waits.
"""

from __future__ import annotations

import collections
import logging
import os
import sys
import threading
import time

from vramscope.agent import paths, sampling
from vramscope.agent.protocol import ItemKind
from vramscope.agent.server import AgentServer

log = logging.getLogger(__name__)


def _say_once(text: str) -> None:
    """One line on the training process's stderr (logging may be configured away)."""
    try:
        print(text, file=sys.stderr, flush=True)
    except Exception:  # a closed stderr: nothing to say it on
        pass


class Serving:
    """Uses of the agent: ``identity``, ``interval``, ``ring``, ``measurer``, ``handoff``,
    ``ledger``, ``steps``, ``module_sampler``, ``allocator``, ``sites``, ``error``."""

    def __init__(self, agent, runtime_dir: str | None):
        self.agent = agent
        self._runtime_dir = runtime_dir
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
        agent = self.agent
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
            ticks = agent.identity.get("start_ticks") or 0
            self.socket_path = os.path.join(directory, paths.socket_name(os.getpid(), ticks))
            self.server = AgentServer(self.socket_path, agent.handle_request)
        except Exception as exc:  # no socket: keep sampling (a final dump may still be read)
            self.server_error = str(exc)
            agent.error(exc)
            _say_once(
                f"vramscope agent: no monitor connection for this run ({exc}); training goes on, unwatched"
            )

    def _run(self) -> None:
        agent = self.agent
        self._open()
        self.started.set()
        next_due = time.monotonic()
        handoff, measurer = agent.handoff, agent.measurer
        while not self.stopping.is_set():
            now = time.monotonic()
            if handoff.wanted:
                # the ledger became current (noted between statements), or no hook came in time
                # (then the gradients are not known): the agent thread samples itself
                if (not agent.ledger.stale or now >= handoff.deadline) and handoff.withdraw():
                    measurer.sample_here(drain=True)
            elif now >= next_due:
                agent.steps.check_stretch(now, agent.interval)
                measurer.turn(now)
                agent.allocator.maybe(now)
                agent.sites.on_turn(now)
                next_due += agent.interval
                if next_due < now:
                    next_due = now + agent.interval
            else:
                self.drain()
            until = min(handoff.deadline, now + 0.02) if handoff.wanted else next_due
            wait = max(0.0, min(until - time.monotonic(), 0.25))
            if self.server is not None:
                self.server.poll(wait)
            else:
                self.stopping.wait(wait)

    def drain(self) -> None:
        agent, ring = self.agent, self.agent.ring
        if not self.on_agent_thread():  # (a sample taken on another thread: every step so far)
            agent.steps.flush_stretch()
        records = agent.steps.records
        while records:
            record = records.popleft()
            for r in (record,) if len(record) != 5 else agent.steps.run_records(record):
                ring.push(ItemKind.STEP, sampling.step_item(r, agent.device_name))
        events = self.events
        while events:
            kind, t, data = events.popleft()
            ring.push(ItemKind.EVENT, {"t": t, "event": kind, "data": data})
        modules = agent.module_sampler.items
        while modules:
            ring.push(ItemKind.MODULES, modules.popleft())

    def emit(self, kind: str, data: dict) -> None:
        self.events.append((kind, time.time(), data))
