"""What every source offers the sampler."""

from __future__ import annotations

from typing import Protocol

from vramscope.core.samples import Frame


class Source(Protocol):
    """Produces one frozen Frame per call. Never raises for device trouble:
    a lost GPU or a missing driver is reported inside the frame."""

    name: str
    simulated: bool

    def sample(self, now: float) -> Frame: ...

    def close(self) -> None: ...
