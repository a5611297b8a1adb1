"""The monitor read at a glance: alert markers' labels never over each other, legend
names elided but never their figures, alerted rows marked in the table."""

from __future__ import annotations

import pytest
import dataclasses

from vramscope.core.processes.process_rows import ALERT_MARK, COL
from vramscope.core.samples import Frame, GpuProcess, ProcessInfo
from vramscope.core.units import GiB

from .frames import T0, frame_at


def test_marker_labels_at_one_moment_stack_instead_of_overlapping(make_window, qtbot):
    w = make_window([frame_at(k) for k in range(0, 90)], window="1m")
    w.resize(1024, 700)
    tl = w.gpu_panel.timelines[0]
    tl.set_markers(
        {
            ("near_oom", 0): (T0 + 60, "ERROR", "Near out of memory"),
            ("growth", 0): (T0 + 61, "WARNING", "Growing memory"),
            ("squatter", 0): (T0 + 62, "WARNING", "Idle holder"),
        }
    )
    w.refresh(force=True)
    qtbot.wait(30)
    rects = [line.label.sceneBoundingRect() for line in tl.markers.lines.values()]
    assert all(line.label.isVisible() for line in tl.markers.lines.values())
    for i, a in enumerate(rects):
        for b in rects[i + 1 :]:
            assert not a.intersects(b), (a, b)


def test_a_marker_left_of_the_window_has_no_label_cut_at_the_edge(make_window, qtbot):
    w = make_window([frame_at(k) for k in range(0, 120)], window="1m")
    tl = w.gpu_panel.timelines[0]
    tl.set_markers({("near_oom", 0): (T0 + 5, "WARNING", "Near OOM")})
    w.refresh(force=True)
    (line,) = tl.markers.lines.values()
    assert not line.label.isVisible()


def _long_named(k: int) -> Frame:
    f = frame_at(k)
    name = ("python", "a_training_script_with_a_really_quite_long_descriptive_name_v2.py")
    info = ProcessInfo(pid=6060, start_time=T0 - 60, user="alice", name="python", cmdline=name, ppid=1000)
    g0 = f.gpus[0]
    g0 = dataclasses.replace(g0, processes=g0.processes + (GpuProcess(pid=6060, used=3 * GiB, info=info),))
    return dataclasses.replace(f, gpus=(g0,) + f.gpus[1:])


def test_legend_names_are_elided_never_their_figures(make_window, qtbot):
    for width, height in ((1400, 900), (1024, 700)):
        w = make_window([_long_named(k) for k in range(0, 60)], window="1m")
        w.resize(width, height)
        w.refresh(force=True)
        qtbot.wait(30)
        tl = w.gpu_panel.timelines[0]
        texts = [label.text for _sample, label in tl.legend.item.items]
        long = [t for t in texts if "…" in t]
        assert long and all(t.endswith(" GiB") for t in long), texts
        for _sample, label in tl.legend.item.items:  # each label fits the legend's column
            assert label.item.boundingRect().width() <= tl.legend.item.boundingRect().width()


@pytest.mark.slow
def test_alerted_rows_are_marked_and_say_their_alert(busy):
    w = busy()
    model = w.table.model
    marked = [r for r in model.rows if r.alert]
    assert marked, "the busy machine has idle holders with alerts"
    for r in marked:
        i = model.rows.index(r)
        name = model.index(i, COL["Name"])
        assert name.data().startswith(ALERT_MARK)
        from PySide6.QtCore import Qt

        assert r.alert.split(":")[0] in name.data(Qt.ItemDataRole.ToolTipRole)


@pytest.mark.slow
def test_opening_groups_keeps_every_plot_and_its_axes_inside_its_row(busy, qtbot):
    from vramscope.core.processes.process_groups import is_group

    for size in ((1400, 900), (1024, 700)):
        w = busy(*size)
        model = w.table.model
        group = next(i for i, r in enumerate(model.rows) if r.members)
        w.table._clicked(model.index(group, COL["Name"]))  # the table takes more room
        tl = w.gpu_panel.timelines[1]
        tl.toggle_group(next(k for k in tl.stack.order if is_group(k)))  # ten more bands
        w.refresh(force=True)
        qtbot.wait(30)
        for timeline in w.gpu_panel.timelines.values():
            # the plot (with its time axis) and the legend fit the widget: nothing cut
            assert timeline.ci.geometry().height() <= timeline.height() + 1
            assert timeline.legend.item.boundingRect().height() <= timeline.height()
