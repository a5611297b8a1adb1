"""What would fit, from the attached process's measured run: the planner tab's
"Attached process (agent)" source shows the measured peak scaled to the form's
micro-batch, sequence, checkpointing and flash attention, and to the changes
chosen here (bf16 autocast, an 8-bit optimizer, LoRA) -- part by part, with
what each part scales with, judged against the GPU's capacity and its free
memory now (core/planner/what_if.py does the arithmetic)."""

from __future__ import annotations

import collections

from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from vramscope.agent.protocol import EventKind
from vramscope.core.planner.errors import PlanError
from vramscope.core.planner.measured_run import from_report
from vramscope.core.planner.what_if import Change, Target, predict
from vramscope.core.planner.what_if_text import span, headline, verdict_lines
from vramscope.core.units import fmt_bytes
from vramscope.ui.planner.planner_widgets import FullTable, item, spin

STEPS_KEPT = 32


class WhatIfView(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.report = None
        self.result = None  # the WhatIf shown, or None
        self._steps: collections.deque = collections.deque(maxlen=STEPS_KEPT)
        self._form = Change()
        self._gpus: tuple = ()
        self._now: tuple = ()
        col = QVBoxLayout(self)
        col.setContentsMargins(0, 8, 0, 0)
        self.label = QLabel("What would fit, from the measured run: no agent attached")
        self.label.setWordWrap(True)
        row = QHBoxLayout()
        self.bf16 = QCheckBox("bf16 autocast")
        self.adam8 = QCheckBox("8-bit optimizer")
        self.lora = spin(0, 4096, 0, "no LoRA")
        self.lora.setPrefix("LoRA r ")
        for w in (self.bf16, self.adam8, self.lora):
            row.addWidget(w)
        row.addStretch(1)
        self.table = FullTable(["Part", "Measured", "Predicted", "Scales with"])
        self.verdicts = QLabel()
        self.verdicts.setWordWrap(True)
        self.notes = QLabel()
        self.notes.setWordWrap(True)
        self.notes.setProperty("class", "muted")
        col.addWidget(self.label)
        col.addLayout(row)
        for w in (self.table, self.verdicts, self.notes):
            col.addWidget(w)
        self.bf16.toggled.connect(self.fill)
        self.adam8.toggled.connect(self.fill)
        self.lora.valueChanged.connect(self.fill)

    def set_report(self, report) -> None:
        self.report = report
        for ev in getattr(report, "events", ()) or ():
            if ev.kind == EventKind.STEP and isinstance(ev.data, dict):
                self._steps.append(ev.data)
        for d in getattr(report, "devices", ()) or ():  # the peak since the previous sample
            if d.peak_allocated is not None:
                self._steps.append({"devices": {d.device: {"peak_allocated": d.peak_allocated}}})
        self.fill()

    def set_form(
        self, batch: int | None, seq: int | None, checkpointing: bool, flash: bool, gpus=(), now=()
    ) -> None:
        self._form = Change(
            batch=batch or None, seq=seq or None, checkpointing=checkpointing, flash_attention=flash
        )
        self._gpus, self._now = tuple(gpus), tuple(now)
        self.fill()

    def _targets(self, measured) -> list[Target]:
        """The GPU the process holds memory on (its label among a GPU's largest holders),
        its free memory now plus what the process holds; else every detected GPU."""
        pid = f"({self.report.pid})"
        free = {g.name: g.free for g in self._now}
        for g in self._now:
            own = next((used for label, used in g.holders if label.endswith(pid)), None)
            cap = dict(self._gpus).get(g.name)
            if own is not None and cap is not None:
                return [Target(g.name, cap, g.free + own, own)]
        if self._gpus:
            return [Target(name, cap, free.get(name)) for name, cap in self._gpus]
        dev = next((d for d in self.report.devices if d.device == measured.device), None)
        return [Target(measured.device, dev.total, None)] if dev is not None and dev.total else []

    def fill(self, *_) -> None:
        self.result = None
        m = from_report(self.report, list(self._steps)) if self.report is not None else None
        if m is None:
            self.label.setText(
                "What would fit, from the measured run: "
                + ("no agent attached" if self.report is None else "the agent has no breakdown yet")
            )
            self._clear()
            return
        f = self._form
        change = Change(
            batch=f.batch,
            seq=f.seq,
            checkpointing=f.checkpointing,
            flash_attention=f.flash_attention,
            bf16=self.bf16.isChecked(),
            optimizer_8bit=self.adam8.isChecked(),
            lora_rank=self.lora.value() or None,
        )
        try:
            w = predict(m, change, self._targets(m))
        except PlanError as exc:
            self.label.setText(f"What would fit, from the measured run: {exc.for_form()}")
            self._clear()
            return
        self.result = w
        self.label.setText(f"What would fit, pid {self.report.pid}: {headline(w)}")
        t = self.table
        t.setRowCount(len(w.parts))
        for r, p in enumerate(w.parts):
            t.setItem(r, 0, item(p.name))
            t.setItem(r, 1, item(fmt_bytes(p.now), True, tip=None if p.now is None else f"{p.now:,} B"))
            t.setItem(r, 2, item(span(p.predicted, p.high), True))
            t.setItem(r, 3, item(p.scales))
        t.fit()
        t.show()
        self.verdicts.setText("\n".join(verdict_lines(w)))
        self.notes.setText("\n".join([f"activations from: {m.source}"] + list(w.notes)))

    def _clear(self) -> None:
        self.table.setRowCount(0)
        self.table.hide()
        self.verdicts.setText("")
        self.notes.setText("")
