"""The window offers the time windows, themes and plot styles of core/settings/view_options.py,
and each does what it says: a button per time window that sets the plots' span, a
plot style per button, `vramscope --window/--theme` taking exactly those."""

from __future__ import annotations

import pytest

from vramscope.cli import build_parser
from vramscope.core.settings.view_options import PlotStyle, Theme, TimeWindow


def test_each_time_window_button_sets_its_span(make_window, scripted_frames):
    w = make_window(scripted_frames, window="1m")
    buttons = {a.text(): a for a in w.controls.window_actions.values()}
    assert list(buttons) == [tw.text for tw in TimeWindow]
    for tw in reversed(TimeWindow):
        buttons[tw.text].trigger()
        assert (w.window_key, w.window_seconds) == (tw, tw.seconds)
    with pytest.raises(ValueError, match="choose from 1m, 10m, 1h, all"):
        w.set_window("5m")


def test_each_plot_style_button_draws_that_style(make_window, scripted_frames):
    w = make_window(scripted_frames)
    assert [a.text() for a in w.controls.style_actions.values()] == [s.text for s in PlotStyle]
    for style in reversed(PlotStyle):
        w.controls.style_actions[style].trigger()
        assert w.gpu_panel.plot_style == style
        assert {t.style for t in w.gpu_panel.timelines.values()} == {style}


@pytest.mark.parametrize("option,enum", [("--window", TimeWindow), ("--theme", Theme)])
def test_the_command_line_takes_exactly_the_members(option, enum, capsys):
    parser = build_parser()
    for member in enum:
        assert getattr(parser.parse_args([option, member.value]), option[2:]) == member
    with pytest.raises(SystemExit):
        parser.parse_args([option, "sepia"])
    assert "invalid choice" in capsys.readouterr().err
