"""The arrays behind a device's timeline in the agents tab (ui/agents/agent_device.py):
a series held on other times, the steps a window spans, the bucket areas as at each
step's peak, and one peak per pixel column. numpy only: no Qt, no drawing.
"""

from __future__ import annotations

import numpy as np

from vramscope.core.processes.stacking import stretch_starts


def hold(base: np.ndarray, t: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``v`` on the times ``base``: the last value at or before each (0 before any, n/a as 0)."""
    if not len(t):
        return np.zeros(len(base))
    idx = np.searchsorted(t, base, side="right") - 1
    out = np.where(idx >= 0, v[np.clip(idx, 0, None)], 0.0)
    return np.nan_to_num(out, nan=0.0)


def steps_between(steps: np.ndarray) -> int:
    """How many steps a window of the step-number series spans (0 when none)."""
    finite = steps[np.isfinite(steps)] if len(steps) else steps
    return int(finite.max() - finite.min()) + 1 if len(finite) else 0


def at_step_peaks(layers: dict[str, np.ndarray], forward: np.ndarray) -> dict[str, np.ndarray]:
    """The bucket layers as at each step's peak: activations (other allocated) up to
    what the peak held, the cached free blocks it took out of reserved (the total
    stays reserved + outside PyTorch). ``forward``: the step's peak (else its end of
    forward) at each time (0 before the first)."""
    fixed = layers["weights"] + layers["gradients"] + layers["optimizer_state"]
    acts = np.maximum(layers["other_allocated"], forward - fixed)
    cached = np.maximum(0.0, layers["other_allocated"] + layers["cached_free"] - acts)
    return {**layers, "other_allocated": acts, "cached_free": cached}


def peak_per_column(t: np.ndarray, v: np.ndarray, columns: int) -> tuple[np.ndarray, np.ndarray]:
    """The highest point in each of ``columns`` equal spans of time (the times of those
    points): at most one per column, however unevenly the points lie -- a store's
    older history is one peak per few seconds, its recent one every reading."""
    if len(t) <= columns or columns < 2:
        return t, v
    edges = np.linspace(t[0], t[-1], columns, endpoint=False)
    starts = stretch_starts(t, edges)
    ends = np.append(starts[1:], len(t))
    keep = [s + int(np.nanargmax(v[s:e])) if np.isfinite(v[s:e]).any() else s for s, e in zip(starts, ends)]
    return t[keep], v[keep]
