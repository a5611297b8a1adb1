"""The agent: one daemon thread that samples and serves; cheap hooks on the training thread.

The training thread only ever runs the hooks (optimizer step pre/post-hooks,
model forward pre/post-hooks, the OOM observer): they read one allocator
counter and append raw figures to bounded queues. The agent thread drains
those queues into the ring, samples the allocator statistics a few times per
second together with the tensor buckets at that same instant
(agent/tensors/buckets.py: the owners' list is cached and refreshed within a walk
budget, the bytes are summed at each sample), and answers the monitor.

The agent thread never reads ``.grad`` (agent/tensors/grads.py: in PyTorch that read
races with ``zero_grad`` and can crash the process). Its gradient figure is
the ledger of gradient storages the training thread has noted; while that
ledger may lack the gradients of a running backward, the sample is taken by
the training thread at its next hook instead (agent/steps/handoff.py). Every error
in the agent is caught and counted; the training never sees one (nor a
warning).

The agent is a facade over its collaborators, and the place they are wired: the
registry (agent/tensors/registry.py: the models and optimizers watched, the owners
walk), the instant (agent/tensors/instant.py: the tensors measured), the measurer
(agent/measurer.py: one sample at one instant), the allocator watch, the site
recorder, the OOM watch, its own figures (agent/own_figures.py), the replies
(agent/serving/requests.py) and the agent thread's loop (agent/serving/serving.py: the socket,
the events, the ring's feed). Each takes the objects it uses, never the Agent;
where two use each other, the later one is reached through a lambda here.
"""

from __future__ import annotations


from vramscope.agent.oom import oom
from vramscope.agent.serving import paths
from vramscope.agent.oom import postmortem
from vramscope.agent.serving import requests
from vramscope.agent.allocator.allocator_watch import AllocatorWatch
from vramscope.agent.allocator.site_recorder import SiteRecorder
from vramscope.agent.tensors.backward import BackwardWatch
from vramscope.agent.errors import ErrorCount
from vramscope.agent.tensors.grads import GradLedger
from vramscope.agent.steps.handoff import Handoff
from vramscope.agent.tensors.input_shape import InputShape
from vramscope.agent.tensors.instant import Instant
from vramscope.agent.serving.lastwords import LastWords
from vramscope.agent.measurer import Measurer
from vramscope.agent.modules.model_hooks import ModelDiscovery, ModelHooks
from vramscope.agent.modules.module_sampler import ModuleSampler
from vramscope.agent.oom.oom import OomWatch
from vramscope.agent.allocator.outside_events import OutsideEvents
from vramscope.agent.own_figures import OwnFigures
from vramscope.agent.steps.phases import PhaseTracker
from vramscope.agent.protocol import SampleItem
from vramscope.agent.tensors.registry import Registry
from vramscope.agent.serving.ring import ItemRing
from vramscope.agent.serving.serving import Serving
from vramscope.agent.tensors.sharded import Sharding
from vramscope.agent.allocator.stats import StatsReader
from vramscope.agent.steps.steps import StepTracker
from vramscope.agent.tensors.unseen_grads import UnseenGrads
from vramscope.agent.training_hooks import TrainingHooks

from vramscope.agent import DEFAULT_INTERVAL, MIN_INTERVAL  # defined in the package (no torch there)


