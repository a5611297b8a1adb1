"""The command a remote host is read through, and what its end says: ``ssh``
with options that never prompt (BatchMode) and notice a dead peer
(ServerAliveInterval), running `vramscope stream` there -- the installed
command, then the module -- and, once the attempt is over, whether frames
came, vramscope is missing there, or why it failed (its stderr's last line).
sources/remote/host_stream.py makes the attempts.
"""

from __future__ import annotations

import shlex
from collections import deque
from collections.abc import Iterable, Sequence
from typing import IO

# What the remote runs: the installed command, then the module (a pip install
# --user puts the script in ~/.local/bin, which a non-interactive ssh shell
# often lacks on its PATH).
REMOTE_COMMANDS = (("vramscope", "stream"), ("python3", "-m", "vramscope", "stream"))
INSTALL_HINT = "python3 -m pip install --user vramscope"
SSH_OPTIONS = ("-o", "BatchMode=yes", "-o", "ServerAliveInterval=10", "-T")
COMMAND_NOT_FOUND = 127  # POSIX shells' status for a command that is not there

# how an attempt ended
FRAMES, MISSING, FAILED = "frames", "missing", "failed"


def ssh_argv(ssh: str, host: str, command: Sequence[str], interval: float, demo: bool) -> list[str]:
    """``ssh ... HOST 'vramscope stream --interval N [--demo]'``."""
    remote = list(command) + ["--interval", f"{interval:g}"] + (["--demo"] if demo else [])
    return [ssh, *SSH_OPTIONS, host, shlex.join(remote)]


def not_installed_text(host: str) -> str:
    return f"vramscope is not installed on {host}; install it with: ssh {host} {INSTALL_HINT}"


def outcome(
    hello_seen: bool, problem: str | None, rc: int | None, stderr: Iterable[str]
) -> tuple[str, str | None]:
    """(FRAMES | MISSING | FAILED, why) of an attempt that is over: ``hello_seen``
    whether the stream's hello came, ``problem`` what this side saw go wrong
    (None: the process ended by itself), ``rc`` its exit status, ``stderr`` its
    last lines. For FRAMES, why the connection was lost."""
    tail = [line for line in stderr if line.strip()]
    if hello_seen:
        if problem is None:
            problem = (tail[-1] if tail else None) or "the connection closed"
        return FRAMES, problem
    if problem is None and (
        rc == COMMAND_NOT_FOUND or any("No module named vramscope" in line for line in tail)
    ):
        return MISSING, None
    if problem is None:
        problem = (tail[-1].strip() if tail else None) or f"ssh exited with status {rc}"
    return FAILED, problem


def drain(stream: IO[bytes], tail: deque[str]) -> None:
    """Read a child's stderr to its end, keeping its last lines in ``tail`` (a
    bounded deque); a line without an end is read 4 KiB at a time."""
    try:
        for raw in iter(lambda: stream.readline(4096), b""):
            tail.append(raw.decode("utf-8", "replace").rstrip())
    except (OSError, ValueError):
        pass
    finally:
        stream.close()
