"""A live theme switch re-colours the whole window: the busy machine (sixteen
processes, an agent, alerts) with every tab filled and dialogs open, switched
dark -> light from the settings dialog and light -> dark by the desktop (theme
"system"). After each switch no widget, item or plot shows a colour of the
old scheme, the key places show the new one, and grabbed pixels agree."""

from __future__ import annotations

import time
import types

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QColor, QPalette

from vramscope.core.end_process.actions import ProcessSummary
from vramscope.ui.qt import schemes, theme
from vramscope.ui.window.about import AboutDialog
from vramscope.ui.agents.agent_texts import BUCKETS
from vramscope.ui.end_process.end_process_dialog import EndProcessDialog
from vramscope.ui.processes.process_model import COL, STYLE_ROLE
from vramscope.core.settings.user_settings import Settings
from vramscope.ui.timeline.timeline_stack import OTHERS
from vramscope.ui.window.window_setup import open_settings

from .helpers import save
from .shown_colours import count_colours, only_in, stale_colours

AGENTS_TAB, ALERTS_TAB, PLANNER_TAB = 2, 1, 3


@pytest.fixture
def follows_desktop(themed_app, monkeypatch):
    """What the desktop says (theme "system"); the session is dark again afterwards."""
    desktop = types.SimpleNamespace(scheme="light")
    monkeypatch.setattr(theme, "system_scheme", lambda app=None: desktop.scheme)
    yield desktop
    theme.apply(themed_app, "dark")


def _choose_theme(window, settings, mode: str) -> None:
    """As a user does: File > Settings..., Theme, OK."""
    dialog = open_settings(window, settings)
    dialog.theme.setCurrentIndex(dialog.theme.findData(mode))
    dialog.accept()


def _desktop_turns(app, desktop, scheme: str) -> None:
    desktop.scheme = scheme
    app.styleHints().colorSchemeChanged.emit(
        Qt.ColorScheme.Dark if scheme == "dark" else Qt.ColorScheme.Light
    )


def _pixels(widget, rect=None) -> set[str]:
    image = widget.grab(rect).toImage() if rect is not None else widget.grab().toImage()
    return {image.pixelColor(x, y).name() for x in range(image.width()) for y in range(image.height())}


def _pixel(window, widget, x: int, y: int) -> str:
    pos = widget.mapTo(window, QPoint(x, y))
    return window.grab().toImage().pixelColor(pos).name()


def _visit_every_tab(window, qtbot) -> None:
    for i in range(window.tabs.count()):
        window.tabs.setCurrentIndex(i)
        window.refresh(force=True)
        qtbot.wait(10)


