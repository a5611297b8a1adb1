"""Trainable parameters the agent has not met, each watched until its first gradient.

A model the agent has not met whose loss is summed into a known model's runs
its backward through the known model's hooked gradient nodes: that backward
is not silent, so no walk of agent/tensors/unseen_grads.py looks at it, and its
gradients would be left out of the gradient bucket without a note. So every
trainable ``nn.Parameter`` the agent learns exists before it met it gets a
one-shot hook, ``Tensor.register_post_accumulate_grad_hook``, which autograd
calls "after the gradient has been accumulated into the tensor's ``.grad``"
(pytorch.org/docs/stable/generated/torch.Tensor.register_post_accumulate_grad_hook.html).
Its first call arms the walk of the backward that made it (``arm``) and
removes the hook; a parameter met before its first gradient removes it
without arming. Nothing runs per step: a hook costs only when it fires, once.

Where parameters come into being without the agent meeting them:
- built while the agent runs: ``nn.Module.register_parameter`` tells a global hook
  (``torch.nn.modules.module.register_module_parameter_registration_hook``);
- copied (``copy.deepcopy`` of a model): ``nn.Parameter.__deepcopy__``
  (torch/nn/parameter.py) registers nothing, so the agent wraps it;
- unpickled (a model saved whole and ``torch.load``-ed, or sent through pickle):
  ``nn.Module.__setstate__`` sets a module's ``_parameters`` at once, wrapped;
- alive before the agent started (a notebook's model, the agent attached later):
  found once, at install, among the objects the garbage collector tracks
  (tensors are, ``gc.get_objects``).
A parameter put straight into a module's ``_parameters`` dict by a library
after the agent started is none of these: it is seen as before, where its
backward is silent or among the run's first.

The hooks are a tensor's C attribute, so they are neither pickled nor copied
with the parameter, and ``uninstall`` removes those not yet fired.
"""

from __future__ import annotations

import gc
import itertools
import weakref

from vramscope.agent.patches import Patches


class UnmetParams:
    """``known()``: ids of the parameters the agent's walks found; ``arm()``: called
    (on the thread autograd runs the hook on) when a parameter the agent has not met
    gets its first gradient."""

    def __init__(self, known, arm):
        self._known = known
        self._arm = arm
        self._hooks: dict[int, tuple] = {}  # id(parameter) -> (weak ref, hook handle)
        self._registration = None  # the global parameter-registration hook's handle
        self._patches = Patches()  # nn.Parameter.__deepcopy__'s, nn.Module.__setstate__'s
        self.scanned = 0  # trainable parameters found alive at install
        self.errors = 0

    def __len__(self) -> int:
        return len(self._hooks)

    # -- install ---------------------------------------------------------------------------------
    def install(self) -> None:
        if self._registration is not None or self._patches:
            return
        try:
            from torch.nn.modules.module import register_module_parameter_registration_hook

            self._registration = register_module_parameter_registration_hook(self._registered)
        except Exception:  # (an older torch: a model built later is seen as one built before)
            self._registration = None
        from torch.nn import Module, Parameter

        watch = self.watch

        def deepcopy(copy, armed):
            def __deepcopy__(param, memo):
                out = copy(param, memo)
                if armed.on:
                    watch(out)
                return out

            return __deepcopy__

        def setstate(original, armed):
            def __setstate__(module, state):
                original(module, state)
                if armed.on:
                    for param in list(module.__dict__.get("_parameters", {}).values()):
                        watch(param)

            return __setstate__

        self._patches.wrap(Parameter, "__deepcopy__", deepcopy)
        self._patches.wrap(Module, "__setstate__", setstate)  # (torch.compile wraps it over for good)
        self.scanned = self._scan(Parameter)

    def _scan(self, parameter_type) -> int:
        """The trainable parameters alive now (built before the agent started). Picked by
        type, in C (~80 ms for a million objects): ``isinstance`` asks an object that is
        not one for its ``__class__``, running any property a proxy of the user's has."""
        found = 0
        try:
            alive = gc.get_objects()
            kinds = {kind for kind in set(map(type, alive)) if issubclass(kind, parameter_type)}
            for param in itertools.compress(alive, map(kinds.__contains__, map(type, alive))):
                found += self.watch(param)
            del alive
        except Exception:
            self.errors += 1
        return found

    def uninstall(self) -> None:
        handle, self._registration = self._registration, None
        if handle is not None:
            handle.remove()
        self._patches.undo()
        hooks, self._hooks = self._hooks, {}
        for _ref, handle in hooks.values():
            handle.remove()

    # -- whichever thread makes a parameter --------------------------------------------------------
    def _registered(self, module, name, param):
        self.watch(param)
        return None

    def watch(self, param) -> bool:
        """Hook ``param`` if it is trainable and neither met nor hooked already."""
        try:
            key = id(param)
            if (
                param is None
                or not getattr(param, "requires_grad", False)
                or param.grad_fn is not None
                or key in self._hooks
                or key in self._known()
            ):
                return False
            hooks = self._hooks

            def first_gradient(tensor, key=key):
                entry = hooks.pop(key, None)
                if entry is not None:
                    entry[1].remove()  # (autograd holds its hooks while it calls them)
                if key not in self._known():
                    self._arm()
                return None

            def gone(_ref, key=key):
                hooks.pop(key, None)

            handle = param.register_post_accumulate_grad_hook(first_gradient)
            hooks[key] = (weakref.ref(param, gone), handle)
            return True
        except Exception:  # (a tensor subclass that takes no hook: seen as before)
            self.errors += 1
            return False
