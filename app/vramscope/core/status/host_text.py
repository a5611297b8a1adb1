"""A watched host's state in one line (the hosts bar, the fleet view, `status --host`)."""

from __future__ import annotations

from vramscope.core.samples import HostStatus


def describe_state(host: str, state: str, error: str | None = None, retry_in: float | None = None) -> str:
    """One line: "lab2: connected", or why not and when it is tried again."""
    if state in (HostStatus.CONNECTED, HostStatus.CONNECTING):
        return f"{host}: {state}"
    text = f"{host}: {error or state}"
    if retry_in is not None:
        text += f"; retrying in {retry_in:.0f} s"
    return text
