"""The peak allocated between two looks at the allocator, and whether it is exact.

Between two reads the all-time counter either rose -- the new peak happened
in between: exact -- or it did not: the peak lies between the readings and the
counter, a lower bound with the counter as upper bound
(``peak_allocated_bound``). The hooks' readings are ``bytes`` or ``(bytes,
the all-time peak)`` (``current_of``).
"""

from __future__ import annotations


class PeakWindow:
    """Peak allocated since this window was last taken (see module doc), and whether
    that figure is the window's true peak.

    Between two looks at the allocator the all-time counter either rose -- then the
    new all-time peak happened between them: exact -- or it did not: that stretch's
    peak lies between the readings and the counter (``bound``). After a user's reset
    (the counter fell) the part before the reset is bounded by the old counter. The
    window is exact when its figure reaches every stretch's bound; otherwise the
    figure is a lower bound and ``bound`` the upper one."""

    __slots__ = ("_prev_global", "_max", "_bound")

    def __init__(self):
        self._prev_global: int | None = None
        self._max: int | None = None
        self._bound: int | None = None  # the highest upper bound of a stretch not known exactly

    def observe(self, current: int | None, global_peak: int | None) -> None:
        m = self._max
        if current is not None and (m is None or current > m):
            m = current
        if global_peak is not None:
            prev = self._prev_global
            if prev is None or global_peak != prev:  # rose (or was reset by the user) since our
                if m is None or global_peak > m:  # last look: the counter's peak is in this stretch
                    m = global_peak
            if prev is not None and global_peak <= prev:  # not risen: this stretch's peak (before
                if self._bound is None or prev > self._bound:  # a user's reset) is at most prev
                    self._bound = prev
            self._prev_global = global_peak
        self._max = m

    def point(self, current: int) -> None:
        """A reading of allocated between two looks (a hook's): raises the lower bound."""
        if self._max is None or current > self._max:
            self._max = current

    def take(self) -> tuple[int | None, int | None]:
        """(the window's peak -- exact when the bound is None --, the upper bound where
        it is only a lower bound); the next window starts now."""
        m, bound = self._max, self._bound
        self._max = self._bound = None
        if bound is not None and (m is None or bound <= m):
            bound = None
        return m, bound


def merge_peaks(known: tuple | None, peak: int | None, bound: int | None) -> tuple:
    """Two stretches' (peak, upper bound or None: exact) as one stretch's."""
    if known is None:
        return peak, bound
    peaks = [v for v in (known[0], peak) if v is not None]
    top = max(peaks) if peaks else None
    bounds = [v for v in (known[1], bound) if v is not None]
    upper = max(bounds) if bounds else None
    return top, (upper if upper is not None and (top is None or upper > top) else None)


def current_of(value) -> int:
    """A hook's reading of one device: bytes, or (bytes, the all-time peak)."""
    return value[0] if type(value) is tuple else value
