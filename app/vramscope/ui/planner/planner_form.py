"""The planner's form: every input of `vramscope plan`. Here: where the model
comes from -- a parameter count, a config.json, a model name (the local
Hugging Face cache, or the Hub when online), or the attached process; the
run's inputs (mode, precision, training, inference) are in
ui/planner/planner_run_inputs.py.

Configs are read and counted by the core (config_source, configs); counting
a family that needs transformers, or fetching from the Hub, runs on a worker
thread so the window never waits on it.
"""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from vramscope.core.planner import PlanError, PlanRequest, parse_count, shape_from_params
from vramscope.core.planner.config_source import (
    NOT_FETCHED,
    cached_models,
    config_for_model,
    config_from_path,
    offline,
)
from vramscope.core.planner.live import live_model, live_request
from vramscope.ui.planner.planner_run_inputs import RunInputs
from vramscope.ui.planner.planner_shape_loader import ShapeLoader, shape_of
from vramscope.ui.planner.planner_widgets import spin

COUNT, CONFIG, MODEL, AGENT = "params", "config", "model", "agent"
SOURCES = (
    (COUNT, "Parameter count"),
    (CONFIG, "config.json"),
    (MODEL, "Model name (Hugging Face)"),
    (AGENT, "Attached process (agent)"),
)
_SHAPE_FIELDS = ("layers", "hidden", "heads", "kv_heads", "head_dim", "intermediate")


def _muted(text: str = "") -> QLabel:
    w = QLabel(text)
    w.setWordWrap(True)
    w.setProperty("class", "muted")
    return w


