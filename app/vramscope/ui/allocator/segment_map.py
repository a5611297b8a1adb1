"""The allocator's segment map (agents tab): each segment a bar of its blocks.

From the agent's summary of ``torch.cuda.memory_snapshot()`` (agent/allocator/segments.py):
allocated, free inside a partly used segment (fragmentation), a whole free
segment (``empty_cache()`` would return it), memory freed on one stream and
still used on another, and runs of small blocks merged for the map. The
largest free block is marked with a triangle; a private pool's segment
(CUDA graphs, MemPool) has a dashed outline. The line above the map gives
the figures: reserved - allocated split into the two kinds of free, the
largest free block against the largest request, what expandable segments
would recover.

Segments are laid out left to right, largest first, each as wide as its size
allows (at least MIN_BAR px), wrapped into at most MAX_LINES lines.
"""

from __future__ import annotations

import math

from PySide6.QtCore import QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QBrush, QColor, QPainter, QPen, QPolygonF
from PySide6.QtWidgets import QLabel, QSizePolicy, QVBoxLayout, QWidget

from vramscope.agent.allocator.segments import ALLOCATED, AWAITING, FREE_SEGMENT, FREE_SPLIT, MIXED
from vramscope.core.units import fmt_bytes, fmt_count
from vramscope.ui.qt import theme

BAR_HEIGHT = 14
GAP = 4
MIN_BAR = 28
MAX_LINES = 5
STATE_WORDS = {
    ALLOCATED: "allocated",
    FREE_SPLIT: "free inside a used segment (fragmentation)",
    FREE_SEGMENT: "whole free segment",
    AWAITING: "awaiting free (another stream)",
    MIXED: "small blocks, merged",
}


def state_colours(s: theme.Scheme) -> dict[str, str]:
    return {
        ALLOCATED: s.BUCKET_COLOURS[3],
        FREE_SPLIT: s.WARNING,
        FREE_SEGMENT: s.BUCKET_COLOURS[4],
        AWAITING: s.BUCKET_COLOURS[2],
        MIXED: s.BUCKET_COLOURS[0],
    }


def figures_text(fig: dict) -> str:
    """The figures of one device's summary, in words (one or two lines)."""

    def b(key):
        v = fig.get(key)
        return fmt_bytes(v) if v is not None else "n/a"

    gap = None
    if fig.get("reserved") is not None and fig.get("allocated") is not None:
        gap = fig["reserved"] - fig["allocated"]
    parts = [
        f"{fmt_count(fig.get('segments'), 'segment')}, reserved − allocated "
        f"{fmt_bytes(gap) if gap is not None else 'n/a'}: {b('free_split')} free inside partly "
        f"used segments (fragmentation: empty_cache() cannot return it) · {b('free_segments')} "
        "in whole free segments (empty_cache() would return them)"
    ]
    line = f"largest free block {b('largest_free_block')}"
    if fig.get("largest_request"):
        line += f" vs largest request seen {b('largest_request')}"
    pools = fig.get("private_pools")
    if pools and pools.get("reserved"):
        line += f" · private pools (CUDA graphs, MemPool) {fmt_bytes(pools['reserved'])}"
    if fig.get("expandable_recovers") is not None:
        line += f" · expandable_segments:True would recover ≈ {b('expandable_recovers')}"
    else:
        line += " · expandable segments already on"
    parts.append(line)
    return "\n".join(parts)


