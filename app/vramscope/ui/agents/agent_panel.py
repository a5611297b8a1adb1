"""The agent panel: one section per process that runs the vramscope agent.

Live runs first; an ended run folds to its header line (a click opens it).
Each header names the script, the PID, the GPU(s), the host, the step and
how long it has run (or ran). Per device, ui/agents/agent_device.py draws where
PyTorch's memory goes. Series come from the store (``("agent", pid,
start_time, device, metric)``, written on the sampler thread by
sources/agents/agent_client.py); this widget only reads.

Cost: nothing is done while the tab is hidden (ui/window/panels.py calls
``update_from`` only for the visible tab), and a section scrolled out of view
is brought up to date when it scrolls back in.
"""

from __future__ import annotations

import time

from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import (
    QFrame,
    QLabel,
    QScrollArea,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from vramscope.agent.protocol import EventKind
from vramscope.core.detectors.agentmap import device_label, gpu_for_device
from vramscope.core.samples import AgentReport, Frame
from vramscope.core.units import fmt_bytes
from vramscope.ui.qt import theme
from vramscope.ui.agents.agent_details import DetailTabs, chart_height, details_height
from vramscope.ui.agents.agent_device import DeviceView
from vramscope.ui.agents.agent_ranks import JobHeader, JobSlot, ranks_together
from vramscope.ui.agents.agent_texts import header_text, settings_text
from vramscope.ui.agents.module_tree import ModuleTree
from vramscope.ui.agents.sites_control import SitesControl, sites_refusal

DEFAULT_WINDOW = 600.0  # seconds of history shown


class AgentProcessView(QFrame):
    def __init__(self, report: AgentReport, parent=None, start_sites=None):
        super().__init__(parent)
        self.identity = report.identity
        self.setFrameShape(QFrame.Shape.StyledPanel)
        theme.styled(
            self,
            lambda s: (
                f"AgentProcessView {{ border: 1px solid {s.CARD_BORDER}; background: {s.CARD_BACKGROUND}; }}"
            ),
        )
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 4, 8, 4)
        layout.setSpacing(3)
        self.toggle = QToolButton()
        self.toggle.setCheckable(True)
        self.toggle.setChecked(True)
        self.toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.toggle.toggled.connect(self._opened)
        theme.styled(
            self.toggle,
            lambda s: (
                "QToolButton { border: none; font-size: 10.5pt; "
                f"font-weight: 600; color: {s.TEXT}; text-align: left; }}"
            ),
        )
        self.header = self.toggle  # the header line (its text)
        layout.addWidget(self.toggle)
        self.body = QWidget()
        body = QVBoxLayout(self.body)
        body.setContentsMargins(0, 0, 0, 0)
        self.settings = QLabel()
        theme.styled(self.settings, lambda s: f"color: {s.MUTED};")
        body.addWidget(self.settings)
        self.notes = QLabel()
        self.notes.setWordWrap(True)
        theme.styled(self.notes, lambda s: f"color: {s.WARNING};")
        self.notes.setVisible(False)
        body.addWidget(self.notes)
        self.sites = SitesControl(report.pid, start=start_sites)  # record allocation sites (sites_control.py)
        body.addWidget(self.sites)
        self.modules = ModuleTree()
        self.details = DetailTabs()  # modules, OOM post-mortem, segment map (ui/agents/agent_details.py)
        self.details.add("modules", "Modules", self.modules)
        body.addWidget(self.details)
        layout.addWidget(self.body)
        self._viewport_height = 700
        self._fronted: set = set()  # OOM tabs brought forward once
        self.devices: dict[str, DeviceView] = {}
        self._body = body
        self.live = report.connected
        self._user_choice: bool | None = None  # opened/closed by a click: kept
        self.session = _no_session  # (AgentPanel.session)

    def _opened(self, shown: bool) -> None:
        self._user_choice = shown
        self.body.setVisible(shown)
        self._arrow()

    def _arrow(self) -> None:
        text = self.toggle.text().lstrip("▾▸ ")
        self.toggle.setText(("▾ " if self.toggle.isChecked() else "▸ ") + text)

    def update_view(
        self,
        store,
        report: AgentReport,
        now: float,
        window: float,
        frame: Frame | None = None,
        read_only: bool = False,
    ) -> None:
        self.live = report.connected
        self.toggle.setText(header_text(report, frame, now))
        shown = self._user_choice if self._user_choice is not None else report.connected
        if self.toggle.isChecked() != shown:
            self.toggle.blockSignals(True)
            self.toggle.setChecked(shown)
            self.toggle.blockSignals(False)
        self.body.setVisible(shown)
        self._arrow()
        if not shown:
            return  # folded: nothing drawn
        self.settings.setText(settings_text(report.allocator_settings))
        self.sites.update_from(report, sites_refusal(report, frame, read_only))
        notes = []
        if report.problem and not report.connected:
            notes.append(report.problem)  # e.g. a protocol version mismatch
        # (the agent's own bucket notes are its reasoning, not the user's: the legend's
        # "n/a = no data" says what a missing figure means)
        gpu_devices = [d for d in report.devices if d.device != CPU]
        # a run on the CPU alone: its buckets drawn as a GPU's are (host memory); beside
        # a GPU, the part on the CPU is said in words (a sliver of a GPU-sized chart)
        drawn = gpu_devices or [d for d in report.devices if d.device == CPU]
        for dev in report.devices:
            if dev.device == CPU:
                notes.append(cpu_text(dev, on_gpu=bool(gpu_devices)))
        if report.dropped:
            notes.append("some history was lost before the monitor read it (the agent's ring was full)")
        for e in report.recent_events:
            if e.kind in (EventKind.EVAL_AUTOGRAD, EventKind.CHECKPOINTING_USE_CACHE) and e.data.get("text"):
                notes.append(f"{e.data.get('model', 'model')}: {e.data['text']}")
        notes = list(dict.fromkeys(notes))[-3:]
        self.notes.setText("\n".join(notes))
        self.notes.setVisible(bool(notes))
        seen = set()
        for dev in drawn:
            view = self.devices.get(dev.device)
            if view is None:
                view = self.devices[dev.device] = DeviceView(dev.device)
                self._body.insertWidget(self._body.indexOf(self.details), view)
                view.set_chart_height(chart_height(self._viewport_height))
                if dev.device != CPU:  # (CUDA's caching allocator only: CUDA_ONLY)
                    self.details.add(f"oom {dev.device}", f"OOM post-mortem ({dev.device})", view.oom_view)
                    self.details.add(
                        f"segments {dev.device}", f"Allocator segments ({dev.device})", view.segment_map
                    )
            view.label = device_label(frame, report, dev)
            view.session = self.session
            view.update_view(store, report, dev, now, window)
            seen.add(dev.device)
        for name in [n for n in self.devices if n not in seen]:
            self.details.remove(f"oom {name}")
            self.details.remove(f"segments {name}")
            self.devices.pop(name).deleteLater()
        self.modules.update_view(report.modules, device_total(report, frame))
        ooms = {f"oom {n}" for n, v in self.devices.items() if not v.oom_view.isHidden()}
        front = next(iter(sorted(ooms - self._fronted)), None)  # a new OOM: its post-mortem in front
        self._fronted |= ooms
        self.details.sync(front)

    def fit(self, viewport_height: int) -> None:
        """Charts and detail tabs sized to the agents tab's height: both in view."""
        self._viewport_height = viewport_height
        for view in self.devices.values():
            view.set_chart_height(chart_height(viewport_height))
        self.details.setMinimumHeight(details_height(viewport_height))


