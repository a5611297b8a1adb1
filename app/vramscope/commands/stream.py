"""`vramscope stream`: the frames of this machine on stdout, for a monitor
elsewhere that runs it over ssh (`vramscope --host THIS-MACHINE`).

The same source, sampler, enrichers (the PyTorch agent client included) and
diagnostics as `record`; each pass is written as one line of the stream
protocol (core/stream/protocol.py). Nothing listens on the network: stdin
and stdout are the ssh channel. Requests on stdin (process actions) are
answered by this machine's own checks (core/end_process/actions.py). The stream ends
when stdin closes or stdout breaks (the monitor went away).
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import threading
import time

from vramscope.agent import json_limits
from vramscope.commands.common import add_host_arguments, add_source_arguments
from vramscope.commands.option_types import interval_seconds
from vramscope.core.stream import protocol
from vramscope.sources.choose import enrichers_for, open_source


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_source_arguments(p)
    add_host_arguments(p)  # the window's sampler process for --host / --from-prometheus
    p.add_argument(
        "--interval",
        metavar="S",
        type=interval_seconds,
        default=1.0,
        help="seconds between frames (default 1, 0.1 to 60)",
    )
    p.add_argument(
        "--count",
        metavar="N",
        type=int,
        default=None,
        help="stop after N frames (default: until stdin closes)",
    )
    p.add_argument(
        "--devices-first",
        action="store_true",
        help="send the GPUs' own figures before the first pass has read their processes "
        "(a 'devices' message; the window's own sampler asks for it)",
    )
    from vramscope.commands import window_recording

    window_recording.add_arguments(p)


class StreamWriter:
    """Store listener: each frame (with the diagnostics' alerts) as one line."""

    def __init__(self, out, engine, stop: threading.Event, count: int | None = None):
        self.out = out
        self.engine = engine
        self.stop = stop
        self.count = count
        self.written = 0
        self.lock = threading.Lock()
        self.differ = None  # whole frames, then what changed (core/stream/deltas.py)

    def send(self, message: dict) -> None:
        try:
            data = protocol.encode(message)
        except (TypeError, ValueError) as exc:  # never silently: the monitor hears why
            data = protocol.encode(
                {
                    protocol.TYPE: protocol.ERROR,
                    "message": f"vramscope stream: a message could not be sent ({exc})",
                }
            )
        with self.lock:
            try:
                self.out.write(data)
                self.out.flush()
            except (BrokenPipeError, OSError, ValueError):  # the monitor went away
                self.stop.set()

    def __call__(self, frame) -> None:
        from vramscope.core.detectors import alerts_to_json
        from vramscope.core.stream.deltas import FrameDiffer

        if self.differ is None:
            self.differ = FrameDiffer()
        from vramscope.core.detectors.watching import watch_to_wire

        judged = alerts_to_json(self.engine.alerts()) + [watch_to_wire(w) for w in self.engine.watching()]
        self.send(self.differ.message(frame, judged))
        self.written += 1
        if self.count is not None and self.written >= self.count:
            self.stop.set()


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def answer(actions, message: dict) -> dict:
    """The result of one request (never raises: bad requests get an error result)."""
    import dataclasses

    from vramscope.core.end_process.actions import request_problem

    ident = message.get("id")
    reply = {protocol.TYPE: protocol.RESULT, "id": ident if _is_int(ident) else None}
    op = message.get("op")
    if message.get(protocol.TYPE) != protocol.ACT or op not in protocol.ACT_OPS:
        return {
            **reply,
            "ok": False,
            "error": f"unknown request {str(message.get(protocol.TYPE))[:40]!r} {str(op)[:40]!r}",
        }
    pid, start = message.get("pid"), message.get("start_time")
    problem = request_problem(pid, start)
    if problem:
        return {**reply, "ok": False, "error": problem}
    args = [pid, None if start is None else float(start)]
    if op in ("describe", "terminate", "kill"):
        memory = message.get("memory")
        args.append(memory if isinstance(memory, int) else None)
    try:
        value = getattr(actions, op)(*args)
    except Exception as exc:  # noqa: BLE001 - answered, not crashed
        return {**reply, "ok": False, "error": f"{type(exc).__name__}: {exc}"}
    if dataclasses.is_dataclass(value):
        value = dataclasses.asdict(value)
    return {**reply, "ok": True, "value": value}


def serve_requests(inp, writer: StreamWriter, actions, stop: threading.Event, monitor=None) -> None:
    """Read requests from stdin until it closes; then stop the stream."""
    from vramscope.core.stream.settings_request import settings_reply

    try:
        for raw in inp:
            if stop.is_set():
                break
            try:
                message = json_limits.loads(raw)
            except ValueError:
                continue
            if isinstance(message, dict):
                if message.get(protocol.TYPE) == protocol.SETTINGS:
                    writer.send(settings_reply(monitor, message))
                    continue
                reply = answer(actions, message)
                try:
                    protocol.encode(reply)
                except ValueError as exc:  # NaN or too long: said, the stream goes on
                    reply = {
                        protocol.TYPE: protocol.RESULT,
                        "id": reply.get("id"),
                        "ok": False,
                        "error": f"the answer cannot be sent ({str(exc)[:100]})",
                    }
                writer.send(reply)
    except (OSError, ValueError):
        pass
    stop.set()


def actions_for(source):
    """Ending processes where ``source``'s processes are: this machine's, each
    --host's over its own ssh channel, none of a fleet's (only looked at)."""
    from vramscope.core.end_process.actions import ProcessActions
    from vramscope.core.samples import PROMETHEUS_SOURCE
    from vramscope.sources.remote.hosts import HostActions, HostsSource

    if isinstance(source, HostsSource):
        return HostActions(source)
    if getattr(source, "name", None) == PROMETHEUS_SOURCE:
        return ProcessActions(read_only=True)
    return ProcessActions()


def run_stream(
    source,
    *,
    interval: float = 1.0,
    count: int | None = None,
    inp=None,
    out=None,
    enrichers=enrichers_for,
    actions=None,
    stop: threading.Event | None = None,
    diagnostics=None,
    record=None,
    devices_first: bool = False,
) -> int:
    """The window's pipeline (sources/assembly.py: the user's thresholds unless
    ``diagnostics`` says otherwise) with the stream writer as the runner's sink;
    ``record(monitor, source) -> path``: the window's sampler records its session;
    ``devices_first``: its first look before its first pass (core/stream/first_look.py)."""
    look = None
    if devices_first:  # read while the monitor is built
        from vramscope.core.stream.first_look import FirstLook

        look = FirstLook(source)
    from vramscope import __version__
    from vramscope.core.flow import runner
    from vramscope.core.flow.sampler import clamp_interval
    from vramscope.core.store.store import Store
    from vramscope.sources.assembly import build_monitor

    stop = stop or threading.Event()
    out = out if out is not None else sys.stdout.buffer
    inp = inp if inp is not None else sys.stdin.buffer
    interval = clamp_interval(interval)
    monitor = build_monitor(
        source,
        enrichers=enrichers,
        interval=interval,
        diagnostics=diagnostics,
        store=Store(fine_points=8, coarse_points=8),
    )
    writer = StreamWriter(out, monitor.engine, stop)  # the runner counts the frames
    # (the recorder records what they do)
    monitor.actions = actions = actions or actions_for(source)
    session = record(monitor, source) if record is not None else None  # the window's sampler
    writer.send(
        {
            **protocol.hello(socket.gethostname(), __version__, interval),
            **({"session": str(session)} if session is not None else {}),
        }
    )
    reader = threading.Thread(
        target=serve_requests,
        args=(inp, writer, actions, stop, monitor),
        name="vramscope-stream-requests",
        daemon=True,
    )
    reader.start()
    if look is not None:  # before the first pass: its processes take long on a big box
        look.send(writer.send)
    story = (lambda: story_so_far(monitor, source, interval)) if look is not None and count is None else None
    runner.run(monitor, [writer], stop, passes=count, before=story)
    return 0


STORY_CAP = 900.0  # seconds of a simulated machine's past the window's sampler sends at its start


def story_so_far(monitor, source, interval: float) -> None:
    """The window's demo starts partway through its story (sources/choose.py
    DEMO_PARTWAY): its sampler samples the simulated machine's past at once, so
    the window opens on the story so far -- plots with their history, the rules
    having watched the idle processes long enough to raise their alerts -- as a
    real machine's window does after minutes. Only a simulated source has a past
    to sample; a real one starts now."""
    start = getattr(source, "start_time", None)
    if not getattr(source, "simulated", False) or start is None:
        return
    now = time.time()
    t = max(start, now - STORY_CAP)
    while t < now - interval:
        monitor.pipeline.sampler.sample_once(t)
        t += interval


def run(args) -> int:
    from vramscope.core.flow.runner import StopSignals

    stop = threading.Event()
    with StopSignals(stop):  # SIGINT, SIGTERM, SIGHUP (the ssh channel closed): exit 0
        from vramscope.commands.window_recording import recording, thresholds

        source = open_source(args)
        # the window's thresholds (its settings and its command line's options) are its
        # sampler's one channel: told at the start and by settings requests, never
        # replaced by the settings file's when the window saves something else there
        told = thresholds(getattr(args, "thresholds", None))
        code = run_stream(
            source,
            interval=args.interval,
            count=args.count,
            stop=stop,
            diagnostics=told,
            record=recording(args, told),
            devices_first=args.devices_first,
        )
    try:
        sys.stdout.flush()
    except OSError:
        pass
    os._exit(code)  # the stdin reader may still block in read(): leave without joining it
