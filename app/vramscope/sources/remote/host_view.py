"""What the monitor knows of one remote host right now (``HostView``) and how it
says it: its state (CONNECTING, CONNECTED, DOWN, NOT_INSTALLED: core/samples.py's
HostStatus), the newest frame, the remote diagnostics' alerts, why it is down
and when it is tried again; and the ``[user@]HOST`` a host is named by
(``check_target``). sources/remote/host_stream.py keeps one view up to date per
``--host``; the hosts bar, the fleet view and `vramscope status` read them.
"""

from __future__ import annotations

import dataclasses

from vramscope.core.samples import Frame, HostStatus
from vramscope.core.status.host_text import describe_state as describe_state  # read through here too

CONNECTING, CONNECTED, DOWN, NOT_INSTALLED = (
    HostStatus.CONNECTING,
    HostStatus.CONNECTED,
    HostStatus.DOWN,
    HostStatus.NOT_INSTALLED,
)


def check_target(target: str) -> str:
    """``[user@]HOST`` as ssh takes it (a Host alias of ~/.ssh/config included); ValueError else."""
    if (
        not target
        or target.startswith("-")
        or any(c.isspace() for c in target)
        or target.count("@") > 1
        or target.endswith("@")
    ):
        raise ValueError(f"not a [user@]host: {target!r}")
    return target


@dataclasses.dataclass(frozen=True)
class HostView:
    """What the monitor knows of one host right now."""

    host: str
    state: str  # CONNECTING / CONNECTED / DOWN / NOT_INSTALLED
    frame: Frame | None = None  # the newest frame (kept while down: the last one seen)
    alerts: tuple = ()  # the remote diagnostics' alerts with that frame (JSON dicts)
    error: str | None = None
    retry_in: float | None = None  # seconds until the next attempt, while down
    remote_version: str | None = None

    def describe(self) -> str:
        return describe_state(self.host, self.state, self.error, self.retry_in)
