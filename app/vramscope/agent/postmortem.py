"""The agent's part of the OOM post-mortem: the allocator's picture at the instant of
the OOM, the largest live tensors where sites were being recorded, the report kept
and said on the training process's stderr at exit (agent/oom_report.py builds it).

Everything here runs once per OOM, on the thread whose allocation failed; every
error is counted by the agent and leaves the event as it was.
"""

from __future__ import annotations

import os
import sys
import time

from vramscope.agent import oom_report, oom_text, sites
from vramscope.agent.segments import by_device

MAX_REPORTS = 8  # kept for the exit; the first OOMs are the ones that matter
MAX_MODULES = 64  # module figures kept in the event (the session keeps them)


def complete(agent, event: dict, device: int | None, snapshot: dict | None) -> None:
    """Add the allocator summary, the live tensors and the report to an OOM event."""
    try:
        name = event.get("device")
        event.update(time=time.time(), step=agent.steps.count, pid=os.getpid())
        if name is not None and event.get("requested"):
            agent.allocator.oom_request[name] = event["requested"]
        settings = agent.reader.provider.allocator_settings() if agent.reader is not None else {}
        expandable = (settings or {}).get("expandable_segments")
        if snapshot is not None and device is not None:
            segs = by_device(snapshot.get("segments")).get(device, [])
            event["allocator"] = agent.allocator.summary(name, segs, expandable)
            if agent.reader.provider.history_enabled():  # sites on: frames on the blocks
                event["tensors"] = sites.live_tensors(segs, sites.cuda_tensors(device), device)
        # the per-module figures of the last measured step, where the agent measures them
        # (a list of {name, parent, weights, gradients, optimizer_state, activations, shared, why})
        modules = getattr(agent, "module_figures", None)
        if modules:
            event["modules"] = list(modules)[:MAX_MODULES]
        report = oom_report.build_report(
            event,
            modules=event.get("modules"),
            tensors=event.get("tensors"),
            expandable_on=bool(expandable) if expandable is not None else None,
        )
        if len(agent.oom_reports) < MAX_REPORTS:
            agent.oom_reports.append(report)
    except Exception as exc:
        agent.error(exc)


def say_at_exit(agent, stream=None) -> None:
    """The kept reports, a dozen lines each, on stderr (at exit)."""
    stream = stream or sys.stderr
    for report in agent.oom_reports:
        try:
            print("\n".join(oom_text.lines(report)), file=stream, flush=True)
        except Exception:  # a closed stderr: nothing to say it on
            return
