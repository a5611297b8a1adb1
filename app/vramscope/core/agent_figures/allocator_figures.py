"""An agent device's allocator figures for `status` (JSON and the text view).

From the newest allocator summary the agent sent (agent/allocator/segments.py, checked
by sources/agents/allocator_input.py): reserved - allocated split into free space
inside partly used segments (fragmentation) and whole free segments, the
largest free block, private pools, what ``expandable_segments:True`` would
recover -- not the segment map (the agents tab draws it; ``vramscope export``
keeps it). A figure not available is null, with why in ``not_reported``.
"""

from __future__ import annotations

from typing import Any

from vramscope.core.units import fmt_bytes

FIGURES = ("free_split", "free_segments", "largest_free_block", "largest_request", "expandable_recovers")
NO_SUMMARY = "no allocator snapshot from the agent yet"
NO_DEVICE = "the agent's snapshot has no figures for this device"
EXPANDABLE_ON = "expandable segments already on: nothing more to recover"


def device_figures(report: object, device: str) -> dict[str, Any]:
    """{step, t, free_split, ..., private_pools: {reserved, allocated, segments}, not_reported}."""
    item = getattr(report, "allocator", None)
    fig = (item.get("devices") or {}).get(device) if item else None
    out: dict[str, Any] = {"step": item.get("step") if item else None, "t": item.get("t") if item else None}
    if fig is None:
        why = (item.get("why") if item else None) or (NO_DEVICE if item else NO_SUMMARY)
        out.update(dict.fromkeys(FIGURES), private_pools=None)
        out["not_reported"] = dict.fromkeys((*FIGURES, "private_pools"), why)
        return out
    out.update({k: fig.get(k) for k in FIGURES})
    pools = fig.get("private_pools")  # None in a summary: the snapshot has no private pool
    out["private_pools"] = dict(pools) if pools else {"reserved": 0, "allocated": 0, "segments": 0}
    missing = {k: "not in the agent's summary" for k in FIGURES if out[k] is None}
    if fig.get("expandable_recovers") is None and "expandable_recovers" in fig:
        missing["expandable_recovers"] = EXPANDABLE_ON
    if out["largest_request"] is None and fig.get("segments") is not None:
        missing["largest_request"] = "no live allocation seen"
    out["not_reported"] = missing
    return out


def figures_line(fig: dict[str, Any]) -> str:
    """The figures in one line of `status`'s text view."""
    if all(fig[k] is None for k in FIGURES):
        return f"allocator: n/a ({next(iter(fig['not_reported'].values()), NO_SUMMARY)})"
    step = f" at step {fig['step']}" if fig.get("step") is not None else ""
    pools = fig["private_pools"] or {}
    if fig["expandable_recovers"] is not None:
        expandable = f"expandable_segments:True would recover {fmt_bytes(fig['expandable_recovers'])}"
    elif fig["not_reported"].get("expandable_recovers") == EXPANDABLE_ON:
        expandable = "expandable segments already on"
    else:
        expandable = "expandable_segments:True would recover n/a"
    return (
        f"allocator{step}: fragmentation {fmt_bytes(fig['free_split'])} (free inside partly used segments)"
        f" · whole free segments {fmt_bytes(fig['free_segments'])}"
        f" · largest free block {fmt_bytes(fig['largest_free_block'])}"
        f" · private pools {fmt_bytes(pools.get('reserved'))} · {expandable}"
    )
