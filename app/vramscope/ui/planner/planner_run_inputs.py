"""The planner form's inputs about the run (ui/planner/planner_model_source.py holds
where the model comes from): mode, precision and GPU memory; the training box
(optimizer, ZeRO, LoRA, micro-batch, ...) and the inference box (KV cache,
context, concurrency) -- their widgets, and the PlanRequest they give for a
model shape.
"""

from __future__ import annotations

from PySide6.QtWidgets import QCheckBox, QComboBox, QFormLayout, QGroupBox, QLineEdit

from vramscope.core.planner import PlanError, PlanRequest, parse_gpu_memory
from vramscope.ui.planner.planner_widgets import spin

# the widgets (attributes of RunInputs) the planner tab reaches (the window and tests use them)
RUN_FIELDS = (
    "mode",
    "precision",
    "gpu_memory",
    "optimizer",
    "grad_layout",
    "zero_stage",
    "gpus",
    "fsdp",
    "offload",
    "lora_rank",
    "lora_modules",
    "batch",
    "seq",
    "checkpointing",
    "flash",
    "kv_dtype",
    "context",
    "concurrency",
)
LIVE_PRECISIONS = (("live", "as the model holds it"),)
TRAIN_PRECISIONS = (
    ("mixed", "mixed (bf16 + fp32 master)"),
    ("fp32", "fp32"),
    ("fp16", "fp16 mixed"),
    ("int8", "int8 base (LoRA)"),
    ("int4", "int4 base (LoRA)"),
)
INFER_PRECISIONS = (
    ("auto", "bf16, or as the config is quantized"),
    ("bf16", "bf16"),
    ("fp16", "fp16"),
    ("fp32", "fp32"),
    ("fp8", "fp8"),
    ("int8", "int8 (bitsandbytes)"),
    ("int4", "int4 (bitsandbytes NF4)"),
)


