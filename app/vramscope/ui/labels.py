"""Words for processes: legend labels and what to say when psutil can't see one."""

from __future__ import annotations

import os

from vramscope.core.samples import (
    ACCESS_DENIED, EXITED, GHOST, NOT_VISIBLE, GpuProcess, ProcessInfo,
)

VISIBILITY_TEXT = {
    ACCESS_DENIED: "access denied",
    EXITED: "exited",
    NOT_VISIBLE: "not visible",
    GHOST: "no such process",
}

VISIBILITY_COMMAND = {
    ACCESS_DENIED: "(details not readable from this user: access denied)",
    EXITED: "(process has exited)",
    NOT_VISIBLE: "(not visible from here: another PID namespace or a container)",
    GHOST: "(no such process: the driver still holds its memory; see the alert)",
}

_PYTHONS = ("python", "python3", "pythonw")


def short_name(info: ProcessInfo | None) -> str | None:
    """What an ML engineer calls it: 'Jupyter kernel', 'train.py', 'vllm'."""
    if info is None:
        return None
    cmd = info.cmdline or ()
    if any("ipykernel_launcher" in part or "ipykernel" == part for part in cmd):
        return "Jupyter kernel"
    if cmd:
        exe = os.path.basename(cmd[0])
        if exe.startswith(_PYTHONS):
            for i, part in enumerate(cmd[1:], start=1):
                if part == "-m" and i + 1 < len(cmd):
                    return cmd[i + 1]
                if part.startswith("-"):
                    continue
                return os.path.basename(part)
        if exe in ("torchrun", "accelerate", "deepspeed") and len(cmd) > 1:
            rest = [p for p in cmd[1:] if not p.startswith("-")]
            return f"{exe} {os.path.basename(rest[-1])}" if rest else exe
    return info.name or (os.path.basename(cmd[0]) if cmd else None)


def process_label(proc: GpuProcess) -> str:
    """'train.py (4242)'; 'pid 4242' when nothing else is known."""
    name = short_name(proc.info)
    return f"{name} ({proc.pid})" if name else f"pid {proc.pid}"


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
