"""Per-module figures of one watched model, as the monitor keeps them.

The agent measures them on sampled steps (agent/modules/module_sampler.py) and sends
a "modules" item; sources/agents/agent_modules.py checks it once and makes these
frozen values, which the report, ``status``, sessions, exports and the
agents tab read. Bytes; ``None`` = not available, and ``why`` says why.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

FIGURES = ("weights", "gradients", "optimizer_state", "activations")  # the wire's names, in order
FIGURE_LABELS = {
    "weights": "weights",
    "gradients": "grads",
    "optimizer_state": "optimizer state",
    "activations": "activations",
}
LARGEST_SHOWN = 5  # the modules `status` names


@dataclass(frozen=True)
class ModuleFigures:
    name: str  # as named_modules gives it: "transformer.h.11.attn"
    parent: str | None  # None: a top-level child of the model
    weights: int | None
    gradients: int | None
    optimizer_state: int | None
    activations: int | None  # saved for backward by the sampled step's forward
    measured_step: int
    device: str | None = None
    shared: bool = False  # holds (or refers to) a parameter tied with another module
    why: str | None = None  # why a figure is None

    @property
    def total(self) -> int | None:
        """The sum of the figures known (None when none is)."""
        known = [getattr(self, f) for f in FIGURES if getattr(self, f) is not None]
        return sum(known) if known else None

    @property
    def top_level(self) -> bool:
        return self.parent is None

    def as_dict(self) -> dict[str, object]:
        out = {
            "name": self.name,
            "parent": self.parent,
            **{f: getattr(self, f) for f in FIGURES},
            "measured_step": self.measured_step,
        }
        if self.why is not None:
            out["why"] = self.why
        if self.shared:
            out["shared"] = True
        return out


def largest(
    modules: Iterable[ModuleFigures], n: int = LARGEST_SHOWN, top_level_only: bool = True
) -> list[ModuleFigures]:
    """The ``n`` modules with the largest total, largest first."""
    pool = [m for m in modules if m.top_level or not top_level_only]
    return sorted(pool, key=lambda m: -(m.total or 0))[:n]


MAX_SPLITS = 8  # how many times disjoint() opens a module into its children


def disjoint(modules: Iterable[ModuleFigures]) -> list[ModuleFigures]:
    """Modules that do not overlap (none is inside another), so their figures add up:
    the top-level ones, with a module holding over half of the total opened into its
    children while it has some -- GPT-2's ``transformer`` becomes its embeddings and
    ``transformer.h``, which becomes its 12 blocks. For the OOM post-mortem, whose
    largest modules and checkpointing fix would otherwise count a block twice."""
    kids: dict[str | None, list[ModuleFigures]] = {}
    for m in modules:
        kids.setdefault(m.parent, []).append(m)
    shown = list(kids.get(None, ()))
    for _ in range(MAX_SPLITS):
        whole = sum(m.total or 0 for m in shown)
        big = max(shown, key=lambda m: m.total or 0, default=None)
        if big is None or not kids.get(big.name) or 2 * (big.total or 0) <= whole:
            break
        shown.remove(big)
        shown.extend(kids[big.name])
    return sorted(shown, key=lambda m: -(m.total or 0))
