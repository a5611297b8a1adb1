"""AMD's and Intel's GPUs as one of the machine's GPU backends
(sources/gpu_backend.py): ``DrmGpus`` (drm_source.py, ROCm compute processes
through KFD included) read into a frame named for the DRM drivers it read
("amdgpu", "xe", "amdgpu + xe")."""

from __future__ import annotations

from vramscope.core.samples import Frame
from vramscope.sources.drm.drm_source import DrmGpus
from vramscope.sources.gpu_backend import SOURCE_JOIN, BackendPass, GpuBackend


class DrmBackend(GpuBackend):
    def __init__(self, gpus: DrmGpus | None = None):
        self.gpus = gpus if gpus is not None else DrmGpus()

    def read(self, now: float, first_index: int) -> BackendPass:
        drm = self.gpus
        found = drm.read(now, first_index=first_index)
        return BackendPass(
            Frame(
                time=now,
                gpus=found,
                source=SOURCE_JOIN.join(drm.drivers),
                host_pids=drm.processes.host_pids,
            )
        )
