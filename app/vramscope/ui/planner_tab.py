"""The planner tab: will it fit, and what to change -- plus planned vs measured.

A standalone QWidget. The form covers every input of `vramscope plan`; the
plan is recomputed (pure arithmetic, vramscope.core.planner) on every change.
``set_gpus([(name, bytes)])`` gives the detected GPUs (used when the GPU
field is empty); ``show_measured(agent_report)`` puts the plan's buckets beside
the buckets the PyTorch agent measured. With the model source "attached
process (agent)" the plan is made from that same report's live model
(parameters, frozen part, bytes per parameter, optimizer), so planned and
measured compare like with like.
"""

from __future__ import annotations

import json
from dataclasses import replace

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (QAbstractItemView, QCheckBox, QComboBox, QFileDialog, QFormLayout,
                               QGroupBox, QHBoxLayout, QHeaderView, QLabel, QLineEdit,
                               QPlainTextEdit, QPushButton, QScrollArea, QSizePolicy,
                               QSpinBox, QSplitter, QTableWidget,
                               QTableWidgetItem, QVBoxLayout, QWidget)

from vramscope.core.planner import (PlanRequest, build_plan, parse_count, parse_gpu_memory,
                                    shape_from_config, shape_from_params)
from vramscope.core.planner.compare import compare, measured_devices
from vramscope.core.planner.live import live_model, live_request
from vramscope.core.units import GB, GiB, NA
from vramscope.ui import theme

_STYLE = f"""
QLabel#verdict {{ font-size: 12pt; font-weight: 600; padding: 4px 0; }}
QLabel#verdict[state="fits"] {{ color: {theme.OK}; }}
QLabel#verdict[state="short"] {{ color: {theme.ERROR}; }}
QLabel#error {{ color: #ffffff; background: {theme.ERROR}; border-radius: 4px; padding: 4px 8px; }}
QLabel[class="muted"] {{ color: {theme.MUTED}; }}
"""


def _gb(n: int | None) -> str:
    if n is None:
        return NA
    return f"{n / GB:,.2f} GB" if abs(n) >= 10**7 or n == 0 else f"{n / GB:.3g} GB"


def _gib(n: int | None) -> str:
    if n is None:
        return NA
    return f"{n / GiB:,.2f} GiB" if abs(n) >= 10**7 or n == 0 else f"{n / GiB:.3g} GiB"


def _exact(n: int) -> str:
    """Bytes to the byte, with GB beside: planned vs measured is compared exactly."""
    return f"{n:,} B  ({_gb(n)})"


def _both(n: int | None) -> str:
    return NA if n is None else f"{_gb(n)}  ({_gib(n)})"


def _item(text: str, align_right: bool = False, tip: str | None = None) -> QTableWidgetItem:
    it = QTableWidgetItem(text)
    it.setFlags(it.flags() & ~Qt.ItemFlag.ItemIsEditable)
    if align_right:
        it.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    if tip:
        it.setToolTip(tip)
    return it


def _table(headers: list[str]) -> QTableWidget:
    t = QTableWidget(0, len(headers))
    t.setHorizontalHeaderLabels(headers)
    t.verticalHeader().setVisible(False)
    t.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    t.setWordWrap(True)
    t.setAlternatingRowColors(True)
    h = t.horizontalHeader()
    for i in range(len(headers) - 1):
        h.setSectionResizeMode(i, QHeaderView.ResizeMode.ResizeToContents)
    h.setSectionResizeMode(len(headers) - 1, QHeaderView.ResizeMode.Stretch)
    return t


def _spin(minimum: int, maximum: int, value: int, special: str | None = None) -> QSpinBox:
    s = QSpinBox()
    s.setRange(minimum, maximum)
    s.setValue(value)
    s.setGroupSeparatorShown(True)
    if special:
        s.setSpecialValueText(special)  # shown at the minimum: "not planned", "off"
    return s