class PlannerForm(QWidget):
    """The inputs; ``request()`` gives the PlanRequest or raises PlanError."""

    changed = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.report = None  # the agent report the live source reads
        self._shape = None  # ModelShape of the config/model source, or PlanError
        self._loader = ShapeLoader(self.model_status_text, self._set_shape, self)  # workers when slow
        col = QVBoxLayout(self)
        col.addWidget(self._model_box())
        self.run = RunInputs()
        col.addWidget(self.run.run_box)
        col.addWidget(self.run.train_box)
        col.addWidget(self.run.infer_box)
        col.addStretch(1)
        self._connect()
        self._source_changed()

    # --- building ----------------------------------------------------------------

    def _model_box(self) -> QGroupBox:
        box = QGroupBox("Model")
        col = QVBoxLayout(box)
        f = QFormLayout()
        self._source_rows = f
        col.addLayout(f)
        self.source = QComboBox()
        for key, text in SOURCES:
            self.source.addItem(text, key)
        self.params = QLineEdit("7B")
        self.params.setPlaceholderText("7B, 13B, 7e9, 6738415616")
        self.config_path = QLineEdit()
        self.config_path.setPlaceholderText("path to a Hugging Face config.json")
        self.browse = QPushButton("Browse...")
        self.browse.clicked.connect(self._browse)
        cfg_row = QHBoxLayout()
        cfg_row.addWidget(self.config_path)
        cfg_row.addWidget(self.browse)
        self.model_name = QComboBox()
        self.model_name.setEditable(True)
        self.model_name.lineEdit().setPlaceholderText("org/name, e.g. Qwen/Qwen2.5-7B")
        self.model_name.setToolTip(
            "Models in the local Hugging Face cache; any other name is "
            "fetched from the Hub when online (your saved token for "
            "gated models)"
        )
        self.load_button = QPushButton("Load")
        self.load_button.clicked.connect(self._load_model)
        model_row = QHBoxLayout()
        model_row.addWidget(self.model_name, 1)
        model_row.addWidget(self.load_button)
        f.addRow("Source", self.source)
        f.addRow("Parameters", self.params)
        f.addRow("Config", cfg_row)
        f.addRow("Model", model_row)
        self.model_status = _muted()
        self.live_label = _muted()
        self.live_label.hide()
        self.shape_hint = _muted(
            "With a count: layers, hidden, heads for activations; "
            "KV heads, head dim for the KV cache (- = unknown)."
        )
        for w in (self.model_status, self.live_label, self.shape_hint):
            col.addWidget(w)
        f = QFormLayout()
        self._shape_rows = f
        col.addLayout(f)
        self.layers = spin(0, 1000, 0, "-")
        self.hidden = spin(0, 1 << 20, 0, "-")
        self.heads = spin(0, 4096, 0, "-")
        self.kv_heads = spin(0, 4096, 0, "-")
        self.head_dim = spin(0, 4096, 0, "-")
        self.intermediate = spin(0, 1 << 22, 0, "-")
        for label, w in (
            ("Layers", self.layers),
            ("Hidden size", self.hidden),
            ("Heads", self.heads),
            ("KV heads", self.kv_heads),
            ("Head dim", self.head_dim),
            ("Intermediate", self.intermediate),
        ):
            f.addRow(label, w)
        return box

    def _connect(self) -> None:
        self.params.textChanged.connect(self.changed)
        self.config_path.editingFinished.connect(self._load_config)
        self.model_name.lineEdit().returnPressed.connect(self._load_model)
        self.model_name.activated.connect(lambda _i: self._load_model())
        for w in (self.layers, self.hidden, self.heads, self.kv_heads, self.head_dim, self.intermediate):
            w.valueChanged.connect(self.changed)
        self.run.connect(self.changed, self._mode_changed)
        self.source.currentIndexChanged.connect(self._source_changed)

    # --- the model source -----------------------------------------------------------

    @property
    def source_key(self) -> str:
        return self.source.currentData()

    def select_source(self, key: str) -> None:
        self.source.setCurrentIndex(self.source.findData(key))

    def _source_changed(self, *_):
        key = self.source_key
        self.params.setEnabled(key == COUNT)
        self.config_path.setEnabled(key == CONFIG)
        self.browse.setEnabled(key == CONFIG)
        self.model_name.setEnabled(key == MODEL)
        self.load_button.setEnabled(key == MODEL)
        for w in (
            self.layers,
            self.hidden,
            self.heads,
            self.kv_heads,
            self.head_dim,
            self.intermediate,
            self.shape_hint,
        ):
            w.setEnabled(key in (COUNT, AGENT))
        # only the rows of the chosen source: the run's inputs stay above the fold
        for w in (self.layers, self.hidden, self.heads, self.kv_heads, self.head_dim, self.intermediate):
            self._shape_rows.setRowVisible(w, key in (COUNT, AGENT))
        self.shape_hint.setVisible(key in (COUNT, AGENT))
        self.model_status.setVisible(key in (CONFIG, MODEL))  # says what was read, and how
        self._source_rows.setRowVisible(self.params, key in (COUNT, AGENT))
        self._source_rows.setRowVisible(2, key == CONFIG)  # the config path row
        self._source_rows.setRowVisible(3, key == MODEL)  # the model name row
        self.run.set_live(key == AGENT)  # precision, layout, LoRA: taken from the live model
        self.live_label.setVisible(key == AGENT)
        self._shape = None
        self.model_status.clear()
        self._mode_changed()
        if key == CONFIG:
            self._load_config()
        elif key == MODEL:
            self._list_cached()
            self._load_model()
        elif key == AGENT:
            self.fill_live()
        self.changed.emit()

    def _list_cached(self) -> None:
        current = self.model_name.currentText()
        self.model_name.blockSignals(True)
        self.model_name.clear()
        self.model_name.addItems(list(cached_models()))
        self.model_name.setEditText(current or self.model_name.itemText(0))
        self.model_name.blockSignals(False)

    def _browse(self):
        path, _ = QFileDialog.getOpenFileName(
            self, "Hugging Face config.json", "", "JSON (*.json);;All files (*)"
        )
        if path:
            self.config_path.setText(path)
            self._load_config()

    def load_config(self, path: str) -> None:
        """Select config.json input from ``path``."""
        self._select_with(CONFIG, lambda: self.config_path.setText(path))

    def load_model(self, name: str) -> None:
        """Select a model by name (the cache, or the Hub when online)."""
        self._select_with(MODEL, lambda: self.model_name.setEditText(name))

    def _select_with(self, key: str, fill) -> None:
        self.source.blockSignals(True)
        self.select_source(key)
        self.source.blockSignals(False)
        fill()
        self._source_changed()

    def _load_config(self) -> None:
        path = self.config_path.text().strip()
        if self.source_key != CONFIG:
            return
        if not path:
            self._set_shape(CONFIG, PlanError("config", "choose a config.json (Browse...)"))
            return
        try:
            loaded = config_from_path(path)
        except PlanError as exc:
            self._set_shape(CONFIG, exc)
            return
        self._shape = None  # loading
        self._loader.count((CONFIG, path), loaded, path)

    def _load_model(self) -> None:
        name = self.model_name.currentText().strip()
        if self.source_key != MODEL:
            return
        if not name:
            self._set_shape(MODEL, PlanError("model", "type a model name, or pick one from the local cache"))
            return
        key = (MODEL, name)
        try:
            loaded = config_for_model(name, allow_fetch=False)
        except PlanError as exc:
            if offline() or NOT_FETCHED not in exc.message:
                self._set_shape(MODEL, exc)
                return
            self.model_status.setText(f"fetching config.json of {name} from the Hub...")
            self._shape = None  # loading
            self._loader.start(key, lambda: shape_of(config_for_model(name), MODEL), where=f"the Hub: {name}")
            return
        self._shape = None
        self._loader.count(key, loaded, loaded.where)

    def model_status_text(self, text: str) -> None:
        self.model_status.setText(text)

    def _set_shape(self, source: str, shape) -> None:
        if self.source_key == source:
            self._shape = shape
            self.changed.emit()

    @property
    def loading(self) -> bool:
        return self.source_key in (CONFIG, MODEL) and self._shape is None

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
            self.live_label.setText(exc.message)
            self.run.take_optimizer(None)
            self.run.take_sharding(None)
            return
        self.live_label.setText(
            f"pid {self.report.pid}: " + live.describe() + "".join(f"\n- {n}" for n in live.notes)
        )
        self.params.blockSignals(True)
        self.params.setText(f"{live.params:,}")
        self.params.blockSignals(False)
        self.run.take_optimizer(live.optimizer)
        self.run.take_sharding(live.sharding.layout if live.sharding is not None else None)

    def _mode_changed(self, *_):
        self.run.show_mode(self.source_key == AGENT)
        self.changed.emit()

    # --- the request ------------------------------------------------------------------

    def request(self, gpus_detected=(), now=()) -> PlanRequest:
        """The PlanRequest of the form; PlanError (field, message) otherwise."""

        def opt(w):
            return w.value() or None

        layers = {f: opt(getattr(self, f)) for f in _SHAPE_FIELDS}
        key = self.source_key
        live = None
        if key == AGENT:
            live = self.live()
            shape = shape_from_params(live.params)  # replaced below, with the layer figures
        elif key in (CONFIG, MODEL):
            if isinstance(self._shape, PlanError):
                raise self._shape
            if self._shape is None:
                raise PlanError(key, "reading the config...")
            shape = self._shape
        else:
            try:
                count = parse_count(self.params.text())
            except ValueError as exc:
                raise PlanError("params", str(exc)) from None
            shape = shape_from_params(count, **layers)
        req = self.run.request(shape, gpus_detected, now)
        if live is not None:
            req = live_request(live, req, **layers)
        if req.mode == "train" and (req.batch is None) != (req.seq is None):
            req = replace(req, batch=None, seq=None)  # half-filled: the plan's note says so
        return req