CPU = "cpu"  # torch's device name for host memory


def _no_session() -> str | None:
    return None


def device_total(report: AgentReport, frame: Frame | None) -> int | None:
    """The capacity of the device the modules were measured on (torch's figure, else NVML's)."""
    name = report.modules[0].device if report.modules else None
    for dev in report.devices:
        if dev.device == name:
            if dev.total:
                return dev.total
            gpu = gpu_for_device(frame, report, dev) if frame is not None else None
            return gpu.total if gpu is not None else None
    return None


# What PyTorch records only for CUDA's caching allocator (torch.cuda.memory_snapshot,
# torch.cuda.memory._record_memory_history, the OOM observer of
# torch._C._cuda_attach_out_of_memory_observer): said on a run without CUDA.
CUDA_ONLY = "allocator segments, allocation sites and the OOM post-mortem need CUDA"


def cpu_text(dev, on_gpu: bool) -> str:
    """A model (or part of one) on the CPU, said in words."""
    held = dev.buckets.weights if dev.buckets is not None else None
    size = f" ({fmt_bytes(held)} of weights)" if held else ""
    if on_gpu:
        return f"part of the model is on the CPU{size}: host memory, not on a GPU (not drawn here)"
    return f"the model is on the CPU{size}: its buckets and modules are host memory; {CUDA_ONLY}"


