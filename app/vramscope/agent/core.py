"""The agent: one daemon thread that samples and serves; cheap hooks on the training thread.

The training thread only ever runs the hooks (optimizer step pre/post-hooks,
model forward pre/post-hooks, the OOM observer): they read one allocator
counter and append raw figures to bounded queues. The agent thread drains
those queues into the ring, samples the allocator statistics a few times per
second together with the tensor buckets at that same instant
(agent/buckets.py: the owners' list is cached and refreshed within a walk
budget, the bytes are summed at each sample), and answers the monitor.

The agent thread never reads ``.grad`` (agent/grads.py: in PyTorch that read
races with ``zero_grad`` and can crash the process). Its gradient figure is
the ledger of gradient storages the training thread has noted; while that
ledger may lack the gradients of a running backward, the sample is taken by
the training thread at its next hook instead (agent/handoff.py). Every error
in the agent is caught and counted; the training never sees one (nor a
warning).
"""

from __future__ import annotations

import collections
import logging
import os
import sys
import threading
import time
import weakref

from vramscope.agent import instant, oom, paths, postmortem, requests, sampling
from vramscope.agent.allocator_watch import AllocatorWatch
from vramscope.agent.site_recorder import SiteRecorder
from vramscope.agent.backward import BackwardWatch
from vramscope.agent.buckets import GRADIENTS_UNKNOWN, Owners, collect, where_of
from vramscope.agent.grads import GradLedger
from vramscope.agent.handoff import Handoff
from vramscope.agent.input_shape import InputShape
from vramscope.agent.lastwords import LastWords
from vramscope.agent.model_hooks import ModelDiscovery, ModelHooks
from vramscope.agent.model_info import describe_models
from vramscope.agent.module_sampler import ModuleSampler
from vramscope.agent.outside_events import OutsideEvents
from vramscope.agent.protocol import ItemKind
from vramscope.agent.phases import PhaseTracker
from vramscope.agent.ring import ItemRing
from vramscope.agent.server import AgentServer
from vramscope.agent.sharded import Sharding
from vramscope.agent.stats import StatsReader
from vramscope.agent.steps import StepTracker

log = logging.getLogger(__name__)

from vramscope.agent import DEFAULT_INTERVAL, MIN_INTERVAL  # defined in the package (no torch there)

WALK_BUDGET = 0.002  # finding the owners (the module walk) may take at most 0.2 % of wall time
HANDOFF_STEPS = 3.0  # the agent thread waits this many step times for a training hook to take its sample
HANDOFF_WAIT = 5.0  # seconds it waits before the first step's duration is known
MIN_HANDOFF_WAIT = 0.05


def _say_once(text: str) -> None:
    """One line on the training process's stderr (logging may be configured away)."""
    try:
        print(text, file=sys.stderr, flush=True)
    except Exception:  # a closed stderr: nothing to say it on
        pass


