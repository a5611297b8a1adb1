"""The busy demo's caught OOM: train.py's periodic sample generation with a long prompt
asks for more than GPU 0 has free, catches ``torch.cuda.OutOfMemoryError`` and goes
on training -- an OOM event with everything the post-mortem reads (the request, the
free memory, the buckets and the allocator's summary at that instant, the other
processes on the GPU), so the agents tab shows one on ``vramscope --demo --busy``.
"""

from __future__ import annotations

import dataclasses

from vramscope.agent.protocol import EventKind
from vramscope.core.agent_figures import oom_context
from vramscope.core.samples import AgentEvent, AgentReport, GpuProcess
from vramscope.core.units import GiB, MiB
from vramscope.sources.demo import demo_allocator

OOM_AT = 420.0  # seconds into the session
EXTRA = 1280 * MiB  # how much more than free the generation asked for


class CaughtOom:
    """The event, made once from the figures of the frame that crosses OOM_AT."""

    def __init__(self):
        self.event: AgentEvent | None = None

    def apply(
        self,
        report: AgentReport,
        proc: GpuProcess,
        procs: list[GpuProcess],
        total: int,
        free: int,
        t: float,
        prev: float,
        session_start: float,
    ) -> AgentReport:
        if t < OOM_AT or not report.devices:
            return report
        if self.event is None:
            dev = report.devices[0]
            # before raising, the allocator returned its whole free segments to the driver
            # and retried: at the observer only the slivers are left in its cache
            slivers = min(dev.inactive_split or 0, dev.reserved - dev.allocated)
            released = dev.reserved - dev.allocated - slivers
            reserved, free = dev.reserved - released, free + released
            requested = (free + EXTRA) // (2 * MiB) * (2 * MiB)
            buckets = dataclasses.replace(dev.buckets, cached_free=slivers).as_dict() if dev.buckets else None
            snapshot = demo_allocator.allocator_item(
                session_start + OOM_AT, report.step, dev.device, dev.allocated, reserved, slivers
            )
            data = {
                "device": dev.device,
                "requested": requested,
                "device_free": free,
                "device_total": dev.total or total,
                "allocated": dev.allocated,
                "reserved": reserved,
                "buckets": buckets,
                "step": report.step,
                "source": "observer",
                "allocator": snapshot["devices"][dev.device],
                "message": f"CUDA out of memory. Tried to allocate {requested / GiB:.2f} GiB.",
            }
            oom_context.note(data, procs, proc, dev.reserved)
            self.event = AgentEvent(EventKind.OOM, session_start + OOM_AT, data)
        new = (self.event,) if prev < OOM_AT <= t else ()
        devices = tuple(
            dataclasses.replace(d, num_ooms=(d.num_ooms or 0) + 1) if i == 0 else d
            for i, d in enumerate(report.devices)
        )  # the allocator counted it
        return dataclasses.replace(
            report,
            devices=devices,
            events=report.events + new,
            recent_events=report.recent_events + (self.event,),
        )
