"""The agent's part of the OOM post-mortem: the allocator's picture at the instant of
the OOM, the largest live tensors where sites were being recorded, the report kept
and said on the training process's stderr at exit (agent/oom/oom_report.py builds it).

Everything here runs once per OOM, on the thread whose allocation failed; every
error is counted by the agent (agent/oom/oom.py) and leaves the event as it was.
"""

from __future__ import annotations

import os
import sys
import time

from vramscope.agent.oom import oom_report
from vramscope.agent.oom import oom_text
from vramscope.agent.allocator import sites
from vramscope.agent.allocator.segments import by_device

MAX_REPORTS = 8  # kept for the exit; the first OOMs are the ones that matter


def complete(
    event: dict, device: int | None, snapshot: dict | None, *, step: int, allocator, provider
) -> dict:
    """Add the allocator summary (from the ``allocator`` watch, agent/allocator/allocator_watch.py),
    the live tensors to an OOM event at step ``step``; the report (agent/oom/oom_report.py)."""
    name = event.get("device")
    event.update(time=time.time(), step=step, pid=os.getpid())
    if name is not None and event.get("requested"):
        allocator.oom_request[name] = event["requested"]
    settings = provider.allocator_settings() if provider is not None else {}
    expandable = (settings or {}).get("expandable_segments")
    if snapshot is not None and device is not None:
        segs = by_device(snapshot.get("segments")).get(device, [])
        event["allocator"] = allocator.summary(name, segs, expandable)
        if provider.history_enabled():  # sites on: frames on the blocks
            event["tensors"] = sites.live_tensors(segs, sites.cuda_tensors(device), device)
    # no per-module figures in the event: the agent sends them as "modules" items, and
    # the window, the near-OOM alert and the session's OOM export put that device's
    # beside the event (core/agent_figures/oom_context.py)
    return oom_report.build_report(
        event,
        tensors=event.get("tensors"),
        expandable_on=bool(expandable) if expandable is not None else None,
    )


def say_at_exit(reports: list[dict], stream=None) -> None:
    """The kept ``reports``, a dozen lines each, on stderr (at exit)."""
    stream = stream or sys.stderr
    for report in reports:
        try:
            print("\n".join(oom_text.lines(report)), file=stream, flush=True)
        except Exception:  # a closed stderr: nothing to say it on
            return
