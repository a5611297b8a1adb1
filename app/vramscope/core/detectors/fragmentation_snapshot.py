"""The fragmentation rule's figures from the allocator's own picture (agent/allocator/segments.py).

A summary is used while it is recent (SNAPSHOT_MAX_AGE before the agent's
newest sample at most); an older one, or none, leaves the rule on the
allocator's counters.
"""

from __future__ import annotations

from vramscope.core.units import fmt_bytes

SNAPSHOT_MAX_AGE = 60.0  # seconds


def snapshot_figures(report, device: str) -> dict | None:
    """The device's summary in the agent's newest allocator item, if recent enough."""
    item = getattr(report, "allocator", None)
    if not item:
        return None
    figures = (item.get("devices") or {}).get(device)
    if not figures or figures.get("free_split") is None:
        return None
    t, now = item.get("t"), report.time
    if t is not None and now is not None and now - t > SNAPSHOT_MAX_AGE:
        return None
    return figures


def snapshot_evidence(snap: dict) -> list[str]:
    """The snapshot's lines of evidence."""
    out = [
        f"free inside partly used segments {fmt_bytes(snap['free_split'])} (empty_cache() cannot return it)"
    ]
    if snap.get("free_segments") is not None:
        out.append(
            f"whole free segments {fmt_bytes(snap['free_segments'])} (empty_cache() would return them)"
        )
    largest, request = snap.get("largest_free_block"), snap.get("largest_request")
    if largest is not None:
        against = f" against a largest request of {fmt_bytes(request)}" if request else ""
        out.append(f"largest free block {fmt_bytes(largest)}{against}")
    pools = snap.get("private_pools")
    if pools and pools.get("reserved"):
        out.append(
            f"private pools (CUDA graphs / MemPool) {fmt_bytes(pools['reserved'])}, "
            "not counted as fragmentation"
        )
    return out


def recovers_text(snap: dict | None) -> str:
    """', recovering about X here (...)' where the snapshot says how much."""
    if not snap or snap.get("expandable_recovers") is None:
        return ""
    return (
        f"; in this process's allocator snapshot that recovers about "
        f"{fmt_bytes(snap['expandable_recovers'])} of the {fmt_bytes(snap['free_split'])} "
        "free in partly used segments (the whole 2 / 20 MiB pages inside the free pieces)"
    )
