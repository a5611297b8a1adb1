"""Every GPU of this Linux machine in one frame: each registered GPU backend in
turn -- NVIDIA's through NVML, then AMD's and Intel's through the kernel's DRM
interfaces (ROCm compute processes through KFD).

``BACKENDS`` is the one list: a vendor is a module with a ``GpuBackend``
(sources/gpu_backend.py) and its line here. A backend's GPUs follow those of
the backends before it, after the most GPUs each of those ever showed, so an
index does not move when one backend has a bad pass. A machine without one
vendor's driver but with other GPUs shows those, and the frame carries no
"driver not found" error for a driver it does not need. The frame's
``source`` names what was read: "nvml", the DRM drivers ("amdgpu", "xe"), or
several ("nvml + amdgpu"), so an AMD-only box never says "nvml". The first
backend's frame gives what only one backend knows (driver versions, WSL).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from vramscope.core.samples import Frame
from vramscope.sources.drm.backend import DrmBackend
from vramscope.sources.gpu_backend import SOURCE_JOIN, BackendPass, GpuBackend
from vramscope.sources.nvml.backend import NvmlBackend

# the GPU backends, in the order their GPUs are numbered: one line per vendor
BACKENDS: list[Callable[[], GpuBackend]] = [
    NvmlBackend,
    DrmBackend,
]


class AllGpusSource:
    name = "nvml"  # the source's name while it reads nothing else (core/source.py)
    simulated = False

    def __init__(self, backends: Sequence[GpuBackend] | None = None):
        self.backends = list(backends) if backends is not None else [make() for make in BACKENDS]
        self._most = [0] * len(self.backends)  # the most GPUs each backend has shown

    def _first_indices(self) -> list[int]:
        firsts, n = [], 0
        for most in self._most:
            firsts.append(n)
            n += most
        return firsts

    def gpu_errors(self, index: int) -> dict[str, str]:
        """The last error per call of the GPU at the frame's ``index``, from its backend."""
        for backend, first, most in zip(self.backends, self._first_indices(), self._most):
            if first <= index < first + most:
                return backend.gpu_errors(index - first)
        return {}

    def sample(self, now: float) -> Frame:
        passes: list[BackendPass] = []
        first = 0
        for i, backend in enumerate(self.backends):
            read = backend.read(now, first)
            self._most[i] = max(self._most[i], len(read.frame.gpus))
            first += self._most[i]
            passes.append(read)
        return joined(passes)

    def sample_devices(self, now: float) -> Frame | None:
        """The GPUs' own figures before the first pass (core/stream/first_look.py), from
        the backends that can read them apart (NVML); the others' come with that pass."""
        frames = [
            frame
            for backend, first in zip(self.backends, self._first_indices())
            if (frame := backend.read_devices(now, first)) is not None
        ]
        if not frames:
            return None
        return joined([BackendPass(f) for f in frames])

    def close(self) -> None:
        for backend in self.backends:
            backend.close()


def joined(passes: Sequence[BackendPass]) -> Frame:
    """One frame of the backends' passes: the first backend's frame with every
    backend's GPUs. Where no later backend found a GPU, the first one's frame as read."""
    head, rest = passes[0], [p for p in passes[1:] if p.frame.gpus]
    if not rest:
        return head.frame
    found = [head, *rest]
    errors = [p.frame.error for p in found if p.frame.error is not None and not p.driver_absent]
    host_pids = [p.frame.host_pids for p in found if p.frame.host_pids is not None]
    return dataclasses.replace(
        head.frame,
        gpus=tuple(g for p in found for g in p.frame.gpus),
        error=errors[0] if errors else None,
        source=SOURCE_JOIN.join(p.frame.source for p in found if p.frame.gpus),
        host_pids=host_pids[0] if host_pids else None,
        device_holders=tuple(h for p in found for h in p.frame.device_holders),
    )