class Agent:
    # (the collaborators the lambdas in __init__ reach before they are made)
    registry: Registry
    measurer: Measurer
    ooms: OomWatch
    figures: OwnFigures
    serving: Serving
    hooks: TrainingHooks

    def __init__(
        self,
        interval: float = DEFAULT_INTERVAL,
        provider=None,
        runtime_dir: str | None = None,
        ring_caps: dict | None = None,
        discover: bool = True,
        final_dump: bool = True,
    ):
        interval = max(MIN_INTERVAL, float(interval))
        self.identity = paths.identity()
        self._provider = provider
        self.ring = ItemRing(ring_caps)
        self.error = ErrorCount()  # every error caught and counted (the collaborators' ``error``)
        self.ledger = GradLedger()  # the gradients alive, as integers for the agent thread
        self.backward = BackwardWatch(self.ledger)  # every backward marks the ledger stale first
        self.last_words = LastWords(self._atexit)  # at exit and on SIGTERM: the final dump
        # the training thread takes the sample the agent thread asked for (the measurer's), or
        # the main thread notes the gradients between two statements (the registry's)
        self.handoff = Handoff(
            lambda: self.measurer.sample_for_agent(), lambda: self.registry.note_between_statements()
        )
        self.phases = PhaseTracker(dict, self.emit, name=self.device_name)
        self.steps = StepTracker(
            on_boundary=lambda optimizer: self.registry.on_step_boundary(optimizer),
            phases=self.phases,
            handoff=self.handoff,
            ledger=self.ledger,
            resync=lambda: self.registry.resync(),
        )
        self.steps.stretch.watch = self.backward  # a quiet stretch counted down by the node hook
        self.backward.on_ticks = self.steps.stretch.wake
        self.outside_events = OutsideEvents(self.emit)  # process-group init, torch.compile
        self.sharding = Sharding()  # FSDP2's unsharded copies, DDP's gradient buckets
        self.input_shape = InputShape()  # the micro-batch (and sequence) measured at
        self.model_hooks = ModelHooks(
            self.emit,
            phases=self.phases,
            steps_done=lambda: self.steps.count,
            ledger=self.ledger,
            handoff=self.handoff,
        )
        self.module_sampler = ModuleSampler(lambda: self.steps.count)
        self.module_sampler.optimizers = self.optimizers
        self.module_sampler.fsdp = lambda: self.sharding.params  # (gathered copies: no activations)
        self.steps.on_quiet = self.model_hooks.set_quiet  # quiet steps: no forward post-hooks
        self.module_sampler.driven = True  # its step end is the step tracker's (quiet steps skip it)
        self.steps.after_full, self.steps.quiet_cap = (
            self.module_sampler.after_step,
            self.module_sampler.quiet_cap,
        )
        self.discovery = (
            ModelDiscovery(self.watch_models, on_first_call=lambda: self.hooks.first_forward())
            if discover
            else None
        )
        self.registry = Registry(  # the models and optimizers watched, the owners walk
            self.ledger,
            self.backward,
            self.steps,
            self.sharding,
            self.discovery,
            attach=lambda model: self.hooks.attach(model),
            error=self.error,
        )
        # backwards through parameters no walk found: gradients n/a until one does
        self.unseen = UnseenGrads(
            self.registry.known_ids,
            self.backward,
            self.ledger,
            on_unseen=self.registry.on_unseen,
            step_seconds=lambda: self.steps.last_duration,
        )
        self.hooks = TrainingHooks(  # which hooks go on a model, and all of them off at the end
            self.steps,
            self.phases,
            self.model_hooks,
            self.module_sampler,
            self.input_shape,
            self.unseen,
            self.backward,
            self.discovery,
        )
        stretch = self.steps.stretch  # (an optimizer not met, stepping inside a quiet stretch)
        self.instant = Instant(  # the tensors measured
            self.registry,
            self.ledger,
            self.unseen,
            self.error,
            lambda: stretch.unmet_seen or stretch.unmet() > 0,
        )
        self.measurer = Measurer(  # one sample at one instant
            self.registry,
            self.instant,
            self.ledger,
            self.handoff,
            self.steps,
            self.ring,
            interval=interval,
            figures=lambda: self.figures.sample(),
            on_devices=lambda devices: self.ooms.check_num_ooms(devices),
            drain=lambda: self.serving.drain(),
            on_agent_thread=lambda: self.serving.on_agent_thread(),
            error=self.error,
        )
        if provider is not None:
            self._use_reader(StatsReader(provider, min_gap=min(0.25, interval / 2)))
        self._final_dump = final_dump
        # the segments, every few seconds (agent thread)
        self.allocator = AllocatorWatch(self.measurer, self.steps, self.ring, self.error)
        # allocation sites for N steps, on demand
        self.sites = SiteRecorder(self.measurer, self.steps, self.emit, self.error)
        self.ooms = OomWatch(  # OOMs: the event, the post-mortem said on stderr at exit
            self.measurer,
            self.instant,
            self.registry,
            self.ledger,
            self.allocator,
            self.steps,
            self.emit,
            self.error,
        )
        self.figures = OwnFigures(  # what a sample and the STATUS reply say of the agent itself
            self.measurer,
            self.instant,
            self.registry,
            self.steps,
            self.phases,
            self.input_shape,
            self.sharding,
            self.ooms,
            self.error,
        )
        self.serving = Serving(  # the agent thread's loop: the socket, the events, the ring's feed
            self.ring,
            self.measurer,
            self.handoff,
            self.ledger,
            self.steps,
            self.allocator,
            self.sites,
            self.module_sampler,
            identity=self.identity,
            interval=interval,
            runtime_dir=runtime_dir,
            answer=self.handle_request,
            device_name=self.device_name,
            error=self.error,
        )
        self.answers = requests.Answers(
            self.ring, self.identity, self.serving, self.figures.status, self.sites, self.allocator
        )

    # -- the collaborators' figures, where tests and the protocol read them ------------------------
    samples = property(lambda self: self.measurer.samples)
    server = property(lambda self: self.serving.server)
    socket_path = property(lambda self: self.serving.socket_path)
    server_error = property(lambda self: self.serving.server_error)
    oom_reports = property(lambda self: self.ooms.reports)
    errors = property(lambda self: self.error.count)
    last_error = property(lambda self: self.error.last)
    oom_observer_attached = property(lambda self: self.ooms.observer_attached)

    @property
    def interval(self) -> float:
        """Seconds between samples (the agent thread's)."""
        return self.serving.interval

    @interval.setter
    def interval(self, seconds: float) -> None:
        self.serving.interval = self.measurer.interval = seconds

    @property
    def reader(self) -> StatsReader | None:
        return self.measurer.reader

    @reader.setter
    def reader(self, reader: StatsReader | None) -> None:
        self.measurer.reader = reader

    def _use_reader(self, reader: StatsReader) -> None:
        """The allocator's reader for the samples, the steps and the phase hooks."""
        self.measurer.reader = reader
        self.steps.reader = reader
        self.steps.after.read = reader.raw_allocated  # a quiet step's reading (agent/steps/after_step.py)
        self.phases.read = reader.allocated_noted  # the hooks call the provider (and raise the peaks)

    # -- registration (any thread) -------------------------------------------------------
    def watch(self, model=None, optimizer=None) -> None:
        """Register (the caller's thread: the training thread, where ``.grad`` may be read)."""
        if model is not None:
            self.watch_models([model])
        if optimizer is not None:
            self.registry.add_optimizer(optimizer)
            self.steps.set_primary(optimizer)
        self.registry.walk_due = True
        self.registry.note_here()

    def watch_models(self, models) -> None:
        self.registry.watch_models(models)

    def models(self) -> list:
        return self.registry.models()

    def optimizers(self) -> list:
        return self.registry.optimizers()

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        if self.serving.thread is not None:
            return
        if self.reader is None:
            provider = self._provider
            if provider is None:
                from vramscope.agent.allocator.stats import default_provider

                provider = default_provider()
            self._use_reader(StatsReader(provider, min_gap=min(0.25, self.interval / 2)))
        self.steps.install()
        if self.discovery is not None and not self.registry.model_refs:
            self.discovery.install()
            self.steps.discovering = True  # every step checks whether discovery is done
        self.ooms.observer_attached = oom.attach_observer(self._on_oom)
        self.outside_events.install()
        self.unseen.install()
        self.serving.start()
        if self._final_dump:
            self.last_words.arm()

    def stop(self, timeout: float = 2.0) -> None:
        """Remove the hooks, write the final dump, close the socket."""
        self.serving.join(timeout)
        self.hooks.remove()
        self.outside_events.uninstall()
        if self._final_dump:
            self.last_words.disarm()
            self.last_words.at_exit()
        else:
            self.serving.close()

    def wait_started(self, timeout: float = 5.0) -> bool:
        return self.serving.started.wait(timeout)

    def _atexit(self) -> None:
        """The final sample and dump, the socket closed (agent/serving/lastwords.py calls it once,
        in the starting process only)."""
        try:
            self.serving.join(1.0)
            self.steps.end_stretch_here()  # a quiet stretch's steps into the dump
            if self.serving.started.is_set():
                self.sample_once()
                requests.write_final(self.socket_path, self.identity, self.interval, self.ring)
        except Exception:
            pass
        finally:
            self.serving.close()
            postmortem.say_at_exit(self.oom_reports)  # the OOM post-mortems, a dozen lines each

    def disable_in_child(self) -> None:
        """After fork: the thread did not survive; drop the hooks, serve nothing (the
        inherited socket's copies closed, so it dies with the parent)."""
        self.serving.thread = None
        server, self.serving.server = self.serving.server, None
        if server is not None:
            server.drop_inherited()
        try:
            self.hooks.remove()
        except Exception:
            pass

    # -- samples ---------------------------------------------------------------------------------
    def sample_once(self) -> SampleItem | None:
        """One sample now, taken on the calling thread. Any thread but the agent's reads
        ``.grad`` -- call it from the training thread (or an autograd hook); on the
        agent thread the gradients come from the ledger."""
        return self.measurer.sample_here(drain=True)

    def emit(self, kind: str, data: dict) -> None:
        self.serving.emit(kind, data)

    def device_name(self, index: int) -> str:
        return self.measurer.device_name(index)

    # -- OOM ------------------------------------------------------------------------------------------
    def _on_oom(self, device, alloc, device_allocated, device_free) -> None:
        """The allocator's OOM observer (training thread, GIL held, allocator unlocked)."""
        try:
            self.ooms.record(int(device), int(alloc), int(device_free), source="observer")
        except Exception as exc:
            self.error(exc)

    # -- requests (agent thread) --------------------------------------------------------------------
    def handle_request(self, request: dict) -> bytes:
        return self.answers.answer(request)
