"""Forward hooks on registered models: eval-with-autograd and the
checkpointing + cache trap; and finding the models of an unmodified script
(``vramscope run``).

A per-model forward post-hook fires once per forward of the registered
(top-level) model, so it costs a few attribute reads per step: it hands the
output to the phase tracker (agent/steps/phases.py), marks the gradient ledger
stale when autograd recorded the forward (its backward will make gradients,
agent/tensors/grads.py), notes a forward in eval mode with autograd on, and takes a
sample the agent thread asked for (agent/steps/handoff.py). A pre-hook sees the
first forward only ("after loading") and is removed after it.

Checkpointing + cache: gradient checkpointing recomputes activations in
backward to save memory, and a key/value cache returned by a training
forward keeps them anyway. Current Hugging Face transformers switch
``use_cache`` off by themselves while checkpointing in training, so the
config flag says nothing; the rule looks at what the forward really
returned: a training forward (grad on) whose output carries a cache, from a
model with a checkpointed submodule. It reads only the output's keys and the
submodules' plain ``gradient_checkpointing`` attribute -- never a deprecated
property, so nothing is printed in the user's process.

Under ``torch.compile`` Dynamo traces a module's hooks with its forward; every
hook here returns at once when ``torch.compiler.is_compiling()`` (a constant
while tracing), so a compiled model gets no graph break, no recompilation and
no warning from the agent; its phases are read where eager code runs (the
optimizer hooks), and a backward is still seen (agent/tensors/backward.py).

Discovery: until the first optimizer step (or a few top-level forwards), a
global module forward pre/post hook pair notes which modules are called at
depth 0 -- the models the script runs. Then the global hooks are removed,
those with parameters are registered, and only per-model hooks remain.
"""

from __future__ import annotations

import threading
import time
import weakref

import torch
from torch.compiler import is_compiling

from vramscope.agent.protocol import EventKind

EVAL_AUTOGRAD_EVERY = 30.0  # seconds between two eval_autograd events for one model
USE_CACHE_EVERY = 600.0
CACHE_KEYS = ("past_key_values", "cache", "cache_params")  # Hugging Face output fields holding a cache
DISCOVERY_ROOT_CALLS = 64  # give up discovery after this many top-level forwards


class ModelHooks:
    def __init__(
        self, emit, clock=time.monotonic, phases=None, steps_done=lambda: 0, ledger=None, handoff=None
    ):
        self._emit = emit  # emit(kind, data) -> None (non-blocking)
        self._clock = clock
        self._phases = phases  # PhaseTracker or None
        self._ledger = ledger  # GradLedger or None
        self._handoff = handoff  # Handoff or None
        self._steps_done = steps_done
        self._handles: dict[int, tuple] = {}
        self._last_eval: dict[int, float] = {}
        self._eval_count: dict[int, int] = {}
        self._last_cache: dict[int, float] = {}
        self._pre_hooks = False  # a first-forward pre-hook is still registered
        self._eager: set[int] = set()  # models whose post-hook ran outside torch.compile
        self._quiet = False  # the post-hooks of ``_eager`` are out of their models' dicts
        self._also: dict[int, list] = {}  # per model: other hooks that leave on quiet steps (``quiet_also``)
        self._out: list = []  # (hook dict, id, hook) taken out for the quiet steps

    def attach(self, model) -> None:
        key = id(model)
        if key in self._handles:
            return
        handles = [
            model.register_forward_hook(self._post_hook),
            model.register_forward_pre_hook(self._pre_hook),
        ]
        self._handles[key] = handles
        self._pre_hooks = True

    def quiet_also(self, model, handles) -> None:
        """Other per-step forward hooks of ``model`` (the input shape's, the module
        sampler's) that leave with the post-hook on quiet steps: a model with any hook
        in its dicts takes PyTorch's slow call path on every forward."""
        self._also.setdefault(id(model), []).extend(handles)

    def set_quiet(self, quiet: bool) -> None:
        """Quiet steps (agent/steps/steps.py: nothing to read, no sample asked): the forward
        post-hooks (and the hooks given to ``quiet_also``) leave their models' hook
        dicts, so PyTorch calls the forward without its hook machinery, and come back
        before a full step, in their order. Only hooks of models seen running eagerly
        move (a compiled model's are traced, never called: left alone)."""
        if quiet == self._quiet:
            return
        self._quiet = quiet
        if not quiet:
            out, self._out = self._out, []
            for hooks, hook_id, hook in out:
                hooks[hook_id] = hook
            return
        out = self._out
        for key, handles in self._handles.items():
            if key not in self._eager:
                continue
            for handle in (handles[0], *self._also.get(key, ())):
                hooks = handle.hooks_dict_ref()
                hook = None if hooks is None else hooks.pop(handle.id, None)
                if hook is not None:
                    out.append((hooks, handle.id, hook))

    def detach_all(self) -> None:
        self.set_quiet(False)
        for handles in self._handles.values():
            for h in handles:
                try:
                    h.remove()
                except Exception:
                    pass
        self._handles.clear()
        self._also.clear()

    def _post_hook(self, module, args, output) -> None:
        if is_compiling():  # traced by torch.compile: nothing here (no graph break, no warning)
            return
        phases = self._phases
        grad = torch.is_grad_enabled()
        if self._pre_hooks or len(self._eager) < len(self._handles):
            self._eager.add(id(module))
        if phases is not None and phases.enabled:
            if grad:
                phases.forward_end(output)
            else:
                phases.eval_end()  # an evaluation under no_grad: its own phase, not a forward
        try:
            if self._pre_hooks:
                self._drop_pre_hooks()
                if self._handoff is not None:  # the main thread trains: it can be called on
                    self._handoff.main_thread_trains = threading.current_thread() is threading.main_thread()
            if grad:
                ledger = self._ledger
                if ledger is not None:
                    ledger.stale = ledger.forward_pending = True
                if not module.training:
                    self._eval_autograd(module)
                elif isinstance(output, dict) and _returned_cache(output) and _checkpointing(module):
                    self._use_cache(module)
            handoff = self._handoff
            if handoff is not None and handoff.wanted:
                handoff.serve()
        except Exception:
            pass

    def _pre_hook(self, module, args) -> None:
        """Before the first forward of a registered model (removed after it)."""
        if is_compiling():
            return
        phases = self._phases
        if phases is not None and not phases.loaded_done:
            phases.mark_loaded(self._steps_done())

    def _drop_pre_hooks(self) -> None:
        """After a forward (never inside the pre-hooks' own loop): the first-forward
        pre-hooks have done their work."""
        self._pre_hooks = False
        for handles in self._handles.values():
            while len(handles) > 1:
                try:
                    handles.pop().remove()
                except Exception:
                    pass

    def _eval_autograd(self, module) -> None:
        key = id(module)
        self._eval_count[key] = self._eval_count.get(key, 0) + 1
        now = self._clock()
        last = self._last_eval.get(key)
        if last is not None and now - last < EVAL_AUTOGRAD_EVERY:
            return
        self._last_eval[key] = now
        count, self._eval_count[key] = self._eval_count[key], 0
        self._emit(
            EventKind.EVAL_AUTOGRAD,
            {
                "model": type(module).__name__,
                "forwards": count,
                "text": "forward in eval mode with autograd on; "
                "wrap evaluation in torch.no_grad() or torch.inference_mode()",
            },
        )

    def _use_cache(self, module) -> None:
        key = id(module)
        now = self._clock()
        last = self._last_cache.get(key)
        if last is not None and now - last < USE_CACHE_EVERY:
            return
        self._last_cache[key] = now
        self._emit(
            EventKind.CHECKPOINTING_USE_CACHE,
            {
                "model": type(module).__name__,
                "text": "a training forward with gradient checkpointing returned a key/value cache, which "
                "holds what checkpointing was meant to free; pass use_cache=False in training",
            },
        )


