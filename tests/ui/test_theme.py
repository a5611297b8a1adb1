"""Light and dark schemes: readable text and plots, colour-blind-safe process
colours, the desktop's choice followed, a live switch that re-colours what is
open -- and screenshots of the main window in both, as the app starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from PySide6.QtCore import Qt

from vramscope.ui.qt import pens, schemes, theme
from .helpers import save


def _luminance(hex_colour: str) -> float:
    h = hex_colour.lstrip("#")

    def lin(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (lin(int(h[i : i + 2], 16) / 255) for i in (0, 2, 4))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    la, lb = sorted((_luminance(a), _luminance(b)))
    return (lb + 0.05) / (la + 0.05)


@pytest.fixture
def dark_again(themed_app):
    """Whatever a test switches to, the rest of the session is dark again."""
    yield themed_app
    theme.apply(themed_app, "dark")


@pytest.mark.parametrize("scheme", [schemes.DARK, schemes.LIGHT], ids=lambda s: s.name)
def test_text_and_plot_lines_are_readable(scheme):
    for bg in (scheme.WINDOW, scheme.BASE, scheme.CARD_BACKGROUND):
        assert contrast(scheme.TEXT, bg) >= 7
        for fg in (scheme.MUTED, scheme.WARNING, scheme.ERROR, scheme.OK, scheme.LINK):
            assert contrast(fg, bg) >= 4.5, (fg, bg)  # WCAG AA for text
    plot = scheme.PLOT_BACKGROUND
    assert contrast(scheme.PLOT_FOREGROUND, plot) >= 4.5  # axis labels and ticks
    assert contrast(scheme.TOTAL_USED, plot) >= 7
    assert contrast(scheme.CAPACITY, plot) >= 3
    # the best-contrast process colours come first; none disappears into the plot
    firsts = scheme.PROCESS_COLOURS[:4]
    assert all(contrast(c, plot) >= 3 for c in firsts), [round(contrast(c, plot), 2) for c in firsts]
    assert all(contrast(c, plot) >= 2 for c in scheme.PROCESS_COLOURS)


@pytest.mark.parametrize("scheme", [schemes.DARK, schemes.LIGHT], ids=lambda s: s.name)
def test_process_colours_are_okabe_ito_distinct_and_unlike_the_total(scheme):
    colours = scheme.PROCESS_COLOURS
    assert set(colours) <= set(schemes.OKABE_ITO.values())
    assert len(set(colours)) == len(colours) >= 6
    # the total-used curve is never mistaken for a process
    assert all(contrast(c, scheme.TOTAL_USED) >= 1.5 for c in colours)


class _Hints:
    def __init__(self, value):
        self.value = value

    def colorScheme(self):
        return self.value


class _App:
    def __init__(self, value):
        self.hints = _Hints(value)

    def styleHints(self):
        return self.hints


@pytest.mark.parametrize(
    "desktop, expected",
    [
        (Qt.ColorScheme.Dark, "dark"),
        (Qt.ColorScheme.Light, "light"),
        (Qt.ColorScheme.Unknown, "dark"),
    ],
)
def test_system_mode_follows_the_desktop(desktop, expected):
    assert theme.resolve("system", _App(desktop)).name == expected
    assert theme.resolve("light", _App(Qt.ColorScheme.Dark)).name == "light"
    with pytest.raises(ValueError, match="choose from system, light, dark"):
        theme.resolve("sepia")


def test_apply_sets_palette_plot_colours_and_module_constants(dark_again):
    import pyqtgraph as pg
    from PySide6.QtGui import QPalette

    app = dark_again
    assert theme.apply(app, "light") is schemes.LIGHT
    assert app.palette().color(QPalette.ColorRole.Window).name() == schemes.LIGHT.WINDOW
    assert app.palette().color(QPalette.ColorRole.Text).name() == schemes.LIGHT.TEXT
    assert pg.getConfigOption("background") == schemes.LIGHT.PLOT_BACKGROUND
    assert theme.MUTED == schemes.LIGHT.MUTED and theme.PROCESS_COLOURS == schemes.LIGHT.PROCESS_COLOURS
    assert theme.mode() == "light"
    theme.apply(app, "dark")
    assert theme.MUTED == schemes.DARK.MUTED
    assert app.palette().color(QPalette.ColorRole.Window).name() == schemes.DARK.WINDOW


def test_colour_book_keeps_each_process_in_its_place_across_a_switch(dark_again):
    book = pens.ColourBook()
    first = [book.colour(("p", n)) for n in range(3)]
    assert first == list(schemes.DARK.PROCESS_COLOURS[:3])
    theme.apply(dark_again, "light")
    assert [book.colour(("p", n)) for n in range(3)] == list(schemes.LIGHT.PROCESS_COLOURS[:3])


def test_colour_book_forgets_gone_processes_and_keeps_the_others_styles():
    book = pens.ColourBook(colours=("a", "b", "c"))
    styles = {n: book.style(("p", n)) for n in range(5)}
    book.keep({("p", 1), ("p", 4)})  # the others left the history
    assert book.style(("p", 1)) == styles[1] and book.style(("p", 4)) == styles[4]
    book.set_live([("p", 1), ("p", 4)])
    assert book.style(("p", 9)) == styles[0]  # the first style nobody holds is given again
    assert book.style(("p", 2)) == styles[2]  # (and the next free one after it)


@pytest.mark.slow
def test_live_switch_recolours_the_open_window(
    make_window, scripted_frames, dark_again, artifacts_dir, qtbot
):
    import pyqtgraph as pg

    w = make_window(scripted_frames)
    w.gpu_panel.set_plot_style("lines")  # this test reads the per-process lines
    tl = w.gpu_panel.timelines[0]
    card = w.gpu_panel.cards[0]
    assert tl.backgroundBrush().color().name() == schemes.DARK.PLOT_BACKGROUND

    theme.switch(dark_again, "light")
    w.refresh(force=True)
    qtbot.wait(10)
    L = schemes.LIGHT
    assert tl.backgroundBrush().color().name() == L.PLOT_BACKGROUND
    assert tl.used_curve.opts["pen"].color().name() == L.TOTAL_USED
    assert tl.capacity_curve.opts["pen"].color().name() == L.CAPACITY
    assert tl.plot.getAxis("left").textPen().color().name() == L.PLOT_FOREGROUND
    assert pg.mkColor(tl.legend.item.opts["labelTextColor"]).name() == L.TEXT
    assert L.CARD_BACKGROUND in card.styleSheet() and schemes.DARK.CARD_BACKGROUND not in card.styleSheet()
    proc_pens = {c.opts["pen"].color().name().upper() for c in tl.lines.curves.values()}
    assert proc_pens and proc_pens <= set(L.PROCESS_COLOURS)
    save(w, artifacts_dir, "theme-live-switch-light.png")

    theme.switch(dark_again, "dark")
    assert tl.backgroundBrush().color().name() == schemes.DARK.PLOT_BACKGROUND
    assert schemes.DARK.CARD_BACKGROUND in card.styleSheet()
    assert tl.used_curve.opts["pen"].color().name() == schemes.DARK.TOTAL_USED


# -- as the app starts: the scheme applied before the window's modules are imported -----
_START = textwrap.dedent("""
    import json, sys, time
    import pyqtgraph as pg
    from PySide6.QtWidgets import QApplication
    from vramscope.ui.qt import theme
    app = QApplication([sys.argv[0]])
    scheme = theme.apply(app, sys.argv[1])
    from vramscope.sources.demo.simulated import SimulatedSource
    from vramscope.core.flow.pipeline import Pipeline
    from vramscope.ui.window.main_window import MainWindow
    from vramscope.ui.window.about import AboutDialog
    from vramscope.core.settings.user_settings import Settings
    from vramscope.ui.window.settings_dialog import SettingsDialog
    src = SimulatedSource(seed=1)
    now = time.time()
    feed = Pipeline(SimulatedSource(seed=1))
    for k in range(600):
        feed.store.append(src.sample(now - 600 + k))
    w = MainWindow(feed, window="10m", poll_ms=60_000)
    w.resize(1400, 900)
    w.show()
    w.refresh(force=True)
    for _ in range(5):
        app.processEvents()
    out = sys.argv[2]
    image = w.grab().toImage()
    image.save(out + "/main-window-" + scheme.name + ".png")
    tl = w.gpu_panel.timelines[0]
    vb = tl.plot.vb
    corner = vb.mapToScene(vb.boundingRect().topLeft())
    pos = tl.mapTo(w, tl.mapFromScene(corner))
    # the commonest colour of a patch by the plot's corner: a grid line (ticks follow the
    # wall clock) may cross any single pixel, never most of a 24 x 24 patch
    from collections import Counter
    patch = Counter(image.pixelColor(pos.x() + 2 + i, pos.y() + 2 + j).name()
                    for i in range(24) for j in range(24))
    plot_pixel = patch.most_common(1)[0][0]
    window_pixel = image.pixelColor(w.width() - 5, w.height() - 40).name()
    settings = Settings(out + "/settings-" + scheme.name + ".toml")
    d = SettingsDialog(settings)
    d.show(); app.processEvents()
    d.grab().save(out + "/settings-dialog-" + scheme.name + ".png")
    a = AboutDialog(feed.store.latest)
    a.show(); app.processEvents()
    a.grab().save(out + "/about-dialog-" + scheme.name + ".png")
    print(json.dumps({"scheme": scheme.name, "plot_pixel": plot_pixel,
                      "card_style": w.gpu_panel.cards[0].styleSheet(),
                      "legend_text": pg.mkColor(tl.legend.item.opts["labelTextColor"]).name()}))
    w.close(); feed.close()
""")


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["dark", "light"])
def test_main_window_as_it_starts_in_each_scheme(mode, artifacts_dir):
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    done = subprocess.run(
        [sys.executable, "-c", _START, mode, str(artifacts_dir)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    facts = json.loads(done.stdout.strip().splitlines()[-1])
    scheme = schemes.SCHEMES[mode]
    assert facts["scheme"] == mode
    assert facts["plot_pixel"] == scheme.PLOT_BACKGROUND
    assert scheme.CARD_BACKGROUND in facts["card_style"]
    assert facts["legend_text"] == scheme.TEXT
    for name in ("main-window", "settings-dialog", "about-dialog"):
        assert (artifacts_dir / f"{name}-{mode}.png").stat().st_size > 5000
