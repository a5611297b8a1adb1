"""`vramscope status [--json] [--demo]`: one sampling pass, printed. No Qt.

Like ``nvitop -1`` or ``gpustat --json``. Where NVML cannot be loaded (no
library, no driver) it exits with status 2 and says so in one line on
stderr. The frame goes through the same pipeline (core/flow/monitor.py: enrichers,
diagnostics) as the window and the recorder.
"""

from __future__ import annotations

import sys

from vramscope.commands.common import (
    add_host_arguments,
    add_source_arguments,
    driver_unavailable,
    say_driver_unavailable,
)
from vramscope.core.status import json_text
from vramscope.core.status.terminal_text import say, visible
from vramscope.core.samples import HostStatus
from vramscope.core.status.status_report import ENDED_SHOWN
from vramscope.sources.choose import DEMO_PARTWAY, open_source
from vramscope.commands.diagnostic_options import add_diagnostic_arguments

EXIT_NO_NVML = 2


def add_arguments(p) -> None:
    add_source_arguments(p)
    add_host_arguments(p)
    p.add_argument(
        "--json", action="store_true", help="print JSON (bytes as integers, null where not available)"
    )
    p.add_argument(
        "--all-agents",
        action="store_true",
        help="list every ended PyTorch agent run the monitor knows (default: the "
        f"live ones and the last {ENDED_SHOWN} ended since the machine booted)",
    )
    add_diagnostic_arguments(p)  # --watch SECONDS, --interval, thresholds


def monitor_for(source, args):
    """The window's pipeline around ``source`` (sources/assembly.py): enrichers, then
    diagnostics with the user's thresholds and this command line's on top."""
    from vramscope.core.store.store import Store
    from vramscope.sources.assembly import build_monitor

    return build_monitor(
        source,
        args=args,
        interval=getattr(args, "interval", 1.0),
        store=Store(fine_points=4, coarse_points=4),
    )


class StatusPrinter:
    """Runner sink for ``--watch`` on a terminal: each pass but the last printed over
    the previous one (the last is printed by the command, --json or not)."""

    def __init__(self, args, passes: int, out=None):
        self.args = args
        self.passes = passes
        self.out = out
        self.seen = 0

    def __call__(self, frame) -> None:
        self.seen += 1
        if self.seen < self.passes and not getattr(self.args, "json", False):
            emit(frame, self.args, self.out, live=True)


def take_frame(source, args, stop=None):
    """One pass (or ``--watch`` seconds of passes) through the runner (core/flow/runner.py);
    keeps the engine in ``args.diagnostics``. None when ``stop`` came before a pass."""
    import threading

    from vramscope.core.flow import runner

    monitor = monitor_for(source, args)
    args.diagnostics = monitor.engine
    passes = runner.passes_for(getattr(args, "watch", 0) or 0, monitor.pipeline.interval)
    sinks = [StatusPrinter(args, passes)] if passes > 1 else []
    return runner.run(monitor, sinks, stop or threading.Event(), passes=passes)


def alerts_for(frame, args) -> list:
    """Alerts to print beside the frame: the diagnostics engine's, as JSON-ready
    dicts. Without --watch only the rules that need no history can fire."""
    from vramscope.core.detectors import alerts_to_json

    engine = getattr(args, "diagnostics", None)
    if engine is None:
        from vramscope.core.detectors import Diagnostics
        from vramscope.core.settings.user_settings import diagnostics_for

        engine = Diagnostics(diagnostics_for(args))
        engine.feed(frame)
    return alerts_to_json(engine.alerts())


CLEAR = "\033[H\033[2J"  # cursor home, clear screen (ECMA-48 CUP, ED)


def watching_for(args) -> list:
    """What the engine is watching on its way to an alert ("idle 3 of 5 min"), listed
    after the alerts; empty after a single pass (those rules need time: --watch)."""
    from vramscope.core.detectors.watching import watching_to_json

    engine = getattr(args, "diagnostics", None)
    return watching_to_json(engine.watching()) if engine is not None else []


