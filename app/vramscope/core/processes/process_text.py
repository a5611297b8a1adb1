"""Words for processes, one place for the window and `status`: the command and
user columns, and what to say when psutil cannot see a process. (What a
process is called -- "train.py (4242)" -- is core/processes/process_names.py.)"""

from __future__ import annotations

from collections.abc import Iterable

from vramscope.core.samples import ACCESS_DENIED, EXITED, GHOST, NOT_VISIBLE, GpuProcess
from vramscope.core.units import NA

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


MAX_COMMAND_CHARS = 8 * 1024  # of a command line kept per process (argv can be megabytes)
CUT_MARK = "[... {:,} more characters not kept]"


def capped_cmdline(argv: Iterable[object] | None) -> tuple[str, ...] | None:
    """A command line as kept: its arguments up to MAX_COMMAND_CHARS characters in
    all (the one that crosses the limit cut short), and a last element saying
    how much was left out. Done once, where the command line is read: a 10 MB
    argv then costs nothing in the table, the tooltips or a session."""
    if not argv:
        return None
    argv = tuple(str(a) for a in argv)
    total = sum(len(a) for a in argv)
    if total <= MAX_COMMAND_CHARS:
        return argv
    kept, room = [], MAX_COMMAND_CHARS
    for arg in argv:
        if room <= 0:
            break
        kept.append(arg[:room])
        room -= len(kept[-1])
    return (*kept, CUT_MARK.format(total - (MAX_COMMAND_CHARS - room)))


MAX_COMMAND_TEXT = 64 * 1024  # a command line read back as text (a session's): far over what
# capped_cmdline keeps with its spaces; older versions wrote whole argvs (megabytes)


def capped_command(text: str | None) -> str | None:
    """A command line read back as one text (a session file of any version), at most
    MAX_COMMAND_TEXT characters and then a note of how much was left out: a 10 MB
    command line an older version recorded costs the window nothing."""
    if text is None or len(text) <= MAX_COMMAND_TEXT:
        return text
    return f"{text[:MAX_COMMAND_TEXT]} {CUT_MARK.format(len(text) - MAX_COMMAND_TEXT)}"


def command_text(proc: GpuProcess) -> str:
    info = proc.info
    if info is None:
        return NA
    if info.visibility == EXITED:
        cmd = info.command
        return f"(exited) {cmd}" if cmd else VISIBILITY_COMMAND[EXITED]
    if info.visibility in VISIBILITY_COMMAND and not info.command:
        return VISIBILITY_COMMAND[info.visibility]
    return info.command or NA


def user_text(proc: GpuProcess) -> str:
    info = proc.info
    if info is None:
        return NA
    if info.user:
        return info.user
    return VISIBILITY_TEXT.get(info.visibility, NA)
