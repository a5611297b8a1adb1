"""The snapshot viewer's window: ``vramscope FILE.pickle`` and File ▸ Open snapshot.

The device's active-memory timeline on top (the cursor starts at the peak);
under it what was alive at the cursor by stack, and the allocator's segments
at that instant (the segment map the agents tab draws for live runs, fed with
the segments replayed to the cursor's entry; redrawn once the cursor rests). File ▸ Compare with… reads a
second snapshot: its total is drawn dashed over the timeline and the
difference at the two peaks is listed.
"""

from __future__ import annotations

import types

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QPlainTextEdit,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from vramscope.agent.allocator import segments as seg_summary
from vramscope.core.snapshot import summary
from vramscope.core.snapshot.replay import DeviceReplay
from vramscope.core.snapshot.text import comparison_lines
from vramscope.core.snapshot.timeline import timeline
from vramscope.core.units import fmt_bytes, fmt_count
from vramscope.ui.qt.bridge import Bridge
from vramscope.ui.qt.safe_text import html_text, plain
from vramscope.ui.allocator.segment_map import SegmentMapView
from vramscope.ui.snapshot.alive_tree import ROWS, AliveTree
from vramscope.ui.snapshot.loading import load_in_background
from vramscope.ui.snapshot.timeline_plot import TimelinePlot

MAP_DELAY_MS = 150
SNAPSHOT_FILES = "PyTorch memory snapshots (*.pickle *.pkl);;All files (*)"


