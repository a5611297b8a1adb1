"""An agent's allocator summary (agent/allocator/segments.py), checked before the monitor uses it.

Every value is untrusted (sources/agents/agent_input.py): figures become ints in
range or None, the map is cut to the agent's own bounds, a run's state must
be one the map knows. A summary that is not an object raises ValueError
(the item is counted as bad).
"""

from __future__ import annotations

import typing

from vramscope.core.agent_figures.allocator_summary import AllocatorSummary, DeviceSummary
from vramscope.agent.allocator.segments import FIGURES, MAX_BLOCKS, MAX_SEGMENTS, STATES
from vramscope.sources.agents.agent_input import finite, integer, text, time_of


def _device(raw: object) -> DeviceSummary | None:
    if not isinstance(raw, dict):
        return None
    name = text(raw.get("device"), 64)
    if name is None:
        return None
    out: dict[str, object] = {"device": name}  # a DeviceSummary once filled
    for key in FIGURES:
        out[key] = integer(raw.get(key))
    pools = raw.get("private_pools")
    out["private_pools"] = (
        {k: integer(pools.get(k)) for k in ("reserved", "allocated", "segments")}
        if isinstance(pools, dict)
        else None
    )
    bars = []
    segments = raw.get("map")
    for seg in (segments if isinstance(segments, list) else [])[: MAX_SEGMENTS + 1]:
        if not isinstance(seg, dict) or integer(seg.get("size")) is None:
            continue
        listed = seg.get("runs")
        runs = tuple(
            (r[0], r[1])
            for r in (listed if isinstance(listed, list) else [])[: 2 * MAX_BLOCKS + 1]
            if isinstance(r, list) and len(r) == 2 and r[0] in STATES and integer(r[1]) is not None
        )
        pool = seg.get("pool")
        bars.append(
            {
                "size": seg["size"],
                "largest_free": integer(seg.get("largest_free")),
                "pool": tuple(integer(p) for p in pool[:2]) if isinstance(pool, list) else None,
                "type": text(seg.get("type"), 16),
                "runs": runs,
            }
        )
    out["map"] = tuple(bars)
    return typing.cast(DeviceSummary, out)  # (every key of DeviceSummary set above, FIGURES's among them)


def allocator(raw: dict[str, object]) -> AllocatorSummary:
    """An ALLOCATOR item: {t, step, why, took_ms, devices: {name: summary}}."""
    t = time_of(raw)
    devices = raw.get("devices")
    if not isinstance(devices, list):
        raise ValueError("an allocator item's devices are not a list")
    out: AllocatorSummary = {
        "t": t,
        "step": integer(raw.get("step")),
        "why": text(raw.get("why")),
        "took_ms": finite(raw.get("took_ms")),
        "devices": {},
    }
    for d in devices[:64]:
        dev = _device(d)
        if dev is not None:
            out["devices"][dev["device"]] = dev
    return out
