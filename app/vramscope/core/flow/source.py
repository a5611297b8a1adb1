"""What every source offers the pipeline, and the source that only reports an error.

The protocol lives in core/ so that the sampler depends on no source
module; sources/ (NVML, the demo, a recorded session) implement it.
"""

from __future__ import annotations

from typing import Protocol

from vramscope.core.samples import Frame


class Source(Protocol):
    """Produces one frozen Frame per call. Never raises for device trouble:
    a lost GPU or a missing driver is reported inside the frame. A source with
    ``paced = True`` waits in ``sample`` for frames made on a grid of their own
    (the window's sampler process): the sampler takes each as it comes."""

    name: str
    simulated: bool

    def sample(self, now: float) -> Frame: ...

    def close(self) -> None: ...


class ErrorSource:
    """Reports the same frame-level error every pass (a driver that cannot be
    loaded, a reopened recording that has nothing live to sample)."""

    simulated = False

    def __init__(self, message: str, name: str = "nvml"):
        self.name = name
        self.message = message

    def sample(self, now: float) -> Frame:
        return Frame(time=now, source=self.name, error=self.message)

    def close(self) -> None:
        pass


def close_quietly(thing: object) -> None:
    """Close a source or enricher; a broken one must not stop a swap or a shutdown."""
    close = getattr(thing, "close", None)
    if close is not None:
        try:
            close()
        except Exception:  # noqa: BLE001
            pass
