"""At 1024 x 700 the busy machine's monitor shows each GPU's time axis whole -- its
labels inside what the scroll area shows -- and the splitter's grip lies between
the plots and the table, on no label (issue 46 item 8, as a user reads the window)."""

from __future__ import annotations

from PySide6.QtCore import QRect


def _on_window(widget, rect: QRect) -> QRect:
    return QRect(widget.mapTo(widget.window(), rect.topLeft()), rect.size())


def test_every_gpus_time_axis_is_in_view_and_the_grip_on_no_label(busy):
    window = busy(1024, 700)
    panel = window.gpu_panel
    shown = _on_window(panel.viewport(), panel.viewport().rect())
    timelines = panel.timelines
    assert len(timelines) == 2
    for timeline in timelines.values():
        axis = timeline.plot.getAxis("bottom")
        view = timeline.plot.scene().views()[0]
        box = view.mapFromScene(axis.sceneBoundingRect()).boundingRect()
        on_window = _on_window(view, box)
        assert shown.contains(on_window), (shown, on_window)  # the axis and its labels, whole
    handle = window.splitter.handle(1)
    grip = _on_window(handle, handle.rect())
    assert grip.top() >= shown.bottom() - 1  # below the plots' area, not over an axis label
    table_top = _on_window(window.table, window.table.rect()).top()
    assert grip.bottom() <= table_top + 1  # and above the table
