"""An independent oracle: the true buckets at every instant the agent reads the allocator.

Over ``LiveBytes`` (tests/agent/live_bytes.py: "allocated" is exactly the
storages every operator made that are alive now, CUDA allocator semantics on
CPU tensors) the oracle keeps its own account, by other means than the
agent's:

- gradients: a post-accumulate-grad hook on every parameter of every model
  the test trains (registered with the agent or not) notes the gradient's
  storage after autograd wrote it; a weak reference with a builtin callback
  drops it the moment the storage dies (``zero_grad``, a new gradient);
- weights: the parameters and buffers of every model the test trains, and
  the optimizers' own parameters; optimizer state: every tensor in their state.

Whenever the agent reads the allocator for a sample (any thread), the
provider computes that truth at the same instant, with the interpreter's
switch interval raised so no other thread runs in between (nothing here
releases the GIL). The agent's ring is watched: each sample item it pushes
is compared, bucket by bucket, with the truth at its own allocator reading
(the last one its thread made). A bucket is right when it equals the truth
to the byte, or is None with a reason; anything else is a wrong sample.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import weakref

import torch

from vramscope.agent.protocol import ItemKind
from vramscope.sources.demo.allocator_replay import memory_stats_dict

from tests.agent.live_bytes import LiveBytes, LiveBytesProvider, unique_bytes

BUCKETS = ("weights", "gradients", "optimizer_state", "other_allocated")


class Oracle(LiveBytesProvider):
    def __init__(self, live: LiveBytes | None = None, all_gradients: bool = False):
        """``all_gradients``: the gradients of every model trained are gradients from the
        moment autograd writes them, known to the agent or not (issue 47: a model met
        before its optimizer's first step); else a model's count once it is ``known``."""
        super().__init__(live or LiveBytes())
        self.all_gradients = all_gradients
        self.groups: list = []  # (models, optimizers, known) -- see trains
        self._grads: dict = {}  # weakref to a gradient storage -> nbytes
        self._grad_refs: dict[int, weakref.ref] = {}
        self._hooked: set[int] = set()
        self._last = threading.local()  # this thread's last truth at a sample reading
        self.results: list[tuple[dict, dict, str]] = []  # (item buckets, truth, thread)
        self.wrong: list = []

    # -- what the test trains ---------------------------------------------------------------
    def trains(self, *models, optimizers=(), known=None, first=False) -> None:
        """Models and optimizers the test trains. ``known(walked)`` (the sample's
        ``agent.walked``: models, optimizers, params the agent had found) says from which
        sample on the agent can know them -- a model nobody registered is known once its
        optimizer has stepped; before that its tensors are what any agent must see: memory
        of something it has never met ("activations + temporaries"). None: from the start.
        ``first``: this group's tensors are not counted in the groups given before
        (adapters injected into a model already given)."""
        group = (list(models), list(optimizers), known)
        if first:
            self.groups.insert(0, group)
        else:
            self.groups.append(group)
        self.rehook()

    def rehook(self) -> None:
        """Hook parameters not seen yet (late groups, LoRA adapters); note gradients that
        are already there (read on this, the training, thread)."""
        for models, optimizers, _known in self.groups:
            for p in _params(models, optimizers):
                if id(p) not in self._hooked and p.requires_grad:
                    self._hooked.add(id(p))
                    p.register_post_accumulate_grad_hook(self._accumulated)
                    if p.grad is not None:
                        self._accumulated(p)

    def _accumulated(self, p) -> None:
        s = p.grad.untyped_storage()
        known = self._grad_refs.get(id(s))
        if known is not None and known() is s:
            return
        ref = weakref.ref(s, self._grads.pop)
        hash(ref)
        self._grads[ref] = (s.nbytes(), id(p))
        self._grad_refs[id(s)] = ref

    def truth(self) -> tuple:
        """(allocated, [(known, weights, gradients, optimizer state) per group]): the
        storages of each group (a storage shared with an earlier group counts there)."""
        grads = {}
        for nbytes, owner in list(self._grads.values()):
            grads[owner] = grads.get(owner, 0) + nbytes
        groups, seen = [], set()
        for models, optimizers, known in list(self.groups):
            params = [p for p in _params(models, optimizers) if p.untyped_storage().data_ptr() not in seen]
            buffers = [b for m in models for b in m.buffers()]
            state = [t for o in optimizers for st in list(o.state.values()) for t in _tensors(st)]
            g = sum(grads.get(id(p), 0) for p in {id(p): p for p in params}.values())
            groups.append((known, unique_bytes(params + buffers), g, unique_bytes(state)))
            seen.update(t.untyped_storage().data_ptr() for t in params + buffers)
        return self.live.allocated, groups

    def truth_for(self, recorded: tuple, walked: dict | None) -> dict[str, int]:
        allocated, groups = recorded
        out = {"weights": 0, "gradients": 0, "optimizer_state": 0}
        for known, w, g, st in groups:
            if self.all_gradients:
                out["gradients"] += g
            if known is None or (walked is not None and known(walked)):
                out["weights"] += w
                out["gradients"] += 0 if self.all_gradients else g
                out["optimizer_state"] += st
        out["other_allocated"] = allocated - sum(out.values())
        return out

    # -- the provider: truth at the agent's reading ----------------------------------------
    def memory_stats(self, index: int) -> dict:
        caller = sys._getframe(2).f_locals.get("consumer")  # StatsReader.read(consumer)
        if caller != ItemKind.SAMPLE:
            return super().memory_stats(index)
        interval = sys.getswitchinterval()
        sys.setswitchinterval(100.0)  # (another thread may still run once, if it asked before)
        try:
            truth = self.truth()
            for _ in range(20):  # an instant: the same truth twice in a row
                again = self.truth()
                if again == truth:
                    break
                truth = again
        finally:
            sys.setswitchinterval(interval)
        self._last.truth = truth
        allocated = truth[0]
        return memory_stats_dict(allocated, max(allocated, self.live.peak), peak=self.live.peak)

    # -- the agent's samples -----------------------------------------------------------------
    def watch(self, agent) -> None:
        push = agent.ring.push

        def checked(kind, item):
            if kind == ItemKind.SAMPLE:
                self._check(item)
            return push(kind, item)

        agent.ring.push = checked

    def _check(self, item: dict) -> None:
        truth = getattr(self._last, "truth", None)
        self._last.truth = None
        cpu = {d["device"]: d for d in item["devices"]}.get("cpu")
        if truth is None or cpu is None:
            return
        got = cpu["buckets"]
        truth = self.truth_for(truth, item["agent"].get("walked"))
        self.results.append((got, truth, item["agent"]["taken_by"]))
        where = (item["agent"]["taken_by"], item["agent"].get("walked"))
        for b in BUCKETS:
            if got[b] is None:
                if not cpu.get("buckets_note"):
                    self.wrong.append((b, "n/a without a reason", got, truth, where))
            elif got[b] != truth[b]:
                self.wrong.append((b, got[b] - truth[b], got, truth, where))

    def known(self) -> int:
        """Samples with every bucket known."""
        return sum(all(got[b] is not None for b in BUCKETS) for got, _t, _th in self.results)

    def summary(self) -> str:
        kinds: dict = {}
        for bucket, diff, got, truth, where in self.wrong:
            kinds.setdefault((bucket, diff), (0, got, truth, where))
            n, got0, truth0, where0 = kinds[(bucket, diff)]
            kinds[(bucket, diff)] = (n + 1, got0, truth0, where0)
        return (
            f"{len(self.results)} samples, {self.known()} fully known, {len(self.wrong)} wrong: "
            + json.dumps([[k, v] for k, v in list(kinds.items())[:6]], default=str)
        )


def _params(models, optimizers) -> list:
    params = [p for m in models for p in m.parameters()]
    return params + [p for o in optimizers for g in o.param_groups for p in g["params"]]


def _tensors(value, depth=0):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, dict) and depth < 4:
        for v in list(value.values()):
            yield from _tensors(v, depth + 1)
    elif isinstance(value, (list, tuple)) and depth < 4:
        for v in value:
            yield from _tensors(v, depth + 1)


def second_met(walked: dict) -> bool:
    """A second model's tensors are the agent's to know once it has met the model (model
    discovery, at a forward) or its optimizer (at its step): whichever comes first."""
    return walked["models"] >= 2 or walked["optimizers"] >= 2


def pause(seconds: float = 0.003) -> None:
    """Let the agent thread sample here (a real loop's data loading, logging)."""
    time.sleep(seconds)
