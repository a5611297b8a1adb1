"""Deterministic noise and step clocks for the demo workstation: a pure function
of a seed (and a step number or a channel), so the demo and the tests see the
same story every time (sources/demo/demo_runs.py, sources/demo/simulated.py).
"""

from __future__ import annotations

import math

from vramscope.core.units import MiB

_M64 = (1 << 64) - 1


def _mix(x: int) -> int:
    """splitmix64 finaliser: a cheap, well-spread 64-bit hash."""
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9 & _M64
    x = (x ^ (x >> 27)) * 0x94D049BB133111EB & _M64
    return x ^ (x >> 31)


class Noise:
    """Deterministic noise: the same (seed, channel, i) always gives the same value."""

    __slots__ = ("_base",)

    def __init__(self, seed: int):
        self._base = _mix(seed & _M64)

    def u(self, channel: int, i: int) -> float:
        """Uniform in [0, 1)."""
        x = (self._base + channel * 0x9E3779B97F4A7C15 + i * 0xD1B54A32D192ED03) & _M64
        return _mix(x) / 18446744073709551616.0

    def jitter(self, channel: int, i: int, amplitude: float) -> float:
        """Uniform in [-amplitude, amplitude)."""
        return (2.0 * self.u(channel, i) - 1.0) * amplitude


def round_up(n: float, block: int = 2 * MiB) -> int:
    """The caching allocator reserves whole blocks."""
    return int(math.ceil(n / block)) * block


class StepClock:
    """Ends of optimizer steps: step k (k >= 1) ends near ``first + k * period``.

    The jitter of each step is below half a period, so step ends stay in order
    and the count at any time is found in O(1).
    """

    __slots__ = ("first", "period", "jitter", "noise", "channel")

    def __init__(self, first: float, period: float, jitter: float, noise: Noise, channel: int):
        assert 0 <= jitter < 0.5
        self.first, self.period, self.jitter = first, period, jitter
        self.noise, self.channel = noise, channel

    def end(self, k: int) -> float:
        """End of step k; end(0) is when the first step starts."""
        if k <= 0:
            return self.first
        return self.first + self.period * (k + self.noise.jitter(self.channel, k, self.jitter))

    def count(self, r: float) -> int:
        """Steps completed by run time r."""
        if r < self.end(1):
            return 0
        n = max(1, int((r - self.first) / self.period))
        while self.end(n + 1) <= r:
            n += 1
        while n > 0 and self.end(n) > r:
            n -= 1
        return n
