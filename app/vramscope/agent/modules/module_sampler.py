"""The per-module breakdown on sampled steps: when to measure, and the item sent.

One training step in ``every`` is measured (on by default; ``VRAMSCOPE_MODULES=0``
turns it off): the first forward of that step with autograd on records the
activations each module saves (agent/modules/module_saved.py), and the optimizer step
post-hook that ends the step reads each module's weights, gradients and
optimizer state (agent/modules/module_params.py) -- both on the training thread. The
item goes to a queue that the agent thread drains into the ring.

Cost: every step costs a forward pre-/post-hook call per watched model and
one optimizer post-hook call with a clock read -- in the agent (``driven``)
only the steps the step tracker does not let pass quietly (agent/steps/steps.py);
a sampled forward costs a
Python call per saved tensor (and its unpack in backward) and per module
call. ``every`` is chosen so that the extra training-thread CPU time of a
sampled step (``time.thread_time``: other processes on a busy machine do not
count) beyond the steps' moving average (a step the step tracker let pass
quietly, without our hooks, counts as the average of those it passed) stays
within BUDGET of that average: ``every = ceil(extra / (BUDGET * step))``, at least MIN_EVERY
(bench/module_overhead.py measures it side by side with the agent off).

Not available, with why (``None`` figures, never a guess): a model run under
``torch.compile`` (its modules' hooks do not run inside the compiled graph),
a module tree that changed between the forward and the step's end, hooks
that failed (after MAX_ERRORS failures the model is no longer sampled).
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Any
import math
import os
import time

import torch
from torch.compiler import is_compiling

from vramscope.agent.modules.module_params import Tree, static_figures, subtree_sums
from vramscope.agent.modules.module_saved import OTHER_HOOKS, SavedRecorder, saved_hooks_active

# the sampled steps may add at most 0.1 % to the average step time: the agent's whole share
# of the training thread is 1 % (issue 23), most of it the phase readings' (agent/steps/phases.py)
BUDGET = 0.001
MIN_EVERY = 10  # at most one step in 10 measured
MAX_EVERY = 10_000
FIRST_STEP = 1  # the first sampled step (the step before it made the optimizer's state)
MAX_ERRORS = 3
ENV_SWITCH = "VRAMSCOPE_MODULES"  # "0": no per-module breakdown
PARAM_BUCKETS = ("weights", "gradients", "optimizer_state")
ACTIVATIONS = "activations"
COMPILED = "torch.compile'd: module hooks do not run inside the compiled graph"
NOT_SEEN = "no forward with autograd on seen in the sampled step (a torch.compile'd model runs without hooks)"
TREE_CHANGED = "the module tree changed during the sampled step"
FORWARD_RAISED = "the sampled forward raised (or returned nothing): its count is incomplete"
MAX_QUEUED = 64


def enabled_by_env() -> bool:
    return os.environ.get(ENV_SWITCH, "1").strip().lower() not in ("0", "off", "false", "no")


def _compiled(model) -> bool:
    for m in model.modules():
        if type(m).__name__ == "OptimizedModule" or m.__dict__.get("_compiled_call_impl") is not None:
            return True
    return False


class _Watched:
    """One watched model's sampling state."""

    __slots__ = ("ref", "handles", "recorder", "errors", "why", "seen_forward", "step")

    def __init__(self, ref):
        self.ref = ref
        self.handles: list = []
        self.recorder: SavedRecorder | None = None  # of the sampled step's forward
        self.errors = 0
        self.why: str | None = None  # activations not available for the sampled step
        self.seen_forward = False
        self.step = 0  # the sampled step's number (1 = the first step)


