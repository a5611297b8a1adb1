"""The agent's hooks on the training thread, as one: attached per registered model, and
removed together when the agent stops or finds itself in a forked child.

Each hook belongs to the collaborator that reads it (agent/steps/, agent/modules/,
agent/tensors/); this class only says which go on a model and which come off at the
end, so the two lists are written once.
"""

from __future__ import annotations


class TrainingHooks:
    def __init__(self, steps, phases, model_hooks, module_sampler, input_shape, unseen, backward, discovery):
        self._steps = steps
        self._phases = phases
        self._model_hooks = model_hooks
        self._module_sampler = module_sampler
        self._input_shape = input_shape
        self._unseen = unseen
        self._backward = backward
        self._discovery = discovery  # None: models are registered by hand only

    def attach(self, model) -> None:
        """A registered model's hooks: the forward's (phases), the modules', the input's."""
        self._model_hooks.attach(model)
        self._model_hooks.quiet_also(
            model, self._module_sampler.attach(model) + self._input_shape.attach(model)
        )

    def first_forward(self) -> None:
        """The first forward of a discovered model: what was loaded before it."""
        self._phases.mark_loaded(self._steps.count)

    def remove(self) -> None:
        """Every hook off: the steps', the models', the backwards', discovery's."""
        self._steps.uninstall()
        self._model_hooks.detach_all()
        self._module_sampler.detach_all()
        self._input_shape.detach_all()
        self._unseen.uninstall()
        self._backward.drop()
        if self._discovery is not None:
            self._discovery.finish()
