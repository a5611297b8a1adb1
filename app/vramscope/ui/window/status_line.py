"""The window's two lines about its frames, as text: where they come from
(the toolbar's right end) and what the sampling does now (the status bar).
No Qt: the window sets the texts (ui/window/main_window.py)."""

from __future__ import annotations

import time

from vramscope.core.samples import PROMETHEUS_SOURCE, SSH_SOURCE, Frame

TITLE_HOST_NAMES = 2  # a title names up to this many hosts; more are counted ("3 hosts")


def hosts_text(n: int) -> str:
    return f"{n} host" + ("" if n == 1 else "s")


def window_title(frame: Frame | None, session_file: str | None = None) -> str:
    """ "vramscope", "vramscope — gpu-box-1", "vramscope — 3 hosts", then the
    recorded session's file, then "demo (simulated data)" for the demo."""
    parts = ["vramscope"]
    hosts = frame.host_names if frame is not None else ()
    if hosts:
        parts.append(", ".join(hosts) if len(hosts) <= TITLE_HOST_NAMES else hosts_text(len(hosts)))
    if session_file:
        parts.append(session_file)
    if frame is not None and frame.simulated:
        parts.append("demo (simulated data)")
    return " — ".join(parts)


def source_text(frame: Frame | None, source: str) -> str:
    """ "Source: nvml · driver 550.54", "Source: 2 hosts over ssh", "Source: demo (simulated)"."""
    hosts = frame.host_names if frame is not None else ()
    if frame is not None and frame.simulated:
        return "Source: demo (simulated)"
    if hosts:  # other machines: how many and how, each card names its own driver
        via = {SSH_SOURCE: "over ssh", PROMETHEUS_SOURCE: "from Prometheus"}.get(source)
        n = hosts_text(len(hosts))
        return f"Source: {n} {via}" if via else f"Source: {source} · {n}"
    text = f"Source: {source}"
    if frame is not None and frame.driver_version:
        text += f" · driver {frame.driver_version}"
    return text


def status_text(
    frame: Frame | None,
    interval: float,
    session_file: str | None,
    trouble: str | None,
    paused_for: int | None,
) -> str:
    """The status bar: sampling (or the recorded session's hint), the last sample's
    time, the frame's error, the pipeline's trouble; ``paused_for``: new samples
    since the view was paused (None: not paused)."""
    parts = (
        [f"sampling every {interval:g} s"]
        if session_file is None
        else ["recorded session: move the scrubber below, zoom the plots with the mouse wheel"]
    )
    if frame is not None and not frame.gpus and session_file is None:
        # nothing is being sampled: say what really happens
        parts = ["no GPU to sample: checking every few seconds whether a driver has appeared"]
    elif frame is not None:
        parts.append("last sample " + time.strftime("%H:%M:%S", time.localtime(frame.time)))
        if frame.error and frame.gpus:
            parts.append(frame.error)
    if trouble:
        parts.append(f"⚠ {trouble}")
    if paused_for is not None:
        parts.insert(0, f"PAUSED — view frozen, sampling continues ({paused_for} new samples)")
    return "  ·  ".join(parts)
