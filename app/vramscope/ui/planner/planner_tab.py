"""The planner tab: will it fit, and what to change -- plus planned vs measured.

A standalone QWidget: the form (planner_form.py, its Model box
planner_model_source.py) on the left, the answer (planner_results.py) and
planned vs measured (planner_measured.py) on the right, each side scrolling
as a page. The plan is recomputed (pure arithmetic, vramscope.core.planner)
on every change. ``set_gpus([(name,
bytes)], now)`` gives the detected GPUs and what is free on each now (used
when the GPU field is empty);
``show_measured(agent_report)`` gives the attached process: while the user
has not chosen another source, the plan is made from that process's own
model (parameters, frozen part, bytes per parameter, optimizer), so planned
and measured compare like with like.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QScrollArea, QSplitter, QVBoxLayout, QWidget

from vramscope.core.planner import PlanError, build_plan
from vramscope.core.units import MiB
from vramscope.ui.qt import theme
from vramscope.ui.planner.planner_form import PlannerForm
from vramscope.ui.planner.planner_measured import MeasuredView
from vramscope.ui.planner.planner_model_source import AGENT, COUNT
from vramscope.ui.planner.planner_results import ResultsView
from vramscope.ui.planner.planner_run_inputs import RUN_FIELDS
from vramscope.ui.planner.planner_what_if import WhatIfView

# widgets of the form's Model box (and RUN_FIELDS of its run inputs) and the results reachable
# on the tab (the window and tests use them)
_FORM = (
    "source",
    "params",
    "config_path",
    "model_name",
    "layers",
    "hidden",
    "heads",
    "kv_heads",
    "head_dim",
    "intermediate",
    "live_label",
    "model_status",
)
NOW_STEP = 256 * MiB  # free memory moving less than this does not replan
_RESULTS = (
    "verdict",
    "warning",
    "error_label",
    "layout_label",
    "buckets",
    "gpu_table",
    "suggestions",
    "suggestions_label",
    "notes",
)


def _style(s: theme.Scheme) -> str:
    return f"""
