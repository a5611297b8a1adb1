"""This machine as one more host: the window's own sampler process.

The window samples nothing itself. It starts ``python -m vramscope stream``
here (the same pipeline as `record` and `stream`: the source, the
enrichers with the PyTorch agent client, the diagnostics and, with
``--record-session``, the session recorder) and reads it over the pipes the
way it reads an ssh host (sources/remote/host_stream.py), with the same protocol
(core/stream/: whole frames, then deltas). So what is sampled and recorded
never waits for what the window draws, and a window that crashes or is
killed loses nothing recorded: the sampler commits every sample and ends
when its stdin -- the window's end of the pipe -- closes.

The sampler is asked for its first look (core/stream/first_look.py): the GPUs'
own figures before its first pass has read their processes, which on a big box
take seconds; the window shows them at once, the processes marked as being read.

If the sampler process dies, the host goes down and is started again
(backoff 1 s up to ``MAX_BACKOFF``; ``restart_now`` skips the wait); its
GPUs stay listed, marked, until frames come again.
"""

from __future__ import annotations

import json
import os
import pathlib
import sys
import threading

from vramscope.core.samples import Frame, GpuSample
from vramscope.core.stream import protocol
from vramscope.core.stream.first_look import devices_from_message, is_pending
from vramscope.core.stream.settings_request import settings_message, thresholds_to_wire
from vramscope.sources.remote.hosts import HostActions
from vramscope.sources.remote.host_stream import CONNECTED, RemoteHost

MAX_BACKOFF = 8.0  # seconds between restarts of a sampler that keeps dying
FIRST_FRAME_WAIT = 20.0  # seconds the first frame may take (an interpreter start on a busy box)
STOPPED = "The sampling process stopped"


class SamplerProcess(RemoteHost):
    """`python -m vramscope stream OPTIONS` on this machine, read like an ssh host."""

    def __init__(self, options, interval: float):
        super().__init__("localhost", interval=interval, backoff=(1.0, MAX_BACKOFF))
        self.ssh = sys.executable  # (checked to exist, as ssh is)
        self.options = list(options)
        package_root = str(pathlib.Path(__file__).resolve().parents[3])
        path = os.environ.get("PYTHONPATH")
        self.env = {**os.environ, "PYTHONPATH": package_root + (os.pathsep + path if path else "")}
        self._restart = threading.Event()
        self._looking = False  # this connection's first look may still come (before its frames)

    def argv(self, command) -> list[str]:
        # the PyInstaller bundle (packaging/entry.py) is the `vramscope` command itself
        me = [sys.executable] if getattr(sys, "frozen", False) else [sys.executable, "-m", "vramscope"]
        return [*me, "stream", "--interval", f"{self.interval:g}", "--devices-first", *self.options]

    def restart_now(self) -> None:
        """Start the sampler again now instead of after the backoff."""
        self._restart.set()

    def _wait_retry(self, delay: float) -> None:
        self.arrivals.wake()  # down: a wait_frame under way returns now, not on its next look
        self._restart.wait(delay)
        self._restart.clear()

    def close(self) -> None:
        self._closed.set()
        self._restart.set()
        super().close()

    def _handle(self, message: dict, frames) -> None:
        kind = message.get(protocol.TYPE)
        if kind == protocol.DEVICES:
            self._first_look(message)
            return
        self._looking = kind == protocol.HELLO or (
            self._looking and kind not in (protocol.FRAME, protocol.DELTA)
        )
        super()._handle(message, frames)

    def _first_look(self, message: dict) -> None:
        """The GPUs before the first frame of this connection (the processes pending)."""
        if not self._looking:
            return  # (after a frame: that frame says more)
        self._looking = False
        try:
            frame = devices_from_message(message)
        except ValueError as exc:
            self._refuse(f"a devices message that does not fit the stream's schema ({exc})")
            return
        with self._lock:
            self._frame, self._alerts = frame, ()
        self._frames_seen.set()
        self.arrivals.one()

    @property
    def frames(self) -> int:
        """Frames read since the start (a first look counts as one)."""
        return self.arrivals.count

    def wait_frame(self, after: int, timeout: float) -> bool:
        """Until a frame later than the ``after``-th came (True), the process is
        down, or the timeout (False)."""
        return self.arrivals.wait_after(
            after,
            timeout,
            lambda: (
                not self._closed.is_set()
                and not (self.snapshot(take=False).state != CONNECTED and self.arrivals.count)
            ),
        )


