"""The wire's names: request ops, item and event kinds, step phases, the buckets, and
the field names of a sample's figures -- defined once, here, for the agent and the
monitor alike. Standard library only; imports nothing else of vramscope.
"""

from __future__ import annotations

import enum
import sys

if sys.version_info >= (3, 11):
    from enum import StrEnum as StrEnum  # (the explicit re-export: core/samples.py and others use it)
else:  # Python 3.10: the same behaviour, spelled out

    class StrEnum(str, enum.Enum):
        """A str whose members print as their value (enum.StrEnum, Python 3.11+)."""

        def __str__(self) -> str:
            return str(self.value)

        def __format__(self, spec: str) -> str:
            return str.__format__(str(self.value), spec)


class Op(StrEnum):
    """Requests the agent answers (read-only, but RECORD_SITES: agent/serving/requests.py)."""

    HELLO = "hello"
    PULL = "pull"
    STATUS = "status"
    ALLOCATOR = "allocator"  # the allocator's segments summarised now (agent/allocator/allocator_watch.py)
    RECORD_SITES = "record_sites"  # allocation sites for N steps (agent/allocator/site_recorder.py)


class ItemKind(StrEnum):
    """What the agent's ring holds: periodic samples, one item per step, events."""

    SAMPLE = "sample"
    STEP = "step"
    EVENT = "event"
    MODULES = "modules"  # per-module bytes of a sampled step (agent/modules/module_sampler.py)
    ALLOCATOR = "allocator"  # a memory snapshot's summary (agent/allocator/segments.py)


class EventKind(StrEnum):
    LOADED = "loaded"  # allocated after loading, before the first forward
    OOM = "oom"
    EVAL_AUTOGRAD = "eval_autograd"
    CHECKPOINTING_USE_CACHE = "checkpointing_use_cache"
    STEP = "step"  # the monitor's view of a step item (AgentEvent)
    PROCESS_GROUP_INIT = "process_group_init"  # torch.distributed.init_process_group returned
    COMPILE = "compile"  # torch.compile finished compiling a graph
    SITES = (
        "sites"  # allocation sites recording: progress, then the top sites (agent/allocator/site_recorder.py)
    )


class Phase(StrEnum):
    """Where in a training step allocated is read (agent/steps/phases.py)."""

    FORWARD = "forward"  # end of the forward pass: activations held
    BACKWARD = "backward"  # end of backward: gradients there, activations freed
    OPTIMIZER = "optimizer"  # after the optimizer step
    EVAL = "eval"  # end of a forward under no_grad (an evaluation pass between steps)


PHASES = tuple(Phase)
TRAINING_PHASES = (Phase.FORWARD, Phase.BACKWARD, Phase.OPTIMIZER)  # every measured step has these


class Bucket(StrEnum):
    """Where a device's memory goes. The first three come from the tensors the
    agent sums at the instant of a sample, the next two from the allocator at
    the same instant; outside_pytorch is added by the monitor (NVML's figure for
    the process minus what PyTorch reserved)."""

    WEIGHTS = "weights"  # parameters and buffers
    GRADIENTS = "gradients"
    OPTIMIZER_STATE = "optimizer_state"
    OTHER_ALLOCATED = "other_allocated"  # activations + temporaries = allocated - the three
    CACHED_FREE = "cached_free"  # reserved - allocated
    OUTSIDE_PYTORCH = "outside_pytorch"


# what each bucket counts, where the definition is not obvious (the agents tab's help, README)
BUCKET_MEANING = {
    Bucket.WEIGHTS: "parameters and buffers (e.g. BatchNorm statistics) of the known models",
    Bucket.GRADIENTS: (
        "memory held for a gradient until it is freed: a gradient that zero_grad(set_to_none=True) "
        "dropped counts until its memory goes back to the allocator (at once, unless something "
        "still holds it, e.g. a view kept by the code)"
    ),
    Bucket.OPTIMIZER_STATE: "every tensor in the optimizers' state (Adam's moments, step counters)",
    Bucket.OTHER_ALLOCATED: "allocated minus the three above: activations saved for backward and temporaries",
}

TENSOR_BUCKETS = (Bucket.WEIGHTS, Bucket.GRADIENTS, Bucket.OPTIMIZER_STATE)
AGENT_BUCKETS = TENSOR_BUCKETS + (Bucket.OTHER_ALLOCATED, Bucket.CACHED_FREE)  # what the agent sends
BUCKETS = AGENT_BUCKETS + (Bucket.OUTSIDE_PYTORCH,)  # what the monitor shows


# -- field names of a sample's figures ------------------------------------------------
# the peak since the previous sample is exact where this is None; otherwise
# "peak_allocated" is a lower bound and this the upper one (agent/allocator/peak_window.py PeakWindow)
PEAK_BOUND = "peak_allocated_bound"
PHASES_MEASURED = "phases_measured"  # (a sample's "agent" figures) share of steps with phase readings
# (the monitor's store keys for these series: core/agent_figures/agent_keys.py)
