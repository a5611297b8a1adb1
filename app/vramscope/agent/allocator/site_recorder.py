"""Record allocation sites for N steps, on demand, then off again.

Asked by a monitor (``Op.RECORD_SITES``: the agents tab's button, ``vramscope
sites PID --steps N``) or, for headless runs, by ``VRAMSCOPE_SITES_STEPS=N`` in
the training process's environment. It turns on
``torch.cuda.memory._record_memory_history(max_entries=..., stacks="python")``
(PyTorch's "Understanding CUDA Memory Usage": Python frames only, the cheap
kind), counts N steps, takes the snapshot, turns history off, writes the
snapshot as a memory_viz pickle (protocol 4, 0600; ``vramscope export`` copies
it beside the export) and sends a SITES event: the top allocation sites by
bytes alive at the peak of the recorded steps (agent/allocator/sites.py).

While it runs, the overhead is measured: the median step time while recording
against the median of the steps before it, and per allocation (that difference
over the allocations the allocator counted, ``allocation.all.allocated``),
sent as SITES events of state "recording" at most once a second.

Not available says why: a CPU-only torch, no CUDA device in use, a torch
without ``_record_memory_history``, history already on (the user records it
themselves: it is theirs to turn off, never ours). Everything runs on the
agent thread; an error ends the recording with its reason, never the run.
"""

from __future__ import annotations

import collections
import os
import statistics
import time

from vramscope.agent.allocator import sites
from vramscope.agent.protocol import EventKind

ENV_STEPS = "VRAMSCOPE_SITES_STEPS"
DEFAULT_STEPS = 3
MAX_STEPS = 1000
MAX_ENTRIES = 100_000  # trace events kept (PyTorch's ring); several KB each with frames
PROGRESS_EVERY = 1.0  # seconds between "recording" events
BASELINE_STEPS = 20
ALLOCS_KEY = "allocation.all.allocated"


def unavailable(torch, provider) -> str | None:
    """Why sites cannot be recorded in this process, or None."""
    if torch is None:
        return "torch is not imported in this process"
    if not getattr(getattr(torch, "version", None), "cuda", None) and not getattr(
        getattr(torch, "version", None), "hip", None
    ):
        return "not available: this PyTorch is a CPU-only build (allocation sites are CUDA's)"
    memory = getattr(getattr(torch, "cuda", None), "memory", None)
    if getattr(memory, "_record_memory_history", None) is None:
        return "not available: this torch has no torch.cuda.memory._record_memory_history"
    if provider is None or not provider.devices():
        return "not available: no CUDA device in use by this process yet"
    if provider.history_enabled():
        return "not started: memory history is already being recorded in this process (by its own code)"
    return None


