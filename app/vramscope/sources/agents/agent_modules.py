"""A "modules" item from an agent, checked once and turned into ModuleFigures.

Every value is untrusted (sources/agents/agent_input.py): a figure that is not a
non-negative integer becomes None with a reason, names are bounded, a row
that is not an object is skipped, and at most MAX_MODULES rows are kept.
"""

from __future__ import annotations

from vramscope.core.agent_figures.module_figures import FIGURES, ModuleFigures
from vramscope.sources.agents.agent_input import integer, text

MAX_MODULES = 1024  # rows per item (the agent sends at most 512 per model)
MAX_NAME = 200
BAD_FIGURE = "the agent sent no valid figure"


def decode(raw: dict) -> tuple[ModuleFigures, ...]:
    """The item's modules; raises ValueError for an item without a step or a module list."""
    step = integer(raw.get("step"))
    rows = raw.get("modules")
    if step is None or not isinstance(rows, list):
        raise ValueError("a modules item without a step or a module list")
    device = text(raw.get("device"), 64)
    out = []
    for row in rows[:MAX_MODULES]:
        if not isinstance(row, dict):
            continue
        name = text(row.get("name"), MAX_NAME)
        if not name:
            continue
        figures = {f: integer(row.get(f)) for f in FIGURES}
        why = text(row.get("why"))
        if why is None and any(v is None for v in figures.values()):
            why = BAD_FIGURE
        out.append(
            ModuleFigures(
                name=name,
                parent=text(row.get("parent"), MAX_NAME),
                measured_step=step,
                device=device,
                shared=row.get("shared") is True,
                why=why,
                **figures,
            )
        )
    return tuple(out)
