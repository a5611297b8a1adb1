"""New settings for a running stream: the window's own sampler process
(sources/remote/local_sampler.py) takes the alert thresholds and the interval its
settings dialog changed as one request on its stdin, and goes on sampling and
recording into the same session -- no restart, no second session file.

    {"type": "settings", "thresholds": {DiagnosticSettings fields that differ
     from the defaults}, "interval": seconds}

Either key may be left out (that setting stays). The reply is a result line,
``ok`` false with the reason when the request does not fit (nothing applied).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from vramscope.core.stream import protocol
from vramscope.core.stream.protocol import Wire
from vramscope.core.stream.codec import from_wire, to_wire

if TYPE_CHECKING:  # (for the annotations; the functions import them where they use them)
    from vramscope.core.detectors.settings import DiagnosticSettings
    from vramscope.core.flow.monitor import Monitor

THRESHOLDS = "thresholds"
INTERVAL = "interval"


def thresholds_to_wire(diagnostics: DiagnosticSettings) -> Wire:
    """The fields of a DiagnosticSettings that differ from the defaults."""
    return to_wire(diagnostics)


def thresholds_from_wire(data: object) -> DiagnosticSettings:
    """The DiagnosticSettings ``data`` describes; ValueError (one line) when it does not fit."""
    from vramscope.core.detectors.settings import DiagnosticSettings

    return from_wire(DiagnosticSettings, data)


def settings_message(diagnostics: DiagnosticSettings | None = None, interval: float | None = None) -> Wire:
    message: Wire = {protocol.TYPE: protocol.SETTINGS}
    if diagnostics is not None:
        message[THRESHOLDS] = thresholds_to_wire(diagnostics)
    if interval is not None:
        message[INTERVAL] = float(interval)
    return message


def settings_reply(monitor: Monitor | None, message: Wire) -> Wire:
    """Apply a settings request to ``monitor`` (all of it or nothing); the result line."""
    from vramscope.core.flow.sampler import clamp_interval

    ident = message.get("id")
    reply = {protocol.TYPE: protocol.RESULT, "id": ident if type(ident) is int else None}
    try:
        if monitor is None:
            raise ValueError("this stream takes no settings")
        settings = None
        if THRESHOLDS in message:
            settings = thresholds_from_wire(message[THRESHOLDS])
        interval = message.get(INTERVAL)
        if interval is not None:
            if (
                isinstance(interval, bool)
                or not isinstance(interval, (int, float))
                or not math.isfinite(interval)
            ):
                raise ValueError(f"interval {str(interval)[:40]!r} is not a number of seconds")
            interval = clamp_interval(float(interval))
    except ValueError as exc:
        return {**reply, "ok": False, "error": f"settings not applied: {str(exc)[:200]}"}
    if settings is not None:
        monitor.engine.settings = settings
    if interval is not None:
        monitor.pipeline.sampler.interval = interval
        # a source that samples on a grid of its own takes it too (--host: each host's stream)
        getattr(monitor.pipeline.sampler.source, "set_interval", lambda _s: None)(interval)
    return {**reply, "ok": True, "value": None}
