"""`vramscope record` -- record a session headless (SSH sessions, servers).

The same pipeline as the window (core/flow/monitor.py), with a recorder of one
file as its recorder stage; no Qt. Ctrl-C or SIGTERM stop it cleanly (final commit and a
checkpoint into a single file); a SIGKILL loses at most the last second.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import threading

from vramscope.commands.common import (
    add_host_arguments,
    add_source_arguments,
    driver_unavailable,
    probe_driver,
    say_driver_unavailable,
)
from vramscope.commands.option_types import address, interval_seconds, positive, seconds
from vramscope.sources.choose import enrichers_for, open_source


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_source_arguments(p)
    add_host_arguments(p)
    p.add_argument(
        "--out",
        metavar="FILE",
        help="session file to write (default: a new file in the user's data "
        "directory, where the oldest sessions are removed past the cap)",
    )
    p.add_argument(
        "--interval",
        metavar="S",
        type=interval_seconds,
        default=1.0,
        help="seconds between samples (default 1, 0.1 to 60)",
    )
    p.add_argument(
        "--duration",
        metavar="S",
        type=seconds(),
        default=None,
        help="stop after S seconds (default: until Ctrl-C / SIGTERM)",
    )
    p.add_argument(
        "--prometheus",
        metavar="HOST:PORT",
        default=None,
        type=address,
        help="also serve the current metrics for Prometheus at HOST:PORT "
        "(loopback unless you name another address)",
    )
    p.add_argument(
        "--keep-gb",
        metavar="GIB",
        type=positive(float),
        default=None,
        help="cap for the default session directory in GiB, as in the window's settings (default 2)",
    )
    p.add_argument(
        "--keep-days",
        metavar="DAYS",
        type=positive(float),
        default=None,
        help="remove default-directory sessions older than DAYS (default 30)",
    )


def _say(text: str, stream=None) -> None:
    from vramscope.core.status.terminal_text import say

    say(stream or sys.stdout, text)  # paths and errors escaped for the terminal


class _Tally:
    """How many frames had GPU figures, and why the last one without had none."""

    def __init__(self):
        self.frames = 0
        self.with_gpus = 0
        self.last_error: str | None = None

    def __call__(self, frame) -> None:
        self.frames += 1
        if any(g.error is None for g in frame.gpus):
            self.with_gpus += 1
        else:
            self.last_error = frame.error or next((g.error for g in frame.gpus if g.error), None)


def record_session(
    source,
    path: pathlib.Path,
    *,
    interval: float = 1.0,
    duration: float | None = None,
    prometheus: str | None = None,
    retention=None,
    retention_directory=None,
    enrichers=None,
    stop: threading.Event | None = None,
    out=None,
    err=None,
    diagnostics=None,
) -> int:
    """Sample ``source`` into the session file ``path`` until ``duration`` or ``stop``.

    The window's pipeline (sources/assembly.py): the same enrichers and thresholds
    (the user's settings file, unless ``diagnostics`` says otherwise), with a
    recorder of this one file and a tally as the runner's sinks (core/flow/runner.py).
    """
    from vramscope.core.flow import runner
    from vramscope.core.flow.sampler import clamp_interval
    from vramscope.core.session import SessionError
    from vramscope.core.session.library import session_size
    from vramscope.sources.assembly import build_monitor, session_recorder

    stop = stop or threading.Event()
    err = err or sys.stderr
    interval = clamp_interval(interval)
    monitor = build_monitor(source, enrichers=enrichers, interval=interval, diagnostics=diagnostics)
    recorder = session_recorder(
        monitor,
        source,
        "vramscope record",
        meta={"simulated": bool(getattr(source, "simulated", False)), "interval": interval},
        retention=retention,
        directory=retention_directory,
        path=path,
        include_simulated=True,
    )
    if prometheus:  # before the file: a port in use leaves nothing behind to block a retry
        try:
            monitor.serve_metrics(prometheus, warn=lambda m: _say(f"vramscope record: warning: {m}", err))
        except (OSError, ValueError) as exc:
            _say(f"vramscope record: cannot serve metrics on {prometheus}: {exc}; nothing recorded", err)
            monitor.close()
            return 2
    try:
        recorder.open()
    except SessionError as exc:
        _say(f"vramscope record: {exc}", err)
        monitor.close()
        return 2
    tally = _Tally()
    writer = recorder.writer
    what = f"every {interval:g} s" + (f" for {duration:g} s" if duration else "")
    _say(f"vramscope: recording to {path} ({what}; Ctrl-C to stop)", out)
    if getattr(source, "simulated", False):
        _say("vramscope: the source is the simulated demo workstation, not real GPUs", out)
    if monitor.metrics is not None:
        _say(f"vramscope: Prometheus metrics at {monitor.metrics.url}", out)
    runner.run(monitor, [recorder, tally], stop, duration=duration)
    size = session_size(path) / 1e6
    _say(f"vramscope: recorded {writer.frames_written} samples to {path} ({size:.1f} MB)", out)
    status = 0
    if tally.frames and not tally.with_gpus:  # e.g. every ssh attempt failed: say so
        _say(
            f"vramscope record: none of the {tally.frames} samples has GPU figures"
            f"{': ' + tally.last_error if tally.last_error else ''}",
            err,
        )
        status = 1
    if writer.errors:
        _say(
            f"vramscope record: {writer.errors} samples could not be written "
            f"(last error: {writer.last_error})",
            err,
        )
        status = 1
    failures = monitor.store.listeners.listener_failures
    if failures:
        _say(f"vramscope record: {failures} pipeline stage failures (see the log)", err)
        status = 1
    return status


def run(args) -> int:
    from vramscope.core.session.library import (
        DEFAULT_MAX_AGE_DAYS,
        DEFAULT_MAX_BYTES,
        RetentionPolicy,
        default_directory,
        new_session_path,
    )
    from vramscope.core.units import GiB

    retention = directory = None
    if args.out:
        path = pathlib.Path(args.out).expanduser()
        if os.path.lexists(path):  # False, not an error, for a name too long (said below)
            _say(
                f"vramscope record: {path} already exists; vramscope does not overwrite a "
                "recording -- choose another --out name",
                sys.stderr,
            )
            return 2
    else:
        directory = default_directory()
        retention = RetentionPolicy(
            max_bytes=int(args.keep_gb * GiB) if args.keep_gb is not None else DEFAULT_MAX_BYTES,
            max_age_days=args.keep_days if args.keep_days is not None else DEFAULT_MAX_AGE_DAYS,
        )
        try:
            path = new_session_path(directory)
        except OSError as exc:
            _say(
                f"vramscope record: cannot use the session directory {directory}: {exc.strerror or exc}",
                sys.stderr,
            )
            return 2
    from vramscope.core.flow.runner import StopSignals

    stop = threading.Event()
    with StopSignals(stop):  # SIGINT, SIGTERM, SIGHUP: the final commit, then exit 0
        source = open_source(args)
        probe = None if getattr(args, "host", None) else probe_driver(source)
        if probe is not None and driver_unavailable(probe):  # say so, write nothing
            source.close()
            say_driver_unavailable("record", probe, "nothing recorded")
            return 2
        return record_session(
            source,
            path,
            interval=args.interval,
            duration=args.duration,
            prometheus=args.prometheus,
            retention=retention,
            retention_directory=directory,
            stop=stop,
            enrichers=enrichers_for,
        )
