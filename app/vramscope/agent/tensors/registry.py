"""The models and optimizers watched, and the walk that finds whose tensors count.

Registration runs on the caller's thread (the training thread); the walk
(agent/tensors/buckets.py ``collect``: the module tree, the optimizer groups) runs on
the agent thread at the first sample after a registration or a change of the
layout fingerprint, and otherwise as often as WALK_BUDGET allows. The
gradient ledger (agent/tensors/grads.py) is noted by the training thread only.
"""

from __future__ import annotations

import threading
import time
import weakref

from vramscope.agent.tensors.buckets import Owners, collect, where_of
from vramscope.agent.tensors.model_info import describe_models

WALK_BUDGET = 0.002  # finding the owners (the module walk) may take at most 0.2 % of wall time


class Registry:
    """Uses: the gradient ``ledger`` and ``backward`` watch, the step tracker ``steps`` (its
    pre-hook, discovery flag and due work), ``sharding`` (FSDP's copies, DDP's buckets),
    model ``discovery`` (None: off); and callables: ``attach`` (a model's hooks, at its
    registration) and ``error``."""

    def __init__(self, ledger, backward, steps, sharding, discovery, attach, error):
        self._ledger = ledger
        self._backward = backward
        self._steps = steps
        self._sharding = sharding
        self._discovery = discovery
        self._attach = attach  # (model) -> None: its forward, module and input hooks
        self._error = error
        self.model_refs: list = []  # weakrefs
        self.optimizer_refs: list = []
        self._model_ids: set[int] = set()
        self._optimizer_ids: set[int] = set()
        self.owners: Owners | None = None  # the cached walk: whose tensors count
        self.model_info: list[dict] = []  # per registered model: sizes, dtype, optimizer (the walk)
        self._rediscover_layout: tuple | None = None  # the layout discovery was re-armed for
        self._walk_lock = threading.Lock()
        self.walk_due = True  # something was registered: walk at the next sample
        self._layout: tuple | None = None  # what the last walk saw (see layout_now)
        self._ids: tuple = (None, frozenset())  # (owners, the ids of their parameters)
        self.next_walk = 0.0  # monotonic time of the next routine walk
        self.last_walk_seconds: float | None = None
        self.walks = 0

    # -- registration (any thread) -------------------------------------------------------
    def note_here(self) -> None:
        """On the training thread: find the owners and note their gradients now."""
        try:
            owners = self.owners = collect(self.models(), self.optimizers())
            self._ledger.note_all(owners.params, owners.devices)
            self._backward.cover(owners.params + list(owners.stand_ins), owners.key)
        except Exception as exc:
            self._error(exc)

    def watch_models(self, models) -> None:
        for m in models:
            if id(m) in self._model_ids:
                continue
            self._model_ids.add(id(m))
            self.model_refs.append(weakref.ref(m))
            try:
                self._attach(m)
            except Exception as exc:
                self._error(exc)
        if self._discovery is not None and self.model_refs:
            self._discovery.finish()
        self._steps.pre_every_step = not self.model_refs  # a model's forward hook marks the ledger stale
        self._steps.place_pre_hook()
        self.walk_due = True

    def add_optimizer(self, optimizer) -> None:
        if id(optimizer) not in self._optimizer_ids:
            self._optimizer_ids.add(id(optimizer))
            self.optimizer_refs.append(weakref.ref(optimizer))
            self.walk_due = True

    def models(self) -> list:
        return [m for m in (r() for r in self.model_refs) if m is not None]

    def optimizers(self) -> list:
        return [o for o in (r() for r in self.optimizer_refs) if o is not None]

    def known_ids(self) -> frozenset:
        """Ids of the parameters the last walk found (any thread; cached per walk)."""
        owners = self.owners
        of, ids = self._ids
        if of is not owners:
            ids = (
                frozenset(id(p) for p in owners.params + list(owners.stand_ins))
                if owners is not None
                else frozenset()
            )
            self._ids = (owners, ids)
        return ids

    def on_unseen(self) -> None:
        """Training thread, at a backward through parameters no walk found (a model met
        before its optimizer's first step): discovery finds its model at its next forward;
        a walk at the next sample (agent/tensors/unseen_grads.py)."""
        discovery = self._discovery
        if discovery is not None and not discovery.active:
            discovery.install()
            self._steps.discovering = True
        self.walk_due = True

    def registered(self) -> bool:
        return bool(self.model_refs or self.optimizer_refs)

    # -- the training thread, at hooks ---------------------------------------------------------
    def on_step_boundary(self, optimizer) -> None:
        """Training thread, at a step of another optimizer than the previous step's (and at
        every step while discovery runs): register it, end discovery -- once a forward has
        run since it began: discovery re-armed at one optimizer's step (a model met late)
        must see the next iteration's forwards, not end at the next optimizer's step of the
        same iteration (a GAN's: its second model's weights stayed n/a for the whole run)."""
        discovery = self._discovery
        if optimizer is not None and id(optimizer) not in self._optimizer_ids:
            self.add_optimizer(optimizer)
        if discovery is not None and discovery.active and discovery.saw_forward:
            discovery.finish()
        self._steps.discovering = discovery is not None and discovery.active

    def resync(self) -> None:
        """Training thread, at a step boundary: note every gradient in the ledger (settled)."""
        owners = self.owners
        if owners is None:
            return
        try:
            self._ledger.resync(owners.params, owners.devices, self._steps.last_duration)
            self.settle(owners)
        except Exception as exc:
            self._error(exc)

    def note_between_statements(self) -> None:
        """The main thread, between two statements, while a sample waits (agent/steps/handoff.py):
        note the gradients (current when no forward's backward is pending). Parameters a
        walk found since the last step boundary get their backward watched here first: a
        model met after a loop's last step has no step boundary to come (a script that
        evaluates, saves or waits), and its gradients would read n/a for as long."""
        owners, ledger = self.owners, self._ledger
        if owners is not None:
            # (in a quiet stretch no hook clears forward_pending: the stretch's counts say it)
            settled = not ledger.forward_pending or self._steps.stretch.caught_up()
            # (never inside a backward: hooking a node while the engine, on this thread,
            # runs its hooks would change the list it goes through. The backward wrapper
            # marks every backward pending from its start, so settled says so -- where it
            # is installed)
            if settled and self._backward.wrapped and self._backward.covered != owners.key:
                self._steps.due = None  # (the step boundary's work, done here)
                self.on_new_layout()
            ledger.note_all(owners.params, owners.devices, settled=settled)
            self.settle(owners)

    def settle(self, owners) -> None:
        """After the training thread noted the gradients of ``owners``: if a walk on the agent
        thread found other parameters meanwhile, the ledger lacks theirs -- stale again; and
        it stays stale until their backward is watched (the next step boundary), for a
        backward through them would make gradients unannounced."""
        if self.owners is not owners or self._backward.covered != owners.key:
            self._ledger.stale = True

    def on_new_layout(self) -> None:
        """Training thread, at the step boundary after a walk found new parameters: watch
        their backward; an optimizer training parameters of a model nobody registered (a
        GAN's second model, a model met after discovery ended) re-arms discovery for a
        step, once per layout, so its buffers count as weights."""
        owners = self.owners
        if owners is None:
            return
        self._backward.cover(owners.params + list(owners.stand_ins), owners.key)
        discovery = self._discovery
        if owners.unowned and discovery is not None and not discovery.active:
            layout = tuple(id(p) for p in owners.params)
            if layout != self._rediscover_layout:
                self._rediscover_layout = layout
                discovery.install()
                self._steps.discovering = True

    # -- the walk (agent thread) ------------------------------------------------------------------
    def walk_wanted(self, now: float | None) -> bool:
        """Due: something was registered, the layout changed, or (at monotonic ``now``; None:
        not a routine walk) the budget allows one."""
        return (
            self.walk_due or (now is not None and now >= self.next_walk) or self.layout_now() != self._layout
        )

    def layout_now(self) -> tuple:
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

    def walk(self) -> None:
        """Find the owners (module tree, optimizer groups) and describe the models.

        Agent thread: at the first sample after a registration or a change of
        ``layout_now``, and otherwise as often as WALK_BUDGET allows (every
        sample for a model whose walk takes under 1 % of the interval).
        """
        if not self._walk_lock.acquire(blocking=False):
            return
        try:
            t0 = time.perf_counter()
            models, optimizers = self.models(), self.optimizers()
            self.walk_due = False
            self._layout = self.layout_now()
            swap = self._sharding.walk(models)
            owners = collect(models, optimizers, swap=swap)
            owners.stand_ins = tuple(self._sharding.stand_ins)  # (FSDP's unsharded copies: known)
            before = self.owners
            self.owners = owners  # (before the ledger goes stale: see settle)
            if (
                before is None
                or before.key != owners.key
                or before.unowned != owners.unowned
                or [id(p) for p in before.stand_ins] != [id(p) for p in owners.stand_ins]
            ):
                self._ledger.stale = True  # parameters the ledger has not seen (late, or a new model)
                self._steps.due = self.on_new_layout  # hook their backward (training thread)
            self.model_info = describe_models(models, optimizers, swap)
            cost = time.perf_counter() - t0
            self.last_walk_seconds = cost
            self.walks += 1
            self.next_walk = time.monotonic() + cost / WALK_BUDGET
        except Exception as exc:  # e.g. a module dict changed while we walked: next sample
            self.walk_due = True
            self._error(exc)
        finally:
            self._walk_lock.release()
