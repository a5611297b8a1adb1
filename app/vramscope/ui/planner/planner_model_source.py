"""Where the planner's model comes from: the Model box of the planner's form --
a parameter count (with the layer figures typed beside it), a config.json, a
model name (the local Hugging Face cache, or the Hub when online), or the
attached process (whose figures the form takes from the agent:
ui/planner/planner_form.py).

Configs are read and counted by the core (config_source, configs); counting
a family that needs transformers, or fetching from the Hub, runs on a worker
thread (ui/planner/planner_shape_loader.py) so the window never waits on it.
"""

from __future__ import annotations

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
)

from vramscope.core.planner import ModelShape, PlanError, parse_count, shape_from_params
from vramscope.core.planner.config_source import (
    NOT_FETCHED,
    cached_models,
    config_for_model,
    config_from_path,
    offline,
)
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


class ModelSource(QGroupBox):
    """The Model box: the source picker, the chosen source's inputs, and the
    model's shape read from them. ``source_changed(key)`` says a source was
    chosen (its rows shown, before it is read); ``changed`` any input or a
    shape read."""

    changed = Signal()
    source_changed = Signal(str)

    def __init__(self, parent=None):
        super().__init__("Model", parent)
        self._shape = None  # ModelShape of the config/model source, or PlanError
        self._build()
        self._loader = ShapeLoader(self.model_status.setText, self._set_shape, self)  # workers when slow
        self._connect()
        self._source_changed()

    # --- building ----------------------------------------------------------------

    def _build(self) -> None:
        col = QVBoxLayout(self)
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
        name_edit = self.model_name.lineEdit()
        assert name_edit is not None  # an editable combo box has one
        self._name_edit = name_edit
        name_edit.setPlaceholderText("org/name, e.g. Qwen/Qwen2.5-7B")
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
        for muted in (self.model_status, self.live_label, self.shape_hint):
            col.addWidget(muted)
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

    def _connect(self) -> None:
        self.params.textChanged.connect(self.changed)
        self.config_path.editingFinished.connect(self._load_config)
        self._name_edit.returnPressed.connect(self._load_model)
        self.model_name.activated.connect(lambda _i: self._load_model())
        for w in (self.layers, self.hidden, self.heads, self.kv_heads, self.head_dim, self.intermediate):
            w.valueChanged.connect(self.changed)
        self.source.currentIndexChanged.connect(self._source_changed)

    # --- the source -----------------------------------------------------------------

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
        self.live_label.setVisible(key == AGENT)
        self._shape = None
        self.model_status.clear()
        self.source_changed.emit(key)  # the form: the run's live inputs, the attached process
        if key == CONFIG:
            self._load_config()
        elif key == MODEL:
            self._list_cached()
            self._load_model()
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

    def show_live(self, text: str, params: int | None = None) -> None:
        """What the agent says about the attached process's model, and its count."""
        self.live_label.setText(text)
        if params is not None:
            self.params.blockSignals(True)
            self.params.setText(f"{params:,}")
            self.params.blockSignals(False)

    # --- reading a config ------------------------------------------------------------

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

    def _set_shape(self, source: str, shape) -> None:
        if self.source_key == source:
            self._shape = shape
            self.changed.emit()

    @property
    def loading(self) -> bool:
        return self.source_key in (CONFIG, MODEL) and self._shape is None

    # --- the shape -------------------------------------------------------------------

    def layer_figures(self) -> dict[str, int | None]:
        """The layer figures typed beside a count (None where not set)."""
        return {f: getattr(self, f).value() or None for f in _SHAPE_FIELDS}

    def shape(self) -> ModelShape:
        """The model's shape from the count, the config or the model name; PlanError
        (field, message) otherwise. The attached process's is the form's."""
        key = self.source_key
        if key in (CONFIG, MODEL):
            if isinstance(self._shape, PlanError):
                raise self._shape
            if self._shape is None:
                raise PlanError(key, "reading the config...")
            return self._shape
        try:
            count = parse_count(self.params.text())
        except ValueError as exc:
            raise PlanError("params", str(exc)) from None
        return shape_from_params(count, **self.layer_figures())
