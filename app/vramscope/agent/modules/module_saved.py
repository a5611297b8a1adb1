"""Per module: the activations one forward saved for backward.

During a sampled forward of a watched model, a ``saved_tensors_hooks`` pair
(PyTorch docs, "Hooks for saved tensors", pytorch.org/docs/stable/notes/
autograd.html#hooks-for-saved-tensors) sees every tensor autograd saves; its
pack hook returns the tensor itself (what autograd would have stored, so
nothing changes) and notes its storage once, for the innermost module running
at that moment. Global module forward pre/post hooks, placed for that one
forward only, keep the stack of running modules.

Counted: each storage once (a view, an in-place result or one tensor saved by
two ops is the same storage), at its full size -- what stays allocated until
backward; the model's own parameters and buffers (saved by e.g. a linear
layer for its input gradient) are weights, not activations -- under FSDP2 the
local shards, and the all-gathered full parameters a layer's forward saves
(FSDP frees or reshards them after the layer; agent/tensors/sharded.py counts them
as their own figure) are not activations either.

Where hooks cannot see the truth, the module's figure is not available, with
why:
- activation checkpointing: a non-reentrant checkpoint pushes its own saved
  tensor hooks (they shadow these); a reentrant one runs the module under
  ``no_grad`` inside a training forward. Either way the module's activations
  are recomputed in backward; what the checkpoint keeps (its inputs) is
  counted where it is saved, in the caller.
- the run's own saved tensor hooks (e.g. ``torch.autograd.graph.save_on_cpu``)
  active inside a module: its tensors go where those hooks put them; active
  around the whole forward: nothing is recorded (these hooks pushed on top
  would shadow them, and the run would keep on the device what it offloads).
"""

from __future__ import annotations

import torch
from torch.compiler import is_compiling
from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook

from vramscope.agent.modules.module_params import Tree, extents
from vramscope.agent.tensors.sharded import gathered_storages

_top_hooks = torch._C._autograd._top_saved_tensors_default_hooks
CHECKPOINTED = "activation checkpointing: recomputed in backward (the inputs it keeps count in the caller)"
OTHER_HOOKS = "the run's own saved-tensor hooks hold this module's activations (e.g. save_on_cpu)"


def saved_hooks_active() -> bool:
    """Whether saved-tensor hooks of the run's own are in force (e.g. ``save_on_cpu``)."""
    return _top_hooks(False) is not None


def _why_shadowed() -> str:
    top = _top_hooks(False)
    pack = top[0] if top else None
    where = f"{getattr(pack, '__module__', '')}.{getattr(pack, '__qualname__', '')}"
    return CHECKPOINTED if "checkpoint" in where else OTHER_HOOKS


class SavedRecorder:
    """One sampled forward of one model: enter at its forward pre-hook, leave at its post-hook."""

    def __init__(self, model, tree: Tree, fsdp=None):
        self.tree = tree
        self._names = tree.ids  # id(module) -> name (the model's modules only)
        self._stack: list[str | None] = []  # names of running modules (None: not this model's)
        self._params = set()
        for t in list(model.parameters()) + list(model.buffers()):
            self._params.update(key[1] for key in extents(t))  # (a DTensor: its local shard)
        self._fsdp = fsdp  # callable() -> FSDP2's FSDPParams of the run (agent/tensors/sharded.py), or None
        self._gathered: set | None = None  # their all-gathered storages now (reset per module)
        self._seen: set = set()
        self.own: dict[str | None, int] = {}  # node -> bytes saved while it was innermost
        self.unavailable: dict[str, str] = {}  # node -> why
        self._grad = True
        self._handles: list = []
        self._hooks = None
        self.errors = 0
        self.active = False

    # -- entering and leaving (the watched model's own hooks) ----------------------------
    def enter(self) -> None:
        self._grad = torch.is_grad_enabled()
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, _unpack)
        self._hooks.__enter__()
        self.active = True
        self._mine = _top_hooks(False)
        self._handles = [
            register_module_forward_pre_hook(self._pre),
            register_module_forward_hook(self._post, always_call=True),
        ]

    def leave(self) -> None:
        """Remove the module hooks and pop the saved-tensor hooks if they are still on top
        (a forward that raised inside a user's own context leaves them below it: popped
        when that context exits, never someone else's)."""
        for h in self._handles:
            h.remove()
        self._handles = []
        if self.active:
            self.active = False
            if _top_hooks(False) == self._mine:
                self._hooks.__exit__(None, None, None)
            else:
                self.unavailable.setdefault("", "the step's saved-tensor hooks changed during the forward")

    # -- the hooks ----------------------------------------------------------------------------
    def _pack(self, t):
        try:
            storage = t.untyped_storage()
            ptr = storage.data_ptr()
            if ptr and ptr not in self._params and ptr not in self._gathered_now():
                key = (t.device, ptr)
                if key not in self._seen:
                    self._seen.add(key)
                    node = self._current()
                    self.own[node] = self.own.get(node, 0) + storage.nbytes()
        except Exception:  # a tensor without a storage (a subclass): not counted, said so
            self.errors += 1
            node = self._current()
            self.unavailable.setdefault(node or "", "a saved tensor without a readable storage")
        return t

    def _gathered_now(self) -> set:
        gathered = self._gathered
        if gathered is None:
            gathered = self._gathered = gathered_storages(self._fsdp()) if self._fsdp is not None else set()
        return gathered

    def _current(self) -> str | None:
        for name in reversed(self._stack):
            if name is not None:
                return self.tree.owner(name)
        return None

    def _pre(self, module, args) -> None:
        if is_compiling():
            return
        self._gathered = None  # (FSDP gathers a layer's parameters in its own pre-hook, after this)
        name = self._names.get(id(module))
        self._stack.append(name)
        if name:
            node = self.tree.owner(name)
            if node is None:
                return
            if _top_hooks(False) != self._mine:
                self.unavailable.setdefault(node, _why_shadowed())
            elif self._grad and not torch.is_grad_enabled():
                self.unavailable.setdefault(
                    node, CHECKPOINTED if _in_checkpoint() else "ran under no_grad inside a training forward"
                )

    def _post(self, module, args, output) -> None:
        if is_compiling():
            return
        self._gathered = None
        if self._stack:
            self._stack.pop()


def _unpack(t):
    return t


def _in_checkpoint() -> bool:
    """Whether a reentrant ``torch.utils.checkpoint`` forward is running (its Function
    runs the module under no_grad): the caller frames say so."""
    import sys

    f = sys._getframe(2)
    depth = 0
    while f is not None and depth < 40:
        if f.f_code.co_filename.endswith(("utils/checkpoint.py", "utils\\checkpoint.py")):
            return True
        f = f.f_back
        depth += 1
    return False
