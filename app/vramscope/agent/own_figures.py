"""What the agent says about itself: a sample's figures besides its devices, and the
counters of the STATUS reply (agent/serving/requests.py).

A sample (agent/sampling.py ``sample_item``) carries the allocator's settings,
the registered models, the training input, the sharding and the agent's own
figures: its errors, walks, the phases' share, what the tensors were measured
from and by which thread. They are read here, on the thread that takes the
sample, from the collaborators that hold them.
"""

from __future__ import annotations

from vramscope.agent import sampling
from vramscope.agent.protocol import PHASES_MEASURED


class OwnFigures:
    """Uses: the ``measurer`` (its reader, who took the last sample, the samples), the
    ``instant`` (the last measurement), the ``registry`` (the models, the walks),
    ``steps`` and ``phases`` (their counts and errors), the ``input_shape``, the
    ``sharding``, the OOM watch ``ooms`` (the observer attached) and the agent's
    ``errors`` (agent/errors.py)."""

    def __init__(self, measurer, instant, registry, steps, phases, input_shape, sharding, ooms, errors):
        self._measurer = measurer
        self._instant = instant
        self._registry = registry
        self._steps = steps
        self._phases = phases
        self._input_shape = input_shape
        self._sharding = sharding
        self._ooms = ooms
        self._errors = errors

    def sample(self) -> dict:
        """What a sample says besides its devices: the allocator's settings, the models,
        the input, the sharding and the agent's own figures."""
        reader, registry, phases, instant = self._measurer.reader, self._registry, self._phases, self._instant
        return {
            "settings": reader.settings() if reader is not None else {},
            "models": registry.model_info,
            "input": self._input_shape.report(),  # the micro-batch (and sequence) measured at
            "sharded": self._sharding.report(),  # FSDP2 unsharded copies, DDP buckets (per device)
            "agent": {
                "errors": self._errors.count + self._steps.errors + phases.errors,
                "walks": registry.walks,
                "phases_every": phases.every,
                PHASES_MEASURED: phases.measured_share,
                "walk_seconds": registry.last_walk_seconds,
                "measure_seconds": instant.last_measure_seconds,
                "models": len(registry.model_refs),
                "optimizers": len(registry.optimizer_refs),
                "oom_observer": self._ooms.observer_attached,
                "taken_by": self._measurer.last_taken_by,
                # what this sample's tensors were measured from (the last walk)
                "walked": sampling.walked(instant.measured),
            },
        }

    def status(self) -> dict:
        """The agent's own counters (the STATUS reply)."""
        return {
            "samples": self._measurer.samples,
            "errors": self._errors.count,
            "last_error": self._errors.last,
            "steps": self._steps.count,
            "walks": self._registry.walks,
        }
