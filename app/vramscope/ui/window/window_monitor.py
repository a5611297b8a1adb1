"""The window's monitor: the pipeline around its source, with what the window
needs of core/flow/monitor.py -- diagnostics (or, for the window's own sampler
process, the alerts it judged), the end-process actions over the right channel,
the session recorder, Prometheus -- and the panels attached to it (``Services``).

Imported by ui/window/app.py when a window is built; the heavy imports stay
inside the functions, as there.
"""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)


def start_monitor(source, args, settings=None):
    """The window's monitor (core/flow/monitor.py): diagnostics, end-process actions,
    the session recorder (on by default; only real GPUs are written), Prometheus."""
    from vramscope.core.session import RetentionPolicy
    from vramscope.sources.assembly import build_monitor, session_recorder
    from vramscope.sources.choose import enrichers_for
    from vramscope.core.end_process.actions import ProcessActions
    from vramscope.core.samples import PROMETHEUS_SOURCE
    from vramscope.sources.remote.hosts import HostActions, HostsSource

    if settings is not None:
        read_only, record, interval = settings.read_only, settings.recording, settings.interval
        diagnostics, cap = settings.diagnostics, settings.session_cap_bytes
    else:
        read_only = bool(getattr(args, "read_only", False))
        record = getattr(args, "record", True)
        interval = getattr(args, "interval", None) or 1.0
        diagnostics = cap = None
    enrichers, engine = enrichers_for, None
    sampled_apart = hasattr(source, "session_path")  # by the sampler process, which records
    if sampled_apart:  # and judges: the window takes its alerts
        from vramscope.core.detectors.taken import TakenAlerts
        from vramscope.sources.remote.local_sampler import window_enrichers as enrichers

        record, engine = False, TakenAlerts(source.judged)
    monitor = build_monitor(
        source,
        enrichers=enrichers,
        interval=interval,
        diagnostics=diagnostics,
        read_only=read_only,
        actions=True,  # diagnostics None: the settings file's (tests)
        engine=engine,
    )
    if isinstance(source, HostsSource):  # ending processes over each host's ssh channel
        monitor.actions = HostActions(source, read_only=read_only)
    elif sampled_apart:  # through the sampler process, which records them
        from vramscope.sources.remote.local_sampler import SamplerActions

        monitor.actions = SamplerActions(source, read_only=read_only)
    elif source.name == PROMETHEUS_SOURCE:  # a fleet is only looked at
        monitor.actions = ProcessActions(read_only=True)
    if record:
        retention = RetentionPolicy() if cap is None else RetentionPolicy(max_bytes=cap)
        monitor.record(session_recorder(monitor, source, "vramscope", retention=retention))
    address = getattr(args, "prometheus", None)
    if address:
        try:
            monitor.serve_metrics(address)
        except (OSError, ValueError) as exc:  # the port is taken: the window runs without it
            monitor.metrics_error = f"Prometheus: cannot serve on {address}: {exc}"
            log.warning("%s", monitor.metrics_error)
    return monitor


class Services:
    """The window's side of its monitor (core/flow/monitor.py): the panels attached to it."""

    def __init__(self, monitor):
        self.monitor = monitor
        self.panels = None

    @property
    def engine(self):
        return self.monitor.engine

    @property
    def actions(self):
        return self.monitor.actions

    @property
    def recorder(self):
        return self.monitor.recorder

    @property
    def read_only(self) -> bool:
        return self.monitor.read_only

    @read_only.setter
    def read_only(self, value: bool) -> None:
        self.monitor.read_only = value

    def attach(self, window) -> None:
        from vramscope.ui.window.panels import attach_panels

        self.panels = attach_panels(window, self.engine, self.actions, self.read_only)
        from vramscope.core.samples import PROMETHEUS_SOURCE, REMOTE_SOURCES

        source = self.monitor.pipeline.source
        if source.name in REMOTE_SOURCES:  # --host, --from-prometheus
            from vramscope.ui.monitor.hosts_bar import attach_hosts_bar

            attach_hosts_bar(window)
        if source.name == PROMETHEUS_SOURCE:
            from vramscope.ui.monitor.fleet_view import attach_fleet_view

            attach_fleet_view(window, source, self.engine)
        window.services = self
        from vramscope.ui.window.session_files import add_session_actions

        add_session_actions(window, self)
        if self.monitor.metrics_error:
            window.statusBar().showMessage(self.monitor.metrics_error, 30000)
        elif (
            self.recorder is not None or "--record-session" in getattr(source, "options", ())
        ) and not self.monitor.pipeline.simulated:
            window.statusBar().showMessage("Recording this session (File → Export to share it)", 8000)

    def close(self) -> None:
        self.monitor.close()