class SegmentBars(QWidget):
    """The bars themselves (painted; nothing per block is a widget)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.segments: list[dict] = []
        self.largest_free: int | None = None  # the device's largest free block: marked once
        self.left_out = (0, 0)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setMinimumHeight(BAR_HEIGHT + 2 * GAP)

    def set_segments(
        self, segments: list[dict], left_out: tuple[int, int], largest_free: int | None = None
    ) -> None:
        self.segments = list(segments)
        self.largest_free = largest_free
        self.left_out = left_out
        self.setFixedHeight(self._lines(self.width() or 600) * (BAR_HEIGHT + GAP) + GAP)
        self.update()

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt)
        return QSize(600, self.minimumHeight())

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt)
        self.setFixedHeight(self._lines(event.size().width()) * (BAR_HEIGHT + GAP) + GAP)
        super().resizeEvent(event)

    def layout_bars(self, width: int) -> list[tuple[dict, QRectF]]:
        """(segment, rectangle) for those that fit in MAX_LINES lines."""
        if not self.segments or width <= MIN_BAR:
            return []
        total = sum(max(1, s["size"]) for s in self.segments)
        # each segment's share of about two lines' width, square-root-compressed so small
        # segments stay visible beside a huge one
        weights = [math.sqrt(max(1, s["size"])) for s in self.segments]
        scale = 2.0 * width / sum(weights) if total else 1.0
        out, x, line = [], 0.0, 0
        for seg, w in zip(self.segments, weights):
            bar = min(float(width), max(float(MIN_BAR), w * scale))
            if x > 0 and x + bar > width:
                line += 1
                x = 0.0
            if line >= MAX_LINES:
                break
            out.append((seg, QRectF(x, GAP + line * (BAR_HEIGHT + GAP), bar - 2, BAR_HEIGHT)))
            x += bar
        return out

    def _lines(self, width: int) -> int:
        bars = self.layout_bars(width)
        return 1 + max((int((r.top() - GAP) // (BAR_HEIGHT + GAP)) for _s, r in bars), default=0)

    def paintEvent(self, event) -> None:  # noqa: N802 (Qt)
        s = theme.current()
        colours = {k: QColor(v) for k, v in state_colours(s).items()}
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        marked = False
        for seg, rect in self.layout_bars(self.width()):
            size = max(1, seg["size"])
            x = rect.left()
            mark = None
            for state, nbytes in seg["runs"]:
                w = rect.width() * nbytes / size
                p.fillRect(
                    QRectF(x, rect.top(), max(w, 0.5), rect.height()), colours.get(state, colours[MIXED])
                )
                if (
                    not marked
                    and self.largest_free
                    and nbytes == self.largest_free
                    and state in (FREE_SPLIT, FREE_SEGMENT)
                ):
                    mark, marked = x + w / 2, True
                x += w
            pen = QPen(QColor(s.LINK if seg.get("pool") else s.CARD_BORDER), 1.2 if seg.get("pool") else 1)
            if seg.get("pool"):
                pen.setStyle(Qt.PenStyle.DashLine)
            p.setPen(pen)
            p.setBrush(Qt.BrushStyle.NoBrush)
            p.drawRect(rect)
            if mark is not None:  # the largest free block: a triangle on the bar's top edge
                p.setBrush(QBrush(QColor(s.TEXT)))
                p.setPen(Qt.PenStyle.NoPen)
                top = rect.top()
                p.drawPolygon(
                    QPolygonF(
                        [QPointF(mark - 4, top - 3), QPointF(mark + 4, top - 3), QPointF(mark, top + 4)]
                    )
                )
        p.end()


class SegmentMapView(QWidget):
    """The figures line, the bars, a legend; hidden when the agent sent no summary."""

    def __init__(self, parent=None):
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 2, 0, 2)
        layout.setSpacing(2)
        self.figures = QLabel()
        self.figures.setWordWrap(True)
        layout.addWidget(self.figures)
        self.bars = SegmentBars()
        layout.addWidget(self.bars)
        self.legend = QLabel()
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.legend.setWordWrap(True)
        layout.addWidget(self.legend)
        self.setVisible(False)
        self._shown = None  # (report, device): drawn again in a new theme
        theme.follow(self, lambda _s: self.update_view(*self._shown) if self._shown else None)

    def update_view(self, report, device: str) -> None:
        self._shown = (report, device)
        item = getattr(report, "allocator", None)
        fig = (item.get("devices") or {}).get(device) if item else None
        if not fig:
            why = item.get("why") if item else None
            self.setVisible(bool(why))
            if why:
                self.figures.setText(f"allocator segments: n/a ({why})")
                self.bars.set_segments([], (0, 0))
                self.legend.setText("")
            return
        self.setVisible(True)
        step = f" at step {item['step']}" if item.get("step") is not None else ""
        self.figures.setText(f"Allocator segments{step}: " + figures_text(fig))
        self.bars.set_segments(
            fig.get("map") or [],
            (fig.get("map_left_out") or 0, fig.get("map_left_out_bytes") or 0),
            fig.get("largest_free_block"),
        )
        s = theme.current()
        colours = state_colours(s)
        present = {run[0] for seg in fig.get("map") or () for run in seg.get("runs") or ()}
        keys = [k for k in (ALLOCATED, FREE_SPLIT, FREE_SEGMENT, AWAITING, MIXED) if k in present]
        legend = " ".join(f"<span style='color:{colours[k]}'>■</span> {STATE_WORDS[k]}" for k in keys)
        legend += " · ▼ largest free block"
        if any(seg.get("pool") for seg in fig.get("map") or ()):
            legend += f" · <span style='color:{s.LINK}'>┄</span> private pool"
        shown = len(self.bars.layout_bars(self.bars.width() or 600))
        hidden = len(fig.get("map") or ()) - shown + (fig.get("map_left_out") or 0)
        if hidden > 0:
            legend += f" · {hidden} smaller segments not drawn"
        self.legend.setText(f"<span style='color:{s.MUTED}'>{legend}</span>")