def _check(window, dialogs, old: theme.Scheme, new: theme.Scheme, qtbot) -> None:
    # nothing anywhere (every tab, visible or not, and the open dialogs) keeps an old colour
    for root in (window, *dialogs):
        stale = stale_colours(root, old, new)
        assert not stale, f"{len(stale)} places kept {old.name} colours:\n" + "\n".join(stale[:30])
    assert count_colours(window, only_in(new, old)) > 200  # the walk did find the new ones

    # the monitor: plots, bands in each process's style, markers, cards, table swatches
    window.tabs.setCurrentIndex(0)
    window.refresh(force=True)
    qtbot.wait(10)
    for tl in window.gpu_panel.timelines.values():
        assert tl.used_curve.opts["pen"].color().name() == new.TOTAL_USED
        assert tl.plot.getAxis("left").textPen().color().name() == new.PLOT_FOREGROUND
        vb = tl.plot.vb
        corner = tl.mapFromScene(vb.mapToScene(vb.boundingRect().topLeft()))
        assert _pixel(window, tl, corner.x() + 3, corner.y() + 3) == new.PLOT_BACKGROUND
        for key, band in tl.stack.bands.items():
            colour = new.MUTED if key == OTHERS else window.colours.style(tl._unit_identity(key))[0]
            assert band.edge.pen().color().name().upper() == colour.upper()
    markers = [line for tl in window.gpu_panel.timelines.values() for line in tl.markers.lines.values()]
    assert markers  # the squatters' alerts (warnings) and the caught OOM's (critical)
    for line in markers:
        assert line.pen.color().name() in (new.WARNING, new.ERROR)
        assert line.label.color.name() == line.pen.color().name()
        assert line.label.fill.color().name() == new.PLOT_BACKGROUND
    card = window.gpu_panel.cards[0]
    assert _pixel(window, card, card.width() // 2, card.height() - 4) == new.CARD_BACKGROUND
    model = window.table.model
    for r in range(model.rowCount()):
        colour, dash = model.index(r, COL["PID"]).data(STYLE_ROLE)
        assert (colour, dash) == window.colours.style(model.rows[r].identity)  # (a group's: its lowest pid's)
        assert colour == new.PROCESS_COLOURS[new.PROCESS_COLOURS.index(colour)]
    view = window.table.view
    swatch = view.visualRect(model.index(0, COL["PID"])).adjusted(0, 0, -view.columnWidth(1) // 2, 0)
    first = model.index(0, COL["PID"]).data(STYLE_ROLE)[0]
    assert QColor(first).name() in _pixels(view.viewport(), swatch)  # the swatch's line, drawn
    assert window.banner.palette().color(QPalette.ColorRole.Window).name() == new.DEMO_BANNER
    assert _pixel(window, window.banner, 3, window.banner.height() // 2) == new.DEMO_BANNER
    detail = window.no_driver.detail  # the no-driver page, ready behind the monitor
    assert detail.palette().color(QPalette.ColorRole.WindowText).name() == new.MUTED

    # alerts: the severity dots, the details' text
    window.tabs.setCurrentIndex(ALERTS_TAB)
    qtbot.wait(10)
    alerts = window.services.panels.alerts
    tree = alerts.tree
    assert tree.topLevelItemCount() >= 2
    rect = tree.visualItemRect(tree.topLevelItem(1))
    dot = _pixels(tree.viewport(), rect.adjusted(0, 0, -rect.width() + tree.columnWidth(0), 0))
    assert new.WARNING in dot and old.WARNING not in dot
    details = _pixels(alerts.details.viewport())  # the most urgent: the caught OOM (critical)
    assert new.WARNING in details or new.ERROR in details
    assert old.WARNING not in details and old.ERROR not in details

    # the agent: its buckets over time and at the peak phase, the legend
    window.tabs.setCurrentIndex(AGENTS_TAB)
    window.refresh(force=True)
    qtbot.wait(10)
    (section,) = window.services.panels.agents.views.values()
    dev = section.devices["cuda:0"]
    assert [b.fill.brush().color().name().upper() for b in dev.bands] == [
        c.upper() for c in new.BUCKET_COLOURS
    ]
    for colour in new.BUCKET_COLOURS:
        assert colour in dev.bucket_legend.text()
    bars = dev.bars
    weights = bars._bars[0][0]
    weights_px = bars.mapFromScene(
        bars.getPlotItem().vb.mapViewToScene(weights.boundingRect().center())
    )  # the middle of the weights' bar
    assert _pixel(window, bars, weights_px.x(), weights_px.y()).upper() == new.BUCKET_COLOURS[0].upper(), (
        BUCKETS[0]
    )

    # the planner's verdict colours
    window.tabs.setCurrentIndex(PLANNER_TAB)
    qtbot.wait(10)
    planner = window.services.panels.planner
    verdicts = {
        planner.gpu_table.item(r, 2).foreground().color().name() for r in range(planner.gpu_table.rowCount())
    }
    assert verdicts and verdicts <= {new.OK, new.ERROR}


@pytest.mark.slow
def test_a_live_switch_recolours_every_widget_of_the_busy_window(
    busy, themed_app, follows_desktop, qtbot, tmp_path, artifacts_dir
):
    app = themed_app
    settings = Settings(str(tmp_path / "s.toml"))
    window = busy(settings=settings)
    assert theme.current() is schemes.DARK
    _visit_every_tab(window, qtbot)
    window.tabs.setCurrentIndex(0)
    about = AboutDialog(window.store.latest, window)
    about.show()
    refusal = ProcessSummary(
        pid=35120,
        start_time=None,
        command="python3 notebooks/export_onnx.py",
        user="alice",
        age_seconds=7800.0,
        memory=820 << 20,
        own=True,
        connection_file=None,
        refusal="demo data: invented PID",
    )
    end = EndProcessDialog(refusal, "term", window)
    end.show()
    dialogs = (about, end)

    _choose_theme(window, settings, "light")  # dark -> light, from the settings dialog
    qtbot.wait(10)
    assert theme.current() is schemes.LIGHT
    _check(window, dialogs, schemes.DARK, schemes.LIGHT, qtbot)
    _save_tabs(window, qtbot, artifacts_dir, "light")

    _choose_theme(window, settings, "system")  # the desktop says light: nothing changes
    assert theme.current() is schemes.LIGHT and theme.mode() == "system"
    _desktop_turns(app, follows_desktop, "dark")  # light -> dark, by the desktop
    qtbot.wait(10)
    assert theme.current() is schemes.DARK
    _check(window, dialogs, schemes.LIGHT, schemes.DARK, qtbot)
    _save_tabs(window, qtbot, artifacts_dir, "dark")


@pytest.mark.slow
def test_a_live_switch_recolours_a_session_window_with_hosts_and_a_fleet(
    themed_app, follows_desktop, qtbot, tmp_path, artifacts_dir
):
    """The views the busy window has not: a recorded session's scrubber and cursors,
    the chips of --host, the fleet overview of --from-prometheus."""
    from tests.core.session.helpers import T0, record
    from vramscope.core.samples import HostState
    from vramscope.ui.window.session_files import open_session_window
    from vramscope.ui.monitor.fleet_view import FleetOverview
    from vramscope.ui.monitor.hosts_bar import attach_hosts_bar

    path = tmp_path / "run.vramscope"
    record(path, n=40)
    feed, window = open_session_window(str(path))
    qtbot.addWidget(window)
    try:
        window.resize(1400, 900)
        window.show()
        window.scrubber.set_time(T0 + 10)  # a cursor on each timeline
        hosts = (HostState("lab-a", "connected", gpus=2), HostState("lab-b", "down", error="ssh: timed out"))
        gpus = (types.SimpleNamespace(index=0, host="lab-a", host_index=0, used=30 << 30, total=48 << 30),)
        bar = attach_hosts_bar(window)
        bar.update_from(types.SimpleNamespace(hosts=hosts))
        fleet = FleetOverview(source=None)
        window.add_panel("Fleet", fleet)
        fleet.update_from(types.SimpleNamespace(hosts=hosts, gpus=gpus))
        fleet.chosen = "lab-a"
        now = time.time()  # the fleet's plot spans the last hour
        fleet.show_history(
            "lab-a",
            {
                0: {
                    "t": [now - 1800, now - 900, now],
                    "used": [20 << 30, 30 << 30, 30 << 30],
                    "total": [48 << 30] * 3,
                }
            },
            None,
        )
        qtbot.wait(10)
        for old, new in ((schemes.DARK, schemes.LIGHT), (schemes.LIGHT, schemes.DARK)):
            follows_desktop.scheme = new.name
            theme.switch(themed_app, "system")
            qtbot.wait(10)
            stale = stale_colours(window, old, new)
            assert not stale, "\n".join(stale[:30])
            assert bar.chips["lab-b"].palette().color(QPalette.ColorRole.WindowText).name() == new.ERROR
            assert fleet.table.item(0, 1).foreground().color().name() == new.OK
            assert fleet.plot.getPlotItem().getAxis("left").textPen().color().name() == new.PLOT_FOREGROUND
            window.tabs.setCurrentWidget(fleet)
            save(window, artifacts_dir, f"theme-switched-session-hosts-fleet-{new.name}.png")
            window.tabs.setCurrentIndex(0)
    finally:
        feed.close()


def _save_tabs(window, qtbot, artifacts_dir, name: str) -> None:
    """Every tab at 1400x900 and 1024x700 (looked at by eye), then back to 1400x900."""
    for size in ((1400, 900), (1024, 700)):
        window.resize(*size)
        for i in range(window.tabs.count()):
            window.tabs.setCurrentIndex(i)
            window.refresh(force=True)
            qtbot.wait(10)
            save(window, artifacts_dir, f"theme-switched-{name}-tab{i}-{size[0]}x{size[1]}.png")
    window.resize(1400, 900)