def _returned_cache(output: dict) -> bool:
    """Whether a model output (a dict, e.g. a Hugging Face ModelOutput) holds a cache.
    Only dict's own methods: ModelOutput's ``in``, ``get`` and attribute getters map the
    old names to the new one with a deprecation message, printed in the user's process."""
    for key in CACHE_KEYS:
        if dict.__contains__(output, key) and dict.get(output, key) is not None:
            return True
    return False


def _checkpointing(model) -> bool:
    """A submodule with gradient checkpointing on (the plain instance attribute that
    Hugging Face's models set on their checkpointed blocks)."""
    for m in model.modules():
        if m.__dict__.get("gradient_checkpointing") is True:
            return True
    return False


class ModelDiscovery:
    """Global hooks that find the top-level modules an unmodified script runs."""

    def __init__(self, on_found, on_first_call=None):
        self._on_found = on_found  # callable(list of modules)
        self._on_first_call = on_first_call  # callable(): the run's first top-level forward
        self._depth = 0
        self._roots: list = []  # weakrefs
        self._root_ids: set[int] = set()
        self._root_calls = 0  # top-level forwards since install
        self._first_seen = False  # the run's first top-level forward happened
        self._handles = []

    @property
    def active(self) -> bool:
        return bool(self._handles)

    @property
    def saw_forward(self) -> bool:
        """A top-level forward ran since discovery was (re)installed."""
        return self._root_calls > 0

    def install(self) -> None:
        if self._handles:
            return
        self._depth = self._root_calls = 0  # (installed again for a model met late)
        from torch.nn.modules.module import (
            register_module_forward_hook,
            register_module_forward_pre_hook,
        )

        self._handles = [
            register_module_forward_pre_hook(self._pre),
            register_module_forward_hook(self._post),
        ]

    def _pre(self, module, args) -> None:
        if is_compiling():  # a module inside a compiled region: its top-level caller was seen
            return
        if self._depth == 0:
            if not self._first_seen:
                self._first_seen = True
                if self._on_first_call is not None:
                    try:
                        self._on_first_call()
                    except Exception:
                        pass
            self._root_calls += 1
            if id(module) not in self._root_ids:
                self._root_ids.add(id(module))
                self._roots.append(weakref.ref(module))
        self._depth += 1

    def _post(self, module, args, output) -> None:
        if is_compiling():
            return
        self._depth = max(0, self._depth - 1)
        if self._depth == 0 and self._root_calls >= DISCOVERY_ROOT_CALLS:
            self.finish()

    def finish(self) -> None:
        """Stop watching every module call; hand over the top-level ones with parameters."""
        if not self._handles:
            return
        for h in self._handles:
            try:
                h.remove()
            except Exception:
                pass
        self._handles = []
        found = []
        for ref in self._roots:
            m = ref()
            if m is not None and next(m.parameters(), None) is not None:
                found.append(m)
        self._roots.clear()
        if found:
            self._on_found(found)
