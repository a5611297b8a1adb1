"""The planner's form: every input of `vramscope plan`. Here: the form as a
whole -- the attached process the agent reports on, and the PlanRequest of the
inputs; where the model comes from (a parameter count, a config.json, a model
name, or the attached process) is ui/planner/planner_model_source.py, the run's
inputs (mode, precision, training, inference) ui/planner/planner_run_inputs.py.
"""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QVBoxLayout, QWidget

from vramscope.core.planner import PlanError, PlanRequest, shape_from_params
from vramscope.core.planner.live import live_model, live_request
from vramscope.ui.planner.planner_model_source import AGENT, ModelSource
from vramscope.ui.planner.planner_run_inputs import RunInputs


class PlannerForm(QWidget):
    """The inputs; ``request()`` gives the PlanRequest or raises PlanError."""

    changed = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.report = None  # the agent report the live source reads
        col = QVBoxLayout(self)
        self.model_source = ModelSource()
        col.addWidget(self.model_source)
        self.run = RunInputs()
        col.addWidget(self.run.run_box)
        col.addWidget(self.run.train_box)
        col.addWidget(self.run.infer_box)
        col.addStretch(1)
        self.model_source.changed.connect(self.changed)
        self.model_source.source_changed.connect(self._source_changed)
        self.run.connect(self.changed, self._mode_changed)
        self._source_changed(self.model_source.source_key)

    def _source_changed(self, key: str) -> None:
        self.run.set_live(key == AGENT)  # precision, layout, LoRA: taken from the live model
        self._mode_changed()
        if key == AGENT:
            self.fill_live()

    def _mode_changed(self, *_):
        self.run.show_mode(self.model_source.source_key == AGENT)
        self.changed.emit()

    # --- the attached process ---------------------------------------------------------

    def live(self):
        if self.report is None:
            raise PlanError(
                "agent",
                "no process with the vramscope agent is attached: start "
                "one with vramscope run -- python train.py",
            )
        return live_model(getattr(self.report, "models", ()), getattr(self.report, "sharded", None))

    def fill_live(self) -> None:
        """Show what the agent says about the model; take its count and optimizer."""
        try:
            live = self.live()
        except PlanError as exc:
            self.model_source.show_live(exc.message)
            self.run.take_optimizer(None)
            self.run.take_sharding(None)
            return
        self.model_source.show_live(
            f"pid {self.report.pid}: " + live.describe() + "".join(f"\n- {n}" for n in live.notes),
            live.params,
        )
        self.run.take_optimizer(live.optimizer)
        self.run.take_sharding(live.sharding.layout if live.sharding is not None else None)

    # --- the request ------------------------------------------------------------------

    def request(self, gpus_detected=(), now=()) -> PlanRequest:
        """The PlanRequest of the form; PlanError (field, message) otherwise."""
        live = None
        if self.model_source.source_key == AGENT:
            live = self.live()
            shape = shape_from_params(live.params)  # replaced below, with the layer figures
        else:
            shape = self.model_source.shape()
        req = self.run.request(shape, gpus_detected, now)
        if live is not None:
            req = live_request(live, req, **self.model_source.layer_figures())
        if req.mode == "train" and (req.batch is None) != (req.seq is None):
            req = replace(req, batch=None, seq=None)  # half-filled: the plan's note says so
        return req
