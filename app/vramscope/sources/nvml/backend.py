"""NVIDIA's GPUs as one of the machine's GPU backends (sources/gpu_backend.py):
``NvmlSource`` (nvml_source.py) read, its GPUs numbered from where the
machine's source places them, and "no NVIDIA driver here" told apart from a fault."""

from __future__ import annotations

import dataclasses

from vramscope.core.samples import Frame
from vramscope.sources.gpu_backend import BackendPass, GpuBackend, renumbered
from vramscope.sources.nvml.nvml_source import NvmlSource


class NvmlBackend(GpuBackend):
    def __init__(self, source: NvmlSource | None = None):
        self.source = source if source is not None else NvmlSource()

    def read(self, now: float, first_index: int) -> BackendPass:
        nvml = self.source
        frame = _placed(nvml.sample(now), first_index)
        # no library, or no GPU because no driver is loaded: nothing wrong on a machine
        # whose GPUs need no NVIDIA driver
        absent = nvml.not_installed or (not frame.gpus and nvml.no_driver)
        return BackendPass(frame, driver_absent=absent)

    def read_devices(self, now: float, first_index: int) -> Frame | None:
        frame = self.source.sample_devices(now)
        return None if frame is None else _placed(frame, first_index)

    def gpu_errors(self, index: int) -> dict[str, str]:
        return self.source.gpu_errors(index)

    def close(self) -> None:
        self.source.close()


def _placed(frame: Frame, first_index: int) -> Frame:
    if not first_index:
        return frame
    return dataclasses.replace(frame, gpus=renumbered(frame.gpus, first_index))
