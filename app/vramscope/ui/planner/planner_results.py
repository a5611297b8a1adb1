"""The planner's answer: the verdict first (always one), any warning, then
every bucket (total included), the GPUs (capacity and free now), what would
make it fit; the prose -- why each bucket, the notes -- folded behind a
click. GiB throughout (core/planner/report.py formats them)."""

from __future__ import annotations

from PySide6.QtGui import QColor
from PySide6.QtWidgets import QLabel, QSizePolicy, QVBoxLayout, QWidget

from vramscope.core.planner.report import FITS, NOT_NOW, SHORT, bucket_label, model_line, size, verdict
from vramscope.ui.qt import theme
from vramscope.ui.planner.planner_widgets import Fold, FullTable, item

ASK = "enter a GPU memory size"


def _label(name: str = "", wrap: bool = True, muted: bool = False) -> QLabel:
    w = QLabel()
    w.setWordWrap(wrap)
    if name:
        w.setObjectName(name)
    if muted:
        w.setProperty("class", "muted")
    w.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Minimum)
    return w


class ResultsView(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        col = QVBoxLayout(self)
        self.verdict = _label("verdict")
        self.warning = _label("warning")
        self.warning.hide()
        self.error_label = _label("error")
        self.error_label.hide()
        self.layout_label = _label(muted=True)
        self.buckets = FullTable(["Bucket (per GPU)", "Bytes", "Size", "B/param"])  # GiB, MiB under 1 GiB
        self.gpu_table = FullTable(["GPU", "Capacity", "Empty card", "Now"], stretch=(2,))
        self.suggestions_label = QLabel("What would make it fit")
        self.suggestions = FullTable(["#", "Per GPU after", "Fits", "Change (cheapest for you first)"])
        self.why = Fold("Why each bucket")
        self.notes = Fold("Notes and assumptions")
        for w in (
            self.verdict,
            self.warning,
            self.error_label,
            self.layout_label,
            self.buckets,
            self.gpu_table,
            self.suggestions_label,
            self.suggestions,
            self.why,
        ):
            col.addWidget(w)
        self.tail = QVBoxLayout()  # the planned-vs-measured view goes here
        col.addLayout(self.tail)
        col.addWidget(self.notes)
        col.addStretch(1)
        self._plan = None  # the plan shown, re-coloured on a theme switch
        theme.follow(self, self.apply_theme)

    def apply_theme(self, s: theme.Scheme) -> None:
        """The verdict colours of the GPU and suggestion rows, from scheme ``s``."""
        if self._plan is not None:
            self._fill_gpus(self._plan)
            self._fill_suggestions(self._plan)

    @staticmethod
    def _restyle(w) -> None:
        w.style().unpolish(w)
        w.style().polish(w)

    def show_waiting(self, text: str) -> None:
        self.show_error("")
        self.error_label.hide()
        self.verdict.setText(text)

    def show_error(self, text: str) -> None:
        """Keep the inputs; say what is wrong; clear results that would be stale."""
        self.error_label.setText(text)
        self.error_label.show()
        self.warning.hide()
        self._plan = None
        self.verdict.setText("No plan")
        self.verdict.setProperty("state", "")
        self._restyle(self.verdict)
        for t in (self.buckets, self.gpu_table, self.suggestions):
            t.setRowCount(0)
            t.fit()
        self.layout_label.clear()
        self.why.set_lines([])
        self.notes.set_lines([])

    def show_plan(self, plan, gpu_note: str | None = None) -> None:
        self._plan = plan
        self.error_label.hide()
        shape = plan.request.shape
        v = verdict(plan, gpu_note, ASK)
        self.verdict.setText(v.text)
        self.verdict.setProperty("state", {FITS: "fits", SHORT: "short", NOT_NOW: "notnow"}.get(v.state, ""))
        self._restyle(self.verdict)
        self.warning.setText("\n".join(f"Warning: {w}" for w in plan.warnings))
        self.warning.setVisible(bool(plan.warnings))
        self.layout_label.setText(f"{model_line(plan)}. {plan.layout}")
        self.layout_label.setToolTip(
            "Fields used: " + ", ".join(shape.fields_used) if shape.fields_used else ""
        )
        self._fill_buckets(plan)
        self._fill_gpus(plan)
        self._fill_suggestions(plan)
        extra = tuple(f"assumed: {n}" for n in shape.notes)
        if shape.fields_used:
            extra += ("config fields used: " + ", ".join(shape.fields_used),)
        self.notes.set_lines(list(plan.notes + extra))

    def _fill_buckets(self, plan) -> None:
        bpp = dict(plan.bytes_per_param)
        t = self.buckets
        t.setRowCount(len(plan.buckets) + 1 + len(plan.host_buckets))
        for r, (name, value) in enumerate(plan.buckets):
            text = plan.explanation(name)
            for c, it in enumerate(
                (
                    item(bucket_label(name), tip=text),
                    item(f"{value:,}", True),
                    item(size(value), True),
                    item(f"{bpp[name]:g}" if name in bpp else "", True),
                )
            ):
                t.setItem(r, c, it)
        r = len(plan.buckets)
        for c, it in enumerate(
            (
                item("total per GPU", bold=True),
                item(f"{plan.per_gpu_total:,}", True, bold=True),
                item(size(plan.per_gpu_total), True, bold=True),
                item(""),
            )
        ):
            t.setItem(r, c, it)
        for i, (name, value) in enumerate(plan.host_buckets, start=r + 1):
            for c, it in enumerate(
                (
                    item(f"host RAM: {bucket_label(name)}", tip="not on the GPU"),
                    item(f"{value:,}", True),
                    item(size(value), True),
                    item(""),
                )
            ):
                t.setItem(i, c, it)
        t.fit()
        lines = [f"{bucket_label(name)}: {text}" for name, text in plan.explanations]
        if plan.total != plan.per_gpu_total:
            lines.append(f"all {plan.request.gpus} GPUs together: {size(plan.total)}")
        self.why.set_lines(lines)

    def _fill_gpus(self, plan) -> None:
        scheme = theme.current()
        t = self.gpu_table
        t.setRowCount(len(plan.gpus))
        for r, g in enumerate(plan.gpus):
            text = (
                f"fits, {size(g.margin)} to spare" if g.fits else f"does NOT fit: short by {size(-g.margin)}"
            )
            if g.conversations is not None:
                text += f"; {g.conversations} conversations of {plan.context:,} tokens fit beside the weights"
            it = item(text)
            it.setForeground(QColor(scheme.OK if g.fits else scheme.ERROR))
            t.setItem(r, 0, item(g.name))
            t.setItem(r, 1, item(size(g.total), True))
            t.setItem(r, 2, it)
            t.setItem(r, 3, self._now_item(g, scheme))
        unknown_now = all(g.free is None for g in plan.gpus)
        t.setColumnHidden(3, unknown_now)
        t.horizontalHeaderItem(2).setText("Verdict" if unknown_now else "Empty card")
        t.setVisible(bool(plan.gpus))
        t.fit()

    @staticmethod
    def _now_item(g, scheme):
        if g.free is None:
            return item("")
        held = "; ".join(f"{who} holds {size(n)}" for who, n in g.holders)
        text = f"{size(g.free)} free: " + ("fits" if g.fits_now else "does not fit")
        if g.holders and not g.fits_now:
            who, n = g.holders[0]
            text += f" ({who} holds {size(n)})"
        it = item(text, tip=held or None)
        it.setForeground(QColor(scheme.OK if g.fits_now else scheme.WARNING))
        return it

    def _fill_suggestions(self, plan) -> None:
        scheme = theme.current()
        how = "each adds to the ones above" if plan.suggestions_cumulative else "each on its own"
        self.suggestions_label.setText(
            f"What would make it fit on {plan.suggestions_target} ({how})" if plan.suggestions else ""
        )
        self.suggestions_label.setVisible(bool(plan.suggestions))
        t = self.suggestions
        t.setRowCount(len(plan.suggestions))
        for r, s in enumerate(plan.suggestions):
            fits = item("fits" if s.fits else "no")
            fits.setForeground(QColor(scheme.OK if s.fits else scheme.MUTED))
            t.setItem(r, 0, item(str(r + 1), True))
            t.setItem(r, 1, item(size(s.per_gpu_total), True))
            t.setItem(r, 2, fits)
            t.setItem(r, 3, item(s.change, tip=s.change))
        t.setVisible(bool(plan.suggestions))
        t.fit()
