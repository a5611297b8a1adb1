"""The largest modules of an agent, as lines of text (`status`, exports)."""

from __future__ import annotations

from vramscope.core.agent_figures.module_figures import FIGURE_LABELS, FIGURES, largest
from vramscope.core.units import NA, fmt_bytes


def module_text(m) -> str:
    """ "h.11: 1.2 GiB (weights 400 MiB · grads … · activations n/a)"."""
    parts = [
        f"{FIGURE_LABELS[f]} {fmt_bytes(getattr(m, f)) if getattr(m, f) is not None else NA}" for f in FIGURES
    ]
    shared = ", shared" if m.shared else ""
    return f"{m.name}: {fmt_bytes(m.total)} ({' · '.join(parts)}{shared})"


def module_lines(modules, indent: str = "    ") -> list[str]:
    """A heading with the step measured, then the 5 largest top-level modules (and why
    the figures that are not available are not)."""
    shown = largest(modules)
    if not shown:
        return []
    out = [f"{indent}largest modules (step {shown[0].measured_step}):"]
    whys = []
    for m in shown:
        out.append(f"{indent}  {module_text(m)}")
        if m.why and m.why not in whys:
            whys.append(m.why)
    out.extend(f"{indent}  n/a: {w}" for w in whys)
    return out
