"""The panels beside the monitor view, wired to the main window.

``attach_panels(window, engine, actions)`` adds the alerts list (with its
markers on the GPU timelines and desktop notifications), the PyTorch agent
panel and the planner tab. Each panel is a standalone widget; this module is
the one place that knows how they meet the window's signals.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from PySide6.QtWidgets import QFrame, QScrollArea

from vramscope.core.detectors.alert import CRITICAL, INFO, KIND_TITLES, Alert, AlertKind
from vramscope.core.planner.targets import fit_targets, gpus_now
from vramscope.ui.agents.agent_panel import AgentPanel
from vramscope.ui.alerts.alerts_panel import AlertsPanel
from vramscope.ui.alerts.tray import TrayNotifier
from vramscope.ui.planner.planner_tab import PlannerTab

PLANNER_MEASURE_EVERY = 2.0  # seconds between planned-vs-measured refreshes


@dataclass
class Panels:
    alerts: AlertsPanel
    agents: AgentPanel
    planner: PlannerTab
    tray: TrayNotifier


def attach_panels(window, engine=None, actions=None, read_only: bool = False) -> Panels:
    def now() -> float:  # "since ... ago" in the data's time: right for replays and tests too
        frame = window.store.latest
        return frame.time if frame is not None else time.time()

    alerts = AlertsPanel(
        engine=engine, actions=actions, read_only=read_only, clock=now, bridge=getattr(window, "bridge", None)
    )
    # the one way the agents tab asks an agent to record allocation sites: over its socket
    from vramscope.sources.agents.agent_requests import start_sites

    agents = AgentPanel(window.store, read_only=read_only, start_sites=start_sites)
    planner = PlannerTab()
    tray = TrayNotifier(window)
    panels = Panels(alerts, agents, planner, tray)

    alerts_index = window.tabs.addTab(alerts, "Alerts")
    agents_index = window.tabs.addTab(agents, "PyTorch agents")
    planner_index = window.tabs.addTab(scrolled(planner), "Planner")

    def on_counts(shown: int, _hidden: int) -> None:
        text = f"Alerts ({shown})" if shown else "Alerts"
        if window.tabs.tabText(alerts_index) != text:  # (setting it re-lays out the tab bar)
            window.tabs.setTabText(alerts_index, text)

    alerts.counts_changed.connect(on_counts)
    alerts.new_alerts.connect(tray.notify)
    alerts.action_message.connect(lambda text: window.statusBar().showMessage(text, 10000))
    alerts.process_ended.connect(lambda _pid, _start: window.refresh(force=True))
    alerts.alert_activated.connect(lambda _a: window.tabs.setCurrentIndex(0))
    window.table.end_requested.connect(lambda row: alerts.request_end(_end_request(row)))

    last_measured = [float("-inf")]

    def update_planner(frame) -> None:
        planner.set_gpus(fit_targets(frame), gpus_now(frame))  # replans only on a real change
        now = time.monotonic()
        if frame.agents and now - last_measured[0] >= PLANNER_MEASURE_EVERY:
            last_measured[0] = now
            # the first process whose agent reports a model (the planner's live input), else the first
            planner.show_measured(next((r for r in frame.agents if r.models), frame.agents[0]))

    def on_frame(frame) -> None:
        # hidden tabs do no work: the agents and planner tabs catch up when shown
        alerts.set_simulated(frame.simulated)
        alerts.refresh()
        active = alerts.alerts()
        _set_markers(window, active)
        window.gpu_panel.set_alerted((a.pid, a.start_time) for a in active if a.pid is not None)
        said: dict = {}  # the table marks alerted rows, the alerts in the Name's tooltip
        for a in active:
            if a.pid is not None:
                said.setdefault(a.identity, []).append(f"{a.title}: {a.message}")
        window.table.builder.alerts = {k: "\n".join(v) for k, v in said.items()}
        current = window.tabs.currentIndex()
        if current == agents_index:
            agents.update_from(frame)
        elif current == planner_index:
            update_planner(frame)

    def on_tab(index: int) -> None:
        frame = window.store.latest
        if frame is None:
            return
        if index == agents_index:
            agents.update_from(frame)
        elif index == planner_index:
            last_measured[0] = float("-inf")
            update_planner(frame)

    window.tabs.currentChanged.connect(on_tab)
    window.new_frame.connect(on_frame)
    window.time_window_changed.connect(lambda seconds: setattr(agents, "window", seconds or 24 * 3600.0))
    return panels


def scrolled(widget) -> QScrollArea:
    """``widget`` in a scroll area: at a small window size it scrolls instead of
    holding the whole window at its own minimum height."""
    area = QScrollArea()
    area.setWidgetResizable(True)
    area.setFrameShape(QFrame.Shape.NoFrame)
    area.setWidget(widget)
    return area


def end_selected_process(window, panels: Panels) -> bool:
    """End the process selected in the table, after the confirmation (Delete key); the
    confirmation opens once the process was checked anew (``alerts.dialog_opened``)."""
    row = window.table.selected_row()
    if row is None:
        window.statusBar().showMessage("Select a process in the table first.", 5000)
        return False
    return panels.alerts.request_end(_end_request(row))


def _end_request(row) -> Alert:
    """The user's own request to end a process, in the shape the End flow takes."""
    return Alert(
        kind=AlertKind.USER_REQUEST,
        severity=INFO,
        gpu=row.gpu,
        pid=row.pid,
        start_time=row.start_time,
        since=None,
        message=f"End {row.label} on " + (f"{row.host} GPU {row.host_gpu}" if row.host else f"GPU {row.gpu}"),
        frees=row.used,
    )


def _set_markers(window, alerts) -> None:
    """One dashed line per alert on its GPU's timeline, at the moment it began."""
    by_gpu: dict[int, dict] = {}
    for a in alerts:
        if a.gpu is None or a.since is None:
            continue
        role = "ERROR" if a.severity == CRITICAL else "WARNING"  # a theme colour, by name
        by_gpu.setdefault(a.gpu, {})[a.key] = (a.since, role, KIND_TITLES.get(a.kind, a.kind))
    window.gpu_panel.set_markers(by_gpu)
