"""Running a helper command whose answer is input: bounded in time and bytes.

A scheduler's command (``scontrol``) is found on PATH and may be slow (a
controller that does not answer), chatty or not what it claims. ``run_bounded``
gives it ``timeout`` seconds and ``max_bytes`` of output in all, then kills it;
it never reads stdin, and its stderr is dropped.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import time


class CommandFailed(OSError):
    """Not found, not runnable, too slow, too much output, or a non-zero exit (one line)."""


class CommandRefused(CommandFailed):
    """It ran and answered in time, with a non-zero exit status (``scontrol`` for a job it does not know)."""


def run_bounded(argv: list[str], timeout: float, max_bytes: int = 1 << 16) -> str:
    """The command's stdout (UTF-8, bad bytes replaced); CommandFailed otherwise."""
    try:
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
    except OSError as exc:
        raise CommandFailed(f"cannot run {argv[0]}: {exc.strerror or exc}") from None
    out = bytearray()
    end = time.monotonic() + timeout
    why = None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        while why is None:
            left = end - time.monotonic()
            if left <= 0:
                why = f"{argv[0]} did not answer within {timeout:g} s"
            elif sel.select(left):
                chunk = os.read(proc.stdout.fileno(), 65536)
                if not chunk:
                    break
                out += chunk
                if len(out) > max_bytes:
                    why = f"{argv[0]} wrote more than {max_bytes} bytes"
    proc.stdout.close()
    if why is not None:
        proc.kill()
    try:
        code = proc.wait(timeout=max(0.0, end - time.monotonic()) + 0.5)
    except subprocess.TimeoutExpired:  # closed its stdout but goes on
        proc.kill()
        proc.wait()
        code, why = None, why or f"{argv[0]} did not exit within {timeout:g} s"
    if why is not None:
        raise CommandFailed(why)
    if code != 0:
        raise CommandRefused(f"{argv[0]} exited with status {code}")
    return out.decode("utf-8", errors="replace")