def emit(frame, args, out=None, live: bool = False) -> None:
    """Print ``frame``; ``live`` (--watch on a terminal): over the previous one."""
    from vramscope.core.status.status_report import frame_to_dict
    from vramscope.core.status.status_table import render_table

    out = out or sys.stdout
    alerts = alerts_for(frame, args)
    watching = watching_for(args)
    if out.isatty() and (live or getattr(args, "watch", 0)):
        out.write(CLEAR)
    shown = {"boot_time": boot_time(), "every_agent": getattr(args, "all_agents", False)}
    if args.json:
        out.write(
            json_text.dumps({**frame_to_dict(frame, alerts, **shown), "watching": watching}, indent=2) + "\n"
        )
    else:
        text = render_table(frame, alerts, **shown)
        if watching:
            text = (
                text.rstrip("\n")
                + "\n\nwatching (not alerts yet):\n"
                + "".join(f"  - {visible(w['message'])}\n" for w in watching)
            )
        out.write(text)
    out.flush()


def boot_time() -> float | None:
    """When this machine booted (psutil); ended agent runs before it are old news."""
    try:
        import psutil

        return float(psutil.boot_time())
    except Exception:  # noqa: BLE001 -- not readable (a sandbox): every ended run counts
        return None


HOST_TIMEOUT = 30.0  # seconds for ssh, the remote start-up and its first frame


def run_hosts(args, out=None) -> int:
    """`status --host a --host b`: each host with its GPUs, or its error.
    Exit 0 when every host answered, 1 when some did not, 2 when none did."""
    from vramscope.core.status.status_report import hosts_to_dict
    from vramscope.core.status.status_table import render_hosts
    from vramscope.sources.remote.host_stream import RemoteHost

    out = out or sys.stdout
    hosts = [RemoteHost(t, interval=1.0, demo=getattr(args, "demo", False)) for t in dict.fromkeys(args.host)]
    for host in hosts:
        host.start()
    try:
        views = [host.wait_first(HOST_TIMEOUT) for host in hosts]
    finally:
        for host in hosts:
            host.close()
    out.write(json_text.dumps(hosts_to_dict(views), indent=2) + "\n" if args.json else render_hosts(views))
    out.flush()
    answered = sum(v.frame is not None for v in views)
    return 0 if answered == len(views) else (1 if answered else 2)


def run_fleet(args, out=None) -> int:
    """`status --from-prometheus URL`: every host the server scrapes, like --host."""
    from vramscope.core.status.status_report import hosts_to_dict
    from vramscope.core.status.status_table import render_hosts
    from vramscope.sources.remote.hosts import split_by_host
    from vramscope.sources.remote.prometheus import PrometheusSource

    out = out or sys.stdout
    try:
        source = PrometheusSource(args.from_prometheus)
    except ValueError as exc:
        say(sys.stderr, f"vramscope status: --from-prometheus: {exc}")
        return 2
    frame = take_frame(source, args)
    if frame.error and not frame.gpus:
        say(sys.stderr, f"vramscope status: {frame.error}")
        return 2
    views = split_by_host(frame, alerts_for(frame, args))
    out.write(json_text.dumps(hosts_to_dict(views), indent=2) + "\n" if args.json else render_hosts(views))
    out.flush()
    return 0 if all(v.state == HostStatus.CONNECTED for v in views) else 1


EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports Ctrl-C


def run(args) -> int:
    import signal
    import threading

    from vramscope.core.flow.runner import StopSignals

    signals = StopSignals(threading.Event(), hangup=False)
    try:
        with signals:  # Ctrl-C or SIGTERM: the pass under way finishes, then 128 + signal
            code = _run(args, signals)
    except KeyboardInterrupt:  # before the runner's policy was in place
        signals.signum = signal.SIGINT
    if signals.signum is not None:  # one line, no traceback, no half-printed frame
        say(
            sys.stderr,
            "vramscope status: interrupted"
            if signals.signum == signal.SIGINT
            else f"vramscope status: stopped by {signal.Signals(signals.signum).name}",
        )
        return signals.exit_status
    return code


def _run(args, signals=None) -> int:
    if getattr(args, "from_prometheus", None):
        return run_fleet(args)
    if getattr(args, "host", None):
        return run_hosts(args)
    # one look at the demo: ten minutes into its script, when everything runs
    source = open_source(args, demo_elapsed=None if getattr(args, "watch", 0) else DEMO_PARTWAY)
    try:
        frame = take_frame(source, args, signals.stop if signals is not None else None)
        if signals is not None and signals.signum is not None:  # run() says so
            return EXIT_INTERRUPTED
        if driver_unavailable(frame):
            say_driver_unavailable("status", frame)
            if args.json:  # scripts get a document to parse, with the error in it
                from vramscope.core.status.status_report import frame_to_dict

                print(json_text.dumps(frame_to_dict(frame), indent=2))
            return EXIT_NO_NVML
        emit(frame, args)
        return 0
    finally:
        source.close()
