"""The what-if (core/planner/what_if.py) as text: `vramscope plan --pid` prints it,
the planner tab shows the same lines."""

from __future__ import annotations

from vramscope.core.units import fmt_bytes
from vramscope.core.planner.what_if import WhatIf


def span(low: int | None, high: int | None) -> str:
    if low is None:
        return "n/a"
    return fmt_bytes(low) if high in (None, low) else f"{fmt_bytes(low)} - {fmt_bytes(high)}"


def headline(w: WhatIf) -> str:
    m, c = w.measured, w.change
    at = f"micro-batch {m.batch}" if m.batch else "micro-batch not seen"
    if m.seq:
        at += f" x {m.seq} tokens"
    to = []
    if c.batch and c.batch != m.batch:
        to.append(f"micro-batch {c.batch}")
    if c.seq and c.seq != m.seq:
        to.append(f"{c.seq} tokens")
    to += [
        name
        for on, name in (
            (c.checkpointing, "activation checkpointing"),
            (c.bf16, "bf16 autocast"),
            (c.optimizer_8bit, "8-bit optimizer"),
            (bool(c.lora_rank), f"LoRA r={c.lora_rank}"),
        )
        if on
    ]
    step = f", step {m.step}" if m.step is not None else ""
    return (
        f"Measured on {m.device} at {at}{step}: peak {span(w.peak_now, None)}; with "
        f"{', '.join(to) or 'no change'}: {span(w.peak, w.peak_high)}"
    )


def verdict_lines(w: WhatIf) -> list[str]:
    out = []
    for t in w.targets:
        empty, now = w.verdict(t)
        cap = (
            "capacity n/a"
            if t.capacity is None
            else f"{'fits' if empty else 'does NOT fit'} in its {fmt_bytes(t.capacity)}"
        )
        own = f" (with the {fmt_bytes(t.own)} this process holds)" if t.own else ""
        free = (
            "free memory now n/a"
            if t.free_now is None
            else f"{'fits' if now else 'does NOT fit'} in the {fmt_bytes(t.free_now)} free now{own}"
        )
        out.append(
            f"{t.name}: {cap}; {free}"
            if empty is not None or now is not None
            else f"{t.name}: no verdict (the predicted peak is not known)"
        )
    if not w.targets:
        out.append("no GPU to judge against (give --gpu-memory SIZE)")
    return out


def render_text(w: WhatIf) -> str:
    lines = [headline(w), ""]
    width = max(len(p.name) for p in w.parts)
    lines.append(f"  {'part':<{width}}  {'measured':>10}  {'predicted':>21}  scales with")
    for p in w.parts:
        lines.append(
            f"  {p.name:<{width}}  {fmt_bytes(p.now) if p.now is not None else 'n/a':>10}  "
            f"{span(p.predicted, p.high):>21}  {p.scales}"
        )
    lines.append("")
    lines += verdict_lines(w)
    lines.append(f"activations from: {w.measured.source}")
    lines += [f"note: {n}" for n in w.notes]
    return "\n".join(lines)