class ModuleSampler:
    def __init__(self, steps_done, clock=time.thread_time, every: int = MIN_EVERY):
        self._steps_done = steps_done  # callable() -> steps counted so far
        self._clock = clock  # the training thread's CPU time
        self._last_end: float | None = None  # clock at the previous step's end
        self._last_count = 0  # steps done at the previous step's end
        self.step_mean: float | None = None  # CPU seconds of an unsampled step (moving average)
        self.every = every
        self.next_step = FIRST_STEP
        self.items: collections.deque = collections.deque(maxlen=MAX_QUEUED)
        self._models: dict[int, _Watched] = {}
        self._sampling = False  # the current step is a sampled one
        self._opt_handle = None
        self.optimizers = lambda: []  # callable() -> the watched optimizers
        self.fsdp: Callable[[], list[Any]] | None = None  # -> FSDP2's FSDPParams (agent/tensors/sharded.py)
        self.errors = 0
        self.last_error: str | None = None
        self.measured = 0  # sampled steps so far
        self.on = enabled_by_env()
        # True: the step tracker calls ``after_step`` at its full steps (agent/steps/steps.py) and
        # keeps the step before a sampled one and the sampled one full (``quiet_cap``); no
        # optimizer hook of our own runs on its quiet steps
        self.driven = False

    # -- registration -----------------------------------------------------------------------
    def attach(self, model) -> list:
        """Hook ``model``; returns the forward hooks' handles (none where off or known)."""
        if not self.on or id(model) in self._models:
            return []
        import weakref

        w = _Watched(weakref.ref(model))
        w.handles = [
            model.register_forward_pre_hook(self._make_pre(w)),
            model.register_forward_hook(self._make_post(w), always_call=True),
        ]
        self._models[id(model)] = w
        if self._opt_handle is None and not self.driven:
            from torch.optim.optimizer import register_optimizer_step_post_hook

            self._opt_handle = register_optimizer_step_post_hook(self._after_step)
        return list(w.handles)

    def detach_all(self) -> None:
        for w in self._models.values():
            self._drop(w)
        self._models.clear()
        if self._opt_handle is not None:
            self._opt_handle.remove()
            self._opt_handle = None

    @staticmethod
    def _drop(w: _Watched) -> None:
        if w.recorder is not None:
            w.recorder.leave()
            w.recorder = None
        for h in w.handles:
            h.remove()
        w.handles = []

    # -- the model's hooks (training thread) -----------------------------------------------------
    def _make_pre(self, w: _Watched):
        def pre(module, args):
            if is_compiling():
                return
            if not torch.is_grad_enabled() or w.recorder is not None or w.seen_forward:
                return
            if self._steps_done() < self.next_step:
                return
            try:
                self._sampling = True
                w.seen_forward = True
                w.step = self._steps_done() + 1
                if _compiled(module):
                    w.why = COMPILED
                    return
                if saved_hooks_active():  # ours on top would shadow them (save_on_cpu would not offload)
                    w.why = OTHER_HOOKS
                    return
                w.recorder = SavedRecorder(module, Tree(module), self.fsdp)
                w.recorder.enter()
            except Exception as exc:
                self._failed(w, exc)

        return pre

    def _make_post(self, w: _Watched):
        def post(module, args, output):
            if is_compiling():
                return
            rec = w.recorder
            if rec is None or not rec.active:
                return
            try:
                rec.leave()
                if output is None:  # (always_call: the forward raised) a partial count is not a figure
                    w.recorder, w.why = None, FORWARD_RAISED
            except Exception as exc:
                self._failed(w, exc)

        return post

    def _failed(self, w: _Watched, exc: BaseException) -> None:
        self.errors += 1
        w.errors += 1
        self.last_error = f"{type(exc).__name__}: {exc}"
        w.why = f"the module hooks failed ({self.last_error})"[:200]
        if w.recorder is not None:
            try:
                w.recorder.leave()
            except Exception:
                pass
            w.recorder = None
        if w.errors >= MAX_ERRORS:
            try:
                self._drop(w)
            except Exception:
                pass

    # -- the step's end (optimizer step post-hook, training thread) -------------------------------
    def quiet_cap(self) -> int | None:
        """How many steps after the current one may pass without our hooks: the step
        before a sampled one (its end starts the sampled step's clock) and the sampled
        one run with them. None: no limit (off, nothing watched)."""
        if not self.on or not self._models:
            return None
        return max(0, self.next_step - self._steps_done() - 1)

    def _after_step(self, optimizer, args, kwargs) -> None:
        now = self._clock()
        done = self._steps_done()
        steps = max(1, done - self._last_count)  # (the quiet steps in between: an average)
        took = None if self._last_end is None else (now - self._last_end) / steps
        self._last_end, self._last_count = now, done
        if not self._sampling and self._steps_done() <= self.next_step:
            if took is not None:  # an unsampled step
                m = self.step_mean
                self.step_mean = took if m is None else 0.9 * m + 0.1 * took
            return  # (a step past due without a hooked forward: said so, NOT_SEEN)
        self._sampling = False
        self.measured += 1
        for w in list(self._models.values()):
            model = w.ref()
            if model is None:
                continue
            step = w.step or self._steps_done() + 1
            try:
                self.items.append(self._item(w, model, step))
            except Exception as exc:
                self._failed(w, exc)
                self.items.append(_unavailable(model, step, w.why))
            w.recorder = None
            w.why = None
            w.seen_forward = False
        end = self._clock()
        self._last_end = end
        self._plan(None if took is None else took + (end - now), end - now)

    after_step = _after_step  # (the step tracker's call, ``driven``)

    def _plan(self, sampled: float | None, own: float = 0.0) -> None:
        """The next sampled step, from this one's CPU time against the unsampled steps'
        -- at least the reading this hook just made (``own``): a step's noise can hide
        the extra time of a sampled step, never make it less than what was timed."""
        step = self.step_mean
        if step is None and sampled is not None:  # (the first sample: the step less this hook's reading)
            step = sampled - own
        every = MIN_EVERY
        if sampled is not None and step and step > 0:
            extra = max(0.0, sampled - step, own)
            every = min(MAX_EVERY, max(MIN_EVERY, math.ceil(extra / (BUDGET * step))))
        self.every = every
        self.next_step = self._steps_done() + every

    def _item(self, w: _Watched, model, step: int) -> dict:
        tree = Tree(model)
        own, shared = static_figures(model, self.optimizers(), tree)
        sums = subtree_sums(own, tree, PARAM_BUCKETS)
        rec = w.recorder
        why = w.why
        saved = unavailable = None
        if rec is not None:
            if rec.tree.fingerprint != tree.fingerprint:
                why = TREE_CHANGED
            elif rec.unavailable.get(""):
                why = rec.unavailable[""]
            else:
                saved = subtree_sums({k: {ACTIVATIONS: v} for k, v in rec.own.items()}, tree, (ACTIVATIONS,))
                unavailable = rec.unavailable
        elif why is None:
            why = NOT_SEEN
        rows = []
        for name in tree.names:
            row = {
                "name": name,
                "parent": tree.parent[name],
                **sums[name],
                "shared": name in shared,
                ACTIVATIONS: None,
                "why": None,
            }
            if saved is not None and name not in unavailable:
                row[ACTIVATIONS] = saved[name][ACTIVATIONS]
            else:
                row["why"] = unavailable.get(name) if unavailable else why
            rows.append(row)
        return {
            "t": time.time(),
            "step": step,
            "device": _device(model),
            "model": type(model).__name__,
            "every": self.every,
            "cut": tree.cut,
            "modules": rows,
        }


def _device(model) -> str:
    p = next(model.parameters(), None)
    return str(p.device) if p is not None else "cpu"


def _unavailable(model, step: int, why: str | None) -> dict:
    """An item whose figures are all unavailable (the reading itself failed)."""
    rows = []
    try:
        for name, _ in model.named_children():
            rows.append(
                {
                    "name": name,
                    "parent": None,
                    "weights": None,
                    "gradients": None,
                    "optimizer_state": None,
                    ACTIVATIONS: None,
                    "shared": False,
                    "why": why,
                }
            )
    except Exception:
        pass
    return {
        "t": time.time(),
        "step": step,
        "device": "cpu",
        "model": type(model).__name__,
        "modules": rows,
        "why": why,
    }
