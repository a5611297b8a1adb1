"""Pair each opening entry of a trace (``alloc``, ``segment_alloc``) with the closing entry
of its address that follows it (``free_completed``, ``segment_free``), in numpy."""

from __future__ import annotations

import numpy as np


def pair(action: np.ndarray, addr: np.ndarray, open_code: int, close_code: int):
    """(opens, closes, orphan_closes, open_at_end): entry numbers of each open paired with
    the close of its address that follows it; closes with no open before them; opens
    never closed."""
    rows = np.flatnonzero((action == open_code) | (action == close_code))
    if not len(rows):
        e = np.zeros(0, dtype=np.int64)
        return e, e, e, e
    order = np.lexsort((rows, addr[rows]))
    r = rows[order]
    a = addr[r]
    is_open = action[r] == open_code
    same_next = np.zeros(len(r), dtype=bool)
    same_next[:-1] = a[1:] == a[:-1]
    next_closes = np.zeros(len(r), dtype=bool)
    next_closes[:-1] = ~is_open[1:]
    paired = is_open & same_next & next_closes  # an open whose next event at its address closes it
    closed_by_pair = np.zeros(len(r), dtype=bool)
    closed_by_pair[1:] = paired[:-1]
    return (
        r[paired],
        r[np.flatnonzero(paired) + 1],
        r[~is_open & ~closed_by_pair],
        r[is_open & ~paired],
    )
