"""What a GPU backend gives the machine's source (sources/all_gpus.py): one vendor's
GPUs, read once per pass.

A backend (sources/nvml/backend.py, sources/drm/backend.py) reads its GPUs
numbered from ``first_index`` -- the GPUs of the backends before it keep theirs
-- into a ``BackendPass``: a Frame of its own GPUs (``source`` names what it read,
``error`` why it could not), and whether that error only says this machine has
none of its driver (then it is no fault where another backend found GPUs).
It never raises for device trouble. Adding a vendor is a module with a
``GpuBackend`` subclass and its line in ``all_gpus.BACKENDS``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from vramscope.core.samples import Frame, GpuSample

SOURCE_JOIN = " + "  # a frame read by several backends is named "nvml + amdgpu"


@dataclass(frozen=True, slots=True)
class BackendPass:
    """What one backend read in one pass."""

    frame: Frame  # its GPUs (numbered from first_index), its name for what it read, its error
    driver_absent: bool = False  # the error says only that its driver is not on this machine


class GpuBackend:
    """One vendor's GPUs. ``read`` is the pass; the rest has defaults a backend
    without the facility keeps."""

    def read(self, now: float, first_index: int) -> BackendPass:
        raise NotImplementedError

    def read_devices(self, now: float, first_index: int) -> Frame | None:
        """The GPUs' own figures before the first pass (core/stream/first_look.py),
        each ``processes_pending``; None where the backend cannot read them apart."""
        return None

    def gpu_errors(self, index: int) -> dict[str, str]:
        """The last error per call for its GPU ``index`` (its own numbering), as text."""
        return {}

    def close(self) -> None:
        pass


def renumbered(gpus: tuple[GpuSample, ...], first_index: int) -> tuple[GpuSample, ...]:
    """A backend's GPUs numbered 0.. moved to start at ``first_index``."""
    if not first_index:
        return gpus
    return tuple(dataclasses.replace(g, index=g.index + first_index) for g in gpus)