class RunInputs:
    """The Run, Training and Inference boxes (``run_box``, ``train_box``, ``infer_box``)."""

    def __init__(self):
        self.run_box = self._run_box()
        self.train_box = self._train_box()
        self.infer_box = self._infer_box()

    def _run_box(self) -> QGroupBox:
        box = QGroupBox("Run")
        f = QFormLayout(box)
        self.mode = QComboBox()
        self.mode.addItem("Training", "train")
        self.mode.addItem("Inference", "infer")
        self.precision = QComboBox()
        self.gpu_memory = QLineEdit()
        self.gpu_memory.setPlaceholderText("detected GPUs, or e.g. 24GiB, A100=80GiB")
        f.addRow("Mode", self.mode)
        f.addRow("Precision", self.precision)
        f.addRow("GPU memory", self.gpu_memory)
        return box

    def _train_box(self) -> QGroupBox:
        box = QGroupBox("Training")
        f = QFormLayout(box)
        self.optimizer = QComboBox()
        for key, text in (
            ("adam", "Adam (8 B)"),
            ("adamw", "AdamW (8 B)"),
            ("adam8bit", "8-bit Adam (2 B)"),
            ("sgd-momentum", "SGD momentum (4 B)"),
            ("sgd", "SGD (0 B)"),
        ):
            self.optimizer.addItem(text, key)
        self.grad_layout = QComboBox()
        self.grad_layout.addItem("16 B: bf16 gradients (ZeRO)", 16)
        self.grad_layout.addItem("18 B: fp32 gradients (HF)", 18)
        self.zero_stage = QComboBox()
        for s, text in (
            (0, "0 - plain DDP"),
            (1, "1 - optimizer"),
            (2, "2 - + gradients"),
            (3, "3 - + weights"),
        ):
            self.zero_stage.addItem(text, s)
        self.gpus = spin(1, 4096, 1)
        self.fsdp = QCheckBox("FSDP full shard (= stage 3)")
        self.offload = QCheckBox("Offload optimizer to CPU")
        self.lora_rank = spin(0, 4096, 0, "off")
        self.lora_modules = QLineEdit()
        self.lora_modules.setPlaceholderText("PEFT's defaults for the model, or all-linear")
        self.batch = spin(0, 1 << 16, 0, "not planned")
        self.seq = spin(0, 1 << 24, 0, "not planned")
        self.checkpointing = QCheckBox("Activation checkpointing (sqrt n)")
        self.flash = QCheckBox("Flash attention")
        for label, w in (
            ("Optimizer", self.optimizer),
            ("Mixed layout", self.grad_layout),
            ("ZeRO stage", self.zero_stage),
            ("GPUs in the job", self.gpus),
            (None, self.fsdp),
            (None, self.offload),
            ("LoRA rank", self.lora_rank),
            ("LoRA modules", self.lora_modules),
            ("Micro-batch", self.batch),
            ("Sequence", self.seq),
            (None, self.checkpointing),
            (None, self.flash),
        ):
            f.addRow(label, w) if label else f.addRow(w)
        return box

    def _infer_box(self) -> QGroupBox:
        box = QGroupBox("Inference")
        f = QFormLayout(box)
        self.kv_dtype = QComboBox()
        for key in ("auto", "bf16", "fp16", "fp8", "fp32"):
            self.kv_dtype.addItem(key if key != "auto" else "weights' dtype", key)
        self.context = spin(0, 1 << 24, 4096, "model maximum")
        self.concurrency = spin(1, 1 << 16, 1)
        f.addRow("KV cache dtype", self.kv_dtype)
        f.addRow("Context (tokens)", self.context)
        f.addRow("Concurrent", self.concurrency)
        return box

    def connect(self, changed, mode_changed) -> None:
        """Any input edited: ``changed``; the mode switched: ``mode_changed``."""
        for w in (self.gpu_memory, self.lora_modules):
            w.textChanged.connect(changed)
        for w in (self.precision, self.optimizer, self.grad_layout, self.zero_stage, self.kv_dtype):
            w.currentIndexChanged.connect(changed)
        self.mode.currentIndexChanged.connect(mode_changed)
        for w in (self.gpus, self.lora_rank, self.batch, self.seq, self.context, self.concurrency):
            w.valueChanged.connect(changed)
        for w in (self.fsdp, self.offload, self.checkpointing, self.flash):
            w.toggled.connect(changed)

    def set_live(self, live: bool) -> None:
        """The model is the attached process's: its precision, layout and LoRA are taken
        from it, not chosen here (its optimizer: take_optimizer)."""
        for w in (self.precision, self.grad_layout, self.lora_rank, self.lora_modules):
            w.setEnabled(not live)
        if not live:
            self.optimizer.setEnabled(True)
            self.take_sharding(None)

    def take_optimizer(self, optimizer: str | None) -> None:
        """The attached process's optimizer (None: not known, the user chooses)."""
        if optimizer is not None:
            self.optimizer.blockSignals(True)
            self.optimizer.setCurrentIndex(max(0, self.optimizer.findData(optimizer)))
            self.optimizer.blockSignals(False)
        self.optimizer.setEnabled(optimizer is None)

    def take_sharding(self, layout: tuple[int, int, bool] | None) -> None:
        """The attached run's (ZeRO stage, GPUs, FSDP) -- its scheme and world size
        (core/planner/live.py ``LiveSharding.layout``) -- shown, not chosen here; None:
        the user chooses."""
        widgets = (self.zero_stage, self.gpus, self.fsdp)
        if layout is not None:
            stage, gpus, fsdp = layout
            for w in widgets:
                w.blockSignals(True)
            self.zero_stage.setCurrentIndex(max(0, self.zero_stage.findData(stage)))
            self.gpus.setValue(gpus)
            self.fsdp.setChecked(fsdp)
            for w in widgets:
                w.blockSignals(False)
        for w in widgets:
            w.setEnabled(layout is None)

    def show_mode(self, live: bool) -> None:
        """The precisions of the mode (or the live model's) and the mode's box."""
        train = self.mode.currentData() == "train"
        current = self.precision.currentData()
        self.precision.blockSignals(True)
        self.precision.clear()
        choices = LIVE_PRECISIONS if live else TRAIN_PRECISIONS if train else INFER_PRECISIONS
        for key, text in choices:
            self.precision.addItem(text, key)
        self.precision.setCurrentIndex(max(self.precision.findData(current), 0))
        self.precision.blockSignals(False)
        self.train_box.setVisible(train)
        self.infer_box.setVisible(not train)

    def request(self, shape, gpus_detected=(), now=()) -> PlanRequest:
        """The PlanRequest of these inputs for ``shape``; PlanError (field, message) otherwise."""

        def opt(w):
            return w.value() or None

        try:
            typed = tuple(
                parse_gpu_memory(part) for part in self.gpu_memory.text().split(",") if part.strip()
            )
        except ValueError as exc:
            raise PlanError("gpu_memory", str(exc)) from None
        gpus = typed or tuple(gpus_detected)
        now = () if typed else tuple(now)  # free memory is known only of the detected GPUs
        modules = tuple(m.strip() for m in self.lora_modules.text().split(",") if m.strip())
        kv = self.kv_dtype.currentData()
        precision = self.precision.currentData()
        return PlanRequest(
            shape=shape,
            mode=self.mode.currentData(),
            precision=None if precision in ("auto", "live") else precision,
            optimizer=self.optimizer.currentData(),
            grad_layout=self.grad_layout.currentData(),
            zero_stage=self.zero_stage.currentData(),
            gpus=self.gpus.value(),
            fsdp=self.fsdp.isChecked(),
            offload_optimizer=self.offload.isChecked(),
            lora_rank=opt(self.lora_rank),
            lora_modules=modules,
            batch=opt(self.batch),
            seq=opt(self.seq),
            checkpointing=self.checkpointing.isChecked(),
            flash_attention=self.flash.isChecked(),
            kv_dtype=None if kv == "auto" else kv,
            context=opt(self.context),
            concurrency=self.concurrency.value(),
            gpus_memory=gpus,
            gpus_now=now,
        )