QLabel#verdict {{ font-size: 12pt; font-weight: 600; padding: 4px 0; }}
QLabel#verdict[state="fits"] {{ color: {s.OK}; }}
QLabel#verdict[state="short"] {{ color: {s.ERROR}; }}
QLabel#verdict[state="notnow"] {{ color: {s.WARNING}; }}
QLabel#warning {{ color: {s.WARNING}; font-weight: 600; }}
QLabel#error {{ color: #ffffff; background: {s.ERROR}; border-radius: 4px; padding: 4px 8px; }}
QLabel[class="muted"] {{ color: {s.MUTED}; }}
"""


def _page(widget: QWidget, minimum_width: int = 0) -> QScrollArea:
    area = QScrollArea()
    area.setWidgetResizable(True)
    area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    area.setWidget(widget)
    if minimum_width:
        area.setMinimumWidth(minimum_width)
    return area


class PlannerTab(QWidget):
    """Form -> Plan -> tables; ``plan`` is the current Plan or None (with ``error``)."""

    plan_changed = Signal(object)

    def __init__(self, parent=None, gpus: list[tuple[str, int]] | None = None):
        super().__init__(parent)
        theme.styled(self, _style)
        self.plan = None
        self.error: str | None = None
        self.error_field: str | None = None
        self._detected: tuple[tuple[str, int], ...] = tuple(gpus or ())
        self._now: tuple = ()  # GpuNow of the detected GPUs
        self._now_key: tuple = ()
        self._source_chosen = False  # the user picked a source: the agent no longer takes over
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(0)
        self._timer.timeout.connect(self.recompute)

        self.form = PlannerForm()
        self.results = ResultsView()
        self.measured_view = MeasuredView()
        self.what_if = WhatIfView()  # the attached process's measured run, scaled
        self.results.tail.addWidget(self.what_if)
        self.results.tail.addWidget(self.measured_view)
        for name in _FORM:
            setattr(self, name, getattr(self.form.model_source, name))
        for name in RUN_FIELDS:
            setattr(self, name, getattr(self.form.run, name))
        for name in _RESULTS:
            setattr(self, name, getattr(self.results, name))
        self.measured = self.measured_view.table
        self.measured_label = self.measured_view.label

        splitter = QSplitter(Qt.Orientation.Horizontal, self)
        splitter.addWidget(_page(self.form, 340))
        splitter.addWidget(_page(self.results))
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([380, 1100])
        lay = QVBoxLayout(self)
        lay.setContentsMargins(6, 6, 6, 6)
        lay.addWidget(splitter)
        self.form.changed.connect(self._schedule)
        self.form.model_source.source.activated.connect(self._user_chose_source)
        self.recompute()

    # --- inputs -----------------------------------------------------------------

    def set_gpus(self, gpus, now=()) -> None:
        """The detected GPUs [(name, total bytes)] and their free memory now (GpuNow),
        used when the GPU field is empty. Replanned when a GPU's free memory moves by
        more than NOW_STEP or who holds it changes, not on every sample."""
        detected = tuple((str(n), int(t)) for n, t in gpus)
        key = tuple((g.name, g.free // NOW_STEP, tuple(w for w, _ in g.holders)) for g in now)
        if detected == self._detected and key == self._now_key:
            return
        self._detected, self._now, self._now_key = detected, tuple(now), key
        self._schedule()

    def _schedule(self, *_):
        self._timer.start()

    def _user_chose_source(self, *_):
        self._source_chosen = True

    def use_agent(self) -> None:
        """Select the attached process (agent) as the model source."""
        self.form.model_source.select_source(AGENT)

    def load_config(self, path: str) -> None:
        """Select config.json input from ``path``."""
        self._source_chosen = True
        self.form.model_source.load_config(path)

    def load_model(self, name: str) -> None:
        """Select a model by name: the local Hugging Face cache, or the Hub when online."""
        self._source_chosen = True
        self.form.model_source.load_model(name)

    def show_measured(self, agent_report) -> None:
        """The attached process (AgentReport): its model becomes the plan's source
        unless the user chose another; its buckets stand beside the plan."""
        old = getattr(self.form.report, "models", None)
        self.form.report = agent_report
        models = tuple(getattr(agent_report, "models", ()) or ())
        source = self.form.model_source.source_key
        if models and not self._source_chosen and source == COUNT:
            self.use_agent()
        elif source == AGENT and models != old:
            self.form.fill_live()
            self._schedule()
        self.measured_view.set_report(agent_report)
        self.what_if.set_report(agent_report)

    # --- results ----------------------------------------------------------------

    def recompute(self) -> None:
        run = self.form.run
        model = self.form.model_source
        self.what_if.setVisible(model.source_key == AGENT)
        self.what_if.set_form(
            run.batch.value(),
            run.seq.value(),
            run.checkpointing.isChecked(),
            run.flash.isChecked(),
            self._detected,
            self._now,
        )
        if model.loading:  # a config being read or counted on the worker thread
            self.plan, self.error, self.error_field = None, None, None
            self.results.show_waiting(model.model_status.text() or "Reading the config...")
            self.measured_view.set_plan(None, False)
            return
        try:
            plan = build_plan(self.form.request(self._detected, self._now))
        except PlanError as exc:
            self._show_error(exc)
            return
        self.plan, self.error, self.error_field = plan, None, None
        self.results.show_plan(
            plan, None if self._detected or plan.request.gpus_memory else "no GPU detected"
        )
        self.measured_view.set_plan(plan, model.source_key != COUNT)
        self.plan_changed.emit(plan)

    def _show_error(self, exc: PlanError) -> None:
        self.plan, self.error, self.error_field = None, exc.for_form(), exc.field
        self.results.show_error(self.error)
        self.measured_view.set_plan(None, False)