class Agent:
    def __init__(
        self,
        interval: float = DEFAULT_INTERVAL,
        provider=None,
        runtime_dir: str | None = None,
        ring_caps: dict | None = None,
        discover: bool = True,
        final_dump: bool = True,
    ):
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
        self.ledger = GradLedger()  # the gradients alive, as integers for the agent thread
        self.backward = BackwardWatch(self.ledger)  # every backward marks the ledger stale first
        # (why activations + temporaries are not known, why gradients are not known)
        self.tensor_notes: tuple[str | None, str] = (None, GRADIENTS_UNKNOWN)
        self.last_words = LastWords(self._atexit)  # at exit and on SIGTERM: the final dump
        self._rediscover_layout: tuple | None = None  # the layout discovery was re-armed for
        self.handoff = Handoff(self._sample_for_agent, self._note_between_statements)
        self.phases = PhaseTracker(dict, self._emit, name=self._device_name)
        self.steps = StepTracker(
            on_boundary=self._on_step_boundary,
            phases=self.phases,
            handoff=self.handoff,
            ledger=self.ledger,
            resync=self._resync,
        )
        if provider is not None:
            self._set_reader(StatsReader(provider, min_gap=min(0.25, self.interval / 2)))
        self.outside_events = OutsideEvents(self._emit)  # process-group init, torch.compile
        self.sharding = Sharding()  # FSDP2's unsharded copies, DDP's gradient buckets
        self.input_shape = InputShape()  # the micro-batch (and sequence) measured at
        self.model_hooks = ModelHooks(
            self._emit,
            phases=self.phases,
            steps_done=lambda: self.steps.count,
            ledger=self.ledger,
            handoff=self.handoff,
        )
        self.module_sampler = ModuleSampler(lambda: self.steps.count)
        self.module_sampler.optimizers = self.optimizers
        self.steps.on_quiet = self.model_hooks.set_quiet  # quiet steps: no forward post-hooks
        self.module_sampler.driven = True  # its step end is the step tracker's (quiet steps skip it)
        self.steps.after_full, self.steps.quiet_cap = (
            self.module_sampler.after_step,
            self.module_sampler.quiet_cap,
        )
        self.discovery = (
            ModelDiscovery(self.watch_models, on_first_call=self._first_forward) if discover else None
        )
        self._events: collections.deque = collections.deque(maxlen=4096)  # (kind, wall time, data)
        self._owners: Owners | None = None  # the cached walk: whose tensors count
        self.measured: Owners | None = None  # the owners the last buckets were measured from
        self._tensors: dict[str, dict[str, int | None]] | None = None  # the tensor buckets, last measured
        self.last_taken_by: str | None = None  # which thread took the last sample
        self.handoff_wait: float | None = None  # seconds; None: HANDOFF_STEPS step times
        self._model_info: list[dict] = []  # per registered model: sizes, dtype, optimizer (the walk)
        self._walk_lock = threading.Lock()
        self._walk_due = True  # something was registered: walk at the next sample
        self._layout: tuple | None = None  # what the last walk saw (see _layout_now)
        self._next_walk = 0.0  # monotonic time of the next routine walk
        self.last_walk_seconds: float | None = None
        self.last_measure_seconds: float | None = None
        self.walks = 0
        self._last_num_ooms: dict[str, int] = {}
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
        self.allocator = AllocatorWatch(self)  # the segments, every few seconds (agent thread)
        self.oom_reports: list[dict] = []  # OOM post-mortems, said on stderr at exit
        self.sites = SiteRecorder(self)  # allocation sites for N steps, on demand

    # -- registration (any thread) -------------------------------------------------------
    def watch(self, model=None, optimizer=None) -> None:
        """Register (the caller's thread: the training thread, where ``.grad`` may be read)."""
        if model is not None:
            self.watch_models([model])
        if optimizer is not None:
            self._add_optimizer(optimizer)
            self.steps.set_primary(optimizer)
        self._walk_due = True
        self._note_here()

    def _note_here(self) -> None:
        """On the training thread: find the owners and note their gradients now."""
        try:
            owners = self._owners = collect(self.models(), self.optimizers())
            self.ledger.note_all(owners.params, owners.devices)
            self.backward.cover(owners.params, owners.key)
        except Exception as exc:
            self._error(exc)

    def watch_models(self, models) -> None:
        for m in models:
            if id(m) in self._model_ids:
                continue
            self._model_ids.add(id(m))
            self._models.append(weakref.ref(m))
            try:
                self.model_hooks.attach(m)
                self.model_hooks.quiet_also(m, self.module_sampler.attach(m) + self.input_shape.attach(m))
            except Exception as exc:
                self._error(exc)
        if self.discovery is not None and self._models:
            self.discovery.finish()
        self.steps.pre_every_step = not self._models  # a model's forward hook marks the ledger stale
        self.steps.place_pre_hook()
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
                from vramscope.agent.stats import default_provider

                provider = default_provider()
            self._set_reader(StatsReader(provider, min_gap=min(0.25, self.interval / 2)))
        self.steps.install()
        if self.discovery is not None and not self._models:
            self.discovery.install()
            self.steps.discovering = True  # every step checks whether discovery is done
        self.oom_observer_attached = oom.attach_observer(self._on_oom)
        self.outside_events.install()
        self._thread = threading.Thread(target=self._run, name="vramscope-agent", daemon=True)
        self._thread.start()
        if self._final_dump:
            self.last_words.arm()

    def stop(self, timeout: float = 2.0) -> None:
        """Remove the hooks, write the final dump, close the socket."""
        self._stop.set()
        t = self._thread
        if t is not None and t is not threading.current_thread():
            t.join(timeout)
        self.steps.uninstall()
        self.model_hooks.detach_all()
        self.module_sampler.detach_all()
        self.input_shape.detach_all()
        self.outside_events.uninstall()
        self.backward.drop()
        if self.discovery is not None:
            self.discovery.finish()
        if self._final_dump:
            self.last_words.disarm()
            self.last_words.at_exit()
        elif self.server is not None:
            self.server.close()
            self.server = None

    def wait_started(self, timeout: float = 5.0) -> bool:
        return self._started.wait(timeout)

    def _atexit(self) -> None:
        """The final sample and dump, the socket closed (agent/lastwords.py calls it once,
        in the starting process only)."""
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
            postmortem.say_at_exit(self)  # the OOM post-mortems, a dozen lines each

    def disable_in_child(self) -> None:
        """After fork: the thread did not survive; drop the hooks, serve nothing."""
        self._thread = None
        self.server = None
        try:
            self.steps.uninstall()
            self.model_hooks.detach_all()
            self.module_sampler.detach_all()
            self.input_shape.detach_all()
            self.backward.drop()
            if self.discovery is not None:
                self.discovery.finish()
        except Exception:
            pass

    # -- the agent thread ------------------------------------------------------------------------
    def _run(self) -> None:
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
            ticks = self.identity.get("start_ticks") or 0
            self.socket_path = os.path.join(directory, paths.socket_name(os.getpid(), ticks))
            self.server = AgentServer(self.socket_path, self.handle_request)
        except Exception as exc:  # no socket: keep sampling (a final dump may still be read)
            self.server_error = str(exc)
            self._error(exc)
            _say_once(
                f"vramscope agent: no monitor connection for this run ({exc}); training goes on, unwatched"
            )
        self._started.set()
        next_due = time.monotonic()
        handoff = self.handoff
        while not self._stop.is_set():
            now = time.monotonic()
            if handoff.wanted:
                # the ledger became current (noted between statements), or no hook came in time
                # (then the gradients are not known): the agent thread samples itself
                if (not self.ledger.stale or now >= handoff.deadline) and handoff.withdraw():
                    self._sample_here(drain=True)
            elif now >= next_due:
                self._agent_turn(now)
                self.allocator.maybe(now)
                self.sites.on_turn(now)
                next_due += self.interval
                if next_due < now:
                    next_due = now + self.interval
            else:
                self._drain()
            until = min(handoff.deadline, now + 0.02) if handoff.wanted else next_due
            wait = max(0.0, min(until - time.monotonic(), 0.25))
            if self.server is not None:
                self.server.poll(wait)
            else:
                self._stop.wait(wait)

    def _agent_turn(self, now: float) -> None:
        """A sample is due: take it here, or ask the training thread while the gradient
        ledger may lack gradients (agent/handoff.py)."""
        try:
            self._drain()
            if self._walk_due or now >= self._next_walk or self._layout_now() != self._layout:
                self._walk()
            owners = self._owners
            if owners is not None and owners.params and self.ledger.stale:
                wait = self.handoff_wait
                if wait is None:
                    step = self.steps.last_duration
                    wait = max(MIN_HANDOFF_WAIT, HANDOFF_STEPS * step) if step else HANDOFF_WAIT
                self.handoff.ask(now + wait)
                return
        except Exception as exc:
            self._error(exc)
        self._sample_here(drain=False)

    def sample_once(self) -> dict | None:
        """One sample now, taken on the calling thread. Any thread but the agent's reads
        ``.grad`` -- call it from the training thread (or an autograd hook); on the
        agent thread the gradients come from the ledger."""
        return self._sample_here(drain=True)

    def _sample_here(self, drain: bool) -> dict | None:
        return self._sample(read_grads=threading.current_thread() is not self._thread, drain=drain)

    def _sample_for_agent(self) -> None:
        """The training thread, at a hook: the sample the agent thread asked for."""
        self._sample(read_grads=True, drain=False)

    def _note_between_statements(self) -> None:
        """The main thread, between two statements, while a sample waits (agent/handoff.py):
        note the gradients (current when no forward's backward is pending)."""
        owners, ledger = self._owners, self.ledger
        if owners is not None:
            ledger.note_all(owners.params, owners.devices, settled=not ledger.forward_pending)
            self._settle(owners)

    def _sample(self, read_grads: bool, drain: bool) -> dict | None:
        """Drain the hooks' queues (``drain``), read the allocator and the tensors at one
        instant, push the sample to the ring."""
        try:
            if drain:
                self._drain()
            now = time.time()
            if (
                self._walk_due
                or (not read_grads and time.monotonic() >= self._next_walk)
                or self._layout_now() != self._layout
            ):
                self._walk()
            if read_grads:  # the training thread: nothing changes the tensors while it reads
                devices = self.reader.read(ItemKind.SAMPLE) if self.reader is not None else {}
                self._measure(read_grads)  # the tensors at the instant of the allocator's reading
            else:
                devices = self._consistent_read()
            self._check_num_ooms(devices, now)
            self.last_taken_by = "training thread" if read_grads else "agent thread"
            item = sampling.sample_item(self, now, devices)
            self.ring.push(ItemKind.SAMPLE, item)
            self.samples += 1
            return item
        except Exception as exc:
            self._error(exc)
            return None

    def _drain(self) -> None:
        records = self.steps.records
        while records:
            self.ring.push(ItemKind.STEP, sampling.step_item(records.popleft(), self._device_name))
        events = self._events
        while events:
            kind, t, data = events.popleft()
            self.ring.push(ItemKind.EVENT, {"t": t, "event": kind, "data": data})
        modules = self.module_sampler.items
        while modules:
            self.ring.push(ItemKind.MODULES, modules.popleft())

    def _emit(self, kind: str, data: dict) -> None:
        self._events.append((kind, time.time(), data))

    def _error(self, exc: BaseException) -> None:
        self.errors += 1
        self.last_error = f"{type(exc).__name__}: {exc}"

    # -- buckets --------------------------------------------------------------------------------
    def _on_step_boundary(self, optimizer) -> None:
        """Training thread, at a step of another optimizer than the previous step's (and at
        every step while discovery runs): register it, end discovery."""
        if optimizer is not None and id(optimizer) not in self._optimizer_ids:
            self._add_optimizer(optimizer)
        if self.discovery is not None and self.discovery.active:
            self.discovery.finish()
        self.steps.discovering = self.discovery is not None and self.discovery.active

    def _resync(self) -> None:
        """Training thread, at a step boundary: note every gradient in the ledger (settled)."""
        owners = self._owners
        if owners is None:
            return
        try:
            self.ledger.resync(owners.params, owners.devices, self.steps.last_duration)
            self._settle(owners)
        except Exception as exc:
            self._error(exc)

    def _settle(self, owners) -> None:
        """After the training thread noted the gradients of ``owners``: if a walk on the agent
        thread found other parameters meanwhile, the ledger lacks theirs -- stale again; and
        it stays stale until their backward is watched (the next step boundary), for a
        backward through them would make gradients unannounced."""
        if self._owners is not owners or self.backward.covered != owners.key:
            self.ledger.stale = True

    def _on_new_layout(self) -> None:
        """Training thread, at the step boundary after a walk found new parameters: watch
        their backward; an optimizer training parameters of a model nobody registered (a
        GAN's second model, a model met after discovery ended) re-arms discovery for a
        step, once per layout, so its buffers count as weights."""
        owners = self._owners
        if owners is None:
            return
        self.backward.cover(owners.params, owners.key)
        discovery = self.discovery
        if owners.unowned and discovery is not None and not discovery.active:
            layout = tuple(id(p) for p in owners.params)
            if layout != self._rediscover_layout:
                self._rediscover_layout = layout
                discovery.install()
                self.steps.discovering = True

    def _layout_now(self) -> tuple:
        """A cheap fingerprint of what a walk would find: the optimizers' groups and
        parameter counts, the models' top-level children, parameters and buffers.
        A change (``add_param_group``, a module added) makes the next sample walk."""
        out = []
        for o in self.optimizers():
            groups = getattr(o, "param_groups", ())
            out.append(
                (
                    id(o),
                    len(groups),
                    sum(len(g.get("params", ())) for g in groups),
                    where_of(groups[0].get("params") if groups else None),
                )
            )
        for m in self.models():
            out.append(
                (
                    id(m),
                    len(m._modules),
                    len(m._parameters),
                    len(m._buffers),
                    where_of(next(m.parameters(), None)),
                )
            )
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
            owners = collect(models, optimizers, swap=self.sharding.walk(models))
            before = self._owners
            self._owners = owners  # (before the ledger goes stale: see _settle)
            if before is None or before.key != owners.key or before.unowned != owners.unowned:
                self.ledger.stale = True  # parameters the ledger has not seen (late, or a new model)
                self.steps.due = self._on_new_layout  # hook their backward (training thread)
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

    def _consistent_read(self) -> dict:
        return instant.consistent_read(self)

    def _measure(self, read_grads: bool) -> None:
        instant.measure_now(self, read_grads)

    def _set_reader(self, reader: StatsReader) -> None:
        self.reader = reader
        self.steps.reader = reader
        self.phases.read = reader.allocated_noted  # the hooks call the provider (and raise the peaks)

    def _device_name(self, index: int) -> str:
        return self.reader.name(index) if self.reader is not None else str(index)

    def _first_forward(self) -> None:
        self.phases.mark_loaded(self.steps.count)

    def buckets_now(self, devices: dict) -> dict:
        return sampling.buckets_now(self, devices)

    # -- OOM ------------------------------------------------------------------------------------------
    def _on_oom(self, device, alloc, device_allocated, device_free) -> None:
        """The allocator's OOM observer (training thread, GIL held, allocator unlocked)."""
        try:
            self.record_oom(int(device), int(alloc), int(device_free), source="observer")
        except Exception as exc:
            self._error(exc)

    def record_oom(
        self, device: int | None, requested: int | None, device_free: int | None, source: str
    ) -> None:
        oom.record(self, device, requested, device_free, source)

    def _check_num_ooms(self, devices: dict, now: float) -> None:
        oom.check_num_ooms(self, devices)

    # -- requests (agent thread) --------------------------------------------------------------------
    def handle_request(self, request: dict) -> bytes:
        return requests.answer(self, request)

    # -- the last words ---------------------------------------------------------------------------------
    def write_final(self) -> str | None:
        """At exit: the whole ring to <runtime dir>/agent-<pid>-<ticks>.final.json (0600)."""
        return requests.write_final(self)
