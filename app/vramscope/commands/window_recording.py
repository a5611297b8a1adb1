"""The window's session recording, done by its sampler process
(`vramscope stream --record-session`, started by the window through
sources/remote/local_sampler.py): the same recorder the window had -- real GPUs
only, a new file in the user's session directory, the oldest removed past
the cap -- so the session outlives the window (a killed window loses no
sample: each is committed by this process, which ends when its window
does)."""

from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The sampler process's own options (hidden: the window passes them)."""
    p.add_argument("--record-session", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--session-cap", type=int, default=None, help=argparse.SUPPRESS)
    # the window's alert thresholds (JSON, DiagnosticSettings fields that differ from
    # the defaults), so its sampler raises and records the alerts the window shows
    p.add_argument("--thresholds", default=None, help=argparse.SUPPRESS)


def thresholds(text: str | None):
    """The DiagnosticSettings a --thresholds JSON gives; None (said on stderr) when it does not fit."""
    if text is None:
        return None
    import sys

    from vramscope.agent import json_limits
    from vramscope.core.stream.settings_request import thresholds_from_wire

    try:
        return thresholds_from_wire(json_limits.loads(text))
    except ValueError as exc:
        print(f"vramscope stream: --thresholds ignored ({str(exc)[:200]})", file=sys.stderr)
        return None


def recording(args, settings=None):
    """``record(monitor, source) -> path`` for run_stream (the window's thresholds
    ``settings``, as ``thresholds`` read them, and its recorder when asked), or None
    when the window asked for neither."""
    if not getattr(args, "record_session", False) and settings is None:
        return None
    cap = getattr(args, "session_cap", None)

    def record(monitor, source):
        if settings is not None:
            monitor.engine.settings = settings
        if not getattr(args, "record_session", False):
            return None
        from vramscope.core.session import RetentionPolicy
        from vramscope.core.session.library import default_directory, new_session_path
        from vramscope.sources.assembly import session_recorder

        directory = default_directory()
        try:
            path = new_session_path(directory)
        except OSError:
            return None  # no session directory: the window runs unrecorded
        retention = RetentionPolicy() if cap is None else RetentionPolicy(max_bytes=cap)
        monitor.record(
            session_recorder(
                monitor, source, "vramscope", directory=directory, path=path, retention=retention
            )
        )
        return path

    return record
