"""The agent: one daemon thread that samples and serves; cheap hooks on the training thread.

The training thread only ever runs the hooks (optimizer step pre/post-hooks,
model forward pre/post-hooks, the end-of-backward callback, the OOM
observer): they read one allocator counter and append to bounded queues.
The agent thread drains those queues into the ring, reads the allocator
statistics a few times per second together with the tensor buckets at that
same instant (agent/buckets.py: the owners' list is cached and refreshed
within a walk budget, the bytes are summed at each sample), and answers the
monitor. Every error in the agent is caught and counted; the training never
sees one (nor a warning).
"""

from __future__ import annotations

import atexit
import collections
import logging
import os
import threading
import time
import weakref

from vramscope.agent import oom, paths, requests
from vramscope.agent.buckets import GRADIENTS, Owners, collect, full_buckets, measure
from vramscope.agent.model_hooks import ModelDiscovery, ModelHooks
from vramscope.agent.model_info import describe_models
from vramscope.agent.protocol import TENSOR_BUCKETS, EventKind, ItemKind
from vramscope.agent.phases import PhaseTracker
from vramscope.agent.ring import ItemRing
from vramscope.agent.server import AgentServer
from vramscope.agent.stats import StatsReader
from vramscope.agent.steps import StepTracker

log = logging.getLogger(__name__)

from vramscope.agent import DEFAULT_INTERVAL, MIN_INTERVAL  # defined in the package (no torch there)
WALK_BUDGET = 0.01  # finding the owners (the module walk) may take at most 1 % of wall time


