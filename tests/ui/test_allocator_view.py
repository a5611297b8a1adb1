"""The agents tab on the busy machine: the allocator's segment map and its figures."""

from __future__ import annotations

import pytest

from tests.ui.helpers import save
from vramscope.core.units import fmt_bytes


def _agents_tab(window, qtbot):
    for i in range(window.tabs.count()):
        if window.tabs.tabText(i).startswith("PyTorch agents"):
            window.tabs.setCurrentIndex(i)
            window.refresh(force=True)
            qtbot.wait(30)
            window.refresh(force=True)
            qtbot.wait(30)
            return window.services.panels.agents
    raise AssertionError("no agents tab")


def _train_device(busy, qtbot, size):
    """(window, agents panel, train.py's process view, its cuda:0 view) on the busy machine."""
    w = busy(*size)
    panel = _agents_tab(w, qtbot)
    [view] = panel.views.values()
    [dev] = view.devices.values()
    return w, panel, view, dev


@pytest.mark.slow
@pytest.mark.parametrize("size", [(1400, 900), (1024, 700)])
def test_segment_map_shows_the_cache_split_and_the_largest_free_block(busy, qtbot, artifacts_dir, size):
    w, panel, view, dev = _train_device(busy, qtbot, size)
    seg_map = dev.segment_map
    view.details.reveal(seg_map)  # a click on its tab
    qtbot.wait(30)
    assert seg_map.isVisible()
    report = w.services.panels.agents._pending[0][view.identity]
    fig = report.allocator["devices"][dev.device]
    text = seg_map.figures.text()
    assert f"{fmt_bytes(fig['free_split'])} free inside partly used segments" in text
    assert "empty_cache() cannot return it" in text and "would return them" in text
    assert f"largest free block {fmt_bytes(fig['largest_free_block'])}" in text
    assert "expandable_segments:True would recover" in text
    bars = seg_map.bars.layout_bars(seg_map.bars.width())
    assert bars and all(r.right() <= seg_map.bars.width() for _s, r in bars)
    # a CUDA run, but the demo's: its PID is invented, so no agent is asked
    assert not view.sites.button.isEnabled() and "demo" in view.sites.reason.text()
    save(w, artifacts_dir, f"busy-agents-segments-{size[0]}x{size[1]}.png")


@pytest.mark.slow
@pytest.mark.parametrize("size", [(1400, 900), (1024, 700)])
def test_oom_post_mortem_shows_the_shortfall_split_and_ranked_fixes(busy, qtbot, artifacts_dir, size):
    w, panel, _view, dev = _train_device(busy, qtbot, size)
    oom = dev.oom_view
    assert oom.isVisible()
    text = oom.text().replace("&nbsp;", " ")
    r = oom.report
    assert r["shortfall"] == r["requested"] - r["device_free"] > 0
    assert sum(r["split"].values()) == r["shortfall"]
    assert f"short by {fmt_bytes(r['shortfall'])}: " in text and "fragmentation" in text
    assert "0 B" not in text.split("short by")[1].split("<br>")[0]  # no part of nothing
    # the other processes (from NVML) named as the table names them, not "python3"
    kernel = next(
        p for g in w.store.latest.gpus for p in g.processes if "ipykernel" in " ".join(p.info.cmdline)
    )
    assert f"Jupyter kernel ({kernel.pid})" in text
    # the demo records nothing: how to get the full report, without a menu that is not there
    assert "File ▸ Record" not in text and "vramscope record" in text
    recovers = [f["recovers"] for f in r["fixes"]]
    assert recovers == sorted(recovers, reverse=True)  # ranked by what they recover
    assert ". micro-batch ÷" in text and "(covers the shortfall)" in text
    save(w, artifacts_dir, f"busy-agents-oom-{size[0]}x{size[1]}.png")


def test_oom_post_mortem_names_the_largest_modules_without_counting_a_block_twice(busy, qtbot):
    w, panel, view, dev = _train_device(busy, qtbot, (1400, 900))
    oom = dev.oom_view
    text = oom.text().replace("&nbsp;", " ")
    names = [m["name"] for m in oom.report["modules"]]
    assert names, "the agent's per-module figures reach the post-mortem"
    assert "largest modules: " + names[0] in text
    # none inside another: GPT-2's transformer is opened into its blocks, not listed beside them
    assert not any(a != b and b.startswith(a + ".") for a in names for b in names)
    assert "transformer" not in names and "transformer.h.0" in names
    ckpt = next(f for f in oom.report["fixes"] if f["fix"].startswith("activation checkpointing"))
    assert set(ckpt["fix"].removeprefix("activation checkpointing on ").split(", ")) <= set(names)


@pytest.mark.parametrize("size", [(1400, 900), (1024, 700)])
def test_modules_post_mortem_and_segment_map_are_a_click_away_without_scrolling(
    busy, qtbot, artifacts_dir, size
):
    w, panel, view, dev = _train_device(busy, qtbot, size)
    tabs = view.details
    titles = [tabs.tabText(i) for i in range(tabs.count()) if tabs.isTabVisible(i)]
    assert titles == ["Modules", "OOM post-mortem (cuda:0)", "Allocator segments (cuda:0)"]
    assert tabs.currentWidget() is tabs.pages["oom cuda:0"][1]  # the run had an OOM: its post-mortem in front
    viewport = panel.scroll.viewport()
    assert panel.scroll.verticalScrollBar().value() == 0
    bar = tabs.tabBar()
    top = bar.mapTo(viewport, bar.rect().topLeft()).y()
    assert 0 <= top and top + bar.height() + 80 <= viewport.height()  # the tabs and some of a page in view
    save(w, artifacts_dir, f"busy-agents-top-{size[0]}x{size[1]}.png")
    tabs.reveal(view.modules)
    qtbot.wait(30)
    assert view.modules.isVisible() and view.modules.tree.topLevelItemCount() == 2
    save(w, artifacts_dir, f"busy-agents-modules-tab-{size[0]}x{size[1]}.png")


def test_oom_post_mortem_names_the_session_a_recording_window_writes(busy, qtbot):
    w, panel, view, dev = _train_device(busy, qtbot, (1400, 900))
    panel.session = lambda: "/home/alice/.local/share/vramscope/sessions/s1.vramscope"
    dev.oom_view._shown_for = None  # (drawn again with the next frame)
    panel.update_from(w.store.latest)
    text = dev.oom_view.text()
    assert (
        "vramscope export /home/alice/.local/share/vramscope/sessions/s1.vramscope --format oom-report"
        in text
    )
    assert "vramscope record" not in text
