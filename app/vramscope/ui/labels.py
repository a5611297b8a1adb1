"""Words for processes: legend labels and what to say when psutil can't see one."""

from __future__ import annotations

from vramscope.core.process_names import process_label, short_name
from vramscope.core.samples import ACCESS_DENIED, EXITED, NOT_VISIBLE, GpuProcess

__all__ = ["VISIBILITY_TEXT", "VISIBILITY_COMMAND", "short_name", "process_label",
           "command_text", "user_text"]

VISIBILITY_TEXT = {
    ACCESS_DENIED: "access denied",
    EXITED: "exited",
    NOT_VISIBLE: "not visible",
}

VISIBILITY_COMMAND = {
    ACCESS_DENIED: "(details not readable from this user: access denied)",
    EXITED: "(process has exited)",
    NOT_VISIBLE: "(not visible from here: another PID namespace or a container)",
}


def command_text(proc: GpuProcess) -> str:
    info = proc.info
    if info is None:
        return "n/a"
    if info.visibility == EXITED:
        cmd = info.command
        return f"(exited) {cmd}" if cmd else VISIBILITY_COMMAND[EXITED]
    if info.visibility in VISIBILITY_COMMAND and not info.command:
        return VISIBILITY_COMMAND[info.visibility]
    return info.command or "n/a"


def user_text(proc: GpuProcess) -> str:
    info = proc.info
    if info is None:
        return "n/a"
    if info.user:
        return info.user
    return VISIBILITY_TEXT.get(info.visibility, "n/a")