class SnapshotWindow(QMainWindow):
    SHOT_NAME = "snapshot-viewer"  # its pictures' name (`--shots`, ui/window/window_shots.py)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose, parent is not None)
        self.bridge = Bridge(self)
        self.path: str | None = None
        self.snap = self.replay = self.tl = None
        self.compared = None  # (path, snapshot)
        self.error: str | None = None  # the last file's one-line refusal
        self.resize(1400, 900)
        self._build()
        self._pending = QTimer(self, singleShot=True, interval=0)
        self._pending.timeout.connect(self._show_cursor)
        # the segment map follows once the cursor rests (replaying every segment's
        # blocks costs ~0.1 s on a million-entry trace: too much for each step)
        self._map_pending = QTimer(self, singleShot=True, interval=MAP_DELAY_MS)
        self._map_pending.timeout.connect(self._show_segments)
        self._entry: int | None = None

    # -- building -------------------------------------------------------------------
    def _build(self) -> None:
        menu = self.menuBar().addMenu("&File")
        for text, key, slot in (
            ("&Open snapshot…", QKeySequence.StandardKey.Open, self._ask_open),
            ("&Compare with…", QKeySequence("Ctrl+D"), self._ask_compare),
            ("&Close", QKeySequence.StandardKey.Close, self.close),
        ):
            action = QAction(text, self)
            action.setShortcut(key)
            action.triggered.connect(slot)
            menu.addAction(action)
        central = QWidget()
        layout = QVBoxLayout(central)
        top = QHBoxLayout()
        self.device = QComboBox()
        self.device.currentIndexChanged.connect(self._device_changed)
        top.addWidget(QLabel("Device"))
        top.addWidget(self.device)
        self.figures = plain(QLabel("Open a snapshot: File ▸ Open snapshot…"))
        self.figures.setWordWrap(True)
        top.addWidget(self.figures, 1)
        layout.addLayout(top)
        split = QSplitter(Qt.Orientation.Vertical)
        upper, uv = _column()
        self.legend = QLabel()
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.legend.setWordWrap(True)
        uv.addWidget(self.legend)
        self.plot = TimelinePlot()
        self.plot.cursor_moved.connect(lambda _x: self._pending.start())
        uv.addWidget(self.plot, 1)
        split.addWidget(upper)
        below = QSplitter(Qt.Orientation.Horizontal)
        left, lv = _column()
        self.cursor_text = plain(QLabel(""))
        lv.addWidget(self.cursor_text)
        self.alive = AliveTree()
        lv.addWidget(self.alive)
        below.addWidget(left)
        right, rv = _column()
        self.segment_map = SegmentMapView()
        rv.addWidget(self.segment_map)
        self.comparison = QPlainTextEdit()
        self.comparison.setReadOnly(True)
        self.comparison.setVisible(False)
        rv.addWidget(self.comparison, 1)
        rv.addStretch(0)
        below.addWidget(right)
        below.setSizes([700, 700])
        split.addWidget(below)
        split.setSizes([480, 420])
        layout.addWidget(split, 1)
        self.setCentralWidget(central)

    # -- files ----------------------------------------------------------------------
    def open_path(self, path: str, on_error=None) -> None:
        """Read ``path`` (progress dialog, cancellable) and show it; ``on_error(text)``
        where it is not a snapshot (the window says so too)."""

        def done(snap, error):
            if snap is None:
                self.error = error
                if error:
                    self.figures.setText(error)
                    if on_error:
                        on_error(error)
                return
            self.path, self.snap, self.compared, self.error = path, snap, None, None
            self.comparison.setVisible(False)
            self.setWindowTitle(f"vramscope — {path}")
            self.device.blockSignals(True)
            self.device.clear()
            for d in snap.devices() or [0]:
                self.device.addItem(f"cuda:{d}", d)
            self.device.blockSignals(False)
            self._device_changed()

        self.progress = load_in_background(self, path, done, self.bridge)

    def _ask_open(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open a PyTorch memory snapshot", "", SNAPSHOT_FILES)
        if path:
            self.open_path(path)

    def _ask_compare(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Compare with another snapshot", "", SNAPSHOT_FILES)
        if path:
            self.compare_path(path)

    def compare_path(self, path: str) -> None:
        def done(snap, error):
            if snap is None:
                if error:
                    self.comparison.setVisible(True)
                    self.comparison.setPlainText(error)
                return
            self.compared = (path, snap)
            self._device_changed()

        self.progress = load_in_background(self, path, done, self.bridge)

    # -- views ----------------------------------------------------------------------
    def _device_changed(self, *_):
        if self.snap is None:
            return
        dev = self.device.currentData()
        dev = 0 if dev is None else dev
        self.replay = DeviceReplay(self.snap, dev)
        self.tl = timeline(self.replay)
        names = [short_site(self.snap.stacks.frames_of(k)) for k in self.tl.stacks]
        names.append(
            f"the other stacks, merged ({fmt_bytes(int(self.tl.other.max()) if len(self.tl.other) else 0)} at most)"
        )
        ours = summary.device_summary(self.snap, dev, top=50)
        ooms_x = [self._x_of(o["entry"]) for o in ours["ooms"]]
        compare = None
        if self.compared is not None:
            theirs_snap = self.compared[1]
            if dev in theirs_snap.devices():
                other = timeline(DeviceReplay(theirs_snap, dev), bands=0)
                compare = (other.x, other.total)
            theirs = summary.device_summary(theirs_snap, dev, top=50)
            diff = summary.compare({"devices": [ours]}, {"devices": [theirs]})
            self.comparison.setPlainText(
                f"first: {self.path}\nsecond: {self.compared[0]}\n\n" + "\n".join(comparison_lines(diff, 30))
            )
            self.comparison.setVisible(True)
        legend = self.plot.show_timeline(self.tl, names, ooms_x, compare)
        self.legend.setText(
            " &nbsp; ".join(
                f"<span style='color:{colour}'>{'┅' if dashed else '■'}</span> {html_text(name)}"
                for colour, dashed, name in legend
            )
        )
        frag = ours["fragmentation"]
        self.figures.setText(
            f"{len(self.replay.trace):,} trace entries · peak allocated {fmt_bytes(ours['peak_allocated'])}"
            + (f" · {len(ours['ooms'])} OOM" if ours["ooms"] else "")
            + f"\nat the snapshot: reserved {fmt_bytes(ours['reserved'])}, allocated {fmt_bytes(ours['allocated'])}"
            f" in {fmt_count(ours['segments'], 'segment')}, largest free block {fmt_bytes(ours['largest_free'])}"
            + (f" (fragmentation {frag:.0%})" if frag is not None else "")
        )
        _peak, at = self.replay.peak()
        self.plot.set_cursor(self._x_of(at))
        self._pending.start()

    def _x_of(self, entry: int) -> float:
        tl = self.tl
        hits = (tl.entries == entry).nonzero()[0]
        if len(hits):
            return float(tl.x[hits[0]])
        t = self.replay.trace
        if tl.seconds and entry >= 0:
            return float((t.time_us[entry] - t.time_us[0]) / 1e6)
        return float(entry)

    def step_cursor(self, steps: int) -> None:
        """Move the cursor by drawn points (the arrow keys)."""
        if self.tl is None:
            return
        i = int(self.tl.x.searchsorted(self.plot.cursor.value(), side="right")) - 1
        i = min(max(i + steps, 0), len(self.tl.x) - 1)
        self.plot.set_cursor(float(self.tl.x[i]))

    def keyPressEvent(self, event) -> None:  # noqa: N802 (Qt)
        step = {Qt.Key.Key_Left: -1, Qt.Key.Key_Right: 1}.get(event.key())
        if step is not None:
            self.step_cursor(step * (10 if event.modifiers() & Qt.KeyboardModifier.ShiftModifier else 1))
            return
        super().keyPressEvent(event)

    def _show_cursor(self) -> None:
        if self.tl is None:
            return
        entry = self.tl.entry_at(self.plot.cursor.value())
        b = self.replay.breakdown(entry, ROWS)
        when = self.replay.time_of(entry)
        where = (
            "before the trace"
            if when is None
            else (
                f"t = {(when - int(self.replay.trace.time_us[0])) / 1e6:.6f} s"
                if self.tl.seconds
                else f"entry {entry}"
            )
        )
        self.cursor_text.setText(
            f"Alive at the cursor ({where}, entry {entry}): {fmt_bytes(b.total)} in {b.allocations:,} allocations, {b.stacks:,} stacks"
        )
        self.alive.show_groups(self.snap.stacks, b.groups)
        self._entry = entry
        self._map_pending.start()

    def settled(self) -> bool:
        """Whether what was asked is on screen: the file read and drawn, what was alive at
        the cursor and the segment map shown (or the file refused)."""
        if self.error is not None:
            return True
        waiting = self._pending.isActive() or self._map_pending.isActive()
        return self.tl is not None and self._entry is not None and not waiting

    def what_it_shows(self) -> dict:
        """What a user reading the window would report (ui/window/window_shots.py)."""
        items = (self.alive.topLevelItem(i) for i in range(min(self.alive.topLevelItemCount(), 10)))
        rows = [row for row in items if row is not None]
        return {
            "file": self.path,
            "error": self.error,
            "reader": self.snap.reader if self.snap is not None else None,
            "figures": self.figures.text(),
            "cursor": self.cursor_text.text(),
            "alive": [[row.text(c) for c in range(row.columnCount())] for row in rows],
            "segment_map": self.segment_map.isVisible(),
        }

    def _show_segments(self) -> None:
        if self.tl is None or self._entry is None:
            return
        name = f"cuda:{self.replay.device}"
        fig = seg_summary.summarize(self.replay.segments_at(self._entry), name)
        self.segment_map.update_view(types.SimpleNamespace(allocator={"devices": {name: fig}}), name)


def _column() -> tuple[QWidget, QVBoxLayout]:
    """A widget whose children stand one above the other, edge to edge."""
    widget = QWidget()
    layout = QVBoxLayout(widget)
    layout.setContentsMargins(0, 0, 0, 0)
    return widget, layout


def short_site(frames) -> str:
    """A band's legend label: the user frame's file name (no directories), line and function."""
    text = summary.site(frames)
    if text is None:
        return "(no frames)"
    return text.rsplit("/", 1)[-1]


def open_snapshot_window(path: str, parent=None, on_error=None) -> SnapshotWindow:
    window = SnapshotWindow(parent)
    window.setWindowTitle(f"vramscope — {path}")
    window.show()
    window.open_path(path, on_error)
    return window
