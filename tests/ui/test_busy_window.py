"""A busy shared machine (sixteen processes on two GPUs): what fills each GPU
at a glance, every process in the table, and the small screen sizes."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from vramscope.core.processes.process_groups import is_group
from vramscope.core.processes.stacking import ORDER_STEP
from vramscope.core.units import GiB
from vramscope.ui.qt import pens
from vramscope.ui.processes.process_model import COL, STYLE_ROLE
from vramscope.core.settings.user_settings import Settings
from vramscope.ui.timeline.timeline_stack import OTHERS

from .helpers import save, table_column


def _bands(window, index):
    tl = window.gpu_panel.timelines[index]
    return tl, tl.stack


@pytest.mark.slow
def test_each_gpu_shows_what_fills_it_stacked_largest_at_the_bottom(busy, artifacts_dir):
    w = busy()
    latest = w.store.latest
    assert sum(len(g.processes) for g in latest.gpus) >= 14
    tl, stack = _bands(w, 1)
    assert tl.style == "stacked"
    used = {p.pid: p.used for p in latest.gpus[1].processes}
    own = [k for k in stack.order if k != OTHERS]

    def size(unit):
        return sum(used[k[2]] for k in tl._units[unit])

    # bottom to top: the largest first; the ten Ray workers are one band, the largest
    sizes = [size(k) for k in own]
    assert all(
        b <= a + ORDER_STEP for a, b in zip(sizes, sizes[1:])
    )  # ties within ORDER_STEP keep their order
    assert is_group(own[0]) and len(tl._units[own[0]]) == 10
    names = tl.legend.names()
    assert any(n.startswith("ray::RolloutWorker ×10") for n in names)
    # "others" (when there is one) is never the largest band
    if OTHERS in stack.order:
        alive = [k for k in stack.grouped if k in tl._units]
        assert sum(size(k) for k in alive) <= max(sizes)
    # the stack adds up to what the processes hold now
    top = stack._tops[-1, -1]
    assert top == pytest.approx(sum(v for v in used.values() if v), rel=0.02)
    save(w, artifacts_dir, "busy-stacked-1400x900.png")

    tl.toggle_group(own[0])  # a click on the group's band draws its processes on their own
    assert not any(is_group(k) for k in stack.order)
    assert len([k for k in stack.order if k != OTHERS]) >= 10
    save(w, artifacts_dir, "busy-stacked-expanded-1400x900.png")
    tl.toggle_group(own[0])
    assert is_group(stack.order[0])


@pytest.mark.slow
def test_the_legend_is_by_memory_and_always_names_an_alerted_process(busy):
    w = busy()
    w.gpu_panel.set_plot_style("lines")
    tl = w.gpu_panel.timelines[1]
    latest = w.store.latest
    label_of = w.feed.labels()
    procs = sorted((p for p in latest.gpus[1].processes if p.used), key=lambda p: -p.used)
    named = tl.legend.names()
    shown = [label_of[p.identity] for p in procs if label_of[p.identity] in named]
    assert shown == [n for n in named if n in shown]  # the legend's order is by memory
    assert named[0] == label_of[procs[0].identity]
    alerted = {a.pid for a in w.services.panels.alerts.alerts()}
    smallest = [p for p in procs if p.pid not in alerted][-1]
    assert label_of[smallest.identity] not in named  # too small for the room ...
    rows_before = [sample for sample, _label in tl.legend.item.items]
    w.gpu_panel.set_alerted([smallest.identity])
    w.refresh(force=True)
    assert label_of[smallest.identity] in tl.legend.names()  # ... until it has an alert
    # the rows are the same items, each now showing its new process (never re-created)
    assert [sample for sample, _label in tl.legend.item.items] == rows_before
    for (key, name), (sample, label) in zip(tl.legend.rows, tl.legend.item.items):
        assert label.text.startswith(name)
        if key in tl.lines.curves:
            assert sample.item is tl.lines.curves[key]
    w.gpu_panel.set_plot_style("stacked")
    assert any(
        not is_group(k) and k != OTHERS and k[2] == smallest.pid for k in tl.stack.order
    )  # its own band, not in "others" nor a group


@pytest.mark.slow
def test_every_live_process_has_its_own_style_and_the_table_swatch_matches(busy):
    w = busy()
    latest = w.store.latest
    idents = [p.identity for _g, p in latest.all_processes()]
    styles = [w.colours.style(i) for i in idents]
    assert len(set(styles)) == len(styles)  # colour x dash: no two alike
    model = w.table.model
    for r in range(model.rowCount()):
        key = model.index(r, 0).data(Qt.ItemDataRole.UserRole + 2)
        swatch = model.index(r, COL["PID"]).data(STYLE_ROLE)
        row = model.rows[r]  # a group's row: its lowest pid's style, as its band
        ident = min(row.inside)[2:4] if row.members else key[2:4]
        assert swatch == w.colours.style(ident)
    tl, stack = _bands(w, 1)
    for key in (k for k in stack.order if k != OTHERS):
        colour, dash = w.colours.style(tl._unit_identity(key))
        band = stack.bands[key]
        assert band.edge.pen().style() == pens.DASHES[dash]
        assert band.edge.pen().color().name().upper() == colour.upper()


@pytest.mark.slow
def test_the_table_fits_sixteen_rows_with_growth_cpu_and_host_memory(busy, artifacts_dir):
    w = busy()
    view = w.table.view
    model = w.table.model
    group = next(r for r in range(model.rowCount()) if model.rows[r].members)
    assert model.rows[group].members == 10  # the Ray workers: one row until opened
    w.table._clicked(model.index(group, COL["Name"]))
    w.refresh(force=True)  # the table takes the room its rows need
    rows = w.table.model.rowCount()
    assert rows >= 16
    shown = view.viewport().height() // view.rowHeight(0)
    assert shown >= 16, f"only {shown} rows visible at 1400x900"
    growth = dict(zip(table_column(w, "PID"), table_column(w, "Growth")))
    assert growth["38211"].startswith("+") and "MiB/min" in growth["38211"]  # the leak
    assert float(growth["38211"].split()[0]) == pytest.approx(40, abs=4)
    assert growth["35120"] == "0"  # an idle holder does not grow
    cpu = dict(zip(table_column(w, "PID"), table_column(w, "CPU %")))
    assert float(cpu["41017"]) > 50 and float(cpu["35120"]) < 5
    assert all(m.endswith("GiB") for m in table_column(w, "Host mem"))
    save(w, artifacts_dir, "busy-table-1400x900.png")


@pytest.mark.slow
def test_the_column_choice_and_plot_style_are_remembered(busy, tmp_path):
    path = str(tmp_path / "remember.toml")
    settings = Settings(path)
    w = busy(settings=settings)
    w.table.columns.toggle(COL["Host mem"], False)  # the header menu's check box
    w.controls.style_actions["lines"].trigger()
    assert w.table.view.isColumnHidden(COL["Host mem"])
    again = Settings(path)
    assert again.hidden_columns == ("Host mem",) and again.plot_style == "lines"
    w2 = busy(settings=again)
    assert w2.table.view.isColumnHidden(COL["Host mem"])
    assert not w2.table.view.isColumnHidden(COL["Growth"])
    assert w2.gpu_panel.plot_style == "lines"
    assert w2.gpu_panel.timelines[0].style == "lines"


@pytest.mark.slow
@pytest.mark.parametrize("size", [(1024, 700), (1366, 768)])
def test_small_screens_get_the_size_they_ask_for(busy, artifacts_dir, size):
    w = busy(*size)
    assert (w.width(), w.height()) == size
    assert w.minimumSizeHint().height() <= 640 and w.minimumSizeHint().width() <= 1000
    for tl in w.gpu_panel.timelines.values():
        # the legend fits beside its plot: nothing cut at the bottom
        _sample, last = tl.legend.item.items[-1]
        bottom = tl.mapFromScene(last.mapRectToScene(last.boundingRect()).bottomLeft()).y()
        assert bottom <= tl.height(), (
            len(tl.legend.item.items),
            " | ".join(label.text[-22:] for _s, label in tl.legend.item.items),
        )
    for i in range(w.tabs.count()):
        w.tabs.setCurrentIndex(i)
        save(w, artifacts_dir, f"busy-tab{i}-{size[0]}x{size[1]}.png")
        assert (w.width(), w.height()) == size


def test_enter_in_the_end_process_dialog_cancels(themed_app, qtbot):
    from vramscope.core.end_process.actions import ProcessSummary
    from vramscope.ui.end_process.end_process_dialog import EndProcessDialog

    summary = ProcessSummary(
        pid=4242,
        start_time=None,
        command="python train.py",
        user="alice",
        age_seconds=600.0,
        memory=3 * GiB,
        own=True,
        connection_file=None,
        refusal=None,
    )
    dialog = EndProcessDialog(summary)
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    assert dialog.cancel_button.isDefault() and not dialog.confirm_button.isDefault()
    qtbot.keyClick(dialog, Qt.Key.Key_Return)
    assert dialog.result() == dialog.DialogCode.Rejected