class LocalSamplerSource:
    """The window's source: each frame of its sampler process, once, when it comes.

    ``sample`` waits (on the window's sampling thread, never the GUI thread)
    for the sampler's next frame, so the window takes the sampler's grid.
    While the sampler is down the last GPUs are kept without figures, marked
    with why (as an ssh host that dropped)."""

    paced = True  # ``sample`` waits for the sampler's frames: the pipeline takes each as it comes

    def __init__(self, options, interval: float, name: str, simulated: bool = False):
        self.name = name
        self.simulated = simulated
        self.options = list(options)
        self.process = SamplerProcess(options, interval)
        self._taken = 0
        self._last: Frame | None = None
        self._judged: tuple = (None, None)  # (the frame sample gave, its sampler's alerts)

    def start(self) -> "LocalSamplerSource":
        self.process.start()
        return self

    @property
    def session_path(self) -> str | None:
        """The session its sampler records into, once the file exists."""
        hello = self.process.hello or {}
        path = hello.get("session")
        return path if isinstance(path, str) and os.path.isfile(path) else None

    def set_interval(self, seconds: float) -> None:
        """A new interval: the running sampler takes it (one request, the session goes
        on); a sampler started later is started with it."""
        if seconds != self.process.interval:
            self.process.interval = float(seconds)
            self.process.tell(settings_message(interval=seconds))

    def stopped(self) -> str | None:
        """Why the sampler is not sending frames (with when it restarts), or None."""
        if self.process._closed.is_set():
            return None  # closed on purpose (the window ends, or switched to the demo)
        view = self.process.snapshot(take=False)
        if view.state == CONNECTED or (view.state == "connecting" and not self.process.frames):
            return None
        text = f"{STOPPED} ({view.error or view.state})"
        if view.retry_in is not None:
            text += f"; restarting in {view.retry_in:.0f} s"
        else:
            text += "; restarting"
        return text

    def sample(self, now: float) -> Frame:
        first = self._last is None or is_pending(self._last)  # (its first pass may take long)
        wait = FIRST_FRAME_WAIT if first else 2 * self.process.interval + 1.0
        if self.process.wait_frame(self._taken, wait):
            self._taken = self.process.frames
            view = self.process.snapshot()
            frame = view.frame
            if frame is not None:
                self.name = frame.source  # what the sampler read: "nvml", "amdgpu", "nvml + xe"
                self._last = frame
                self._judged = (frame, list(view.alerts))
                return frame
        why = self.stopped() or f"{STOPPED}: no frame within {wait:g} s"
        last = self._last
        gpus = (
            ()
            if last is None
            else tuple(
                GpuSample(
                    index=g.index,
                    name=g.name,
                    uuid=g.uuid,
                    pci_bus_id=g.pci_bus_id,
                    total=g.total,
                    vendor=g.vendor,
                    error=why,
                )
                for g in last.gpus
            )
        )
        return Frame(time=now, gpus=gpus, source=self.name, simulated=self.simulated, error=why)

    def judged(self, frame: Frame) -> list | None:
        """The sampler's alerts (JSON dicts) on ``frame``, a frame ``sample`` gave
        (after the enrichers: the last one given); None for one it made itself
        while the sampler was down."""
        last, alerts = self._judged
        return alerts if last is not None and last.time == frame.time else None

    def set_thresholds(self, diagnostics) -> None:
        """New alert thresholds (a DiagnosticSettings): the running sampler takes them
        (one request: no restart, the same session); a sampler started later is
        started with them."""
        options = list(self.options)
        if "--thresholds" in options:
            at = options.index("--thresholds")
            del options[at : at + 2]
        self.options = thresholds_options(diagnostics) + options
        self.process.options = list(self.options)
        self.process.tell(settings_message(diagnostics))

    def close(self) -> None:
        self.process.close()


def local_sampler_source(args, settings=None) -> LocalSamplerSource:
    """This machine's sampler process, started, with the window's options (``settings``:
    core/user_settings.Settings; without it, ``args`` alone). Qt-free, so the app starts
    it before it loads Qt and builds the window: the process starts meanwhile."""
    if settings is not None:
        record, interval, cap = settings.recording, settings.interval, settings.session_cap_bytes
        diagnostics = settings.diagnostics
    else:
        record = getattr(args, "record", True)
        interval, cap, diagnostics = getattr(args, "interval", None) or 1.0, None, None
    demo = bool(getattr(args, "demo", False))
    name = "nvml"
    if getattr(args, "host", None) or getattr(args, "from_prometheus", None):
        from vramscope.core.samples import PROMETHEUS_SOURCE, SSH_SOURCE

        name, demo = (PROMETHEUS_SOURCE if getattr(args, "from_prometheus", None) else SSH_SOURCE), False
    elif demo:
        from vramscope.sources.demo.simulated import SimulatedSource

        name = SimulatedSource.name
    source = LocalSamplerSource(
        sampler_options(args, record, cap, diagnostics), interval, name=name, simulated=demo
    )
    return source.start()


def sampler_options(args, record: bool, cap: int | None, diagnostics=None) -> list[str]:
    """The window's options as its sampler process takes them (``diagnostics``:
    the window's alert thresholds, a DiagnosticSettings)."""
    options = thresholds_options(diagnostics)
    for host in getattr(args, "host", None) or ():
        options += ["--host", host]
    if getattr(args, "from_prometheus", None):
        options += ["--from-prometheus", args.from_prometheus]
    if getattr(args, "demo", False):
        options.append("--demo")
        if getattr(args, "busy", False):
            options.append("--busy")
        options += ["--seed", str(getattr(args, "seed", 1))]
    if record:
        options.append("--record-session")
        if cap is not None:
            options += ["--session-cap", str(int(cap))]
    return options


class SamplerActions(HostActions):
    """Ending a process of this machine through the window's sampler process, as
    for an ssh host: its checks, its audit log, and its session recorder, which
    records the action (the window records nothing itself)."""

    def _host(self, pid: int, start_time: float | None):
        return self.source.process

    def _named(self, host) -> str | None:
        return None


def thresholds_options(diagnostics) -> list[str]:
    """``--thresholds JSON`` for the fields of a DiagnosticSettings that differ from
    the defaults (none for None)."""
    if diagnostics is None:
        return []
    changed = thresholds_to_wire(diagnostics)
    return ["--thresholds", json.dumps(changed, separators=(",", ":"))] if changed else []


def window_enrichers(store) -> list:
    """What the window still does to its sampler's frames: record the agents'
    reports into its own store's series (the agent panel reads them there)."""
    from vramscope.sources.agents.agent_reports import record_reports

    seen: dict = {}  # agent -> the sample time recorded last
    return [lambda frame: record_reports(store, frame, seen)]