class SiteRecorder:
    """Uses: the ``measurer`` (its reader's provider, the device names), ``steps`` (the
    step count and duration); callables ``emit`` (a SITES event) and ``error``."""

    def __init__(self, measurer, steps, emit, error, torch_module=None):
        self._measurer = measurer
        self._steps = steps
        self._emit_event = emit
        self._error = error
        self.torch_module = torch_module  # the torch it records with (None: imported when asked)
        self.state = "idle"  # idle, recording, done, failed
        self.steps = 0
        self.start_step = 0
        self.max_entries = MAX_ENTRIES
        self.why: str | None = None
        self.pending_env: int | None = _env_steps()
        self._durations: collections.deque = collections.deque(maxlen=BASELINE_STEPS)
        self._during: list[float] = []
        self._last_step = -1
        self._last_progress = 0.0
        self._allocs0: int | None = None
        self.result: dict | None = None

    # -- asked -----------------------------------------------------------------------------------
    def torch(self):
        if self.torch_module is None:
            import torch

            self.torch_module = torch
        return self.torch_module

    def request(self, steps, max_entries=None) -> dict:
        """Start (agent thread, from a request); the reply says what happened."""
        if self.state == "recording":
            return {"ok": False, "error": f"already recording (step {self._done()} of {self.steps})"}
        if not isinstance(steps, int) or isinstance(steps, bool) or not 1 <= steps <= MAX_STEPS:
            return {"ok": False, "error": f"steps must be an integer from 1 to {MAX_STEPS}"}
        if max_entries is not None and (
            not isinstance(max_entries, int)
            or isinstance(max_entries, bool)
            or not 1000 <= max_entries <= 10_000_000
        ):
            return {"ok": False, "error": "max_entries must be an integer from 1000 to 10000000"}
        try:
            why = unavailable(self.torch(), self._measurer.provider())
        except Exception as exc:
            why = f"not available: {type(exc).__name__}: {exc}"
        if why is not None:
            return {"ok": False, "error": why}
        return self._start(steps, max_entries or MAX_ENTRIES)

    def _start(self, steps: int, max_entries: int) -> dict:
        memory = self.torch().cuda.memory
        try:
            try:
                memory._record_memory_history(enabled="all", max_entries=max_entries, stacks="python")
            except TypeError:  # older signature (torch 2.0): no stacks choice
                memory._record_memory_history(True, trace_alloc_max_entries=max_entries)
        except Exception as exc:
            return {"ok": False, "error": f"could not turn on memory history: {type(exc).__name__}: {exc}"}
        self.state, self.steps, self.max_entries, self.why = "recording", steps, max_entries, None
        self.start_step = self._steps.count
        self._during = []
        self._allocs0 = self._allocs()
        self._emit({"state": "recording", "steps": steps, "done_steps": 0, "max_entries": max_entries})
        return {"ok": True, "state": "recording", "steps": steps, "from_step": self.start_step}

    # -- the agent thread's turn ---------------------------------------------------------------------
    def on_turn(self, now: float) -> None:
        try:
            self._note_step()
            if self.pending_env is not None and self.state == "idle":
                provider = self._measurer.provider()
                if provider is not None and provider.devices():
                    steps, self.pending_env = self.pending_env, None
                    reply = self.request(steps)
                    if not reply.get("ok"):
                        self._emit({"state": "failed", "why": reply.get("error")})
            if self.state != "recording":
                return
            if self._done() >= self.steps:
                self.finish()
            elif now - self._last_progress >= PROGRESS_EVERY:
                self._last_progress = now
                self._emit(
                    {"state": "recording", "steps": self.steps, "done_steps": self._done(), **self.overhead()}
                )
        except Exception as exc:
            self._fail(exc)

    def _done(self) -> int:
        return max(0, self._steps.count - self.start_step)

    def _note_step(self) -> None:
        steps = self._steps
        if steps.count != self._last_step:
            self._last_step = steps.count
            d = steps.last_duration
            if d:
                (self._during if self.state == "recording" else self._durations).append(d)

    def _allocs(self) -> int | None:
        provider = self._measurer.provider()
        try:
            total = 0
            for index in provider.devices():
                total += int(provider.memory_stats(index).get(ALLOCS_KEY, 0))
            return total
        except Exception:
            return None

    def overhead(self) -> dict:
        """{"overhead": step time ratio - 1, "us_per_alloc"}: None until measured."""
        before, during = list(self._durations), list(self._during)
        if len(before) < 3 or not during:
            return {"overhead": None, "us_per_alloc": None}
        base, now = statistics.median(before), statistics.median(during)
        allocs = self._allocs()
        per = None
        if allocs is not None and self._allocs0 is not None and allocs > self._allocs0:
            per = max(0.0, (now - base) * len(during) / (allocs - self._allocs0) * 1e6)
        return {"overhead": now / base - 1.0, "us_per_alloc": per}

    def finish(self) -> None:
        """The snapshot, history off, the pickle, the SITES event."""
        torch = self.torch()
        memory = torch.cuda.memory
        try:
            snapshot = memory._snapshot()
        finally:
            memory._record_memory_history(enabled=None)
        path = None
        try:
            from vramscope.agent.oom.oom import dump_snapshot

            path = dump_snapshot(snapshot, os.getpid(), prefix="sites")
        except Exception as exc:
            self._error(exc)
        devices = {}
        for index in self._measurer.provider().devices():
            devices[self._measurer.device_name(index)] = sites.peak_sites(
                snapshot, index, max_entries=self.max_entries
            )
        self.state = "done"
        self.result = {
            "state": "done",
            "steps": self.steps,
            "done_steps": self._done(),
            "snapshot_path": path,
            "devices": devices,
            **self.overhead(),
        }
        self._emit(self.result)

    def _fail(self, exc: BaseException) -> None:
        self._error(exc)
        if self.state == "recording":
            try:
                self.torch().cuda.memory._record_memory_history(enabled=None)
            except Exception:
                pass
        self.state, self.why = "failed", f"{type(exc).__name__}: {exc}"[:200]
        self._emit({"state": "failed", "why": self.why})

    def _emit(self, data: dict) -> None:
        data.setdefault("time", time.time())
        self._emit_event(EventKind.SITES, data)


def _env_steps() -> int | None:
    raw = os.environ.get(ENV_STEPS)
    if not raw:
        return None
    try:
        n = int(raw)
    except ValueError:
        return None
    return n if 1 <= n <= MAX_STEPS else None