class Agent:
    def __init__(self, interval: float = DEFAULT_INTERVAL, provider=None, runtime_dir: str | None = None,
                 ring_caps: dict | None = None, discover: bool = True, final_dump: bool = True):
        self.interval = max(MIN_INTERVAL, float(interval))
        self.identity = paths.identity()
        self._provider = provider
        self._runtime_dir = runtime_dir
        self.ring = ItemRing(ring_caps)
        self._models: list = []  # weakrefs
        self._optimizers: list = []
        self._model_ids: set[int] = set()
        self._optimizer_ids: set[int] = set()
        self.reader: StatsReader | None = None
        if provider is not None:
            self.reader = StatsReader(provider, min_gap=min(0.25, self.interval / 2))
        self.phases = PhaseTracker(self._read_allocated, self._emit)
        self.steps = StepTracker(on_boundary=self._on_step_boundary, read_stats=self._read_for_step,
                                 phases=self.phases)
        self.model_hooks = ModelHooks(self._emit, phases=self.phases, steps_done=lambda: self.steps.count)
        self.discovery = ModelDiscovery(self.watch_models, on_first_call=self._first_forward) \
            if discover else None
        self._events: collections.deque = collections.deque(maxlen=4096)  # (kind, wall time, data)
        self._owners: Owners | None = None  # the cached walk: whose tensors count
        self._tensors: dict[str, dict[str, int]] | None = None  # the tensor buckets, last measured
        self._grads: dict[str, int] = {}  # gradients per device, last read outside backward
        self._model_info: list[dict] = []  # per registered model: sizes, dtype, optimizer (the walk)
        self._walk_lock = threading.Lock()
        self._walk_due = True  # something was registered: walk at the next sample
        self._layout: tuple | None = None  # what the last walk saw (see _layout_now)
        self._next_walk = 0.0  # monotonic time of the next routine walk
        self.last_walk_seconds: float | None = None
        self.last_measure_seconds: float | None = None
        self.walks = 0
        self._last_num_ooms: dict[str, int] = {}
        self._oom_observed_at = 0.0
        self.errors = 0
        self.last_error: str | None = None
        self.samples = 0
        self.server: AgentServer | None = None
        self.socket_path: str | None = None
        self.server_error: str | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._started = threading.Event()
        self._final_dump = final_dump
        self.oom_observer_attached = False

    # -- registration (any thread) -------------------------------------------------------
    def watch(self, model=None, optimizer=None) -> None:
        if model is not None:
            self.watch_models([model])
        if optimizer is not None:
            self._add_optimizer(optimizer)
            self.steps.set_primary(optimizer)
        self._walk_due = True

    def watch_models(self, models) -> None:
        for m in models:
            if id(m) in self._model_ids:
                continue
            self._model_ids.add(id(m))
            self._models.append(weakref.ref(m))
            try:
                self.model_hooks.attach(m)
            except Exception as exc:
                self._error(exc)
        if self.discovery is not None and self._models:
            self.discovery.finish()
        self._walk_due = True

    def _add_optimizer(self, optimizer) -> None:
        if id(optimizer) not in self._optimizer_ids:
            self._optimizer_ids.add(id(optimizer))
            self._optimizers.append(weakref.ref(optimizer))
            self._walk_due = True

    def models(self) -> list:
        return [m for m in (r() for r in self._models) if m is not None]

    def optimizers(self) -> list:
        return [o for o in (r() for r in self._optimizers) if o is not None]

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        if self._thread is not None:
            return
        if self.reader is None:
            provider = self._provider
            if provider is None:
                from vramscope.agent.stats import TorchCudaProvider
                provider = TorchCudaProvider()
            self.reader = StatsReader(provider, min_gap=min(0.25, self.interval / 2))
        self.steps.install()
        if self.discovery is not None and not self._models:
            self.discovery.install()
        self.oom_observer_attached = oom.attach_observer(self._on_oom)
        self._thread = threading.Thread(target=self._run, name="vramscope-agent", daemon=True)
        self._thread.start()
        if self._final_dump:
            atexit.register(self._atexit)

    def stop(self, timeout: float = 2.0) -> None:
        """Remove the hooks, write the final dump, close the socket."""
        self._stop.set()
        t = self._thread
        if t is not None and t is not threading.current_thread():
            t.join(timeout)
        self.steps.uninstall()
        self.model_hooks.detach_all()
        if self.discovery is not None:
            self.discovery.finish()
        if self._final_dump:
            atexit.unregister(self._atexit)
            self._atexit()
        elif self.server is not None:
            self.server.close()
            self.server = None

    def wait_started(self, timeout: float = 5.0) -> bool:
        return self._started.wait(timeout)

    def _atexit(self) -> None:
        try:
            self._stop.set()
            if self._thread is not None and self._thread is not threading.current_thread():
                self._thread.join(1.0)
            if self._started.is_set():
                self.sample_once()
                self.write_final()
        except Exception:
            pass
        finally:
            if self.server is not None:
                self.server.close()
                self.server = None

    def disable_in_child(self) -> None:
        """After fork: the thread did not survive; drop the hooks, serve nothing."""
        self._thread = None
        self.server = None
        try:
            self.steps.uninstall()
            self.model_hooks.detach_all()
            if self.discovery is not None:
                self.discovery.finish()
        except Exception:
            pass

    # -- the agent thread ------------------------------------------------------------------------
    def _run(self) -> None:
        try:
            directory, refused = ((self._runtime_dir, []) if self._runtime_dir
                                  else paths.choose_agent_dir())
            if refused:
                log.warning("vramscope agent: %s; listening in %s instead (the monitor looks "
                            "there too)", "; ".join(refused), directory)
            paths.secure_dir(directory)
            paths.remove_stale(directory)
            ticks = self.identity.get("start_ticks") or 0
            self.socket_path = os.path.join(directory, paths.socket_name(os.getpid(), ticks))
            self.server = AgentServer(self.socket_path, self.handle_request)
        except Exception as exc:  # no socket: keep sampling (a final dump may still be read)
            self.server_error = str(exc)
            self._error(exc)
        self._started.set()
        next_due = time.monotonic()
        while not self._stop.is_set():
            now = time.monotonic()
            if now >= next_due:
                self.sample_once()
                next_due += self.interval
                if next_due < now:
                    next_due = now + self.interval
            wait = max(0.0, min(next_due - time.monotonic(), 0.25))
            if self.server is not None:
                self.server.poll(wait)
            else:
                self._stop.wait(wait)

    def sample_once(self) -> dict | None:
        """One sample: drain the hooks' queues, read the allocator, push to the ring."""
        try:
            self._drain()
            now = time.time()
            if self._walk_due or time.monotonic() >= self._next_walk or self._layout_now() != self._layout:
                self._walk()
            devices = self.reader.read(ItemKind.SAMPLE) if self.reader is not None else {}
            self._measure()  # the tensors at the instant of the allocator's reading
            self._check_num_ooms(devices, now)
            item = self._sample_item(now, devices)
            self.ring.push(ItemKind.SAMPLE, item)
            self.samples += 1
            return item
        except Exception as exc:
            self._error(exc)
            return None

    def _sample_item(self, now: float, devices: dict) -> dict:
        tensors = self._tensors
        registered = bool(self._models or self._optimizers)
        out = []
        names = list(devices)
        if tensors:
            names += [d for d in tensors if d not in devices]
        for name in names:
            fields = devices.get(name)
            per = None
            if registered:
                per = (tensors or {}).get(name) if tensors is not None else None
                if per is None and tensors is not None:
                    per = dict.fromkeys(TENSOR_BUCKETS, 0)
            allocated = fields.get("allocated") if fields else None
            reserved = fields.get("reserved") if fields else None
            entry = {"device": name}
            if fields:
                entry.update(fields)
            entry["buckets"], note = full_buckets(per, allocated, reserved)
            if note is not None:
                entry["buckets_note"] = note
            out.append(entry)
        return {"t": now, "step": self.steps.count, "devices": out,
                "settings": self.reader.settings() if self.reader is not None else {},
                "models": self._model_info,
                "agent": {"errors": self.errors + self.steps.errors + self.phases.errors,
                          "walks": self.walks, "phases_every": self.phases.every,
                          "walk_seconds": self.last_walk_seconds,
                          "measure_seconds": self.last_measure_seconds,
                          "models": len(self._models), "optimizers": len(self._optimizers),
                          "oom_observer": self.oom_observer_attached}}

    def _drain(self) -> None:
        records = self.steps.records
        while records:
            count, t, duration, source, devices, *more = records.popleft()
            item = {"t": t, "step": count, "duration": duration, "source": source,
                    "devices": _step_devices(devices)}
            if more and more[0] is not None:
                phases, order, times = more[0]
                item["phases"] = phases  # device -> {forward, backward, optimizer}; None: not measured
                item["phase_order"] = order
                item["phase_times"] = times
            self.ring.push(ItemKind.STEP, item)
        events = self._events
        while events:
            kind, t, data = events.popleft()
            self.ring.push(ItemKind.EVENT, {"t": t, "event": kind, "data": data})

    def _emit(self, kind: str, data: dict) -> None:
        self._events.append((kind, time.time(), data))

    def _error(self, exc: BaseException) -> None:
        self.errors += 1
        self.last_error = f"{type(exc).__name__}: {exc}"

    # -- buckets --------------------------------------------------------------------------------
    def _on_step_boundary(self, optimizer) -> None:
        """Training thread, after each optimizer step: nothing heavier than bookkeeping."""
        if optimizer is not None:
            self._add_optimizer(optimizer)
        if self.discovery is not None and self.discovery.active:
            self.discovery.finish()
        owners = self._owners
        if owners is not None and not self.phases.forwards_seen:
            try:
                self._grads = {d: per[GRADIENTS] for d, per in measure(owners)[0].items()}
            except Exception as exc:
                self._error(exc)

    def _layout_now(self) -> tuple:
        """A cheap fingerprint of what a walk would find: the optimizers' groups and
        parameter counts, the models' top-level children, parameters and buffers.
        A change (``add_param_group``, a module added) makes the next sample walk."""
        out = []
        for o in self.optimizers():
            groups = getattr(o, "param_groups", ())
            out.append((id(o), len(groups), sum(len(g.get("params", ())) for g in groups)))
        for m in self.models():
            out.append((id(m), len(m._modules), len(m._parameters), len(m._buffers)))
        return tuple(out)

    def _walk(self) -> None:
        """Find the owners (module tree, optimizer groups) and describe the models.

        Agent thread: at the first sample after a registration or a change of
        ``_layout_now``, and otherwise as often as WALK_BUDGET allows (every
        sample for a model whose walk takes under 1 % of the interval).
        """
        if not self._walk_lock.acquire(blocking=False):
            return
        try:
            t0 = time.perf_counter()
            models, optimizers = self.models(), self.optimizers()
            self._walk_due = False
            self._layout = self._layout_now()
            self._owners = collect(models, optimizers)
            self._model_info = describe_models(models, optimizers)
            cost = time.perf_counter() - t0
            self.last_walk_seconds = cost
            self.walks += 1
            self._next_walk = time.monotonic() + cost / WALK_BUDGET
        except Exception as exc:  # e.g. a module dict changed while we walked: next sample
            self._walk_due = True
            self._error(exc)
        finally:
            self._walk_lock.release()

    def _measure(self) -> None:
        """The tensor buckets now, from the cached owners (None before any registration)."""
        owners = self._owners
        if owners is None:
            self._tensors = {} if (self._models or self._optimizers) else None
            return
        t0 = time.perf_counter()
        phases = self.phases
        try:
            runs = phases.backward_runs
            # without a registered model's forward, backward cannot be seen: the gradients
            # are then read on the training thread after each step (_on_step_boundary)
            tensors, grads_read = measure(owners, lambda: phases.forwards_seen and not phases.in_backward)
            if grads_read and phases.backward_runs == runs:
                self._grads = {d: per[GRADIENTS] for d, per in tensors.items()}
            else:  # backward may be running: the gradients as last read where that is safe
                for d, per in tensors.items():
                    per[GRADIENTS] = self._grads.get(d, 0)
            self._tensors = tensors
        except Exception as exc:  # a state dict changed size under us: the next sample
            self._tensors = None
            self._error(exc)
        self.last_measure_seconds = time.perf_counter() - t0

    def _read_allocated(self) -> dict:
        return self.reader.allocated_now() if self.reader is not None else {}

    def _first_forward(self) -> None:
        self.phases.mark_loaded(self.steps.count)

    def _read_for_step(self) -> dict | None:
        """Every step: allocated right after it (the phase hook's reading of this
        very update, or one allocator counter read now -- microseconds, never
        rate-limited); the peak since the previous step where the rate-limited
        full read is due (None otherwise)."""
        if self.reader is None:
            return None
        try:
            after = self.phases.after_step
            if after is None:
                after = self.reader.allocated_now()
            full = self.reader.try_read(ItemKind.STEP) or {}
            out = {name: {"allocated": value, "peak_allocated": (full.get(name) or {}).get("peak_allocated")}
                   for name, value in after.items()}
            for name, fields in full.items():
                out.setdefault(name, {"allocated": fields.get("allocated"),
                                      "peak_allocated": fields.get("peak_allocated")})
            return out or None
        except Exception as exc:
            self._error(exc)
            return None

    def buckets_now(self, devices: dict) -> dict:
        tensors = self._tensors or {}
        registered = bool(self._models or self._optimizers)
        out = {}
        for name in set(devices) | set(tensors):
            fields = devices.get(name) or {}
            per = tensors.get(name, dict.fromkeys(TENSOR_BUCKETS, 0)) if registered else None
            out[name] = full_buckets(per, fields.get("allocated"), fields.get("reserved"))[0]
        return out

    # -- OOM ------------------------------------------------------------------------------------------
    def _on_oom(self, device, alloc, device_allocated, device_free) -> None:
        """The allocator's OOM observer (training thread, GIL held, allocator unlocked)."""
        try:
            self.record_oom(int(device), int(alloc), int(device_free), source="observer")
        except Exception as exc:
            self._error(exc)

    def record_oom(self, device: int | None, requested: int | None, device_free: int | None,
                   source: str) -> None:
        self._oom_observed_at = time.monotonic()
        provider = self.reader.provider if self.reader is not None else None
        devices = self.reader.read(EventKind.OOM) if self.reader is not None else {}
        if source == "observer":
            # num_ooms already counts this one: the sampler must not report it twice
            for name, fields in devices.items():
                if fields.get("num_ooms") is not None:
                    self._last_num_ooms[name] = max(fields["num_ooms"], self._last_num_ooms.get(name, 0))
        try:  # the instant matters: a fresh walk (it allocates nothing on the device)
            self._owners = collect(self.models(), self.optimizers())
            self._tensors = measure(self._owners)[0]  # the training thread: gradients readable
        except Exception as exc:
            self._error(exc)
        snapshot = path = None
        total = None
        if provider is not None:
            try:
                total = provider.device_info(device).get("total") if device is not None else None
                snapshot = provider.snapshot(device)
                if provider.history_enabled():
                    path = oom.dump_snapshot(snapshot, os.getpid())
            except Exception as exc:
                self._error(exc)
        data = oom.build_oom_event(device, requested, device_free, total, devices,
                                   self.buckets_now(devices), snapshot, path, source)
        self._emit(EventKind.OOM, data)

    def _check_num_ooms(self, devices: dict, now: float) -> None:
        for name, fields in devices.items():
            n = fields.get("num_ooms")
            if n is None:
                continue
            prev = self._last_num_ooms.get(name)
            self._last_num_ooms[name] = max(n, prev or 0)
            if prev is not None and n > prev:
                index = int(name.split(":")[1]) if ":" in name else None
                free = None
                total = fields.get("total")
                self._emit(EventKind.OOM, oom.build_oom_event(
                    index, None, free, total, devices, self.buckets_now(devices), None, None,
                    "num_ooms"))

    # -- requests (agent thread) --------------------------------------------------------------------
    def handle_request(self, request: dict) -> bytes:
        return requests.answer(self, request)

    # -- the last words ---------------------------------------------------------------------------------
    def write_final(self) -> str | None:
        """At exit: the whole ring to <runtime dir>/agent-<pid>-<ticks>.final.json (0600)."""
        return requests.write_final(self)


def _step_devices(devices: dict | None) -> dict | None:
    if not devices:
        return None
    return {name: {"allocated_after": f.get("allocated"), "peak_allocated": f.get("peak_allocated")}
            for name, f in devices.items()}