class AgentPanel(QWidget):
    """All agent processes; ``update_from(frame)`` on the GUI timer (reads the store only)."""

    def __init__(
        self, store, window: float = DEFAULT_WINDOW, parent=None, read_only: bool = False, start_sites=None
    ):
        super().__init__(parent)
        self.store = store
        self.window = window
        self.read_only = read_only  # asks no agent to record sites (ui/agents/sites_control.py)
        self.start_sites = start_sites  # how a section asks its agent to record sites (None: it cannot)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        self.empty = QLabel(
            "No process runs the vramscope agent. Start one with "
            "<code>vramscope run -- python train.py</code> or "
            "<code>from vramscope import agent; agent.start(model, optimizer)</code>."
        )
        self.empty.setTextFormat(Qt.TextFormat.RichText)
        self.empty.setWordWrap(True)
        theme.styled(self.empty, lambda s: f"color: {s.MUTED}; padding: 12px;")
        outer.addWidget(self.empty)
        self.scroll = QScrollArea()
        self.scroll.setWidgetResizable(True)
        self.scroll.setFrameShape(QFrame.Shape.NoFrame)
        body = QWidget()
        self._list = QVBoxLayout(body)
        self._list.setContentsMargins(0, 0, 0, 0)
        self._list.setSpacing(4)
        self._list.addStretch(1)
        self.scroll.setWidget(body)
        outer.addWidget(self.scroll)
        self.views: dict = {}
        # -> the session file this window records (or reopened), None when it records none:
        # the OOM post-mortem says where its full report is (set by ui/window/app.py)
        self.session = _no_session
        self.order: list = []  # identities as shown, top to bottom
        self._pending: tuple | None = None  # the last frame, for sections scrolled into view
        self._stale: set = set()
        self.scroll.verticalScrollBar().valueChanged.connect(self._update_visible)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)

    def update_from(self, frame: Frame | None) -> None:
        reports = list(frame.agents) if frame is not None else []
        now = frame.time if frame is not None else time.time()
        self.empty.setVisible(not reports)
        # live runs first (by rank, then PID), ended ones after them, newest first
        reports.sort(
            key=lambda r: (
                not r.connected,
                r.rank if r.rank is not None and r.connected else 1 << 30,
                -(r.start_time or 0.0) if not r.connected else r.pid,
            )
        )
        order, found = ranks_together(reports, frame)  # a job's header, then its ranks
        for key in [k for k in self.views if k not in set(order)]:
            self.views.pop(key).deleteLater()
        by_id = {r.identity: r for r in reports}
        for key in order:
            if key not in self.views:
                self.views[key] = (
                    JobHeader()
                    if isinstance(key, JobSlot)
                    else AgentProcessView(by_id[key], start_sites=self.start_sites)
                )
            if isinstance(key, JobSlot):
                self.views[key].show_job(found[key])
            else:
                self.views[key].fit(self.scroll.viewport().height())
        if order != self.order:
            for key in self.order:
                if key in self.views:
                    self._list.removeWidget(self.views[key])
            for i, key in enumerate(order):
                self._list.insertWidget(i, self.views[key])
            self.order = order
        self._pending = ({r.identity: r for r in reports}, now, frame)
        self._stale = {k for k in order if not isinstance(k, JobSlot)}
        self._update_visible()

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt)
        super().resizeEvent(event)
        for view in self.views.values():
            if isinstance(view, AgentProcessView):
                view.fit(self.scroll.viewport().height())

    def _update_visible(self) -> None:
        if self._pending is None:
            return
        reports, now, frame = self._pending
        viewport = self.scroll.viewport()
        for ident in list(self._stale):
            view = self.views.get(ident)
            if view is None:
                self._stale.discard(ident)
                continue
            top = view.mapTo(viewport, QPoint(0, 0)).y()
            in_view = top + max(view.height(), 1) > 0 and top < viewport.height()
            if self.isVisible() and view.isVisible() and not in_view:
                continue  # out of view: brought up to date when it scrolls in
            view.session = self.session
            view.update_view(self.store, reports[ident], now, self.window, frame, self.read_only)
            self._stale.discard(ident)
