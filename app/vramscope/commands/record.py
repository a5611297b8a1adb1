"""`vramscope record` -- record a session headless (SSH sessions, servers).

The same Sampler and Store as the window, with the session writer
subscribed; no Qt. Ctrl-C or SIGTERM stop it cleanly (final commit and a
checkpoint into a single file); a SIGKILL loses at most the last second.
"""

from __future__ import annotations

import argparse
import pathlib
import signal
import sys
import threading
import time

from vramscope.commands.common import add_host_arguments, add_source_arguments, enrichers_for, open_source


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_source_arguments(p)
    add_host_arguments(p)
    p.add_argument("--out", metavar="FILE",
                   help="session file to write (default: a new file in the user's data "
                        "directory, where the oldest sessions are removed past the cap)")
    p.add_argument("--interval", metavar="S", type=float, default=1.0,
                   help="seconds between samples (default 1, 0.1 to 60)")
    p.add_argument("--duration", metavar="S", type=float, default=None,
                   help="stop after S seconds (default: until Ctrl-C / SIGTERM)")
    p.add_argument("--prometheus", metavar="HOST:PORT", default=None,
                   help="also serve the current metrics for Prometheus at HOST:PORT "
                        "(loopback unless you name another address)")
    p.add_argument("--keep-gb", metavar="GB", type=float, default=None,
                   help="cap for the default session directory in GB (default 2 GiB)")
    p.add_argument("--keep-days", metavar="DAYS", type=float, default=None,
                   help="remove default-directory sessions older than DAYS (default 30)")


def _say(text: str, stream=None) -> None:
    print(text, file=stream or sys.stdout, flush=True)


def record_session(source, path: pathlib.Path, *, interval: float = 1.0,
                   duration: float | None = None, prometheus: str | None = None,
                   retention=None, retention_directory=None, enrichers=None,
                   stop: threading.Event | None = None, out=None, err=None) -> int:
    """Sample ``source`` into the session file ``path`` until ``duration`` or ``stop``."""
    from vramscope.core.sampler import Sampler, clamp_interval
    from vramscope.core.session import SessionError, SessionWriter
    from vramscope.core.session.library import session_size
    from vramscope.core.store import Store

    stop = stop or threading.Event()
    interval = clamp_interval(interval)
    store = Store()
    meta = {"source": getattr(source, "name", "?"),
            "simulated": bool(getattr(source, "simulated", False)),
            "interval": interval, "started_by": "vramscope record"}
    from vramscope.sources.hosts import session_host_meta
    meta.update(session_host_meta(source))
    try:
        writer = SessionWriter(path, meta=meta, retention=retention,
                               retention_directory=retention_directory)
    except SessionError as exc:
        _say(f"vramscope record: {exc}", err or sys.stderr)
        return 2
    server = None
    if prometheus:
        from vramscope.core.metrics import serve_metrics
        try:
            server = serve_metrics(store, prometheus,
                                   warn=lambda m: _say(f"vramscope record: warning: {m}",
                                                       err or sys.stderr))
        except (OSError, ValueError) as exc:
            _say(f"vramscope record: cannot serve metrics on {prometheus}: {exc}",
                 err or sys.stderr)
            writer.close()
            return 2
    store.subscribe(writer)
    # the same diagnostics as the window, their alerts kept beside the samples
    from vramscope.core.detectors import Diagnostics
    from vramscope.core.session.journal import AlertJournal
    engine = Diagnostics()
    engine.attach(store)
    journal = AlertJournal(engine, writer)
    store.subscribe(journal)
    extra = list(enrichers(store)) if callable(enrichers) else list(enrichers or [])
    sampler = Sampler(source, store, interval, extra)
    what = f"every {interval:g} s" + (f" for {duration:g} s" if duration else "")
    _say(f"vramscope: recording to {path} ({what}; Ctrl-C to stop)", out)
    if getattr(source, "simulated", False):
        _say("vramscope: the source is the simulated demo workstation, not real GPUs", out)
    if server is not None:
        _say(f"vramscope: Prometheus metrics at {server.url}", out)
    started = time.monotonic()
    sampler.start()
    try:
        while not stop.is_set():
            left = None if duration is None else duration - (time.monotonic() - started)
            if left is not None and left <= 0:
                break
            stop.wait(0.25 if left is None else min(0.25, left))
    finally:
        sampler.stop()
        store.unsubscribe(journal)
        store.unsubscribe(writer)
        if server is not None:
            server.close()
        writer.close()
        for thing in [source] + extra:
            try:
                if hasattr(thing, "close"):
                    thing.close()
            except Exception:  # noqa: BLE001 - closing must not hide the summary
                pass
    size = session_size(path) / 1e6
    _say(f"vramscope: recorded {writer.frames_written} samples to {path} ({size:.1f} MB)", out)
    if writer.errors:
        _say(f"vramscope record: {writer.errors} samples could not be written "
             f"(last error: {writer.last_error})", err or sys.stderr)
        return 1
    return 0


def run(args) -> int:
    from vramscope.core.session.library import (
        DEFAULT_MAX_AGE_DAYS, DEFAULT_MAX_BYTES, RetentionPolicy, default_directory,
        new_session_path)
    if args.prometheus:
        from vramscope.core.metrics import parse_address
        try:
            parse_address(args.prometheus)
        except ValueError as exc:
            _say(f"vramscope record: --prometheus: {exc}", sys.stderr)
            return 2
    if args.duration is not None and args.duration <= 0:
        _say("vramscope record: --duration must be more than 0 seconds", sys.stderr)
        return 2
    retention = directory = None
    if args.out:
        path = pathlib.Path(args.out).expanduser()
        if path.exists():
            _say(f"vramscope record: {path} already exists; vramscope does not overwrite a "
                 "recording -- choose another --out name", sys.stderr)
            return 2
    else:
        directory = default_directory()
        retention = RetentionPolicy(
            max_bytes=int(args.keep_gb * 1e9) if args.keep_gb is not None else DEFAULT_MAX_BYTES,
            max_age_days=args.keep_days if args.keep_days is not None else DEFAULT_MAX_AGE_DAYS)
        path = new_session_path(directory)
    stop = threading.Event()

    def on_signal(signum, _frame):
        stop.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    if hasattr(signal, "SIGHUP") and signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:
        previous[signal.SIGHUP] = signal.signal(signal.SIGHUP, on_signal)  # not under nohup
    try:
        source = open_source(args)
        return record_session(source, path, interval=args.interval, duration=args.duration,
                              prometheus=args.prometheus, retention=retention,
                              retention_directory=directory, stop=stop,
                              enrichers=lambda store: enrichers_for(source, store))
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
