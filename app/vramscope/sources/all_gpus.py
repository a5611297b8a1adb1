"""Every GPU of this Linux machine: NVIDIA's through NVML, then AMD's and
Intel's through the kernel's DRM interfaces (sources/drm/drm_source.py), in one frame.

NVIDIA GPUs keep NVML's indices; the DRM GPUs follow them (after the most
NVIDIA GPUs ever seen, so an index does not move when NVML has a bad pass).
A machine without NVIDIA's driver but with other GPUs shows those, and the
frame carries no "driver not found" error for a driver it does not need. The
frame's ``source`` names what was read: "nvml", the DRM drivers ("amdgpu",
"xe"), or both ("nvml + amdgpu"), so an AMD-only box never says "nvml".
"""

from __future__ import annotations

import dataclasses

from vramscope.core.samples import Frame
from vramscope.sources.drm.drm_source import DrmGpus
from vramscope.sources.nvml.nvml_source import NvmlSource


SOURCE_JOIN = " + "


class AllGpusSource:
    simulated = False

    def __init__(self, nvml: NvmlSource | None = None, drm: DrmGpus | None = None):
        self.nvml = nvml if nvml is not None else NvmlSource()
        self.drm = drm if drm is not None else DrmGpus()
        self.name = self.nvml.name
        self._nvidia_count = 0

    @property
    def error(self) -> str | None:
        return self.nvml.error

    def gpu_errors(self, index: int) -> dict[str, str]:
        return self.nvml.gpu_errors(index)

    def sample(self, now: float) -> Frame:
        frame = self.nvml.sample(now)
        self._nvidia_count = max(self._nvidia_count, len(frame.gpus))
        others = self.drm.read(now, first_index=self._nvidia_count)
        if not others:
            return frame
        error = frame.error
        if error is not None and (self.nvml.not_installed or not frame.gpus and self.nvml.no_driver):
            error = None  # no NVIDIA driver on a machine whose GPUs need none
        names = ([frame.source] if frame.gpus else []) + list(self.drm.drivers)
        return dataclasses.replace(
            frame,
            gpus=frame.gpus + others,
            error=error,
            source=SOURCE_JOIN.join(names),
            host_pids=frame.host_pids if frame.host_pids is not None else self.drm.processes.host_pids,
        )

    def sample_devices(self, now: float) -> Frame | None:
        """NVIDIA's GPUs' own figures before the first pass (core/stream/first_look.py);
        AMD's and Intel's, read from their processes' DRM clients, come with that pass."""
        return self.nvml.sample_devices(now)

    def close(self) -> None:
        self.nvml.close()
