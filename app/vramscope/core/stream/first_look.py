"""The sampler's first look: the GPUs' own figures before its first pass has
read their processes.

On a big box the first pass is slow: at 16 GPUs x 1,024 processes every
process is new to the sampler (its /proc entries, its description), the
diagnostics see 16k processes for the first time and the first frame is
2.8 MB of JSON, so a window would show "waiting for the first sample" for
seconds. Asked to (`vramscope stream --devices-first`: the window's own
sampler process), the stream first sends a ``devices`` message: a frame of
the GPUs' own figures (memory, utilisation, temperature, power) read with
NVML's device calls alone, each GPU marked ``processes_pending`` with no
processes -- not known yet, which no view may show as "no processes" and no
history may keep as zero. The first whole frame follows as it always did.
The first look is not a sample of the pipeline: no rule judges it, no
session records it.

A source that can read its devices apart gives it (``sample_devices(now)``,
sources/nvml/nvml_source.py); any other sends none.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable

from vramscope.core.samples import Frame
from vramscope.core.flow.source import Source
from vramscope.core.stream import codec
from vramscope.core.stream.protocol import DEVICES, TYPE, Wire

log = logging.getLogger(__name__)


def pending(frame: Frame) -> Frame:
    """``frame`` with every GPU's processes (and its MIG slices') marked not read yet."""
    gpus = tuple(
        dataclasses.replace(
            gpu,
            processes=(),
            processes_pending=True,
            slices=tuple(dataclasses.replace(s, processes=()) for s in gpu.slices),
        )
        for gpu in frame.gpus
    )
    return dataclasses.replace(frame, gpus=gpus, agents=(), device_holders=(), kernels=())


def is_pending(frame: Frame | None) -> bool:
    """Whether some GPU of ``frame`` has its processes still being read."""
    return frame is not None and any(gpu.processes_pending for gpu in frame.gpus)


def devices_message(frame: Frame) -> Wire:
    return {TYPE: DEVICES, "frame": codec.frame_to_wire(pending(frame))}


def devices_from_message(message: Wire) -> Frame:
    """The first look a ``devices`` message carries (every GPU pending, whatever it
    says); ValueError when it does not fit the frame's schema."""
    return pending(codec.frame_from_wire(message.get("frame")))


class FirstLook:
    """``source``'s devices, read on a thread of its own from the stream's start --
    while it builds its monitor and opens its session (NVML's first init can take a
    while on a big box) -- and sent after the hello (``send``). A source that cannot
    read them apart, or fails to, sends none: its first pass says why."""

    def __init__(self, source: Source) -> None:
        self._frame: Frame | None = None
        self._thread = threading.Thread(
            target=self._read, args=(source,), name="vramscope-first-look", daemon=True
        )
        self._thread.start()

    def _read(self, source: Source) -> None:
        look = getattr(source, "sample_devices", None)
        if look is None:
            return
        try:
            self._frame = look(time.time())
        except Exception:  # noqa: BLE001 -- the first pass follows and reports it
            log.exception("reading the devices before the first pass failed")

    def send(self, send: Callable[[Wire], None]) -> bool:
        """Send the devices read (after the read is over: the source is the first
        pass's from then on); whether there were any."""
        self._thread.join()
        frame = self._frame
        if frame is None or not frame.gpus or frame.error:
            return False
        send(devices_message(frame))
        return True