class PlannerTab(QWidget):
    """Form -> Plan -> tables; ``plan`` is the current Plan or None (with ``error``)."""

    planChanged = Signal(object)

    def __init__(self, parent=None, gpus: list[tuple[str, int]] | None = None):
        super().__init__(parent)
        self.setStyleSheet(_STYLE)
        self.plan = None
        self.error: str | None = None
        self._detected: tuple[tuple[str, int], ...] = tuple(gpus or ())
        self._config: dict | None = None
        self._report = None
        self._live_models: tuple = ()  # the models of the report last shown (live source)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(0)
        self._timer.timeout.connect(self.recompute)

        splitter = QSplitter(Qt.Orientation.Horizontal, self)
        splitter.addWidget(self._build_form())
        splitter.addWidget(self._build_results())
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([380, 1100])
        lay = QVBoxLayout(self)
        lay.setContentsMargins(6, 6, 6, 6)
        lay.addWidget(splitter)
        self._mode_changed()
        self.recompute()

    # --- form ------------------------------------------------------------------

    def _build_form(self) -> QWidget:
        form_host = QWidget()
        col = QVBoxLayout(form_host)

        model = QGroupBox("Model")
        f = QFormLayout(model)
        self.source = QComboBox()
        self.source.addItems(["Parameter count", "config.json", "Attached process (agent)"])
        self.params = QLineEdit("7B")
        self.params.setPlaceholderText("7B, 13B, 7e9, 6738415616")
        self.config_path = QLineEdit()
        self.config_path.setPlaceholderText("path to a Hugging Face config.json")
        self.browse = QPushButton("Browse...")
        self.browse.clicked.connect(self._browse)
        cfg_row = QHBoxLayout()
        cfg_row.addWidget(self.config_path)
        cfg_row.addWidget(self.browse)
        self.layers = _spin(0, 1000, 0, "-")
        self.hidden = _spin(0, 1 << 20, 0, "-")
        self.heads = _spin(0, 4096, 0, "-")
        self.kv_heads = _spin(0, 4096, 0, "-")
        self.head_dim = _spin(0, 4096, 0, "-")
        self.intermediate = _spin(0, 1 << 22, 0, "-")
        f.addRow("Source", self.source)
        f.addRow("Parameters", self.params)
        f.addRow("Config", cfg_row)
        self.live_label = QLabel()
        self.live_label.setWordWrap(True)
        self.live_label.setProperty("class", "muted")
        self.live_label.hide()
        f.addRow(self.live_label)
        self.shape_hint = QLabel("With a count: layers, hidden, heads for activations; "
                                 "KV heads, head dim for the KV cache (- = unknown).")
        self.shape_hint.setWordWrap(True)
        self.shape_hint.setProperty("class", "muted")
        f.addRow(self.shape_hint)
        f.addRow("Layers", self.layers)
        f.addRow("Hidden size", self.hidden)
        f.addRow("Heads", self.heads)
        f.addRow("KV heads", self.kv_heads)
        f.addRow("Head dim", self.head_dim)
        f.addRow("Intermediate", self.intermediate)
        col.addWidget(model)

        run = QGroupBox("Run")
        f = QFormLayout(run)
        self.mode = QComboBox()
        self.mode.addItem("Training", "train")
        self.mode.addItem("Inference", "infer")
        self.precision = QComboBox()
        self.gpu_memory = QLineEdit()
        self.gpu_memory.setPlaceholderText("detected GPUs, or e.g. 24GiB, A100=80GiB")
        f.addRow("Mode", self.mode)
        f.addRow("Precision", self.precision)
        f.addRow("GPU memory", self.gpu_memory)
        col.addWidget(run)

        self.train_box = QGroupBox("Training")
        f = QFormLayout(self.train_box)
        self.optimizer = QComboBox()
        for key, text in (("adam", "Adam (8 B)"), ("adamw", "AdamW (8 B)"),
                          ("adam8bit", "8-bit Adam (2 B)"), ("sgd-momentum", "SGD momentum (4 B)"),
                          ("sgd", "SGD (0 B)")):
            self.optimizer.addItem(text, key)
        self.grad_layout = QComboBox()
        self.grad_layout.addItem("16 B: bf16 gradients (ZeRO)", 16)
        self.grad_layout.addItem("18 B: fp32 gradients (HF)", 18)
        self.zero_stage = QComboBox()
        for s, text in ((0, "0 - plain DDP"), (1, "1 - optimizer"), (2, "2 - + gradients"),
                        (3, "3 - + weights")):
            self.zero_stage.addItem(text, s)
        self.gpus = _spin(1, 4096, 1)
        self.fsdp = QCheckBox("FSDP full shard (= stage 3)")
        self.offload = QCheckBox("Offload optimizer to CPU")
        self.lora_rank = _spin(0, 4096, 0, "off")
        self.lora_modules = QLineEdit()
        self.lora_modules.setPlaceholderText("PEFT defaults, e.g. q_proj,v_proj or all-linear")
        self.batch = _spin(0, 1 << 16, 0, "not planned")
        self.seq = _spin(0, 1 << 24, 0, "not planned")
        self.checkpointing = QCheckBox("Activation checkpointing (sqrt n)")
        self.flash = QCheckBox("Flash attention")
        f.addRow("Optimizer", self.optimizer)
        f.addRow("Mixed layout", self.grad_layout)
        f.addRow("ZeRO stage", self.zero_stage)
        f.addRow("GPUs in the job", self.gpus)
        f.addRow(self.fsdp)
        f.addRow(self.offload)
        f.addRow("LoRA rank", self.lora_rank)
        f.addRow("LoRA modules", self.lora_modules)
        f.addRow("Micro-batch", self.batch)
        f.addRow("Sequence", self.seq)
        f.addRow(self.checkpointing)
        f.addRow(self.flash)
        col.addWidget(self.train_box)

        self.infer_box = QGroupBox("Inference")
        f = QFormLayout(self.infer_box)
        self.kv_dtype = QComboBox()
        for key in ("auto", "bf16", "fp16", "fp8", "fp32"):
            self.kv_dtype.addItem(key if key != "auto" else "weights' dtype", key)
        self.context = _spin(0, 1 << 24, 4096, "model maximum")
        self.concurrency = _spin(1, 1 << 16, 1)
        f.addRow("KV cache dtype", self.kv_dtype)
        f.addRow("Context (tokens)", self.context)
        f.addRow("Concurrent", self.concurrency)
        col.addWidget(self.infer_box)
        col.addStretch(1)

        for w in (self.params, self.config_path, self.gpu_memory, self.lora_modules):
            w.textChanged.connect(self._schedule)
        self.config_path.editingFinished.connect(self._load_config)
        for w in (self.source, self.precision, self.optimizer, self.grad_layout,
                  self.zero_stage, self.kv_dtype):
            w.currentIndexChanged.connect(self._schedule)
        self.mode.currentIndexChanged.connect(self._mode_changed)
        for w in (self.layers, self.hidden, self.heads, self.kv_heads, self.head_dim,
                  self.intermediate, self.gpus, self.lora_rank, self.batch, self.seq,
                  self.context, self.concurrency):
            w.valueChanged.connect(self._schedule)
        for w in (self.fsdp, self.offload, self.checkpointing, self.flash):
            w.toggled.connect(self._schedule)
        self.source.currentIndexChanged.connect(self._source_changed)
        self._source_changed()

        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(form_host)
        scroll.setMinimumWidth(360)
        return scroll

    def _build_results(self) -> QWidget:
        host = QWidget()
        col = QVBoxLayout(host)
        self.verdict = QLabel()
        self.verdict.setObjectName("verdict")
        self.verdict.setWordWrap(True)
        self.error_label = QLabel()
        self.error_label.setObjectName("error")
        self.error_label.setWordWrap(True)
        self.error_label.hide()
        self.layout_label = QLabel()
        self.layout_label.setWordWrap(True)
        self.layout_label.setProperty("class", "muted")
        self.layout_label.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Minimum)
        self.buckets = _table(["Bucket (per GPU)", "Bytes", "GB (10^9)", "GiB (2^30)",
                               "B/param", "Why"])
        self.gpu_table = _table(["GPU", "Capacity", "Verdict"])
        self.gpu_table.setMaximumHeight(120)
        self.suggestions = _table(["#", "Per GPU after", "Fits", "Change (least damaging first)"])
        self.notes = QPlainTextEdit()
        self.notes.setReadOnly(True)
        self.notes.setMaximumHeight(150)
        measured_title = QHBoxLayout()
        self.measured_label = QLabel("Planned vs measured: no agent attached")
        self.measured_device = QComboBox()
        self.measured_device.hide()
        self.measured_device.currentIndexChanged.connect(self._fill_measured)
        measured_title.addWidget(self.measured_label, 1)
        measured_title.addWidget(self.measured_device)
        self.measured = _table(["Bucket", "Planned", "Measured", "Measured - planned"])

        col.addWidget(self.verdict)
        col.addWidget(self.error_label)
        col.addWidget(self.layout_label)
        col.addWidget(self.buckets, 3)
        col.addWidget(self.gpu_table)
        self.suggestions_label = QLabel("What would make it fit")
        col.addWidget(self.suggestions_label)
        col.addWidget(self.suggestions, 2)
        col.addLayout(measured_title)
        col.addWidget(self.measured, 2)
        col.addWidget(self.notes)
        return host

    # --- inputs -----------------------------------------------------------------

    def set_gpus(self, gpus) -> None:
        """The detected GPUs [(name, total bytes)], used when the GPU field is empty."""
        self._detected = tuple((str(n), int(t)) for n, t in gpus)
        self._schedule()

    def _schedule(self, *_):
        self._timer.start()

    LIVE = 2  # index of "Attached process (agent)" in the source combo

    def _source_changed(self, *_):
        by_config = self.source.currentIndex() == 1
        live = self.source.currentIndex() == self.LIVE
        self.params.setEnabled(not by_config and not live)
        self.config_path.setEnabled(by_config)
        self.browse.setEnabled(by_config)
        for w in (self.layers, self.hidden, self.heads, self.kv_heads, self.head_dim,
                  self.intermediate, self.shape_hint):
            w.setEnabled(not by_config)
        # taken from the live model: how it is held and which parameters are trained
        for w in (self.precision, self.grad_layout, self.lora_rank, self.lora_modules):
            w.setEnabled(not live)
        self.live_label.setVisible(live)
        self._mode_changed()
        if by_config:
            self._load_config()
        if live:
            self._fill_live()
        else:
            self.optimizer.setEnabled(True)
        self._schedule()

    def use_agent(self) -> None:
        """Select the attached process (agent) as the model source."""
        self.source.setCurrentIndex(self.LIVE)

    def _live(self):
        """The live model of the report shown; ValueError when there is none."""
        if self._report is None:
            raise ValueError("no process with the vramscope agent is attached: start one with "
                             "vramscope run -- python train.py")
        return live_model(getattr(self._report, "models", ()))

    def _fill_live(self) -> None:
        """Show what the agent says about the model; take its count and optimizer."""
        try:
            live = self._live()
        except ValueError as exc:
            self.live_label.setText(str(exc))
            self.optimizer.setEnabled(True)
            return
        pid = f"pid {self._report.pid}: " if self._report is not None else ""
        self.live_label.setText(pid + live.describe()
                                + "".join(f"\n- {n}" for n in live.notes))
        self.params.blockSignals(True)
        self.params.setText(f"{live.params:,}")
        self.params.blockSignals(False)
        if live.optimizer is not None:
            self.optimizer.blockSignals(True)
            self.optimizer.setCurrentIndex(max(0, self.optimizer.findData(live.optimizer)))
            self.optimizer.blockSignals(False)
        self.optimizer.setEnabled(live.optimizer is None)

    def _mode_changed(self, *_):
        train = self.mode.currentData() == "train"
        current = self.precision.currentData()
        self.precision.blockSignals(True)
        self.precision.clear()
        choices = (("mixed", "mixed (bf16 + fp32 master)"), ("fp32", "fp32"),
                   ("fp16", "fp16 mixed"), ("int8", "int8 base (LoRA)"),
                   ("int4", "int4 base (LoRA)")) if train else (
            ("bf16", "bf16"), ("fp16", "fp16"), ("fp32", "fp32"), ("int8", "int8"),
            ("int4", "int4"))
        if self.source.currentIndex() == self.LIVE:
            choices = (("live", "as the model holds it"),)
        for key, text in choices:
            self.precision.addItem(text, key)
        idx = self.precision.findData(current)
        self.precision.setCurrentIndex(max(idx, 0))
        self.precision.blockSignals(False)
        self.train_box.setVisible(train)
        self.infer_box.setVisible(not train)
        self._schedule()

    def _browse(self):
        path, _ = QFileDialog.getOpenFileName(self, "Hugging Face config.json", "",
                                              "JSON (*.json);;All files (*)")
        if path:
            self.config_path.setText(path)
            self._load_config()

    def load_config(self, path: str) -> None:
        """Select config.json input from ``path`` (also used by tests and the window)."""
        self.source.setCurrentIndex(1)
        self.config_path.setText(path)
        self._load_config()

    def _load_config(self):
        path = self.config_path.text().strip()
        self._config = None
        self._config_error = None
        if path:
            try:
                with open(path, encoding="utf-8") as fh:
                    self._config = json.load(fh)
            except OSError as exc:
                self._config_error = f"cannot read {path}: {exc.strerror or exc}"
            except json.JSONDecodeError as exc:
                self._config_error = f"{path} is not valid JSON: {exc}"
        self._schedule()

    def request(self) -> PlanRequest:
        """The PlanRequest of the form; ValueError with a clear message."""
        def opt(spin):
            return spin.value() or None

        live = None
        if self.source.currentIndex() == self.LIVE:
            live = self._live()
            shape = shape_from_params(live.params)  # replaced below, with the layer figures
        elif self.source.currentIndex() == 1:
            if getattr(self, "_config_error", None):
                raise ValueError(self._config_error)
            if self._config is None:
                raise ValueError("choose a config.json (Browse...)")
            shape = shape_from_config(self._config)
        else:
            shape = shape_from_params(
                parse_count(self.params.text()), layers=opt(self.layers),
                hidden=opt(self.hidden), heads=opt(self.heads), kv_heads=opt(self.kv_heads),
                head_dim=opt(self.head_dim), intermediate=opt(self.intermediate))
        gpus = tuple(parse_gpu_memory(part) for part in self.gpu_memory.text().split(",")
                     if part.strip()) or self._detected
        modules = tuple(m.strip() for m in self.lora_modules.text().split(",") if m.strip())
        kv = self.kv_dtype.currentData()
        req = PlanRequest(
            shape=shape, mode=self.mode.currentData(), precision=self.precision.currentData(),
            optimizer=self.optimizer.currentData(), grad_layout=self.grad_layout.currentData(),
            zero_stage=self.zero_stage.currentData(), gpus=self.gpus.value(),
            fsdp=self.fsdp.isChecked(), offload_optimizer=self.offload.isChecked(),
            lora_rank=opt(self.lora_rank), lora_modules=modules, batch=opt(self.batch),
            seq=opt(self.seq), checkpointing=self.checkpointing.isChecked(),
            flash_attention=self.flash.isChecked(), kv_dtype=None if kv == "auto" else kv,
            context=opt(self.context), concurrency=self.concurrency.value(), gpus_memory=gpus)
        if live is not None:
            req = live_request(live, replace(req, precision=None), layers=opt(self.layers),
                               hidden=opt(self.hidden), heads=opt(self.heads),
                               kv_heads=opt(self.kv_heads), head_dim=opt(self.head_dim),
                               intermediate=opt(self.intermediate))
        return req

    # --- results ----------------------------------------------------------------

    def recompute(self) -> None:
        try:
            req = self.request()
            if req.mode == "train" and (req.batch is None) != (req.seq is None):
                req = replace(req, batch=None, seq=None)  # half-filled: say so below
            plan = build_plan(req)
        except ValueError as exc:
            self._show_error(str(exc))
            return
        self.plan, self.error = plan, None
        self.error_label.hide()
        self._fill(plan)
        self.planChanged.emit(plan)

    def _show_error(self, text: str) -> None:
        """Keep the inputs; say what is wrong; clear results that would be stale."""
        self.plan, self.error = None, text
        self.error_label.setText(text)
        self.error_label.show()
        self.verdict.setText("No plan")
        self.verdict.setProperty("state", "")
        self._restyle(self.verdict)
        for t in (self.buckets, self.gpu_table, self.suggestions):
            t.setRowCount(0)
        self.layout_label.clear()
        self.notes.clear()
        self._fill_measured()

    @staticmethod
    def _restyle(w):
        w.style().unpolish(w)
        w.style().polish(w)

    def _fill(self, plan) -> None:
        shape = plan.request.shape
        what = (f"{shape.model_type} config" if shape.model_type else
                shape.source if plan.request.dtype_bytes is not None else "parameter count")
        self.layout_label.setText(f"{shape.params:,} parameters ({what}). {plan.layout}")
        self.layout_label.setToolTip("Fields used: " + ", ".join(shape.fields_used)
                                     if shape.fields_used else "")
        bpp = dict(plan.bytes_per_param)
        rows = list(plan.buckets)
        self.buckets.setRowCount(len(rows) + 1 + len(plan.host_buckets))
        for r, (name, value) in enumerate(rows):
            text = plan.explanation(name)
            self.buckets.setItem(r, 0, _item(name))
            self.buckets.setItem(r, 1, _item(f"{value:,}", True))
            self.buckets.setItem(r, 2, _item(_gb(value), True))
            self.buckets.setItem(r, 3, _item(_gib(value), True))
            self.buckets.setItem(r, 4, _item(f"{bpp[name]:g}" if name in bpp else "", True))
            self.buckets.setItem(r, 5, _item(text, tip=text))
        r = len(rows)
        total = _item("total per GPU")
        font = total.font()
        font.setBold(True)
        for c, it in enumerate((total, _item(f"{plan.per_gpu_total:,}", True),
                                _item(_gb(plan.per_gpu_total), True),
                                _item(_gib(plan.per_gpu_total), True), _item(""),
                                _item(f"all {plan.request.gpus} GPUs: "
                                      f"{_both(plan.total)}" if plan.total != plan.per_gpu_total
                                      else ""))):
            it.setFont(font)
            self.buckets.setItem(r, c, it)
        for i, (name, value) in enumerate(plan.host_buckets, start=r + 1):
            self.buckets.setItem(i, 0, _item(f"host RAM: {name}"))
            self.buckets.setItem(i, 1, _item(f"{value:,}", True))
            self.buckets.setItem(i, 2, _item(_gb(value), True))
            self.buckets.setItem(i, 3, _item(_gib(value), True))
            self.buckets.setItem(i, 4, _item(""))
            self.buckets.setItem(i, 5, _item("not on the GPU"))
        self.buckets.resizeRowsToContents()

        self.gpu_table.setRowCount(len(plan.gpus))
        for r, g in enumerate(plan.gpus):
            if g.fits:
                text = f"fits, {_both(g.margin)} to spare"
            else:
                text = f"does NOT fit: short by {_both(-g.margin)}"
            if g.conversations is not None:
                text += (f"; {g.conversations} conversations of {plan.context:,} tokens fit "
                         "beside the weights")
            it = _item(text)
            it.setForeground(QColor(theme.OK if g.fits else theme.ERROR))
            self.gpu_table.setItem(r, 0, _item(g.name))
            self.gpu_table.setItem(r, 1, _item(_both(g.total), True))
            self.gpu_table.setItem(r, 2, it)
        self.gpu_table.resizeRowsToContents()

        if not plan.gpus:
            self.verdict.setText(f"Needs {_both(plan.per_gpu_total)} per GPU -- no GPU to judge "
                                 "against: enter a GPU memory size")
            state = ""
        elif all(g.fits for g in plan.gpus):
            self.verdict.setText(f"Fits: {_both(plan.per_gpu_total)} per GPU")
            state = "fits"
        else:
            short = [g.name for g in plan.gpus if not g.fits]
            self.verdict.setText(f"Does not fit on {', '.join(short)}: needs "
                                 f"{_both(plan.per_gpu_total)} per GPU")
            state = "short"
        self.verdict.setProperty("state", state)
        self._restyle(self.verdict)

        how = "each adds to the ones above" if plan.suggestions_cumulative else "each on its own"
        self.suggestions_label.setText(
            f"What would make it fit on {plan.suggestions_target} ({how})"
            if plan.suggestions else "What would make it fit: nothing to change")
        self.suggestions.setRowCount(len(plan.suggestions))
        for r, s in enumerate(plan.suggestions):
            fits = _item("fits" if s.fits else "no")
            fits.setForeground(QColor(theme.OK if s.fits else theme.MUTED))
            self.suggestions.setItem(r, 0, _item(str(r + 1), True))
            self.suggestions.setItem(r, 1, _item(_both(s.per_gpu_total), True))
            self.suggestions.setItem(r, 2, fits)
            self.suggestions.setItem(r, 3, _item(s.change, tip=s.change))
        self.suggestions.resizeRowsToContents()
        extra = tuple(f"assumed: {n}" for n in shape.notes)
        if shape.fields_used:
            extra += ("config fields used: " + ", ".join(shape.fields_used),)
        self.notes.setPlainText("\n".join(f"- {n}" for n in plan.notes + extra))
        self._fill_measured()

    # --- planned vs measured ----------------------------------------------------

    def show_measured(self, agent_report) -> None:
        """Put the plan's buckets beside the agent's measured buckets (AgentReport)."""
        self._report = agent_report
        models = tuple(getattr(agent_report, "models", ()) or ())
        if self.source.currentIndex() == self.LIVE and models != self._live_models:
            self._live_models = models
            self._fill_live()
            self._schedule()
        devices = measured_devices(agent_report) if agent_report is not None else ()
        self.measured_device.blockSignals(True)
        current = self.measured_device.currentText()
        self.measured_device.clear()
        self.measured_device.addItems(list(devices))
        if current in devices:
            self.measured_device.setCurrentText(current)
        self.measured_device.blockSignals(False)
        self.measured_device.setVisible(len(devices) > 1)
        self._fill_measured()

    def _fill_measured(self, *_):
        report = self._report
        device = self.measured_device.currentText() or None
        if report is None or device is None:
            self.measured_label.setText("Planned vs measured: no agent attached"
                                        if report is None else
                                        "Planned vs measured: the agent has no buckets yet")
            self.measured.setRowCount(0)
            return
        step = f", step {report.step}" if report.step is not None else ""
        same = (" -- planned from this process's own model, like with like"
                if self.plan is not None and self.plan.request.dtype_bytes is not None else "")
        self.measured_label.setText(f"Planned vs measured: pid {report.pid} on {device}{step}{same}")
        if self.plan is None:
            self.measured.setRowCount(0)
            return
        rows = compare(self.plan, report, device)
        self.measured.setRowCount(len(rows))
        for r, row in enumerate(rows):
            diff = row.difference
            self.measured.setItem(r, 0, _item(row.label))
            self.measured.setItem(r, 1, _item("not planned" if row.planned is None
                                              else _exact(row.planned), True))
            self.measured.setItem(r, 2, _item("no data" if row.measured is None
                                              else _exact(row.measured), True))
            d = _item(NA if diff is None else
                      ("exact" if diff == 0 else f"{diff:+,} B ({diff / GB:+,.2f} GB)"), True)
            if diff is not None:
                d.setForeground(QColor(theme.OK if diff == 0 else theme.WARNING))
            self.measured.setItem(r, 3, d)
        self.measured.resizeRowsToContents()
